// `shardwise launch --format k8s`: Kubernetes manifests that start what `launch` prints
// (docs/launch.md, "Kubernetes"), written from the same LaunchSpec: a Deployment (and a
// Service) for instances within a node, a LeaderWorkerSet for an instance spanning nodes
// (vLLM, SGLang), and an NVIDIA Dynamo DynamoGraphDeployment for disaggregated plans and for
// TensorRT-LLM across nodes (Dynamo starts its ranks).
#pragma once
#include <string>

#include "core/error.hpp"
#include "cost/engine_limits.hpp"
#include "report/launch.hpp"

namespace shardwise {

struct K8sOptions {
  std::string name;   // metadata.name of every object (a DNS label; launch_plan derives it from the model and engine)
  std::string image;  // the container image ("" : the engine's public image at the version planned for)
  std::string model;  // the served checkpoint, for Dynamo's workers
  int port = 0;       // Dynamo's frontend HTTP port (0: 8000)
};

// The DNS-1123 label (lowercase letters, digits and '-', at most 40 characters, starting and
// ending alphanumeric) made of `text`: "DeepSeek-V3 + sglang" -> "deepseek-v3-sglang".
std::string k8s_name(const std::string& text);
// The engine's public image at the version shardwise targets, and Dynamo's runtime image of it.
std::string default_engine_image(ServeEngine e);
std::string default_dynamo_image(ServeEngine e);

// An aggregated plan: a Deployment and a Service (an instance within a node), a
// LeaderWorkerSet and a Service (vLLM or SGLang across nodes), or a DynamoGraphDeployment
// (TensorRT-LLM across nodes); a ConfigMap with TensorRT-LLM's options file. `spec` is what
// launch_text recorded; `header` the text's comment lines, kept as YAML comments.
Expected<std::string> launch_k8s(ServeEngine e, const LaunchSpec& spec, const K8sOptions& k, const std::string& header);
// A disaggregated plan: one DynamoGraphDeployment (a frontend, a prefill and a decode worker).
Expected<std::string> launch_k8s_disagg(ServeEngine e, const LaunchSpec& prefill, const LaunchSpec& decode, const K8sOptions& k,
                                        const std::string& header);

}  // namespace shardwise
