// A workload: what the model instance is asked to do, and the SLOs it must meet.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/dtype.hpp"
#include "model/model_spec.hpp"
#include "workload/serving.hpp"

namespace shardwise {

enum class Mode {
  kDecode,   // steady decode steps at a given context (the paper's setting)
  kPrefill,  // process a batch of prompts of isl tokens (time to first token)
  kOffline,  // a stream of requests with isl input and osl output tokens
  kServe,    // requests arriving over time (serve/): the closed form is the offline stream's at the mean lengths
};
const char* to_string(Mode m);
// Offline and serve: a stream of requests of isl input and osl output tokens (the closed form
// of both is the offline stream's).
inline bool is_stream(Mode m) { return m == Mode::kOffline || m == Mode::kServe; }

struct Workload {
  std::string name;
  Mode mode = Mode::kDecode;
  std::int64_t isl = 0;      // input (prompt) tokens per request; prefill and offline
  std::int64_t osl = 0;      // output tokens per request; offline
  std::int64_t context = 0;  // decode: tokens already in each sequence's KV cache
  std::optional<std::int64_t> batch;  // concurrent sequences per model instance; nullopt = "max"
  std::optional<double> ttft_ms;      // time-to-first-token SLO
  std::optional<double> tpot_ms;      // time-per-output-token SLO
  // SLOs on percentiles (mode serve; sorted by percentile). The closed forms have one
  // figure per plan, held to every bound (a necessary condition: a percentile >= p50).
  std::vector<SloBound> ttft_pct, tpot_pct;
  ServeSpec serve;  // mode serve: arrivals, lengths, requests, seed
  // Number formats. nullopt ("auto", the default) plans the checkpoint in its own formats
  // (ModelSpec::quant), bf16 where it has none; a dtype given replaces every weight
  // component's (weights) or the KV cache's. expert_dtype replaces the routed experts' alone.
  // make_context resolves them once (SimContext::formats); read the formats there.
  std::optional<DType> weights_dtype;
  bool weights_mxfp4 = false;  // weights_dtype fp4 given as "mxfp4" (its block scales: Formats::mxfp4)
  std::optional<DType> kv_dtype;
  std::optional<DType> expert_dtype;
  // Speculative decoding (MTP or a draft model): draft tokens verified per decode step and
  // the probability that each is accepted given the one before it (docs/cost-model.md).
  std::int32_t spec_tokens = 0;
  double spec_acceptance = 0.0;  // kModelsAcceptance: the model's published one (resolve_speculation)
  friend bool operator==(const Workload&, const Workload&) = default;
};

// --spec-tokens without --spec-acceptance: the acceptance the model's own draft modules are
// published at, resolved with the model (resolve_speculation).
constexpr double kModelsAcceptance = -1.0;
// DeepSeek-V3's MTP module accepts its draft (the second token) 85-90% of the time
// (DeepSeek-V3 Technical Report, arXiv 2412.19437, section 5.4.3): the lower end.
constexpr double kMtpAcceptance = 0.85;
// The workload's speculative decoding on model `m`: kModelsAcceptance becomes the published
// acceptance of its MTP modules (num_nextn_predict_layers > 0; `note` says so), and on a
// model without them it is bad input naming --spec-acceptance. Every other workload as it is.
Expected<Workload> resolve_speculation(const ModelSpec& m, Workload w, std::string* note = nullptr);

// Command-line overrides; each set field replaces the workload's.
struct WorkloadOverrides {
  std::optional<std::string> mode;
  std::optional<std::int64_t> isl, osl, context;
  std::optional<std::string> batch;  // a number or "max"
  std::optional<double> ttft_ms, tpot_ms;
  // percentile SLOs as text, "ttft:p99<=2000,tpot:p90<=50" (a statistic of mean, p50, p90,
  // p95, p99, p99.9; none: the mean): replaces the workload's SLOs, before --ttft-ms/--tpot-ms
  std::optional<std::string> slo;
  std::optional<std::string> weights_dtype, kv_dtype, expert_dtype;  // a dtype or "auto" (not for experts)
  std::optional<std::int64_t> spec_tokens;
  std::optional<double> spec_acceptance;
  // mode serve (and plan --target-rate): a rate in requests/s ("inf": all at once), closed-loop users
  std::optional<std::string> rate;
  std::optional<std::int64_t> concurrency, requests, seed;
};

// The formats a plan runs in, resolved from the workload and the checkpoint.
struct Formats {
  DType attention = DType::kBf16;  // q/kv/o projection weights
  DType dense = DType::kBf16;      // dense MLP and shared-expert weights
  DType experts = DType::kBf16;    // routed-expert weights
  DType other = DType::kBf16;      // embedding, LM head, norms, router
  DType kv = DType::kBf16;         // the KV cache
  // the block-scale scheme of the low-bit weights (weight_bytes): fp4 as MXFP4 (a gpt-oss
  // checkpoint, --weights-dtype mxfp4) rather than NVFP4; fp8 with 128x128 block scales
  // (DeepSeek's quant_method fp8) rather than one scale per tensor
  bool mxfp4 = false, fp8_blocks = false;
  friend bool operator==(const Formats&, const Formats&) = default;
};
Formats resolve_formats(const ModelSpec& m, const Workload& w);
// Bytes per weight element of format `d`, its block scales counted (docs/cost-model.md,
// "Number formats"): NVFP4 4 bits + an fp8 (e4m3) scale per 16 elements = 0.5625 B (one fp32
// per tensor besides, negligible); MXFP4 4 bits + an e8m0 scale per 32 = 0.53125 B; int4
// (AWQ, GPTQ, group 128) 4 bits + an fp16 scale and a 4-bit zero per 128 = 0.51953125 B; fp8
// with 128x128 blocks 1 + an fp32 per 16,384 = 1.000244 B; the rest their element's bytes.
double weight_bytes(DType d, const Formats& f);
// A serve workload that says how requests arrive (a rate, users, all at once, a trace);
// plan --mode serve needs none (it searches the rate), simulate does.
bool has_arrivals(const Workload& w);
// "fp8" when every weight component shares one format, else "attn bf16, experts fp4, ...".
std::string formats_label(const Formats& f, bool moe);
// Tokens each sequence gains per decode step: 1 + p + ... + p^n for n drafts accepted
// with probability p each (a draft counts only if every one before it was accepted).
double tokens_per_step(const Workload& w);
constexpr std::int32_t kMaxSpecTokens = 16;
// The tightest of a mean SLO and percentile bounds (the smallest milliseconds), if any.
std::optional<SloBound> tightest_slo(const std::optional<double>& mean, const std::vector<SloBound>& pcts);

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;  // 16M tokens per sequence
constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;

Expected<Workload> parse_workload_yaml(std::string_view text, const std::string& file, const std::string& name);
// A preset name (decode-16k, ...) or a path to a workload YAML.
Expected<Workload> load_workload(const std::string& name_or_path);
std::vector<std::string> workload_preset_names();
// Applies overrides and re-checks the whole workload. Errors name the flag (--isl) when
// `origin` is empty (the command line), else the origin file and its field
// (plan.json: field 'workload_overrides.isl'). A mode switch drops the lengths and SLOs
// the new mode does not use; a length given for a mode that does not use it is an error.
Expected<Workload> apply_overrides(Workload w, const WorkloadOverrides& o, const std::string& origin = {});
// Checks the fields that depend on the mode (context for decode, isl/osl, ...).
std::optional<Error> validate_workload(const Workload& w, const std::string& file);

}  // namespace shardwise
