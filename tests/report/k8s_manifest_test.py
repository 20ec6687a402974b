#!/usr/bin/env python3
"""`shardwise launch --format k8s` (issue 28, item 7; docs/launch.md, "Kubernetes"): the manifests
of a two-node TP16 plan, a disaggregated plan and a one-node plan with two replicas, for each
engine, validate against the published schemas (tests/data/k8s/schemas.json, written by
scripts/k8s_schemas.py with its citations), and carry the plan: GPUs per pod, nodes per
group, instances, the parallel settings. Negative controls show the validation can fail.

    k8s_manifest_test.py SHARDWISE DATA_DIR
"""
import copy
import json
import os
import subprocess
import sys

import jsonschema
import yaml

shardwise, data = sys.argv[1], sys.argv[2]
schemas = json.load(open(os.path.join(data, "schemas.json")))
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {what}")


def launch(plan, engine, *extra):
    r = subprocess.run([shardwise, "launch", "--plan", os.path.join(data, plan), "--engine", engine, "--format", "k8s", *extra],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"{plan} {engine}: exit {r.returncode}: {r.stderr.strip()}")
    docs = [d for d in yaml.safe_load_all(r.stdout) if d is not None]
    for d in docs:
        kind = d.get("kind")
        check(kind in schemas, f"{plan} {engine}: a {kind} (no schema for it)")
        if kind in schemas:
            errors = sorted(jsonschema.Draft7Validator(schemas[kind]).iter_errors(d), key=lambda e: list(e.path))
            for e in errors[:5]:
                print(f"  {plan} {engine} {kind}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
            check(not errors, f"{plan} {engine}: the {kind} validates against {schemas['sources'].get(kind, '?')}")
    return docs


def of_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def args_text(container):
    return " ".join(container.get("command", []) + container.get("args", []))


# a TP16 instance over two nodes of 8 H100
for engine, tp_flag in (("vllm", "--tensor-parallel-size 16"), ("sglang", "--tp-size 16")):
    docs = launch("tp16-plan.json", engine)
    lws = of_kind(docs, "LeaderWorkerSet")
    check(len(lws) == 1, f"tp16 {engine}: one LeaderWorkerSet")
    if lws:
        t = lws[0]["spec"]["leaderWorkerTemplate"]
        check(t["size"] == 2, f"tp16 {engine}: a group of 2 pods (nodes)")
        check(lws[0]["spec"]["replicas"] == 1, f"tp16 {engine}: 1 replica")
        for role in ("leaderTemplate", "workerTemplate"):
            c = t[role]["spec"]["containers"][0]
            check(c["resources"]["limits"]["nvidia.com/gpu"] == 8, f"tp16 {engine}: 8 GPUs in the {role}'s pod")
        lead = args_text(t["leaderTemplate"]["spec"]["containers"][0])
        check(tp_flag in lead, f"tp16 {engine}: the leader runs {tp_flag}: {lead[:160]}")
        work = args_text(t["workerTemplate"]["spec"]["containers"][0])
        check("LWS_LEADER_ADDRESS" in work, f"tp16 {engine}: the worker finds its leader")
        if engine == "sglang":
            check("--node-rank $(LWS_WORKER_INDEX)" in work, "tp16 sglang: the worker's node rank from its index")
    svc = of_kind(docs, "Service")
    check(len(svc) == 1 and svc[0]["spec"]["selector"].get("role") == "leader", f"tp16 {engine}: a Service in front of the leader")

docs = launch("tp16-plan.json", "trtllm")
dgd = of_kind(docs, "DynamoGraphDeployment")
check(len(dgd) == 1, "tp16 trtllm: a DynamoGraphDeployment (Dynamo starts TensorRT-LLM's ranks across nodes)")
if dgd:
    w = dgd[0]["spec"]["services"]["TrtllmWorker"]
    check(w["multinode"]["nodeCount"] == 2 and w["resources"]["limits"]["gpu"] == "8", "tp16 trtllm: 2 nodes of 8 GPUs")
cms = of_kind(docs, "ConfigMap")
check(any("tensor_parallel_size: 16" in c["data"]["config.yml"] for c in cms), "tp16 trtllm: tensor_parallel_size 16 in its options")

# disaggregated: 2 prefill instances of TP4 beside 1 decode instance of TP8
for engine in ("vllm", "sglang", "trtllm"):
    docs = launch("disagg-plan.json", engine)
    dgd = of_kind(docs, "DynamoGraphDeployment")
    check(len(dgd) == 1, f"disagg {engine}: one DynamoGraphDeployment")
    if not dgd:
        continue
    s = dgd[0]["spec"]
    check(s["backendFramework"] == engine, f"disagg {engine}: backendFramework {engine}")
    p, d = s["services"]["PrefillWorker"], s["services"]["DecodeWorker"]
    check(p["replicas"] == 2 and p["resources"]["limits"]["gpu"] == "4", f"disagg {engine}: 2 prefill workers of 4 GPUs")
    check(d["replicas"] == 1 and d["resources"]["limits"]["gpu"] == "8", f"disagg {engine}: 1 decode worker of 8 GPUs")
    pa, da = args_text(p["extraPodSpec"]["mainContainer"]), args_text(d["extraPodSpec"]["mainContainer"])
    if engine == "vllm":
        check("--tensor-parallel-size 4" in pa and "--is-prefill-worker" in pa, f"disagg vllm: prefill args {pa[:160]}")
        check("--tensor-parallel-size 8" in da and "--is-prefill-worker" not in da, f"disagg vllm: decode args {da[:160]}")
    elif engine == "sglang":
        check("--tp-size 4" in pa and "--disaggregation-mode prefill" in pa, f"disagg sglang: prefill args {pa[:160]}")
        check("--tp-size 8" in da and "--disaggregation-mode decode" in da, f"disagg sglang: decode args {da[:160]}")
    else:
        texts = {c["metadata"]["name"]: c["data"]["config.yml"] for c in of_kind(docs, "ConfigMap")}
        check(any(n.endswith("prefill-config") and "tensor_parallel_size: 4" in t for n, t in texts.items()), "disagg trtllm: prefill TP4")
        check(any(n.endswith("decode-config") and "tensor_parallel_size: 8" in t for n, t in texts.items()), "disagg trtllm: decode TP8")
        check("--disaggregation-mode prefill" in pa and "--disaggregation-mode decode" in da, "disagg trtllm: the workers' roles")

# two one-node TP8 instances: a Deployment of 2 pods of 8 GPUs
for engine in ("vllm", "sglang", "trtllm"):
    docs = launch("tp8x2-plan.json", engine)
    dep = of_kind(docs, "Deployment")
    check(len(dep) == 1, f"tp8x2 {engine}: one Deployment")
    if dep:
        c = dep[0]["spec"]["template"]["spec"]["containers"][0]
        check(dep[0]["spec"]["replicas"] == 2 and c["resources"]["limits"]["nvidia.com/gpu"] == 8, f"tp8x2 {engine}: 2 pods of 8 GPUs")
        check(dep[0]["spec"]["selector"]["matchLabels"] == dep[0]["spec"]["template"]["metadata"]["labels"],
              f"tp8x2 {engine}: the selector matches the pods")
    if engine == "trtllm":
        check(any(c["metadata"]["name"] == dep[0]["metadata"]["name"] + "-config" for c in of_kind(docs, "ConfigMap")),
              "tp8x2 trtllm: the options file in a ConfigMap")

# negative controls: the schemas refuse an unknown field, a wrong type and a missing required field
good = of_kind(launch("tp16-plan.json", "sglang"), "LeaderWorkerSet")[0]
for what, mutate in (("an unknown container field", lambda m: m["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0].update(gpus=8)),
                     ("size as a string", lambda m: m["spec"]["leaderWorkerTemplate"].update(size="2")),
                     ("a container without its name", lambda m: m["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0].pop("name"))):
    bad = copy.deepcopy(good)
    mutate(bad)
    check(not jsonschema.Draft7Validator(schemas["LeaderWorkerSet"]).is_valid(bad), f"negative control: {what} is refused")
dgd_good = of_kind(launch("disagg-plan.json", "vllm"), "DynamoGraphDeployment")[0]
bad = copy.deepcopy(dgd_good)
bad["spec"]["services"]["PrefillWorker"]["multinode"] = {"nodeCount": 1}
check(not jsonschema.Draft7Validator(schemas["DynamoGraphDeployment"]).is_valid(bad), "negative control: a multinode of 1 node is refused")

# a hostile model path reaches the engine as one word, as typed: Kubernetes' $(...) expansion
# escaped ('$$('), and single-quoted inside the `sh -c` of vLLM's Ray head
hostile = "x $(HOME); touch PWNED"
docs = launch("tp16-plan.json", "vllm", "--model-path", hostile)
lead = of_kind(docs, "LeaderWorkerSet")[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"]
check(lead[:2] == ["sh", "-c"] and "'x $$(HOME); touch PWNED'" in lead[2], f"hostile path in the Ray head's script: {lead[2][-200:]}")
dep = of_kind(launch("tp8x2-plan.json", "sglang", "--model-path", hostile), "Deployment")[0]
cmd = dep["spec"]["template"]["spec"]["containers"][0]["command"]
check("x $$(HOME); touch PWNED" in cmd, "hostile path: one word of the container's command, $( escaped")

# bad input: exit 2 naming the flag
for argv, flag in ((["--format", "yaml"], "--format"), (["--image", "x"], "--image")):
    r = subprocess.run([shardwise, "launch", "--plan", os.path.join(data, "tp8x2-plan.json"), "--engine", "vllm", *argv],
                       capture_output=True, text=True)
    check(r.returncode == 2 and flag in r.stderr, f"{' '.join(argv)}: exit 2 naming {flag} ({r.returncode}: {r.stderr.strip()})")

print(f"k8s manifests: {checks - failures} of {checks} checks passed")
sys.exit(1 if failures else 0)
