#include "mlperf_rows.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "row_text.hpp"
#include "workload/serving.hpp"

namespace shardwise::bench {
namespace {

// The MLPerf datasets' length distributions, from ../shared/calibration/mlperf-dataset-lengths.md
// (per-sample means, medians and ranges). A right-skewed set (mean above median) is a lognormal
// of that median and mean, sigma^2 = 2 ln(mean / median), clamped to the set's range; a
// left-skewed one (405B's and DeepSeek-R1's inputs, 405B's outputs) stays fixed at its mean, which
// a lognormal cannot express. The row's own mean (its derived output mean) replaces the
// dataset's, the shape is the dataset's.
struct DatasetShape {
  const char* dataset;  // the start of the row's dataset column
  double in_mean, in_median;
  std::int64_t in_min, in_max;
  double out_mean, out_median;  // the reference outputs (0: no shape in tokens)
  std::int64_t out_max;
};
constexpr DatasetShape kMlperfShapes[] = {
    // OpenOrca (llama2-70b): input 222.33 / median 152, 48-1021; GPT-4 answers 218.89 / 190, cap 1024
    {"MLPerf OpenOrca", 222.33, 152, 48, 1021, 218.89, 190, 1024},
    // Llama-3.1-405B long-context mix: input 9428.64 / median 10112; outputs 684.68 / median 753
    {"MLPerf Llama3.1-405B", 9428.64, 10112, 476, 19988, 684.68, 753, 1830},
    // CNN/DailyMail (llama3.1-8b): input 870.73 / median 784, 79-2540; outputs not stated in tokens
    {"MLPerf CNN/DailyMail", 870.73, 784, 79, 2540, 0, 0, 0},
    // Mixtral mix: input 427.39 / median 283, 35-1948; outputs 144.84 / median 113, cap 1024
    {"MLPerf Mixtral", 427.39, 283, 35, 1948, 144.84, 113, 1024},
    // DeepSeek-R1 mix: input 803.79 / median 901.5; reference outputs 4043.45 / median 2194, cap 32768
    {"MLPerf DeepSeek-R1", 803.79, 901.5, 52, 3140, 4043.45, 2194, 32768},
};
// NVIDIA's generation caps: max_output_len of closed/NVIDIA/code/<benchmark>/tensorrt/
// generation_config.json (DeepSeek-R1 20,000, where the reference generation ran to 32,768;
// Llama-3.1-405B 2,000; Llama-2-70B 1,024; Llama-3.1-8B 128). The results path names the
// benchmark.
struct GenerationCap {
  const char* results;  // "closed/NVIDIA/results/<system>/<benchmark>/"
  std::int64_t max_output;
};
constexpr GenerationCap kNvidiaGenerationCaps[] = {
    {"/deepseek-r1/", 20000}, {"/llama3.1-405b/", 2000}, {"/llama2-70b-99/", 1024}, {"/llama3.1-8b/", 128}};
std::int64_t generation_cap(const std::string& source) {
  if (!contains(source, "closed/NVIDIA/results/")) return 0;
  for (const GenerationCap& c : kNvidiaGenerationCaps) {
    if (contains(source, c.results)) return c.max_output;
  }
  return 0;
}

// A lognormal of the set's shape whose draws, clamped to [lo, hi] as the generator clamps
// them, average the row's mean: the mean parameter solved by fixed-point iteration on the
// clamped mean (m <- m x mean / clamped(m): its slope at the fixed point is 1 minus the share
// of the clamped mean drawn inside (lo, hi), in [0, 1), so it converges monotonically).
// Nothing (fixed at the mean) when the set is not right-skewed, when the mean lies outside
// (lo, hi), or in the unexpected case that the iteration does not settle.
std::optional<LengthDist> shaped(double mean, double shape_mean, double shape_median, std::int64_t lo, std::int64_t hi) {
  if (!(shape_mean > shape_median) || shape_median <= 0) return std::nullopt;  // fixed at the mean
  if (!(mean > static_cast<double>(lo)) || (hi > 0 && !(mean < static_cast<double>(hi)))) return std::nullopt;
  LengthDist d;
  d.kind = LengthDist::Kind::kLognormal;
  d.sigma = std::sqrt(2.0 * std::log(shape_mean / shape_median));
  d.min = lo;
  d.max = hi;
  double m = mean;
  bool settled = false;
  for (int i = 0; i < 200 && !settled; ++i) {
    const double got = clamped_lognormal_mean(m, d.sigma, static_cast<double>(lo), static_cast<double>(hi));
    settled = std::fabs(got - mean) <= 1e-9 * mean;
    if (!settled) m *= mean / got;
  }
  if (!settled || !std::isfinite(m)) return std::nullopt;
  d.mean = m;
  return d;
}

}  // namespace

double clamped_lognormal_mean(double m, double sigma, double lo, double hi) {
  const auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double mu = std::log(m) - sigma * sigma / 2.0;
  const double a = lo > 0 ? (std::log(lo) - mu) / sigma : -INFINITY;
  const double b = hi > 0 ? (std::log(hi) - mu) / sigma : INFINITY;
  // lo P(X < lo) + E[X; lo < X < hi] + hi P(X > hi), with E[X; a < Z < b] = m (Phi(b - s) - Phi(a - s))
  return (lo > 0 ? lo * phi(a) : 0.0) + m * (phi(b - sigma) - phi(a - sigma)) + (hi > 0 ? hi * phi(-b) : 0.0);
}

void mlperf_lengths(PublicRow& r, const std::string& dataset, const std::string& source) {
  const std::int64_t cap = generation_cap(source);
  for (const DatasetShape& d : kMlperfShapes) {
    if (!starts_with(dataset, d.dataset)) continue;
    r.workload.serve.input = shaped(static_cast<double>(r.workload.isl), d.in_mean, d.in_median, d.in_min, d.in_max);
    r.workload.serve.output = shaped(static_cast<double>(r.workload.osl), d.out_mean, d.out_median, 1, cap > 0 ? std::min(cap, d.out_max) : d.out_max);
    return;
  }
}

// The submitter's caps: TensorRT-LLM's gpu_batch_size (its max_batch_size: per attention-DP
// rank where the config says "per rank", else per instance, which then has one rank; and,
// TensorRT-LLM's limits being per pipeline micro-batch, per micro-batch: scheduler_lanes)
// and max_num_tokens (the runtime value where a build and a runtime value are given); vLLM's
// max_num_seqs and max_num_batched_tokens.
void mlperf_caps(PublicRow& r, const std::string& conc) {
  if (const auto n = number_after(conc, "gpu_batch_size "); n > 0) r.engine.max_num_seqs = n;
  if (const auto n = number_after(conc, "max_num_seqs "); n > 0) r.engine.max_num_seqs = n;
  if (const auto n = number_after(conc, "max_num_batched_tokens "); n > 0) r.engine.max_num_tokens = n;
  if (const auto n = number_after(conc, "runtime "); n > 0) r.engine.max_num_tokens = n;
}

// AMD's MLPerf v5.1 vLLM configs (the rows' source column names the file): vLLM's V0 engine
// (V1 where a config sets VLLM_USE_V1: 1, interactive_mi325x, which no row runs) with multi-step scheduling (num_scheduler_steps decode iterations per scheduling decision)
// and, where chunked prefill is off, V0's default scheduler: waiting prompts run as a batch
// of their own before any decode (prefill first), up to max_num_batched_tokens; block_size
// tokens per KV block. The Llama-2-70B configs also switch on the decode-batch target of
// AMD's scheduler patches (VLLM_LLAMA2_MLPERF_SCHED: 1; closed/AMD/setup/vllm_patches/
// scheduler-change-to-have-prefill-and-decode-reach-go.patch and
// add-MIN_REQUIRE_PREFILL_QUERY-condition.patch, both in llama2_patch_files_gfx942.txt; the
// Mixtral configs leave it off): VLLM_LLAMA2_MLPERF_{MIN,MAX}_TARGET_DECODE_BATCH,
// _STEP_DECODE_BATCH, _MIN_REQUIRE_PREFILL_QUERY (the patch's default 10 where unset) and
// _MIN_REQUIRE_PREFILL_GPU_BLOCK (blocks; the patch's default 0). Read from
// ntuhpc/inference_results_v5.1@387c3dd04e69 closed/AMD/code/<path> (the line of
// num_scheduler_steps in the comment); facts of the submission, nothing fitted.
namespace {
struct VllmV0Config {
  const char* path;
  std::int64_t scheduler_steps;
  bool chunked_prefill;
  std::int64_t max_num_seqs, max_num_batched_tokens, block_size;
  // the decode-batch target: min, max, step (0, 0, 0: off), prompts waited for, KV blocks kept free
  std::int64_t target_min, target_max, target_step, min_waiting, min_free_blocks;
};
constexpr VllmV0Config kAmdVllmConfigs[] = {
    {"llama2-70b/offline_mi300x.yaml", 11, false, 1792, 40960, 32, 1280, 1536, 256, 10, 2200},  // L25
    {"llama2-70b/server_mi300x.yaml", 9, false, 650, 40960, 32, 352, 608, 16, 8, 0},            // L21
    {"llama2-70b/interactive_mi300x.yaml", 8, false, 600, 40960, 32, 0, 0, 0, 0, 0},           // L15
    {"llama2-70b/offline_mi325x.yaml", 7, false, 2700, 65536, 32, 2048, 2048, 256, 10, 0},     // L31
    {"llama2-70b/server_mi325x.yaml", 9, false, 1024, 40960, 32, 512, 832, 16, 10, 0},         // L33
    {"llama2-70b/interactive_mi325x.yaml", 1, true, 3840, 43008, 16, 0, 0, 0, 0, 0},           // L35 (VLLM_USE_V1: 1, so the V0 scheduler patches never run; no row runs this config)
    {"mixtral-8x7b/offline_mi300x.yaml", 9, false, 5000, 51200, 32, 0, 0, 0, 0, 0},            // L16
    {"mixtral-8x7b/server_mi300x.yaml", 8, false, 4096, 32000, 16, 0, 0, 0, 0, 0},             // L18
    {"mixtral-8x7b/offline_mi325x.yaml", 13, false, 4736, 51200, 16, 0, 0, 0, 0, 0},           // L16
    {"mixtral-8x7b/server_mi325x.yaml", 10, false, 2560, 32000, 16, 0, 0, 0, 0, 0},            // L18
};
}  // namespace

void amd_vllm_config(PublicRow& r, const std::string& source) {
  for (const VllmV0Config& c : kAmdVllmConfigs) {
    if (source.find(std::string("harness_llm/models/") + c.path) == std::string::npos) continue;
    r.engine.decode_steps = c.scheduler_steps;
    r.engine.prefill_first = !c.chunked_prefill;
    r.engine.max_num_seqs = c.max_num_seqs;
    r.engine.max_num_tokens = c.max_num_batched_tokens;
    r.engine.kv_block_tokens = c.block_size;
    r.engine.decode_target_min = c.target_min;
    r.engine.decode_target_max = c.target_max;
    r.engine.decode_target_step = std::max<std::int64_t>(1, c.target_step);
    r.engine.prefill_min_waiting = c.min_waiting;
    r.engine.prefill_min_free_tokens = c.min_free_blocks * c.block_size;
    return;
  }
}

namespace {

// NVIDIA's MLPerf v5.1 TensorRT-LLM configs (closed/NVIDIA/configs/<system>/<scenario>/<benchmark>.py):
// every one sets 'batch_scheduler_policy': 'max_util' (the capacity scheduler's
// MAX_UTILIZATION: KV blocks on demand, the newest request paused when they run out), not
// the GUARANTEED_NO_EVICT default of the trtllm profile. The DeepSeek-R1 ones enable
// attention-DP balancing (adp_balancing_enable True) with batching_wait_iters and
// timeout_iters, read from their runtime flags (the Server files as mirrored in
// ykamiset/inference_results_v5.1@e9ccad4d, the Offline one in ntuhpc@387c3dd04e69).
// The same files set the CUDA graphs of their decode-only iterations: 'cuda_graph_batch_sizes'
// with 'cuda_graph_padding_enabled': True (line 43 of each, ntuhpc@387c3dd04e69), written to
// trtllm-serve's cuda_graph_config {batch_sizes, enable_padding} by code/llmlib/config.py.
struct TrtllmAdpConfig {
  const char* path;
  std::int64_t wait_iters, timeout_iters;
  std::array<std::int64_t, 11> graph_sizes;  // ascending, zeros after the last
};
constexpr TrtllmAdpConfig kNvidiaAdpConfigs[] = {
    {"configs/B200-SXM-180GBx8/Server/deepseek-r1.py", 3, 9, {128, 256, 384, 512}},
    {"configs/GB200-NVL72_GB200-186GB_aarch64x72/Server/deepseek-r1.py", 3, 9, {1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512}},
    {"configs/GB300-NVL72_GB300-288GB_aarch64x72_TRT/Server/deepseek-r1.py", 2, 6, {128, 256, 384, 512}},
    {"configs/B200-SXM-180GBx8/Offline/deepseek-r1.py", 10, 500, {128, 256, 384, 512}},
};

// loadgen's Offline query: generated_samples_per_query of each run's mlperf_log_detail.txt
// (the dataset's samples repeated to outlast min_duration at offline_expected_qps x 1.1,
// rounded up to whole datasets; DeepSeek-R1's min_query_count 26,328 = 6 x 4,388).
struct OfflineRun {
  const char* results;  // the results directory of the row's source column
  std::int64_t samples;
};
constexpr OfflineRun kOfflineRuns[] = {
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama2-70b-99/Offline/", 1007616},   // 41 x 24,576
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama3.1-405b/Offline/", 8313},      // 1 x 8,313
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama3.1-8b/Offline/", 735240},      // 55 x 13,368
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Offline/", 26328},       // 6 x 4,388
    {"AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99/Offline/", 245760},   // 10 x 24,576
    {"AMD/results/8xMI300X_2xEPYC_9575F/mixtral-8x7b/Offline/", 510000},    // 34 x 15,000
    {"AMD/results/8xMI325X_2xEPYC_9575F_1/llama2-70b-99/Offline/", 319488}, // 13 x 24,576
    // the held-out H200 runs (data/validation/mlperf-v5.1-h200-heldout.csv)
    {"HPE_Cray_XD670_H200_SXM_141GBx8_TRT/llama3.1-8b/Offline/", 761976},    // 57 x 13,368
    {"HPE_Cray_XD670_H200_SXM_141GBx8_TRT/llama2-70b-99/Offline/", 319488},  // 13 x 24,576
};

// loadgen's Server and Interactive runs: generated_query_count of each run's
// mlperf_log_detail.txt (ntuhpc@387c3dd04e69), the queries it generated at the scheduled rate
// for the submitter's min_duration and min_query_count, rounded up to whole passes of the
// dataset (884,736 = 36 x 24,576; 8,313, one pass, over 4,378 s; DeepSeek-R1's 26,328, its
// config's min_query_count = 6 x 4,388, over 5,248 s). Ten minutes of arrivals would have been
// mostly the ramp to the occupancy of requests in the system for minutes.
struct ServerRun {
  const char* results;  // the submitter's results directory of the row's source column, with its scenario
  std::int64_t queries;
};
constexpr ServerRun kServerRuns[] = {
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama2-70b-99/Server/", 884736},                       // 2,432 s
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama2-70b-99/Interactive/", 270336},                  // 1,228 s
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama3.1-405b/Server/", 8313},                         // 4,378 s
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama3.1-405b/Interactive/", 8313},                    // 7,233 s
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama3.1-8b/Server/", 601560},                         // 602 s
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/llama3.1-8b/Interactive/", 481248},                    // 602 s
    {"NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server/", 26328},                          // 5,248 s
    {"NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x72_TRT/deepseek-r1/Server/", 210624},       // 4,675 s
    {"NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x72_TRT/llama3.1-405b/Server/", 33252},      // 1,876 s
    {"NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Server/", 219400},       // 3,652 s
    {"NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/llama3.1-405b/Server/", 99756},      // 5,103 s
    {"NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x4_TRT/llama2-70b-99/Server/", 122880},      // 675 s
    {"AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99/Server/", 73728},                       // 879 s
    {"AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99/Interactive/", 24576},                  // 830 s
    {"AMD/results/8xMI300X_2xEPYC_9575F/mixtral-8x7b/Server/", 405000},                       // 1,211 s
    {"AMD/results/8xMI325X_2xEPYC_9575F_1/llama2-70b-99/Server/", 73728},                     // 673 s
    {"AMD/results/8xMI325X_2xEPYC_9575F_1/mixtral-8x7b/Server/", 255000},                     // 607 s
};

}  // namespace

void nvidia_trtllm_config(PublicRow& r, const std::string& source) {
  // NVIDIA's own submissions, and others' on NVIDIA's harness (a results system named *_TRT,
  // as HPE's: their configs set max_util too)
  if (!contains(source, "closed/NVIDIA/") && !contains(source, "_TRT/")) return;
  r.engine.reserve_full_kv = false;  // max_util
  for (const TrtllmAdpConfig& c : kNvidiaAdpConfigs) {
    if (source.find(c.path) == std::string::npos) continue;
    r.engine.adp_wait_iters = c.wait_iters;
    r.engine.adp_timeout_iters = c.timeout_iters;
    r.engine.cuda_graph_batch_sizes.clear();
    for (const std::int64_t b : c.graph_sizes) {
      if (b > 0) r.engine.cuda_graph_batch_sizes.push_back(b);
    }
    return;
  }
}

std::string mlperf_system_key(const std::string& source) {
  const auto at = source.find("/results/");
  if (at == std::string::npos) return "";
  const std::size_t from = at + 9;
  const auto system_end = source.find('/', from);
  if (system_end == std::string::npos) return "";
  const auto bench_end = source.find('/', system_end + 1);
  if (bench_end == std::string::npos) return "";
  return source.substr(from, bench_end - from);
}

std::int64_t mlperf_offline_samples(const std::string& source) {
  for (const OfflineRun& o : kOfflineRuns) {
    if (contains(source, o.results)) return o.samples;
  }
  return 0;
}

std::int64_t mlperf_server_queries(const std::string& source) {
  for (const ServerRun& o : kServerRuns) {
    if (contains(source, o.results)) return o.queries;
  }
  return 0;
}

}  // namespace shardwise::bench
