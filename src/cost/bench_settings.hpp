// What trtllm-bench runs when its command gives no caps: the max_batch_size and
// max_num_tokens it derives from the model, the GPUs and the dataset's lengths
// (docs/cost-model.md, "Engine profiles": trtllm-bench's settings).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cost/simulator.hpp"
#include "hardware/gpu.hpp"
#include "model/model_spec.hpp"
#include "plan/plan.hpp"
#include "workload/workload.hpp"

namespace shardwise {

struct TrtllmBenchSettings {
  std::int64_t max_batch_size = 0;  // per attention-DP rank (the LLM API's max_batch_size)
  std::int64_t max_num_tokens = 0;  // per iteration of one rank
  // true: tuning.py's estimate; false: a format it does not tune (MXFP4, int4, int8): the
  // BuildConfig defaults, 2048 and 8192 (so are fp8 and NVFP4 weights together: MIXED_PRECISION)
  bool estimated = false;
  double kv_requests = 0;  // the estimate's requests in the KV cache (0 when not estimated)
};

// trtllm-bench throughput (PyTorch backend) with neither --max_batch_size nor
// --max_num_tokens: tensorrt_llm/bench/build/build.py get_benchmark_engine_settings and
// tuning.py calc_engine_setting / finetune_setting, then benchmark/utils/general.py, which
// (chunked prefill off, its default) raises max_num_tokens to max_isl + max_batch_size.
// `world` is the --tp of the command (tp x attention DP here), `pp` its --pp; the lengths are
// the dataset's mean input and output and its longest input; kv_fraction is
// --kv_cache_free_gpu_mem_fraction. The estimate is the tool's, quirks included: every
// layer keeps every token (no sliding window), KV heads = max(world, num_key_value_heads) of
// head_dim (hidden / heads where the config has none: 56 for DeepSeek's MLA), and the
// weights counted as the safetensors store them. nullopt, with `why`, where trtllm-bench
// stops: the weights it estimates do not fit in the GPUs' memory, or not one request's KV
// cache fits beside them. GPU memory is the catalog's HBM (trtllm-bench reads the device's
// own total, which for a GPU the catalog gives in decimal GB can differ by a few percent).
std::optional<TrtllmBenchSettings> trtllm_bench_settings(const ModelSpec& m, const Formats& f, const GpuSpec& gpu, std::int64_t world,
                                                         std::int64_t pp, double avg_isl, double avg_osl, std::int64_t max_isl,
                                                         double kv_fraction, std::string* why = nullptr);

// trtllm-bench's default KV fraction (--kv_cache_free_gpu_mem_fraction 0.90; NVIDIA's
// perf-overview runs raise it to 0.95).
constexpr double kTrtllmBenchKvFraction = 0.90;

// TensorRT-LLM in offline mode runs what `trtllm-bench throughput` runs: with no caps given
// (seqs_given, tokens_given: --max-num-seqs, --max-num-tokens or a plan file's), the engine
// with trtllm-bench's max_batch_size and max_num_tokens for these degrees, formats and
// lengths (caps_origin "trtllm-bench"), and in `note` a sentence saying so. Any other engine
// or mode, or caps given, comes back unchanged; so does a model whose weights trtllm-bench
// estimates too large for the GPUs (it stops there), with the reason in `note`. `kv_fraction`:
// its --kv_cache_free_gpu_mem_fraction (a run that states another, as NVIDIA's 0.95).
EngineTraits with_trtllm_bench_caps(EngineTraits e, const ModelSpec& m, const GpuSpec& gpu, const Workload& w, const Degrees& d,
                                    bool seqs_given, bool tokens_given, std::string* note = nullptr,
                                    double kv_fraction = kTrtllmBenchKvFraction);

}  // namespace shardwise
