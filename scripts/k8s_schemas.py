#!/usr/bin/env python3
"""Writes tests/data/k8s/schemas.json: the schemas `launch --format k8s` manifests are checked
against (tests/report/k8s_manifest_test.py; docs/launch.md, "Kubernetes").

- LeaderWorkerSet: the published CRD, kubernetes-sigs/lws@LWS_COMMIT
  config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml (version v1), read from a
  local clone (--lws-repo; `git show`), descriptions dropped and pruned to the fields the
  manifests use (every `required` kept), unknown fields refused (kubectl --validate=strict).
- The core types it embeds, PodSpec and Container (Kubernetes' own schema as the CRD carries
  it), are reused for the Deployment's pod template and Dynamo's extraPodSpec/mainContainer.
- Deployment (apps/v1), Service (v1), ConfigMap (v1): the fields used, from the Kubernetes API
  reference (kubernetes.io/docs/reference/kubernetes-api: deployment-v1, service-v1, config-map-v1).
- DynamoGraphDeployment: transcribed from ai-dynamo/dynamo@DYNAMO_COMMIT
  deploy/cloud/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml (v1alpha1):
  spec.backendFramework (enum), spec.services (a map of services: componentType,
  dynamoNamespace, replicas int32, resources {limits, requests} {cpu, custom, gpu, memory}
  strings, multinode {nodeCount int32 >= 2, required}, extraPodSpec = a PodSpec plus
  mainContainer, a Container).

    python3 scripts/k8s_schemas.py --lws-repo /path/to/lws/.git
"""
import argparse
import json
import os
import subprocess

import yaml

LWS_COMMIT = "060ab4da17eea1f0865fcbd3236bb1075e2cea32"
LWS_PATH = "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
DYNAMO_COMMIT = "020073063688f0288505ac584654b1802822cdb0"
DYNAMO_PATH = "deploy/cloud/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml"

# the fields the manifests use (src/report/launch_k8s.cpp)
USED = {"apiVersion", "kind", "metadata", "name", "labels", "spec", "replicas", "selector", "matchLabels", "template",
        "leaderWorkerTemplate", "size", "restartPolicy", "leaderTemplate", "workerTemplate", "containers", "image", "command",
        "args", "env", "value", "ports", "containerPort", "resources", "limits", "requests", "volumeMounts", "mountPath",
        "volumes", "emptyDir", "medium", "configMap"}


def prune(s):
    """The schema without descriptions, its properties cut to USED (plus any required), closed."""
    if not isinstance(s, dict):
        return s
    out = {k: v for k, v in s.items() if k not in ("description", "properties", "items", "additionalProperties")}
    if "properties" in s:
        keep = USED | set(s.get("required", []))
        out["properties"] = {k: prune(v) for k, v in s["properties"].items() if k in keep}
        if not s.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if "items" in s:
        out["items"] = prune(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        out["additionalProperties"] = prune(s["additionalProperties"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lws-repo", required=True, help="a clone of kubernetes-sigs/lws (its .git folder)")
    ap.add_argument("--out", default="tests/data/k8s/schemas.json")
    a = ap.parse_args()
    text = subprocess.run(["git", "--git-dir", a.lws_repo, "show", f"{LWS_COMMIT}:{LWS_PATH}"], check=True,
                          capture_output=True, text=True).stdout
    crd = yaml.safe_load(text)
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    full = v1["schema"]["openAPIV3Schema"]
    lws = prune(full)
    lws["properties"].pop("status", None)
    pod_spec = lws["properties"]["spec"]["properties"]["leaderWorkerTemplate"]["properties"]["workerTemplate"]["properties"]["spec"]
    container = pod_spec["properties"]["containers"]["items"]
    meta = {"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}},
            "additionalProperties": False}
    str_map = {"type": "object", "additionalProperties": {"type": "string"}}
    deployment = {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"enum": ["apps/v1"]}, "kind": {"enum": ["Deployment"]}, "metadata": meta,
            "spec": {"type": "object", "additionalProperties": False, "required": ["selector", "template"],
                     "properties": {"replicas": {"type": "integer", "minimum": 0},
                                    "selector": {"type": "object", "additionalProperties": False,
                                                 "properties": {"matchLabels": str_map}},
                                    "template": {"type": "object", "additionalProperties": False,
                                                 "properties": {"metadata": meta, "spec": pod_spec}}}}}}
    service = {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"enum": ["v1"]}, "kind": {"enum": ["Service"]}, "metadata": meta,
            "spec": {"type": "object", "additionalProperties": False,
                     "properties": {"selector": str_map,
                                    "ports": {"type": "array", "items": {
                                        "type": "object", "additionalProperties": False, "required": ["port"],
                                        "properties": {"name": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                                       "targetPort": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                                                       "protocol": {"type": "string"}}}}}}}}
    config_map = {"type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata"],
                  "properties": {"apiVersion": {"enum": ["v1"]}, "kind": {"enum": ["ConfigMap"]}, "metadata": meta, "data": str_map}}
    items = {"type": "object", "additionalProperties": False,
             "properties": {k: {"type": "string"} for k in ("cpu", "gpu", "memory")} | {"custom": str_map}}
    extra_pod = dict(pod_spec)
    extra_pod["properties"] = dict(pod_spec["properties"]) | {"mainContainer": container}
    extra_pod["required"] = [r for r in pod_spec.get("required", []) if r != "containers"]  # mainContainer stands for them
    if not extra_pod["required"]:
        del extra_pod["required"]
    dgd = {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"enum": ["nvidia.com/v1alpha1"]}, "kind": {"enum": ["DynamoGraphDeployment"]}, "metadata": meta,
            "spec": {"type": "object", "additionalProperties": False,
                     "properties": {
                         "backendFramework": {"type": "string", "enum": ["sglang", "vllm", "trtllm"]},
                         "services": {"type": "object", "additionalProperties": {
                             "type": "object", "additionalProperties": False,
                             "properties": {
                                 "componentType": {"type": "string"}, "dynamoNamespace": {"type": "string"},
                                 "replicas": {"type": "integer", "format": "int32"},
                                 "resources": {"type": "object", "additionalProperties": False,
                                               "properties": {"limits": items, "requests": items}},
                                 "multinode": {"type": "object", "additionalProperties": False, "required": ["nodeCount"],
                                               "properties": {"nodeCount": {"type": "integer", "format": "int32", "minimum": 2}}},
                                 "extraPodSpec": extra_pod}}}}}}}
    out = {
        "sources": {
            "LeaderWorkerSet": f"kubernetes-sigs/lws@{LWS_COMMIT}:{LWS_PATH} (v1; pruned to the fields used, descriptions dropped)",
            "PodSpec/Container": "the core types as that CRD embeds them (spec.leaderWorkerTemplate.workerTemplate.spec)",
            "Deployment": "kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1 (the fields used)",
            "Service": "kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1 (the fields used)",
            "ConfigMap": "kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/config-map-v1",
            "DynamoGraphDeployment": f"ai-dynamo/dynamo@{DYNAMO_COMMIT}:{DYNAMO_PATH} (v1alpha1; the fields used, transcribed)",
        },
        "LeaderWorkerSet": lws, "Deployment": deployment, "Service": service, "ConfigMap": config_map,
        "DynamoGraphDeployment": dgd,
    }
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, a.out)  # whole or not at all
    print(f"{a.out}: {len(json.dumps(out))} bytes")


if __name__ == "__main__":
    main()
