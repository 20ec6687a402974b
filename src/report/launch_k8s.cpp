#include "report/launch_k8s.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/format.hpp"

namespace shardwise {
namespace {

using Json = nlohmann::ordered_json;

// The head's address and a worker's index inside a LeaderWorkerSet group: environment
// variables LWS sets in every container, which Kubernetes expands in command and args.
constexpr const char* kLeader = "$(LWS_LEADER_ADDRESS)";
constexpr const char* kWorkerIndex = "$(LWS_WORKER_INDEX)";

// --- a block-style YAML writer for the manifests (strings double-quoted: JSON's escapes) ---
// a string stays plain where YAML reads it back as that string (a name, a path, a flag),
// else double-quoted (JSON's escapes are YAML's): numbers-to-be, booleans, '$(...)', spaces
std::string scalar(const Json& v) {
  if (!v.is_string()) return v.dump();
  const std::string& t = v.get_ref<const std::string&>();
  static const char* const kReserved[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"};
  bool plain = !t.empty() && (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '/' || t[0] == '_');
  for (const char c : t) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '/' || c == '_');
  std::string lower;
  for (const char c : t) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* r : kReserved) plain = plain && lower != r;
  return plain ? t : v.dump();
}
bool block(const Json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void write(std::string& out, const Json& v, int ind) {
  const std::string pad(static_cast<std::size_t>(ind), ' ');
  if (v.is_object()) {
    for (const auto& [key, x] : v.items()) {
      if (block(x)) {
        out += pad + key + ":\n";
        write(out, x, ind + 2);
      } else if (x.is_string() && x.get_ref<const std::string&>().find('\n') != std::string::npos) {
        // a file's text (a ConfigMap's): a literal block, line by line ('|-' where it lacks a final newline)
        const std::string& t = x.get_ref<const std::string&>();
        out += pad + key + (t.back() == '\n' ? ": |\n" : ": |-\n");
        std::size_t at = 0;
        while (at < t.size()) {
          const auto nl = t.find('\n', at);
          out += pad + "  " + t.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
          if (nl == std::string::npos) break;
          at = nl + 1;
        }
      } else {
        out += pad + key + ": " + (x.is_object() ? "{}" : x.is_array() ? "[]" : scalar(x)) + "\n";
      }
    }
    return;
  }
  for (const auto& x : v) {  // an array
    if (x.is_object() && !x.empty()) {
      std::string item;
      write(item, x, ind + 2);
      out += pad + "- " + item.substr(static_cast<std::size_t>(ind + 2));
    } else if (block(x)) {
      out += pad + "-\n";
      write(out, x, ind + 2);
    } else {
      out += pad + "- " + scalar(x) + "\n";
    }
  }
}

std::string document(const Json& v) {
  std::string out = "---\n";
  write(out, v, 0);
  return out;
}

// The value after `flag` in argv ("" when absent).
std::string value_of(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : std::string();
}
void set_value(std::vector<std::string>& argv, const std::string& flag, const std::string& v) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  if (it != argv.end() && it + 1 != argv.end()) *(it + 1) = v;
}
// argv without each of `flags` and the value after it (flags in `bare` have none)
std::vector<std::string> without(const std::vector<std::string>& argv, std::initializer_list<const char*> flags,
                                 std::initializer_list<const char*> bare = {}) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (std::find(flags.begin(), flags.end(), argv[i]) != flags.end()) {
      ++i;
      continue;
    }
    if (std::find(bare.begin(), bare.end(), argv[i]) != bare.end()) continue;
    out.push_back(argv[i]);
  }
  return out;
}

// One word of an `sh -c` script: quoted, except the leader's address, which the shell expands.
std::string sh_word(const std::string& w) {
  const auto at = w.find(kLeader);
  if (at == std::string::npos) return shell_quote(w);
  const std::string pre = w.substr(0, at), post = w.substr(at + std::string(kLeader).size());
  return (pre.empty() ? "" : shell_quote(pre)) + "\"$LWS_LEADER_ADDRESS\"" + (post.empty() ? "" : shell_quote(post));
}
std::string sh_words(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& w : argv) s += (s.empty() ? "" : " ") + sh_word(w);
  return s;
}

// Kubernetes expands $(NAME) in command and args: a '$(' in a word of the user's (a model
// path) is written '$$(' so that it reaches the process as typed; the LWS placeholders stay.
std::string k8s_literal(const std::string& w) {
  if (w.find(kLeader) != std::string::npos || w.find(kWorkerIndex) != std::string::npos) return w;
  std::string out;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] == '$' && i + 1 < w.size() && w[i + 1] == '(') out += '$';
    out += w[i];
  }
  return out;
}

// The process at `node` of instance 0, its words made literal for Kubernetes.
std::optional<LaunchProc> find_proc(const LaunchSpec& s, std::int64_t node) {
  for (const auto& p : s.procs) {
    if (p.node != node || p.instance != 0) continue;
    LaunchProc q = p;
    for (auto& w : q.argv) w = k8s_literal(w);
    for (auto& e : q.env) e = k8s_literal(e);
    return q;
  }
  return std::nullopt;
}

// TensorRT-LLM's options file, mounted from a ConfigMap at /config.
constexpr const char* kConfigDir = "/config";
std::vector<std::string> with_config_path(std::vector<std::string> argv) {
  set_value(argv, "--extra_llm_api_options", std::string(kConfigDir) + "/config.yml");
  return argv;
}

Json env_of(const LaunchProc& p) {
  Json env = Json::array();
  for (const auto& e : p.env) {
    const auto eq = e.find('=');
    const std::string name = e.substr(0, eq);
    if (name == "CUDA_VISIBLE_DEVICES") continue;  // a pod sees the GPUs it was given
    env.push_back({{"name", name}, {"value", e.substr(eq + 1)}});
  }
  return env;
}

// A pod spec: one container running `command` on `gpus` GPUs, /dev/shm in memory (NCCL and the
// engines' workers need more than the runtime's 64 MB), the options file where there is one.
Json pod_spec(const std::string& engine, const std::string& image, const Json& command, const Json& env, int port, std::int64_t gpus,
              const std::string& config_map) {
  Json c = {{"name", engine}, {"image", image}, {"command", command}};
  if (!env.empty()) c["env"] = env;
  if (port > 0) c["ports"] = Json::array({{{"name", "http"}, {"containerPort", port}}});
  c["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
  Json mounts = Json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  Json volumes = Json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}});
  if (!config_map.empty()) {
    mounts.push_back({{"name", "config"}, {"mountPath", kConfigDir}});
    volumes.push_back({{"name", "config"}, {"configMap", {{"name", config_map}}}});
  }
  c["volumeMounts"] = mounts;
  return {{"containers", Json::array({c})}, {"volumes", volumes}};
}

Json config_map(const std::string& name, const std::string& text) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"config.yml", text}}}};
}

Json service(const std::string& name, const Json& selector, int port) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}}},
          {"spec", {{"selector", selector}, {"ports", Json::array({{{"name", "http"}, {"port", port}, {"targetPort", port}}})}}}};
}

std::string comments(const std::string& header) {
  std::string out;
  std::size_t at = 0;
  while (at < header.size()) {
    const auto nl = header.find('\n', at);
    const std::string line = header.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (!line.empty()) out += (line.front() == '#' ? line : "# " + line) + "\n";
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

// --- NVIDIA Dynamo ---------------------------------------------------------------------

const char* framework(ServeEngine e) { return to_string(e); }

// A Dynamo worker: the engine's flags as its worker module takes them (dynamo.vllm takes
// vLLM's engine arguments, dynamo.sglang SGLang's server arguments, dynamo.trtllm an engine
// options file), without the address, port and node wiring the operator gives it.
struct DynamoWorker {
  Json command, args;
  std::string config;  // TensorRT-LLM: the options file, with the parallel settings
};
DynamoWorker dynamo_worker(ServeEngine e, const LaunchSpec& s, const std::string& role, const std::string& model) {
  DynamoWorker w;
  const auto p = find_proc(s, 0);
  const std::vector<std::string> argv = p ? p->argv : std::vector<std::string>{};
  std::vector<std::string> args;
  switch (e) {
    case ServeEngine::kVllm: {
      w.command = Json::array({"python3", "-m", "dynamo.vllm"});
      args = {"--model", k8s_literal(model)};
      const auto rest = without(std::vector<std::string>(argv.begin() + std::min<std::ptrdiff_t>(3, std::ssize(argv)), argv.end()),
                                {"--port", "--kv-transfer-config", "--data-parallel-size-local", "--data-parallel-address",
                                 "--data-parallel-rpc-port", "--data-parallel-start-rank", "--distributed-executor-backend",
                                 "--data-parallel-backend"},
                                {"--headless"});
      args.insert(args.end(), rest.begin(), rest.end());
      if (role == "prefill") args.emplace_back("--is-prefill-worker");
      break;
    }
    case ServeEngine::kSglang: {
      w.command = Json::array({"python3", "-m", "dynamo.sglang"});
      args = without(std::vector<std::string>(argv.begin() + std::min<std::ptrdiff_t>(3, std::ssize(argv)), argv.end()),
                     {"--host", "--port", "--disaggregation-bootstrap-port", "--nnodes", "--node-rank", "--dist-init-addr"});
      set_value(args, "--disaggregation-transfer-backend", "nixl");  // Dynamo's KV transfer
      break;
    }
    case ServeEngine::kTrtllm: {
      w.command = Json::array({"python3", "-m", "dynamo.trtllm"});
      args = {"--model-path", k8s_literal(model), "--extra-engine-args", std::string(kConfigDir) + "/config.yml"};
      if (!role.empty()) args.insert(args.end(), {"--disaggregation-mode", role});
      // the command line's settings, as the LLM API's own keys in the options file
      w.config = s.config_file;
      for (const auto& [flag, key] : {std::pair{"--tp_size", "tensor_parallel_size"}, {"--pp_size", "pipeline_parallel_size"},
                                      {"--ep_size", "moe_expert_parallel_size"}, {"--max_batch_size", "max_batch_size"},
                                      {"--max_num_tokens", "max_num_tokens"}, {"--max_seq_len", "max_seq_len"}}) {
        if (const std::string v = value_of(argv, flag); !v.empty()) w.config += fmt::format("{}: {}\n", key, v);
      }
      break;
    }
  }
  w.args = args;
  return w;
}

Json dynamo_service(const std::string& ns, const std::string& type, std::int32_t replicas, const Json& container,
                    const std::string& config_map = "", const Json& extra = {}) {
  Json s = {{"dynamoNamespace", ns}, {"componentType", type}, {"replicas", replicas}};
  for (const auto& [k, v] : extra.items()) s[k] = v;
  Json pod = {{"mainContainer", container}};
  if (!config_map.empty()) pod["volumes"] = Json::array({{{"name", "config"}, {"configMap", {{"name", config_map}}}}});
  s["extraPodSpec"] = pod;
  return s;
}

// A worker service of `s` (a pool, or the one aggregated instance); its ConfigMap, if any,
// appended to `docs`.
Json worker_service(ServeEngine e, const LaunchSpec& s, const std::string& role, const K8sOptions& k, const std::string& image,
                    const std::string& cm_name, std::string* docs) {
  const DynamoWorker w = dynamo_worker(e, s, role, k.model);
  Json c = {{"name", "main"}, {"image", image}, {"command", w.command}, {"args", w.args}};
  std::string cm;
  if (!w.config.empty()) {
    cm = cm_name;
    c["volumeMounts"] = Json::array({{{"name", "config"}, {"mountPath", kConfigDir}}});
    *docs += document(config_map(cm, w.config));
  }
  const std::int64_t per_pod = s.nodes > 1 ? std::min(s.gpus_per_node, s.instance_gpus) : s.instance_gpus;
  Json extra = {{"resources", {{"requests", {{"gpu", std::to_string(per_pod)}}}, {"limits", {{"gpu", std::to_string(per_pod)}}}}}};
  if (s.nodes > 1) extra["multinode"] = {{"nodeCount", s.nodes}};
  return dynamo_service(k.name, "worker", s.replicas, c, cm, extra);
}

Json dynamo_graph(ServeEngine e, const std::string& name, Json services) {
  return {{"apiVersion", "nvidia.com/v1alpha1"},
          {"kind", "DynamoGraphDeployment"},
          {"metadata", {{"name", name}}},
          {"spec", {{"backendFramework", framework(e)}, {"services", std::move(services)}}}};
}

Json frontend(const std::string& ns, const std::string& image, int port) {
  const Json c = {{"name", "main"}, {"image", image}, {"command", Json::array({"python3", "-m", "dynamo.frontend"})},
                  {"args", Json::array({"--http-port", std::to_string(port)})}};
  return dynamo_service(ns, "frontend", 1, c);
}

}  // namespace

std::string k8s_name(const std::string& text) {
  std::string s;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      s += static_cast<char>(std::tolower(u));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  if (s.size() > 40) s.resize(40);
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "shardwise" : s;
}

std::string default_engine_image(ServeEngine e) {
  switch (e) {
    case ServeEngine::kVllm: return "vllm/vllm-openai:v0.11.0";
    case ServeEngine::kSglang: return "lmsysorg/sglang:v0.5.2";
    case ServeEngine::kTrtllm: return "nvcr.io/nvidia/tensorrt-llm/release:1.0.0";
  }
  return "";
}

std::string default_dynamo_image(ServeEngine e) {
  switch (e) {
    case ServeEngine::kVllm: return "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.5.0";
    case ServeEngine::kSglang: return "nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.5.0";
    case ServeEngine::kTrtllm: return "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.5.0";
  }
  return "";
}

Expected<std::string> launch_k8s(ServeEngine e, const LaunchSpec& s, const K8sOptions& k, const std::string& header) {
  std::string out = comments(header);
  if (!s.runnable) return out + "# no manifest: the engine runs no layout near this plan (above)\n";
  const auto head = find_proc(s, 0);
  if (!head) return Error{"--format", "", "a plan whose launch starts a process", "k8s"};
  const std::string engine = to_string(e);
  if (s.nodes == 1) {
    const std::string cm = s.config_file.empty() ? "" : k.name + "-config";
    if (!cm.empty()) out += document(config_map(cm, s.config_file));
    // every instance a pod of its own GPUs: instance 0's command, the port of its own
    const std::string image = k.image.empty() ? default_engine_image(e) : k.image;
    const Json labels = {{"app", k.name}};
    const Json pod = pod_spec(engine, image, with_config_path(head->argv), env_of(*head), s.port, s.instance_gpus, cm);
    out += document({{"apiVersion", "apps/v1"},
                     {"kind", "Deployment"},
                     {"metadata", {{"name", k.name}, {"labels", labels}}},
                     {"spec", {{"replicas", s.replicas}, {"selector", {{"matchLabels", labels}}},
                               {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod}}}}}});
    out += document(service(k.name, labels, s.port));
    return out;
  }
  if (e == ServeEngine::kTrtllm) {
    // TensorRT-LLM starts its ranks with MPI: Dynamo's operator runs a multinode worker
    std::string docs;
    const std::string image = k.image.empty() ? default_dynamo_image(e) : k.image;
    Json worker = worker_service(e, s, "", k, image, k.name + "-worker-config", &docs);
    Json services = {{"Frontend", frontend(k.name, image, k.port > 0 ? k.port : 8000)}, {"TrtllmWorker", worker}};
    return out + "# TensorRT-LLM across nodes: an NVIDIA Dynamo graph (its operator starts the MPI ranks)\n" + docs +
           document(dynamo_graph(e, k.name, std::move(services)));
  }
  const auto worker = find_proc(s, 1);
  if (!worker) return Error{"--format", "", "a launch that starts every node of the instance", "k8s"};
  const std::string image = k.image.empty() ? default_engine_image(e) : k.image;
  const std::int64_t per_pod = std::min(s.gpus_per_node, s.instance_gpus);
  Json lead_cmd, work_cmd;
  switch (head->kind) {
    case LaunchProc::Kind::kRayHead:
      // Ray's head, then vllm serve once the group's nodes have joined (LWS_GROUP_SIZE of them)
      lead_cmd = Json::array({"sh", "-c",
                              fmt::format("ray start --head --port=6379 && until [ `ray status 2>/dev/null | grep -c node_` -ge {} ]; "
                                          "do sleep 5; done && exec {}",
                                          s.nodes, sh_words(head->argv))});
      work_cmd = Json::array({"ray", "start", std::string("--address=") + kLeader + ":6379", "--block"});
      break;
    default: {
      lead_cmd = head->argv;
      std::vector<std::string> w = worker->argv;
      if (!value_of(w, "--node-rank").empty()) set_value(w, "--node-rank", kWorkerIndex);  // SGLang
      if (const std::string r = value_of(w, "--data-parallel-start-rank"); !r.empty()) {
        // vLLM's data-parallel ranks per node: the worker's first rank from its index in the group
        set_value(w, "--data-parallel-start-rank", "@RANK@");
        std::string script = "exec " + sh_words(w);
        const auto at = script.find(shell_quote("@RANK@"));
        script.replace(at, shell_quote("@RANK@").size(), fmt::format("$((LWS_WORKER_INDEX * {}))", r));
        work_cmd = Json::array({"sh", "-c", script});
      } else {
        work_cmd = w;
      }
    }
  }
  const Json lead_labels = {{"role", "leader"}}, work_labels = {{"role", "worker"}};
  Json lead_pod = pod_spec(engine, image, lead_cmd, env_of(*head), s.port, per_pod, "");
  Json work_pod = pod_spec(engine, image, work_cmd, env_of(*worker), 0, per_pod, "");
  out += document({{"apiVersion", "leaderworkerset.x-k8s.io/v1"},
                   {"kind", "LeaderWorkerSet"},
                   {"metadata", {{"name", k.name}}},
                   {"spec",
                    {{"replicas", s.replicas},
                     {"leaderWorkerTemplate",
                      {{"size", s.nodes},
                       {"restartPolicy", "RecreateGroupOnPodRestart"},
                       {"leaderTemplate", {{"metadata", {{"labels", lead_labels}}}, {"spec", lead_pod}}},
                       {"workerTemplate", {{"metadata", {{"labels", work_labels}}}, {"spec", work_pod}}}}}}}});
  out += document(service(k.name, {{"leaderworkerset.sigs.k8s.io/name", k.name}, {"role", "leader"}}, s.port));
  return out;
}

Expected<std::string> launch_k8s_disagg(ServeEngine e, const LaunchSpec& prefill, const LaunchSpec& decode, const K8sOptions& k,
                                        const std::string& header) {
  std::string out = comments(header);
  if (!prefill.runnable || !decode.runnable) return out + "# no manifest: the engine runs no layout near one of the pools (above)\n";
  const std::string image = k.image.empty() ? default_dynamo_image(e) : k.image;
  std::string docs;
  Json pw = worker_service(e, prefill, "prefill", k, image, k.name + "-prefill-config", &docs);
  Json dw = worker_service(e, decode, "decode", k, image, k.name + "-decode-config", &docs);
  Json services = {{"Frontend", frontend(k.name, image, k.port > 0 ? k.port : 8000)}, {"PrefillWorker", pw}, {"DecodeWorker", dw}};
  return out + docs + document(dynamo_graph(e, k.name, std::move(services)));
}

}  // namespace shardwise
