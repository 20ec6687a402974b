// The MLPerf Inference v5.1 rows (300-323 of ../shared/calibration/public-measurements.csv)
// as their submissions ran them: the datasets' length distributions, the submitters'
// engine configs and generation caps, loadgen's Offline sample counts. Facts read from the
// submissions (ntuhpc/inference_results_v5.1@387c3dd04e69), each cited where it is set;
// nothing here is fitted.
#pragma once
#include <cstdint>
#include <string>

#include "public_rows.hpp"

namespace shardwise::bench {

// The dataset's input and output length distributions on a row (nothing for a dataset not
// listed), the outputs capped at the submitter's generation limit (`source`: the row's
// source column), each distribution's mean the row's own.
void mlperf_lengths(PublicRow& r, const std::string& dataset, const std::string& source);
// The submitter's caps stated in the row's concurrency column: TensorRT-LLM's gpu_batch_size
// and max_num_tokens, vLLM's max_num_seqs and max_num_batched_tokens.
void mlperf_caps(PublicRow& r, const std::string& conc);
// AMD's vLLM V0 configs: multi-step decode runs, prefill first without chunked prefill, caps.
void amd_vllm_config(PublicRow& r, const std::string& source);
// NVIDIA's TensorRT-LLM configs: the scheduler policy (max_util: KV on demand) and
// attention-DP balancing.
void nvidia_trtllm_config(PublicRow& r, const std::string& source);
// The samples of an Offline run's one query (loadgen's generated_samples_per_query); 0 for
// a run not listed.
std::int64_t mlperf_offline_samples(const std::string& source);
// The queries loadgen generated in the Server or Interactive run whose results `source` names
// (its generated_query_count); 0 for a run not listed.
std::int64_t mlperf_server_queries(const std::string& source);
// The submission's system and benchmark, "B200-SXM-180GBx8_TRT/llama2-70b-99" of
// ".../closed/NVIDIA/results/B200-SXM-180GBx8_TRT/llama2-70b-99/Server/...": an Offline row
// and the Server rows of one deployment share it ("" when the source names no results path).
std::string mlperf_system_key(const std::string& source);

// E[clamp(X, lo, hi)] for a lognormal X of mean m and log-sd sigma (hi <= 0: no upper bound).
double clamped_lognormal_mean(double m, double sigma, double lo, double hi);

}  // namespace shardwise::bench
