// Engine profiles: what a serving engine changes in the cost model, kept as data
// (data/engines/<name>.yaml, compiled in), read at a version (docs/cost-model.md,
// "Engine profiles").
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "cost/simulator.hpp"

namespace shardwise {

// The profile of `name` (trtllm, vllm, sglang) at `version` ("" = its default version);
// max_num_tokens, when given, overrides the profile's token budget. Errors name the flag
// (--engine, --engine-version, --max-num-tokens).
Expected<EngineTraits> load_engine_profile(const std::string& name, const std::string& version = "",
                                           std::optional<std::int64_t> max_num_tokens = std::nullopt);
Expected<EngineTraits> parse_engine_profile(std::string_view yaml, const std::string& file, const std::string& version);
std::string engine_profile_names();  // "sglang, trtllm, vllm"
// The engine the flags ask for (--engine, --engine-version, --max-num-tokens, --max-num-seqs;
// the Python module's keywords of the same names): the generic engine when no name is
// given; a name or version given empty is an error, as is a version that is not dotted
// numbers (an rc/post/dev suffix allowed). A version newer than the profile describes is
// accepted with the profile's newest traits and a sentence in `note` saying so.
Expected<EngineTraits> engine_traits_of(const std::optional<std::string>& name, const std::optional<std::string>& version,
                                        std::optional<std::int64_t> max_num_tokens, std::optional<std::int64_t> max_num_seqs,
                                        std::string* note = nullptr);
// The engine with `steps` decode iterations per scheduling decision (--decode-steps; the
// Python keyword decode_steps=): SGLang runs them (--num-continuous-decode-steps); vLLM 0.11
// (multi-step scheduling was removed with its V0 engine) and TensorRT-LLM have none, so
// more than 1 is refused for them. Errors name the flag.
Expected<EngineTraits> with_decode_steps(EngineTraits e, std::int64_t steps);
// The engine with TensorRT-LLM's attention-DP balancing (--adp-balance WAIT,TIMEOUT; the
// config's attention_dp_config: enable_balance, batching_wait_iters, timeout_iters): trtllm
// only (vLLM and SGLang hold no prompts back), 0 to 1000 batching iterations and 1 to 10000
// timeout iterations. Errors name the flag.
Expected<EngineTraits> with_adp_balance(EngineTraits e, std::int64_t wait_iters, std::int64_t timeout_iters);
// "3,9" -> (3, 9); errors name --adp-balance and the text as typed.
Expected<std::pair<std::int64_t, std::int64_t>> parse_adp_balance(const std::string& text);
// The engine with CUDA-graph batch sizes for its decode-only iterations, per attention-DP
// rank (--cuda-graph-batch-sizes 128,256,384,512; the plan file's
// engine_settings.cuda_graph_batch_sizes; the Python keyword cuda_graph_batch_sizes=): 1 to
// kMaxCudaGraphSizes sizes from 1 to kMaxCudaGraphBatch (plan/plan.hpp), in any order (kept
// ascending, repeats dropped). Errors name the flag.
Expected<EngineTraits> with_cuda_graph_batch_sizes(EngineTraits e, std::vector<std::int64_t> sizes);
// "128,256,384,512" -> the sizes; errors name --cuda-graph-batch-sizes and the text as typed.
Expected<std::vector<std::int64_t>> parse_cuda_graph_batch_sizes(const std::string& text);
// "128,256,384,512": a size list as the flag takes it (the one formatter of one).
std::string cuda_graph_batch_sizes_text(const std::vector<std::int64_t>& sizes);
// Bad input when the engine is not built for the GPU's vendor (TensorRT-LLM on an AMD GPU),
// naming `flag`; nullopt for the generic engine and the engines that run there.
std::optional<Error> engine_gpu_error(const EngineTraits& e, const GpuSpec& gpu, const std::string& flag);
// Why (empty: it runs there): "trtllm is built for NVIDIA GPUs only (for AMD GPUs: vllm, sglang)".
std::string engine_gpu_mismatch(const EngineTraits& e, const GpuSpec& gpu);
// "0.11", "0.10.2rc1", "1.0.post1": dotted numbers (at most four), then an optional
// rc/a/b/post/dev suffix with its number.
bool is_version_text(std::string_view v);
// "0.10" < "0.9.1"? No: versions compare number by number (0.9.1 < 0.10). nullopt when the
// text is not dotted numbers (an optional suffix after the numbers, as in 1.0rc2, is ignored).
std::optional<int> compare_versions(std::string_view a, std::string_view b);

}  // namespace shardwise
