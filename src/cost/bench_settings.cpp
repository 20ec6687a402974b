#include "cost/bench_settings.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/units.hpp"
#include "model/derived.hpp"

namespace shardwise {
namespace {

// tuning.py BYTES_PER_ELEM by the checkpoint's quant_algo: NVFP4 0.5, FP8 and FP8 block
// scales 1, none 2; nullopt for the formats build.py's TUNED_QUANTS leaves out (MXFP4,
// int4 AWQ/GPTQ, int8), which take the BuildConfig defaults instead.
std::optional<double> tuned_bytes(const Formats& f) {
  const DType linear[] = {f.attention, f.dense, f.experts};
  bool fp4 = false, fp8 = false;
  for (DType d : linear) {
    if (d == DType::kInt4 || d == DType::kInt8) return std::nullopt;
    if (d == DType::kFp4) {
      if (f.mxfp4) return std::nullopt;
      fp4 = true;
    }
    if (d == DType::kFp8) fp8 = true;
  }
  if (fp4 && fp8) return std::nullopt;  // ModelOpt's MIXED_PRECISION (fp8 beside NVFP4): not tuned either
  if (fp4) return 0.5;
  if (fp8) return 1.0;
  return 2.0;
}

// Elements the safetensors files hold for n weights of format d: NVFP4 packs two per byte
// (n/2 uint8) beside an fp8 scale per 16 (n/16); the others one each (fp8's scales are
// 1/16384 of it with 128x128 blocks, none per tensor: left out).
double stored(std::int64_t n, DType d) { return static_cast<double>(n) * (d == DType::kFp4 ? 0.5625 : 1.0); }

}  // namespace

std::optional<TrtllmBenchSettings> trtllm_bench_settings(const ModelSpec& m, const Formats& f, const GpuSpec& gpu, std::int64_t world,
                                                         std::int64_t pp, double avg_isl, double avg_osl, std::int64_t max_isl,
                                                         double kv_fraction, std::string* why) {
  world = std::max<std::int64_t>(1, world);
  pp = std::max<std::int64_t>(1, pp);
  TrtllmBenchSettings s;
  const auto bytes = tuned_bytes(f);
  if (!bytes) {
    s.max_batch_size = 2048;  // BuildConfig.max_batch_size
    s.max_num_tokens = 8192;  // BuildConfig.max_num_tokens
  } else {
    const ParamBreakdown p = count_params(m).total;
    const double count = static_cast<double>(p.embedding + p.lm_head + p.norms + p.router) + stored(p.attention, f.attention) +
                         stored(p.dense_mlp + p.shared_experts, f.dense) + stored(p.routed_experts, f.experts);
    const double engine_gib = count * *bytes / units::kGi;
    const double n_gpus = static_cast<double>(world * pp);
    const double total_gib = gpu.hbm_capacity.value() / units::kGi * n_gpus;
    const double available = total_gib - engine_gib;
    if (!(available > 0)) {
      if (why) {
        *why = fmt::format("trtllm-bench estimates {:.1f} GiB of weights ({:.3g} stored parameters x {} B) against {:.1f} GiB on {} GPU{} and stops",
                           engine_gib, count, *bytes, total_gib, world * pp, world * pp == 1 ? "" : "s");
      }
      return std::nullopt;
    }
    const double kv_b = f.kv == DType::kFp8 ? 1.0 : f.kv == DType::kFp4 ? 0.5 : 2.0;
    const std::int64_t head = m.attention == AttentionKind::kMla || m.head_dim <= 0 ? m.hidden / std::max<std::int64_t>(1, m.num_heads) : m.head_dim;
    const double per_token_gib =
        2.0 * static_cast<double>(m.num_layers) * static_cast<double>(std::max(world, m.num_kv_heads)) * static_cast<double>(head) * kv_b / units::kGi;
    const double requests = available * kv_fraction / (per_token_gib * (avg_isl + avg_osl));
    if (!(requests >= 1.0)) {  // tuning.py: "The amount of KV cache memory is insufficient"
      if (why) {
        *why = fmt::format("trtllm-bench estimates {:.2f} requests of {:.0f} + {:.0f} tokens in the KV cache left beside {:.1f} GiB of weights and stops",
                           requests, avg_isl, avg_osl, engine_gib);
      }
      return std::nullopt;
    }
    s.estimated = true;
    s.kv_requests = requests;
    // finetune_setting, optimistic tuning on
    const double raw_bs = std::min(requests, 4096.0) / static_cast<double>(pp);
    const double raw_token = std::min(raw_bs * (1.0 + avg_isl / avg_osl), 32768.0);
    const auto up = [](double x, double step) { return static_cast<std::int64_t>(step * std::ceil(x / step)); };
    s.max_batch_size = raw_bs < 256 ? std::max<std::int64_t>(64, up(raw_bs, 32)) : raw_bs < 1024 ? up(raw_bs, 128) : up(raw_bs, 256);
    s.max_num_tokens = raw_token < 4096 ? std::max<std::int64_t>(2048, up(raw_token, 256)) : raw_token < 8192 ? up(raw_token, 512) : up(raw_token, 1024);
  }
  // general.py get_settings: with chunked prefill off, a whole prompt and the batch fit one iteration
  s.max_num_tokens = std::max(s.max_num_tokens, max_isl + s.max_batch_size);
  return s;
}

EngineTraits with_trtllm_bench_caps(EngineTraits e, const ModelSpec& m, const GpuSpec& gpu, const Workload& w, const Degrees& d,
                                    bool seqs_given, bool tokens_given, std::string* note, double kv_fraction) {
  if (e.name != "trtllm" || w.mode != Mode::kOffline || seqs_given || tokens_given) return e;
  const Formats f = resolve_formats(m, w);
  std::string why;
  const auto s = trtllm_bench_settings(m, f, gpu, d.stage_width(), d.pp, static_cast<double>(w.isl), static_cast<double>(w.osl), w.isl,
                                       kv_fraction, &why);
  if (!s) {
    if (note) *note = why + ": the profile's caps are kept";
    return e;
  }
  e.max_num_seqs = s->max_batch_size;
  e.max_num_tokens = s->max_num_tokens;
  e.caps_origin = "trtllm-bench";
  if (note) {
    *note = s->estimated
                ? fmt::format("offline on trtllm: trtllm-bench's caps, max_batch_size {} and max_num_tokens {} per rank (its estimate: {:.0f} "
                              "requests of {} + {} tokens in the KV cache at fraction {:.2f}); --max-num-seqs and --max-num-tokens replace them",
                              s->max_batch_size, s->max_num_tokens, s->kv_requests, w.isl, w.osl, kv_fraction)
                : fmt::format("offline on trtllm: trtllm-bench's caps, max_batch_size {} and max_num_tokens {} per rank (the defaults it "
                              "takes for formats it does not tune); --max-num-seqs and --max-num-tokens replace them",
                              s->max_batch_size, s->max_num_tokens);
  }
  return e;
}

}  // namespace shardwise
