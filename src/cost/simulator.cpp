// The simulator's entry points: a plan's metrics in each mode (decode, prefill, the
// offline stream), the SLO checks and the "max" batch. The model is split by concern:
// collectives.cpp (layouts and collectives), compute.cpp (kernels), memory.cpp, layer.cpp
// and moe.cpp (one layer), stage.cpp (pipeline stages, a step, the exact search's
// tables). Every formula is in docs/cost-model.md; section names there match the comments.
#include "cost/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cost/env.hpp"
#include "cost/moe_load.hpp"

namespace shardwise {
using namespace detail;

std::int64_t graph_padded_batch(const EngineTraits& e, std::int64_t b, std::int64_t attn_dp) {
  const bool defaults = e.cuda_graph_batch_sizes.empty() && e.graph_defaults_on;
  if ((e.cuda_graph_batch_sizes.empty() && !defaults) || b < 1) return b;
  const std::int64_t a = std::max<std::int64_t>(1, attn_dp);
  const std::int64_t per_rank = (b + a - 1) / a;
  // vLLM's own ladder at its current caps: it reaches twice max_num_seqs precisely so that a
  // batch at the cap pads to the next size above it (bounded by the ladder's m alone)
  if (defaults) {
    const std::int64_t g = vllm_default_graph_size(per_rank, e.max_num_seqs, e.max_num_tokens);
    return g == 0 ? b : std::max(b, g * a);
  }
  // sizes given to a named engine: TensorRT-LLM and SGLang capture none above the running-
  // sequence cap (max_batch_size, the running requests); vLLM none above its token budget
  // (max_num_batched_tokens: the sizes count tokens), so a batch at its cap still pads
  const bool named = e.name != "generic";
  const std::int64_t limit = !named ? 0 : e.name == "vllm" ? e.max_num_tokens : e.max_num_seqs;
  const auto& sizes = e.cuda_graph_batch_sizes;
  const auto end = limit > 0 ? std::upper_bound(sizes.begin(), sizes.end(), limit) : sizes.end();
  const auto it = std::lower_bound(sizes.begin(), end, per_rank);
  return it == end ? b : std::max(b, *it * a);
}

std::int64_t vllm_default_graph_size(std::int64_t b, std::int64_t max_num_seqs, std::int64_t max_num_tokens) {
  const std::int64_t m = std::min({max_num_seqs * 2, std::int64_t{512}, max_num_tokens});
  const std::int64_t g = b <= 1 ? 1 : b <= 2 ? 2 : b <= 4 ? 4 : (b + 7) / 8 * 8;
  return g <= m ? g : 0;
}

std::vector<std::int64_t> vllm_default_graph_sizes(std::int64_t max_num_seqs, std::int64_t max_num_tokens) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 1; b <= 512;) {
    const std::int64_t g = vllm_default_graph_size(b, max_num_seqs, max_num_tokens);
    if (g == 0) break;
    out.push_back(g);
    b = g + 1;
  }
  return out;
}

std::vector<std::int64_t> default_graph_sizes(const EngineTraits& e) {
  if (!e.graph_defaults_on || !e.cuda_graph_batch_sizes.empty()) return {};
  return vllm_default_graph_sizes(e.max_num_seqs, e.max_num_tokens);
}

double graph_kv_share(std::int64_t b, std::int64_t padded, std::int64_t attn_dp) {
  const std::int64_t a = std::max<std::int64_t>(1, attn_dp);
  const std::int64_t busiest = (b + a - 1) / a, per_rank = std::max<std::int64_t>(1, padded / a);
  return std::min(1.0, static_cast<double>(busiest) / static_cast<double>(per_rank));
}

DecodeShape graph_decode_shape(const EngineTraits& e, std::int64_t attn_dp, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx) {
  const std::int64_t padded = graph_padded_batch(e, b, attn_dp);
  if (padded == b) return {b, seq, kv_ctx};
  const double share = graph_kv_share(b, padded, attn_dp);
  const auto scaled = [&](std::int64_t c) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(static_cast<double>(c) * share)));
  };
  return {padded, scaled(seq), scaled(kv_ctx)};
}

namespace {

// The closed forms give one figure per plan, held to the mean SLO and to every
// percentile bound (docs/serving.md: a necessary condition for the percentiles).
void check_slo(const Workload& w, Metrics& out, bool explain) {
  if (!out.feasible()) return;
  const auto stat = [](const SloBound& b) { return b.pct > 0 ? slo_stat_name(b.pct) + " " : std::string(); };
  const auto tpot = tightest_slo(w.tpot_ms, w.tpot_pct);
  const auto ttft = tightest_slo(w.ttft_ms, w.ttft_pct);
  if (tpot && out.tpot_s * 1e3 > tpot->ms) {
    out.infeasible = Infeasible::kTpotSlo;
    if (explain) out.reason = fmt::format("TPOT {:.2f} ms exceeds the {}SLO of {} ms by {:.2f} ms", out.tpot_s * 1e3, stat(*tpot), tpot->ms, out.tpot_s * 1e3 - tpot->ms);
  } else if (ttft && out.ttft_s * 1e3 > ttft->ms) {
    out.infeasible = Infeasible::kTtftSlo;
    if (explain) out.reason = fmt::format("TTFT {:.1f} ms exceeds the {}SLO of {} ms by {:.1f} ms", out.ttft_s * 1e3, stat(*ttft), ttft->ms, out.ttft_s * 1e3 - ttft->ms);
  }
}

// A decode-only step of b sequences at context `seq` as the engine's CUDA graphs run it: the
// padded batch (graph_padded_batch), its sequences at the context that keeps the busiest
// rank's KV read its real sequences' (seq x ceil(b / attn_dp) / (padded / attn_dp), at least
// 1 token)
StepResult decode_step(const SimContext& ctx, const Plan& plan, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx, Breakdown* bd) {
  const DecodeShape s = graph_decode_shape(ctx.engine, plan.deg.attn_dp, b, seq, kv_ctx);
  return step(ctx, plan, Phase::kDecode, s.batch, s.seq, s.kv_ctx, bd);
}

// Metrics of a plan at a concrete batch.
Metrics evaluate_at(const SimContext& ctx, const Plan& plan, std::int64_t b, Breakdown* bd, bool explain) {
  const Workload& w = ctx.workload;
  const double gpus = static_cast<double>(plan.deg.instance_gpus());
  Metrics out;
  out.batch = b;
  out.gpus_used = plan.deg.total_gpus();
  switch (w.mode) {
    case Mode::kDecode: {
      const StepResult s = decode_step(ctx, plan, b, w.context, w.context + 1, bd);
      out.micro_batches = s.m;
      out.step_s = s.stage_s;
      out.tpot_s = static_cast<double>(std::max<std::int64_t>(s.m, plan.deg.pp)) * s.stage_s / tokens_per_step(w);
      out.output_tok_s_per_gpu = static_cast<double>(b) / out.tpot_s / gpus;
      out.memory = s.mem;
      out.objective = out.output_tok_s_per_gpu;
      break;
    }
    case Mode::kPrefill: {
      const StepResult s = step(ctx, plan, Phase::kPrefill, b, w.isl, w.isl, bd);
      out.micro_batches = s.m;
      out.step_s = s.stage_s;
      out.ttft_s = static_cast<double>(s.m + plan.deg.pp - 1) * s.stage_s;
      out.input_tok_s_per_gpu = static_cast<double>(b * w.isl) / out.ttft_s / gpus;
      out.memory = s.mem;
      out.objective = out.input_tok_s_per_gpu;
      break;
    }
    case Mode::kOffline:
    case Mode::kServe: {
      // decode at the average context; prefill in chunks of kPrefillChunkTokens per attention
      // group, interleaved (the stages work concurrently in steady state)
      const std::int64_t ctx_avg = w.isl + w.osl / 2;
      // not padded to the CUDA-graph sizes: in the steady state prompts join (nearly) every
      // iteration, and the engines run such iterations eagerly (the serving simulation pads
      // its decode-only ones)
      const StepResult d = step(ctx, plan, Phase::kDecode, b, ctx_avg, w.isl + w.osl, bd);
      const double tpot_dec = static_cast<double>(std::max<std::int64_t>(d.m, plan.deg.pp)) * d.stage_s / tokens_per_step(w);
      const OfflinePrefill op = offline_prefill(w, b, plan.deg.attn_dp, ctx.engine.max_num_tokens);
      Plan pre = plan;
      pre.micro_batches = 1;
      const StepResult pf = step(ctx, pre, Phase::kPrefill, op.chunk, w.isl, w.isl, nullptr);
      const double arrivals_s = op.arrivals == op.chunk ? pf.stage_s : step(ctx, pre, Phase::kPrefill, op.arrivals, w.isl, w.isl, nullptr).stage_s;
      const OfflineTimes t = offline_times(w, b, plan.deg.pp, op, tpot_dec, pf.stage_s, arrivals_s, ctx.engine.max_num_tokens);
      const double round = t.round;
      out.micro_batches = d.m;
      out.step_s = d.stage_s;
      out.tpot_s = t.tpot;
      out.ttft_s = t.ttft;
      out.output_tok_s_per_gpu = static_cast<double>(b * w.osl) / round / gpus;
      out.input_tok_s_per_gpu = out.output_tok_s_per_gpu * static_cast<double>(w.isl) / static_cast<double>(w.osl);
      out.memory = d.mem;
      out.memory.activations = Bytes(std::max(d.mem.activations.value(), pf.mem.activations.value()));
      out.objective = out.output_tok_s_per_gpu;
      break;
    }
  }
  check_memory(out.memory, out, explain);
  check_slo(w, out, explain);
  if (!out.feasible()) out.objective = 0;
  return out;
}

// batch = max: the largest concurrency that fits memory and meets the SLOs. Memory grows
// linearly in the batch; TPOT and TTFT grow monotonically, so double, then bisect on
// feasibility (a step multiple of attn_dp keeps groups even). `start` groups' worth is the
// first batch tried (1 for evaluate(); the exact search passes a known feasible one).
Metrics max_batch_search(const SimContext& ctx, const Plan& probe, std::int64_t start, Breakdown* bd, bool explain) {
  const std::int64_t a = probe.deg.attn_dp;
  // groups' worth: the engine's running sequences per lane x the lanes of one attention-DP rank
  const std::int64_t cap = engine_batch_cap(ctx) * (scheduler_lanes(ctx.engine, probe.deg) / a);
  const std::int64_t limit = std::max<std::int64_t>(1, std::min(kMaxBatch / a, cap > 0 ? cap : kMaxBatch));
  start = std::clamp<std::int64_t>(start, 1, limit);
  Metrics lo = evaluate_at(ctx, probe, start * a, bd, explain);
  if (!lo.feasible()) return lo;
  if (bd) bd->ops.clear();
  std::int64_t good = start, bad = 2 * start;
  bool infeasible_seen = false;
  while (bad <= limit) {
    Metrics m = evaluate_at(ctx, probe, bad * a, nullptr, false);
    if (!m.feasible()) {
      infeasible_seen = true;
      break;
    }
    good = bad;
    bad *= 2;
  }
  if (!infeasible_seen) bad = std::min(bad, limit + 1);  // past the limit counts as infeasible
  while (bad - good > 1) {
    const std::int64_t mid = good + (bad - good) / 2;
    if (evaluate_at(ctx, probe, mid * a, nullptr, false).feasible()) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  Metrics out = evaluate_at(ctx, probe, good * a, bd, explain);
  out.batch_at_engine_cap = cap > 0 && good == cap;
  return out;
}

}  // namespace

std::int64_t scheduler_lanes(const EngineTraits& e, const Degrees& d) {
  return std::max<std::int64_t>(1, d.attn_dp) * (e.limits_per_micro_batch ? std::max<std::int64_t>(1, d.pp) : 1);
}

std::string running_cap_unit(const EngineTraits& e, const Degrees& d) {
  return e.limits_per_micro_batch && d.pp > 1 ? "per attention-DP rank and pipeline micro-batch" : "per attention-DP rank";
}

std::int64_t plan_running_cap(const EngineTraits& e, const Plan& p, Mode mode) {
  if (e.name == "generic" || p.batch <= 0 || mode == Mode::kPrefill) return e.max_num_seqs;
  return std::max(e.max_num_seqs, ceil_div(p.batch, scheduler_lanes(e, p.deg)));
}

std::int64_t engine_batch_cap(const SimContext& ctx) {
  if (ctx.engine.name == "generic" || ctx.workload.mode == Mode::kPrefill) return 0;
  return std::max<std::int64_t>(1, ctx.engine.max_num_seqs);
}

OfflinePrefill offline_prefill(const Workload& w, std::int64_t b, std::int64_t attn_dp, std::int64_t budget) {
  const std::int64_t a = std::max<std::int64_t>(1, attn_dp);
  const std::int64_t bg = std::max<std::int64_t>(1, ceil_div(b, a));  // sequences per attention group
  const std::int64_t per_group = std::clamp<std::int64_t>(std::max<std::int64_t>(1, budget) / std::max<std::int64_t>(1, w.isl), 1, bg);
  // bg x tokens_per_step / osl sequences finish per decode iteration (each gains tokens_per_step tokens)
  const double finish = static_cast<double>(bg) * tokens_per_step(w) / static_cast<double>(std::max<std::int64_t>(1, w.osl));
  const std::int64_t arrive = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(finish - 1e-9)), 1, per_group);
  return OfflinePrefill{per_group * a, arrive * a};
}

OfflineTimes offline_times(const Workload& w, std::int64_t b, std::int64_t pp, const OfflinePrefill& op, double tpot_dec,
                           double chunk_s, double arrivals_s, std::int64_t budget) {
  OfflineTimes t;
  const double bb = static_cast<double>(b);
  t.round = static_cast<double>(w.osl) * tpot_dec + bb * chunk_s / static_cast<double>(op.chunk);
  t.tpot = t.round / static_cast<double>(w.osl);
  const double others = std::max(0.0, bb - static_cast<double>(op.arrivals)) / bb;  // the decoding sequences beside the arrivals
  const double extra_iters = static_cast<double>(ceil_div(w.isl, std::max<std::int64_t>(1, budget)) - 1);
  // a decode iteration takes tpot_dec x tokens_per_step (tpot_dec is per output token)
  t.ttft = static_cast<double>(pp) * arrivals_s + tpot_dec * tokens_per_step(w) * (others + extra_iters);
  return t;
}

int slot_group(int slot) {
  switch (static_cast<Slot>(slot)) {
    case Slot::kAttnNorm:
    case Slot::kFfnNorm: return -1;
    case Slot::kQkv:
    case Slot::kAttention:
    case Slot::kOProj: return kGroupAttention;
    case Slot::kFfn1:
    case Slot::kFfn2: return kGroupMlp;
    case Slot::kRouter: return kGroupRouter;
    case Slot::kExpertFfn1:
    case Slot::kExpertFfn2: return kGroupExperts;
    case Slot::kEmbedding: return kGroupEmbedding;
    case Slot::kLmHead: return kGroupLmHead;
  }
  return kGroupConst;
}

const char* to_string(Infeasible k) {
  switch (k) {
    case Infeasible::kNone: return "feasible";
    case Infeasible::kInvalidPlan: return "invalid plan";
    case Infeasible::kMemory: return "out of memory";
    case Infeasible::kTpotSlo: return "TPOT SLO";
    case Infeasible::kTtftSlo: return "TTFT SLO";
  }
  return "?";
}

double infeasibility_excess(const Metrics& m, const Workload& w) {
  switch (m.infeasible) {
    case Infeasible::kNone: return 0.0;
    case Infeasible::kInvalidPlan: return std::numeric_limits<double>::infinity();
    case Infeasible::kMemory: return m.memory.total().value() / m.memory.capacity.value() - 1.0;
    case Infeasible::kTpotSlo: {
      const auto b = tightest_slo(w.tpot_ms, w.tpot_pct);
      return b ? m.tpot_s * 1e3 / b->ms - 1.0 : 0.0;
    }
    case Infeasible::kTtftSlo: {
      const auto b = tightest_slo(w.ttft_ms, w.ttft_pct);
      return b ? m.ttft_s * 1e3 / b->ms - 1.0 : 0.0;
    }
  }
  return std::numeric_limits<double>::infinity();
}

namespace {
// The fitted few-row ramp's span on `gpu` for one tensor format, over the fitted silicon's:
// (peak x ceiling x bytes per weight / HBM bandwidth) here over (bf16 peak x 2 / bandwidth)
// there. The ramp's few-row time, gemm_half_rows x 2 N K / (peak x gemm_efficiency x ceiling),
// is then the fitted silicon's bf16 one times bytes per weight / 2 times its bandwidth over
// this GPU's: a weight read, whatever the format and whatever the GPU's compute. 1 where a
// peak or a bandwidth is unknown.
double ridge_scale(const GpuSpec& gpu, const GpuSpec& fit, double peak, double bytes_per_weight, double ceiling) {
  const double here = peak * ceiling * bytes_per_weight / gpu.hbm_bandwidth.value();
  const double there = fit.bf16.value() * 2.0 / fit.hbm_bandwidth.value();
  return here > 0 && there > 0 && std::isfinite(here / there) ? here / there : 1.0;
}
}  // namespace

SimContext make_context(const ModelSpec& m, const ClusterSpec& c, const Workload& w, const CostParams& p, EngineTraits engine) {
  SimContext ctx;
  ctx.model = m;
  ctx.cluster = c;
  ctx.workload = w;
  ctx.params = p;
  ctx.graph = build_graph(m);
  ctx.class_prefix.assign(ctx.graph.layer_class.size() + 1, {});
  for (std::size_t i = 0; i < ctx.graph.layer_class.size(); ++i) {
    SW_CHECK(ctx.graph.layer_class[i] < kMaxLayerClasses, "the loader bounds the layer classes");
    ctx.class_prefix[i + 1] = ctx.class_prefix[i];
    ++ctx.class_prefix[i + 1][ctx.graph.layer_class[i]];
  }
  // the distinct stages of every pipeline depth the cluster can hold (a plan's pp is at most
  // its GPUs; a deeper one walks its stages): O(layers x depths), kept small for the contexts
  // built per prediction (bench/calibrate)
  const auto layers = static_cast<std::int64_t>(ctx.graph.layer_class.size());
  const std::int64_t max_pp = std::min<std::int64_t>(layers, std::max<std::int64_t>(1, c.num_gpus));
  const std::size_t ncls = ctx.graph.classes.size();
  ctx.stage_kinds.assign(static_cast<std::size_t>(max_pp + 1), {});
  for (std::int64_t pp = 1; pp <= max_pp; ++pp) {
    auto& kinds = ctx.stage_kinds[static_cast<std::size_t>(pp)];
    for (std::int64_t st = 0; st < pp; ++st) {
      const LayerRange r = stage_layers(layers, pp, st);
      const auto& hi = ctx.class_prefix[static_cast<std::size_t>(r.last)];
      const auto& lo = ctx.class_prefix[static_cast<std::size_t>(r.first)];
      const bool first = st == 0, last = st == pp - 1;
      SimContext::StageKind* same = nullptr;
      for (auto& o : kinds) {
        bool eq = o.first == first && o.last == last;
        for (std::size_t cls = 0; cls < ncls && eq; ++cls) eq = o.counts[cls] == hi[cls] - lo[cls];
        if (eq) {
          same = &o;
          break;
        }
      }
      if (same) {
        ++same->stages;
        continue;
      }
      SimContext::StageKind k;
      for (std::size_t cls = 0; cls < ncls; ++cls) k.counts[cls] = hi[cls] - lo[cls];
      k.first = first;
      k.last = last;
      k.stages = 1;
      kinds.push_back(k);
    }
  }
  ctx.engine = std::move(engine);
  // the engine's own capture sizes where the deployment lists none (vLLM's counts tokens:
  // not modelled under speculative drafts)
  ctx.engine.graph_defaults_on =
      ctx.engine.graph_defaults == EngineTraits::GraphDefaults::kVllm && ctx.engine.cuda_graph_batch_sizes.empty() && w.spec_tokens == 0;
  ctx.formats = resolve_formats(m, w);
  ctx.terms = format_terms(c.gpu, ctx.formats, m.attention);
  ctx.weights_given = w.weights_dtype.has_value();
  // a caller that did not resolve the model's acceptance (resolve_speculation, where bad input
  // is refused): the MTP module's, else no draft accepted
  if (ctx.workload.spec_acceptance == kModelsAcceptance) ctx.workload.spec_acceptance = m.num_mtp_layers > 0 ? kMtpAcceptance : 0.0;
  // the fitted GEMM efficiency carried to this GPU by the measured share ratios (at the engines'
  // shapes where both GPUs are measured there, else their best-shape ceilings; 1 on the fit's own
  // silicon)
  if (p.gemm.present || p.kernel_tables) {
    ctx.ceiling_bf16 = ctx.ceiling_fp8 = ctx.ceiling_fp4 = 1.0;  // the tables carry their own ratio
  } else {
    const SiliconTables& t = p.silicon ? *p.silicon : builtin_silicon();
    const GemmProfile mine = gemm_profile_for(c.gpu.name, t), fit = gemm_profile_for(p.gpu, t);
    if (mine.present && fit.present) {
      ctx.ceiling_bf16 = mine.bf16.ceiling_ratio / fit.bf16.ceiling_ratio;
      ctx.ceiling_fp8 = mine.fp8.ceiling_ratio / fit.fp8.ceiling_ratio;
      // fp4 against the fit silicon's fp8 ceiling: a fit's GEMM efficiency is that of the
      // fp8/bf16 kernels its rows ran, and fp4 kernels reach another share of their spec
      // (B200: 63.4% against fp8's 76.3%; docs/silicon.md)
      ctx.ceiling_fp4 = mine.fp4.ceiling_ratio / fit.fp8.ceiling_ratio;
    }
  }
  // the measured kernels (docs/silicon.md); a profile given is kept, none without kernel_tables
  if (!p.kernel_tables) {
    ctx.params.gemm = GemmProfile{};
  } else if (!p.gemm.present) {
    ctx.params.gemm = gemm_profile_for(c.gpu.name, p.silicon ? *p.silicon : builtin_silicon());
  }
  // the fitted GEMM model's few-row ramp carried to this GPU's ridge, wherever the fitted
  // model prices GEMMs (the tables off, or on for a GPU they do not profile)
  if (!ctx.params.gemm.present) {
    if (const auto fit_gpu = find_gpu(p.gpu)) {
      ctx.half_rows_bf16 = ridge_scale(c.gpu, *fit_gpu, c.gpu.bf16.value(), 2.0, ctx.ceiling_bf16);
      ctx.half_rows_fp8 = ridge_scale(c.gpu, *fit_gpu, c.gpu.fp8.value(), 1.0, ctx.ceiling_fp8);
      ctx.half_rows_fp4 = ridge_scale(c.gpu, *fit_gpu, c.gpu.fp4.value(), 0.5, ctx.ceiling_fp4);
      // a GPU whose fp4 peak equals its fp8 one: tensor_format reads that peak as fp4, and its
      // fp8 GEMMs (the commoner) keep fp8's span (fp4 weights there run W4A8, at fp8's rate)
      if (c.gpu.fp4.value() > 0 && c.gpu.fp4.value() == c.gpu.fp8.value()) ctx.half_rows_fp4 = ctx.half_rows_fp8;
    }
  }
  if (m.is_moe() && ctx.engine.moe_kernel == EngineTraits::MoeKernel::kTritonFusedMoe) {
    const GemmProfile g = gemm_profile_for(c.gpu.name, p.silicon ? *p.silicon : builtin_silicon());
    const DType x = ctx.formats.experts;
    // the kernel's measured formats: bf16/fp16 and fp8/int8 weights; fp4 experts on Blackwell
    // at the fp4 ceiling ratio, or fp8's where they compute in fp8 (MXFP4 x MXFP8; elsewhere
    // 4-bit experts run weight-only kernels: no curve)
    if (g.present && (x == DType::kBf16 || x == DType::kFp16 || x == DType::kFp8 || x == DType::kInt8 || x == DType::kFp4)) {
      ctx.moe_routed = g.routed_of(x);
      if (x == DType::kFp4 && mxfp4_experts_w4a8(c.gpu, ctx.formats)) ctx.moe_routed.ratio = g.routed_fp8.ratio;
      ctx.moe_routed_floor_s = g.floor_s;
    }
  }
  // the engine's measured custom all-reduce, which it runs whatever prices the rest of the step:
  // on every path (docs/silicon.md, "All-reduce")
  if (ctx.engine.custom_all_reduce_max_bytes > 0) ctx.custom_ar = custom_allreduce_profile_for(c.gpu, p.silicon ? *p.silicon : builtin_silicon());
  // NCCL's all-reduce above it: measured on every path (docs/silicon.md, "All-reduce")
  ctx.nccl_ar = nccl_allreduce_profile_for(c.gpu, p.silicon ? *p.silicon : builtin_silicon());
  // the activation and rotary kernels between the GEMMs: measured ops on every path (the
  // fitted efficiencies are fitted with them; docs/cost-model.md, "Elementwise kernels")
  ctx.elementwise = elementwise_profile_for(c.gpu, p.silicon ? *p.silicon : builtin_silicon());
  // the fixed time per priced op of the measured decode layer, for an engine that launches its
  // small kernels separately, where the fitted model prices the step (docs/silicon.md, "A
  // measured decode layer"); the kernel tables keep their GEMM floor
  if (ctx.engine.small_kernels_separate && !ctx.params.gemm.present) {
    const SiliconTables& t = p.silicon ? *p.silicon : builtin_silicon();
    ctx.layer_floor = layer_floor_for(m, ctx.formats, c.gpu, gemm_profile_for(c.gpu.name, t).floor_s, t);
  }
  // GQA decode attention: measured on every path too (the Blackwell fit predates it and is
  // kept: docs/silicon.md, "GQA decode attention")
  if (m.attention != AttentionKind::kMla) ctx.gqa_decode = gqa_decode_profile_for(c.gpu, p.silicon ? *p.silicon : builtin_silicon());
  // prefill attention (GQA and MLA) at the published kernels' ceilings, on every path too
  ctx.prefill_attention = prefill_attention_profile_for(c.gpu, p.silicon ? *p.silicon : builtin_silicon());
  if (p.kernel_tables) {
    const SiliconTables& t = p.silicon ? *p.silicon : builtin_silicon();
    if (m.attention == AttentionKind::kMla) ctx.mla_decode = mla_decode_profile_for(c.gpu, t);
    if (m.is_moe()) ctx.moe_comm = moe_comm_profile_for(c.gpu, ctx.engine.moe_all_to_all, t);
  }
  if (m.is_moe()) {
    const double e = static_cast<double>(m.moe.num_experts), k = static_cast<double>(m.moe.top_k);
    ctx.moe_z_experts = extreme_z(e);
    ctx.moe_log_untouched = log_untouched(k, e);
  }
  return ctx;
}

Metrics evaluate(const SimContext& ctx, const Plan& plan, Breakdown* bd, bool explain) {
  Plan probe = plan;
  if (probe.batch == 0) probe.batch = plan.deg.attn_dp;  // validate "max" as its smallest batch
  if (auto why = validate_plan(probe, ctx.model, ctx.cluster)) {
    Metrics out;
    out.infeasible = Infeasible::kInvalidPlan;
    out.reason = *why;
    out.gpus_used = plan.deg.total_gpus();
    return out;
  }
  // a named engine runs at most its cap of sequences per scheduling lane: a batch over it is
  // not a plan that engine runs (--max-num-seqs raises the cap)
  if (const std::int64_t cap = engine_batch_cap(ctx), lanes = scheduler_lanes(ctx.engine, plan.deg); cap > 0 && plan.batch > cap * lanes) {
    Metrics out;
    out.infeasible = Infeasible::kInvalidPlan;
    // formatted even in search loops (as validate_plan's reasons are): a search that finds no
    // plan names it
    out.reason = fmt::format("batch {} is over {}'s cap of {} running sequences {} x {} (--max-num-seqs {} raises it)", plan.batch,
                             ctx.engine.name, cap, running_cap_unit(ctx.engine, plan.deg), lanes, ceil_div(plan.batch, lanes));
    out.gpus_used = plan.deg.total_gpus();
    return out;
  }
  if (plan.batch > 0) return evaluate_at(ctx, plan, plan.batch, bd, explain);
  return max_batch_search(ctx, probe, 1, bd, explain);
}

Metrics evaluate_max_from(const SimContext& ctx, const Plan& plan, std::int64_t feasible_batch) {
  Plan probe = plan;
  probe.batch = plan.deg.attn_dp;
  if (auto why = validate_plan(probe, ctx.model, ctx.cluster)) {
    Metrics out;
    out.infeasible = Infeasible::kInvalidPlan;
    out.reason = *why;
    return out;
  }
  // the doubling of evaluate() visits 1, 2, 4, ... groups' worth: start at the largest power
  // of two the known feasible batch covers (the same bracket when feasibility is monotone)
  std::int64_t start = 1;
  while (start * 2 * plan.deg.attn_dp <= feasible_batch) start *= 2;
  return max_batch_search(ctx, probe, start, nullptr, false);
}

StepTime step_time(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx) {
  const StepResult s = step(ctx, plan, phase, std::max<std::int64_t>(1, b), seq, kv_ctx, nullptr);
  StepTime out;
  out.stage_s = s.stage_s;
  out.micro_batches = s.m;
  out.iteration_s = static_cast<double>(std::max<std::int64_t>(s.m, plan.deg.pp)) * s.stage_s;
  out.mem = s.mem;
  return out;
}

Metrics evaluate_static_batch(const SimContext& ctx, const Plan& plan) {
  if (auto why = validate_plan(plan, ctx.model, ctx.cluster)) {
    Metrics out;
    out.infeasible = Infeasible::kInvalidPlan;
    out.reason = *why;
    return out;
  }
  const Workload& w = ctx.workload;
  const std::int64_t b = plan.batch;
  Metrics out;
  out.batch = b;
  out.gpus_used = plan.deg.total_gpus();
  const StepResult pf = step(ctx, plan, Phase::kPrefill, b, w.isl, w.isl + w.osl, nullptr);
  const StepResult d = step(ctx, plan, Phase::kDecode, b, w.isl + w.osl / 2, w.isl + w.osl, nullptr);
  out.ttft_s = static_cast<double>(pf.m + plan.deg.pp - 1) * pf.stage_s;
  out.tpot_s = static_cast<double>(std::max<std::int64_t>(d.m, plan.deg.pp)) * d.stage_s / tokens_per_step(w);
  const double total = out.ttft_s + static_cast<double>(w.osl) * out.tpot_s;
  out.output_tok_s_per_gpu = static_cast<double>(b * w.osl) / total / static_cast<double>(plan.deg.instance_gpus());
  out.memory = d.mem;
  check_memory(out.memory, out, true);
  out.objective = out.feasible() ? out.output_tok_s_per_gpu : 0;
  return out;
}

}  // namespace shardwise
