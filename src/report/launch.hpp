// `shardwise launch`: the command lines that start a plan on a real serving
// engine (vLLM, SGLang, TensorRT-LLM), and, where the engine cannot express the
// plan, the nearest plan it can run with both predicted costs (docs/launch.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/engine_limits.hpp"
#include "cost/simulator.hpp"
#include "plan/plan_json.hpp"
#include "plan/space.hpp"

namespace shardwise {

const char* engine_version(ServeEngine e);  // the versions whose flags we target

struct EngineFit {
  bool exact = false;                  // the engine runs the plan as it is (or an equal-cost twin)
  std::vector<std::string> differences;  // what the engine cannot express, plainly
  Plan plan;                           // the plan given
  Metrics plan_metrics;
  Plan runnable;                       // what the commands start (== plan when exact)
  Metrics runnable_metrics;
  bool runnable_found = false;
};
// The plan itself when the engine expresses it (slots whose choice changes no cost
// count as expressed); else the best-predicted plan among the engine's layouts
// nearest to it (the same pipeline depth; the same stage width tp x attn_dp in the
// engine's layouts, or the attention groups as replicas of tp GPUs) with the
// engine's sharding, at the plan's concurrency per GPU or, where that does not
// fit, the best batch of the ladder.
EngineFit fit_engine(ServeEngine e, const SimContext& ctx, const SearchSpace& space, const Plan& plan);

// What a launch starts, as data (launch_text fills it when LaunchOptions::spec is set):
// the Kubernetes manifests (report/launch_k8s.hpp) are written from it, so that they start
// the processes the text prints. One process per instance on a node of its own, or per node
// of an instance that spans nodes (node 0 its head).
struct LaunchProc {
  enum class Kind : std::uint8_t {
    kServe,      // the serving command (argv)
    kRayHead,    // vLLM across nodes: start Ray's head, wait for the other nodes, then argv
    kRayWorker,  // vLLM across nodes: join the head's Ray cluster (argv empty)
    kMpiHead,    // TensorRT-LLM across nodes: mpirun on the head starts every rank (argv: the served command)
    kMpiWorker,  // TensorRT-LLM across nodes: nothing to start, mpirun reaches it over ssh
  };
  Kind kind = Kind::kServe;
  std::int64_t node = 0, instance = 0;
  std::vector<std::string> env;   // "NAME=value" before the command (CUDA_VISIBLE_DEVICES, side-channel ports)
  std::vector<std::string> argv;  // the command's words, unquoted
};
struct LaunchSpec {
  bool runnable = false;           // false: no command (the text says why)
  std::vector<LaunchProc> procs;
  std::int64_t nodes = 1;          // nodes one instance spans
  std::int64_t instance_gpus = 1, gpus_per_node = 1;
  std::int32_t replicas = 1;       // instances (of this pool)
  int port = 0;                    // the first instance's HTTP port
  std::string config_file;         // TensorRT-LLM's extra options file ("" none), named config.yml in argv
  std::vector<std::string> notes;  // the text's notes
};

struct LaunchOptions {
  ServeEngine engine = ServeEngine::kVllm;
  std::string model_path;                    // empty: the preset's HF repo, a checkpoint folder, else a placeholder (model_path in launch.cpp)
  std::string head_address = "<HEAD_NODE_IP>";
  int port = 0;                              // 0: the engine's default
  std::string role;                          // "prefill" or "decode" in a disaggregated deployment; "" aggregated
  std::int64_t first_gpu = 0;                // the first GPU of the deployment (a decode pool after the prefill pool's)
  std::string checkpoint_quant;              // a --model-path folder's own quantisation method ("" none or not a folder)
  std::string plan_file;                     // the plan's path, for the benchmark's `shardwise check` line ("" none)
  std::string serving;                       // a serve plan's simulated serving prediction, one line ("" none; launch_plan sets it)
  LaunchSpec* spec = nullptr;                // when set, launch_text also records what it starts here
  LaunchSpec* prefill_spec = nullptr;        // launch_disagg_text: the prefill pool's (spec: the decode pool's)
  // launch_plan: "text" (the commands) or "k8s" (Kubernetes manifests, report/launch_k8s.hpp),
  // and the container image of the manifests ("" the engine's public image)
  std::string format = "text";
  std::string image;
  // launch_plan: the cost model of the serving prediction and the engine fit (the plan file's
  // recorded one; nullptr: the GPU's fitted parameters)
  const CostParams* params = nullptr;
};
// The HF repository of a preset, or "" (synthetic models, files).
std::string hf_repo_for(const std::string& preset);
// The preset a plan's model names: a preset in any letter case, or a Hugging Face id of a
// preset's checkpoint (deepseek-ai/DeepSeek-V3); "" for a file or an unknown name.
std::string preset_key(const std::string& model);
// The checkpoint the commands serve: --model-path, else the published checkpoint in the
// plan's weight format where its maker ships one, else the preset's repository, a checkpoint
// folder (one that holds weights), or the placeholder <path-to-checkpoint> (a sentence in
// `notes` for each substitution).
std::string served_model(const SimContext& ctx, const PlanFile& file, const LaunchOptions& o, std::vector<std::string>* notes = nullptr);

std::string launch_text(const SimContext& ctx, const PlanFile& file, const EngineFit& fit, const LaunchOptions& o);
// A disaggregated deployment (file.prefill_pool beside file.plan, the decode pool): each
// pool's commands with the engine's disaggregation flags (SGLang --disaggregation-mode,
// vLLM's NIXL KV connector, TensorRT-LLM's cache transceiver), then the router or proxy
// that sends a request to a prefill instance and on to a decode instance (docs/launch.md).
// `prefill_ctx` is `ctx` with the prefill pool's engine settings (the plan's
// disaggregated.prefill.engine_settings), `ctx` the decode pool's.
std::string launch_disagg_text(const SimContext& prefill_ctx, const SimContext& ctx, const PlanFile& file, const EngineFit& prefill,
                               const EngineFit& decode, const LaunchOptions& o);

}  // namespace shardwise
