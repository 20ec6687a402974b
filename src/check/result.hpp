// A serving benchmark's result file, as the tool wrote it (docs/check.md has each format
// with its source): vLLM's `vllm bench serve --save-result` JSON, SGLang's
// `python3 -m sglang.bench_serving --output-file` JSONL (one object per run; the last is
// read), NVIDIA aiperf's profile_export_aiperf.json and genai-perf's
// profile_export_genai_perf.json. Read into one shape: what was offered and what was measured.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace shardwise {

// One latency over the requests, ms; a statistic the tool did not write is nullopt.
struct MeasuredLatency {
  std::optional<double> mean, p50, p90, p95, p99;
};

struct MeasuredRun {
  std::string file;
  std::string tool;  // "vllm", "sglang", "aiperf", "genai-perf"
  // what was offered: a Poisson rate (nullopt: as fast as possible), a cap on requests in flight
  std::optional<double> request_rate;
  std::optional<std::int64_t> max_concurrency;
  std::int64_t completed = 0;               // requests that finished
  std::optional<double> duration_s;         // the benchmark's wall time
  std::optional<double> mean_input, mean_output;      // tokens per completed request
  std::vector<std::int64_t> input_lens, output_lens;  // per request, where the tool writes them
  // what was measured
  std::optional<double> request_throughput, output_throughput;  // req/s, output tok/s (the deployment)
  MeasuredLatency ttft, tpot, itl, e2e;
};

// The tools' formats, told apart by their keys. Errors name the file and the field.
Expected<MeasuredRun> parse_measured_run(std::string_view text, const std::string& file);
Expected<MeasuredRun> load_measured_run(const std::string& path);

}  // namespace shardwise
