// The rows of TensorRT-LLM's post-1.0 performance-overview page (NVIDIA/TensorRT-LLM
// docs/source/developer-guide/perf-overview.md at commit 03e27c7d5ff0: rows 138-153 of
// ../shared/calibration/public-measurements.csv and data/validation/trtllm-perf-overview-heldout.csv)
// as the page says they were run: `trtllm-bench throughput` over a dataset of a stated number
// of requests, all queued at once, timed from the first request to the last completion, with
// the page's `llm_options.yml` (CUDA graphs padded to its batch-size list; attention-DP
// balancing for DeepSeek-R1). Facts of the page, each cited where it is set; nothing fitted.
#pragma once
#include <cstdint>
#include <string>

#include "public_rows.hpp"

namespace shardwise::bench {

// Whether a row comes from that page (its source and the commit in its locator).
bool is_perf_overview_row(const std::string& source, const std::string& locator);
// Whether a row comes from TensorRT-LLM 0.19.0's page (docs/source/performance/perf-overview.md
// @v0.19.0: rows 1-13 of the shared file and data/validation/trtllm-0.19-perf-overview-heldout.csv).
// Its text (the version the shared file cites, stored index id 2997649200, whose llm_options.yml
// uses the later cuda_graph_config keys: it may postdate the tag) documents the same
// procedure: `trtllm-bench throughput` over a fixed-length dataset of the request count its
// table gives per length pair, all queued at once, CUDA graphs padded to the same list.
bool is_perf_overview_019_row(const std::string& source);
// That page's request count ("Preparing a Dataset": 30000 at 128/128; 3000 at 128/2048,
// 2048/128, 1000/1000 and 500/2000; 1500 at 128/4096, 1000/2000, 2048/2048 and 5000/500;
// 1000 at 20000/2000); 1024/2048, which its throughput tables hold and its request table omits,
// takes 1000/2000's. 0 for a pair it does not list.
std::int64_t perf_overview_019_requests(std::int64_t isl, std::int64_t osl);
// The page's request count for an input / output length pair ("Preparing a Dataset": 3000 at
// 1024/1024, 1500 at 8192/1024 and 1024/8192, 1000 at 32768/1024 and 1024/32768); 1000/1000,
// which the table omits, takes 1024/1024's count. 0 for a pair it does not list.
std::int64_t perf_overview_requests(std::int64_t isl, std::int64_t osl);
// Turns an offline row of that page into the run it was: a burst of the page's request count
// (RowMetric::kOfflineRun), decode-only iterations padded to the page's CUDA-graph sizes, and
// DeepSeek-R1's attention-DP balancing (batching_wait_iters 0, timeout_iters 60). Returns
// false (the row unchanged) for a length pair the page does not list.
bool perf_overview_run(PublicRow& r, const std::string& model);
// The same for a row of the 0.19.0 page (its request count; no model there runs attention DP).
bool perf_overview_019_run(PublicRow& r);

}  // namespace shardwise::bench
