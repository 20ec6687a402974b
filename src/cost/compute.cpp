// Kernels: the roofline of GEMMs and streaming ops, the breakdown records, and the
// evaluation state built from a plan (docs/cost-model.md, "Compute").
#include "cost/env.hpp"

#include <algorithm>
#include <cmath>

namespace shardwise::detail {

// --- compute ---------------------------------------------------------------

WeightOnlyCompute weight_only_compute(const GpuSpec& gpu) {
  if (gpu.name == "h100") return {kWeightOnlyMoeComputeH100, Basis::kMeasured};
  if (gpu.name == "h20") return {kWeightOnlyMoeComputeH20, Basis::kMeasured};
  if (gpu.name == "h200") return {kWeightOnlyMoeComputeH100, Basis::kTransferred};
  return {kWeightOnlyMoeComputeH100, Basis::kExtrapolated};
}
const std::string& weight_only_compute_source(const GpuSpec& gpu) {
  static const std::string h20 =
      "data/silicon/published/w4a16_moe_compute.csv: h20 W4A16 Marlin MoE, 0.50 of the bf16 peak (compute-bound rows)";
  static const std::string h100 =
      "data/silicon/published/w4a16_moe_compute.csv: h100 W4A16 Marlin MoE, 0.257 of the bf16 peak (compute-bound row)";
  return gpu.name == "h20" ? h20 : h100;
}
namespace {
// The explain record of an expert GEMM whose weights stream at the engine's measured share
// (EngineTraits::moe_expert_stream) and bound it: the table measures NVFP4 experts (on the B200,
// its siblings transferred); experts in another format carry it extrapolated.
void engine_stream_bound(Env& e) {
  static const std::string source =
      "data/silicon/published/trtllm_moe_b200.csv: TensorRT-LLM's MoE module on the b200, its expert-weight stream "
      "(moe_expert_stream: the slope of its time over the touched experts' bytes)";
  e.op_table = nullptr;
  e.op_shape = nullptr;
  e.op_ceiling_basis = e.ctx->formats.experts == DType::kFp4 ? trtllm_moe_table_basis(e.ctx->cluster.gpu.name) : Basis::kExtrapolated;
  e.op_ceiling_source = &source;
}
// The explain record of a weight-only expert GEMM held at the measured W4A16 compute share.
void weight_only_capped(Env& e) {
  e.op_table = nullptr;
  e.op_shape = nullptr;
  e.op_ceiling_basis = weight_only_compute(e.ctx->cluster.gpu).basis;
  e.op_ceiling_source = &weight_only_compute_source(e.ctx->cluster.gpu);
}
}  // namespace

// Roofline: max(FLOPs / (peak x eff(rows)), bytes / (HBM x mem_eff)) + overhead,
// eff(rows) = gemm_efficiency x ceiling x rows / (rows + gemm_half_rows x ramp x half), half the
// fitted ramp carried to this GPU's ridge (SimContext::half_rows_bf16 / _fp8 / _fp4), ramp 1 for GEMMs
// in the weights' own format and stored / computed bytes per weight for weight-only ones
// (weight_only_ramp: the few-row ramp at the same FLOPs per weight byte), ceiling the GPU's measured
// share of spec over the fitted silicon's (SimContext::ceiling_bf16 / ceiling_fp8 / ceiling_fp4), mem_eff
// the fitted streaming efficiency (for grouped expert GEMMs expert_stream: the engine's measured
// EngineTraits::moe_expert_stream where it has one, else the fitted expert_mem_efficiency); a
// weight-only expert GEMM streams at kWeightOnlyMoeStream of it and computes at no more than
// its GPU's measured W4A16 share of peak (weight_only_compute).
// With the kernel tables (docs/silicon.md): floor + roofline / share(rows), the share
// scaled by the GPU's measured ceiling ratio where the roofline is compute-bound; a grouped
// expert GEMM reads the grouped table's share by rows per expert where the format has one,
// else the dense curve's compute share and expert_stream's weight-read share (the grouped table,
// where there is one, takes precedence over an engine's measured stream). A calibration
// profile's scale (CostParams::scales: experts for grouped GEMMs, gemm for the rest) multiplies the whole.
double gemm_time(Env& e, double peak, double rows, double flops, double bytes, bool grouped, double ramp) {
  // weight-only (ramp < 1: weights stored narrower than the format computed in) expert GEMMs
  const double wo = grouped && ramp < 1.0 && !e.exp_mixed ? kWeightOnlyMoeStream : 1.0;
  e.op_flops = flops;
  e.op_bytes = bytes;
  if (e.bd) e.op_rows = rows;
  if (const GemmProfile& g = e.p->gemm; g.present) {
    const DType fmt = tensor_format(e.ctx->cluster.gpu, peak);
    const GemmFormatProfile& dense = g.of(fmt);
    const GemmFormatProfile& grp = g.grouped_of(fmt);
    const bool table = grouped && grp.curve.n > 0;
    const GemmFormatProfile& f = table ? grp : dense;
    const double share = e.curve_share(f.curve, rows);
    const bool capped = wo < 1.0 && share * f.ratio > e.wo_compute;
    const double tc = flops / (peak * (capped ? e.wo_compute : share * f.ratio));
    const double tm = grouped && !table ? bytes / (e.hbm * expert_stream(e) * wo) : bytes / (e.hbm * share * wo);
    if (e.bd) {  // the breakdown's record only: the search's evaluations skip it
      e.op_table = &f;
      e.op_shape = nullptr;
      e.op_bound = bound_of(tc, tm, g.floor_s);
      if (capped && tc >= tm) weight_only_capped(e);
      if (grouped && !table && e.ctx->engine.moe_expert_stream > 0 && tm > tc) engine_stream_bound(e);
    }
    return (g.floor_s + std::max(tc, tm)) * (grouped ? e.p->scales.experts : e.p->scales.gemm);
  }
  const DType fmt = tensor_format(e.ctx->cluster.gpu, peak);
  const double ceiling = fmt == DType::kBf16 ? e.ctx->ceiling_bf16 : fmt == DType::kFp4 ? e.ctx->ceiling_fp4 : e.ctx->ceiling_fp8;
  const double half = fmt == DType::kBf16 ? e.ctx->half_rows_bf16 : fmt == DType::kFp4 ? e.ctx->half_rows_fp4 : e.ctx->half_rows_fp8;
  const double fitted = e.p->gemm_efficiency * ceiling * rows / (rows + e.p->gemm_half_rows * ramp * half);
  const bool capped = wo < 1.0 && fitted > e.wo_compute;
  const double tc = flops / (peak * std::max(capped ? e.wo_compute : fitted, 1e-6));
  const double tm = bytes / (e.hbm * (grouped ? expert_stream(e) * wo : e.p->mem_efficiency));
  // a grouped expert GEMM outside the fused MoE is a GEMM-class kernel the measured layer's
  // floor does not spread over: it carries the GEMM floor (cost/layer_floor.hpp)
  const double floor = grouped && e.ctx->layer_floor.present ? e.ctx->layer_floor.gemm_floor_s : kernel_floor(e);
  if (e.bd) {
    e.op_bound = bound_of(tc, tm, floor);
    if (capped && tc >= tm) weight_only_capped(e);
    if (grouped && e.ctx->engine.moe_expert_stream > 0 && tm > tc) engine_stream_bound(e);
  }
  return (std::max(tc, tm) + floor) * (grouped ? e.p->scales.experts : e.p->scales.gemm);
}
double routed_gemm_time(Env& e, double rows, bool up, double n, double k, double flops, double bytes) {
  e.op_flops = flops;
  e.op_bytes = bytes;
  const GemmFormatProfile& f = e.ctx->moe_routed;
  const double floor = e.ctx->moe_routed_floor_s;
  const ShapeCurve* sc = f.shapes.empty() ? nullptr : f.shape(up, n, k);  // this GEMM measured: its own rows
  const double share = e.curve_share(sc ? sc->curve : f.curve, rows);
  const double tc = flops / (e.peak_exp * share * f.ratio);
  const double tm = bytes / (e.hbm * share);
  if (e.bd) {
    e.op_rows = rows;
    e.op_table = &f;
    e.op_shape = sc;
    e.op_bound = bound_of(tc, tm, floor);
  }
  return (floor + std::max(tc, tm)) * e.p->scales.experts;
}

double stream_time(Env& e, double bytes) {
  e.op_flops = 0;
  e.op_bytes = bytes;
  if (e.bd) e.op_bound = bound_of(0.0, bytes / (e.hbm * e.p->mem_efficiency), kernel_floor(e));
  return bytes / (e.hbm * e.p->mem_efficiency) + kernel_floor(e);
}

double elementwise_time(Env& e, const TimeCurve& c, double bytes) {
  e.op_flops = 0;
  e.op_bytes = bytes;
  const std::size_t k = &c == &e.ctx->elementwise.act ? 1 : 0;
  if (e.ew_curve[k] != &c || e.ew_bytes[k] != bytes) {
    e.ew_curve[k] = &c;
    e.ew_bytes[k] = bytes;
    e.ew_val[k] = e.ctx->elementwise.seconds(c, bytes);
  }
  const double t = e.ew_val[k];
  if (e.bd) {
    e.op_curve = &c;
    e.op_bound = bytes <= c.b_lo ? "latency" : "memory";
  }
  return t;
}

void record_op(Env& e, const char* op, int slot, double compute_s, double comm_s) {
  OpCost c;
  c.layer_class = e.cls;
  c.op = op;
  c.choice = slot >= 0 ? slot_info(slot).choices[static_cast<std::size_t>(ch(*e.plan, static_cast<Slot>(slot)))] : "-";
  c.compute_s = compute_s;
  c.comm_s = comm_s;
  c.collective = e.pend_kind;
  c.comm_bytes = e.pend_bytes;
  c.comm_group = e.pend_group;
  c.colls = std::move(e.pend_colls);
  e.pend_colls.clear();
  c.layers = e.cls_layers;
  c.flops = compute_s > 0 ? e.op_flops : 0.0;
  c.hbm_bytes = compute_s > 0 ? e.op_bytes : 0.0;
  if (compute_s > 0 && e.op_table) {
    const GemmCurve& cv = e.op_shape ? e.op_shape->curve : e.op_table->curve;
    c.basis = cv.in_range(e.op_rows) || e.op_table->basis == Basis::kExtrapolated ? e.op_table->basis : Basis::kExtrapolated;
    c.table = e.op_shape ? e.op_table->source + "; its " + e.op_shape->source : e.op_table->source;
  } else if (compute_s > 0 && e.op_ceiling_source) {
    c.basis = e.op_ceiling_basis;
    c.table = *e.op_ceiling_source;
  } else if (compute_s > 0 && e.op_curve) {
    c.basis = e.op_curve->in_range(e.op_bytes) || e.op_bytes < e.op_curve->b_lo ? e.op_curve->basis : Basis::kExtrapolated;
    c.table = e.op_curve->source;
  }
  c.bound = compute_s > 0 ? e.op_bound : "";
  e.bd->ops.push_back(std::move(c));
  e.pend_kind = CollKind::kNone;
  e.pend_s = e.pend_bytes = 0;
  e.pend_group = "";
  e.op_flops = e.op_bytes = 0;
  e.op_table = nullptr;
  e.op_shape = nullptr;
  e.op_curve = nullptr;
  e.op_ceiling_source = nullptr;
  e.op_bound = "";
}

double gemm_peak_for(const GpuSpec& gpu, DType d) {
  // GEMMs run in the weights' format where the GPU has tensor cores for it; fp4 weights
  // without fp4 tensor cores, and int4 (AWQ, GPTQ) on any GPU, are dequantised into bf16
  // GEMMs (weight-only, W4A16: the bytes shrink, the FLOPs do not), as the MXFP4 MoE
  // kernels on Hopper do
  const bool has8 = gpu.fp8.value() > 0, has4 = gpu.fp4.value() > 0;
  if ((d == DType::kFp8 || d == DType::kInt8) && has8) return gpu.fp8.value();
  if (d == DType::kFp4 && has4) return gpu.fp4.value();  // int4 (AWQ, GPTQ) is weight-only everywhere
  return gpu.bf16.value();
}
// The few-row ramp of the fitted model, t -> 2·N·K·(rows + h) / (peak·g) as rows -> 0, is a
// weight-streaming time: per weight byte it is 2·h / (peak·g·b) with b the bytes per weight of
// the format the GEMM computes in (peak·b is about the same for bf16, fp8 and fp4 on one chip,
// so it holds across native formats). A weight-only GEMM streams wb < b bytes per weight into
// the same tensor cores: its ramp is h·wb/b (Marlin-style W4A16 kernels run near 4x fp16 at a
// few rows and at fp16's rate at many). Native formats: 1.
double weight_only_ramp(const GpuSpec& gpu, DType d, double wb, double peak) {
  const DType computed = tensor_format(gpu, peak);
  const double b = computed == DType::kBf16 ? 2.0 : computed == DType::kFp8 ? 1.0 : 0.5625;
  return bytes_per_element(d) < (computed == DType::kFp4 ? 0.5 : b) ? std::min(1.0, wb / b) : 1.0;
}
bool mxfp4_experts_w4a8(const GpuSpec& gpu, const Formats& f) {
  // TensorRT-LLM's GPT-OSS support matrix (examples/models/core/gpt_oss): on Blackwell the
  // MXFP4 experts take MXFP8 activations, the mixed fp8 x fp4 MMA (UTCQMMA,
  // tcgen05.mma kind::f8f6f4), which runs at the fp8 rate; only fp4 x fp4 (NVFP4 W4A4,
  // kind::mxf4nvf4) runs at the fp4 rate
  return f.mxfp4 && f.experts == DType::kFp4 && gpu.fp4.value() > 0 && gpu.fp8.value() > 0;
}
double dispatch_bytes(const GpuSpec& gpu, DType experts) {
  // tokens travel to the experts in the format the expert GEMMs read: NVFP4 (4 bits + one fp8
  // scale per 16: 0.5625 B) where fp4 runs natively, fp8 for fp8/int8 experts on fp8 hardware
  // (1 B; DeepEP's fp8 dispatch), else bf16 (2 B; weight-only 4-bit experts read bf16 tokens)
  const bool quant = experts == DType::kFp8 || experts == DType::kInt8 || experts == DType::kFp4 || experts == DType::kInt4;
  const bool four = experts == DType::kFp4 || experts == DType::kInt4;
  if (experts == DType::kFp4 && gpu.fp4.value() > 0) return 0.5625;
  if (quant && !four && gpu.fp8.value() > 0) return 1.0;
  return 2.0;
}
double tokens_verified(const Workload& w) { return 1.0 + static_cast<double>(w.spec_tokens); }
FormatTerms format_terms(const GpuSpec& gpu, const Formats& f, AttentionKind attention) {
  FormatTerms t;
  t.set = true;
  t.wb = weight_bytes(f.other, f);  // with the formats' block scales
  t.wb_attn = weight_bytes(f.attention, f);
  t.wb_dense = weight_bytes(f.dense, f);
  t.wb_exp = weight_bytes(f.experts, f);
  t.kvb = bytes_per_element(f.kv);
  t.peak = gemm_peak_for(gpu, f.other);
  t.peak_attn = gemm_peak_for(gpu, f.attention);
  t.peak_dense = gemm_peak_for(gpu, f.dense);
  t.peak_exp = gemm_peak_for(gpu, f.experts);
  t.ramp = weight_only_ramp(gpu, f.other, t.wb, t.peak);
  t.ramp_attn = weight_only_ramp(gpu, f.attention, t.wb_attn, t.peak_attn);
  t.ramp_dense = weight_only_ramp(gpu, f.dense, t.wb_dense, t.peak_dense);
  if (mxfp4_experts_w4a8(gpu, f)) {
    t.peak_exp = gpu.fp8.value();
    t.exp_mixed = true;
  }
  t.ramp_exp = weight_only_ramp(gpu, f.experts, t.wb_exp, t.peak_exp);
  t.disp_b = t.exp_mixed ? 1.0 : dispatch_bytes(gpu, f.experts);  // W4A8: the tokens travel in MXFP8
  // attention math runs in fp8 when the KV cache is fp8 and the GPU has fp8 tensor cores (FP8 FMHA)
  const DType kd = f.kv;
  // MLA kernels (FlashMLA, TensorRT-LLM's) dequantise an fp8 latent cache and compute in bf16
  const bool mla = attention == AttentionKind::kMla;
  t.attn_peak = ((kd == DType::kFp8 || kd == DType::kInt8) && gpu.fp8.value() > 0 && !mla) ? gpu.fp8.value() : gpu.bf16.value();
  t.hbm = gpu.hbm_bandwidth.value();
  if (t.ramp_exp < 1.0 && !t.exp_mixed) t.wo_compute = weight_only_compute(gpu).share;
  return t;
}

Env make_env(const SimContext& ctx, const Plan& plan, Phase phase, Breakdown* bd) {
  Env e;
  e.ctx = &ctx;
  e.plan = &plan;
  e.p = &ctx.params;
  e.phase = phase;
  e.bd = bd;
  if (bd) bd->phase = phase;
  static_cast<FormatTerms&>(e) = ctx.terms.set ? ctx.terms : format_terms(ctx.cluster.gpu, ctx.formats, ctx.model.attention);
  if (phase == Phase::kDecode) e.q_per_seq = tokens_verified(ctx.workload);
  const Degrees& d = plan.deg;
  e.tp = d.tp;
  e.a = d.attn_dp;
  e.w = d.stage_width();
  e.ep = d.ep;
  e.etp = e.w / d.ep;
  e.pp = d.pp;
  // Groups as placed: replicas tile the cluster from GPU 0 (replica r on GPUs r x inst ..),
  // each instance stage by stage, each stage group by group. Every group of a kind runs
  // in lockstep, so the worst-placed one over all replicas sets the time (a replica that
  // straddles an NVLink domain is costed on the levels it spans; docs/cost-model.md).
  const ClusterSpec& cl = ctx.cluster;
  const std::int64_t inst = e.w * e.pp, reps = std::max<std::int32_t>(1, d.replicas);
  // (one attention group per stage: the stage's group is the tp group; expert TP over the
  // whole stage or over tp ranks likewise: placed and spanned once)
  e.g_tp = worst_placed(cl, e.tp, 1, 0, e.tp, reps * e.pp * e.a);
  e.s_tp = span_of(cl, e.g_tp);
  if (e.a == 1) {
    e.g_w = e.g_tp;
    e.s_w = e.s_tp;
  } else {
    e.g_w = worst_placed(cl, e.w, 1, 0, e.w, reps * e.pp);
    e.s_w = span_of(cl, e.g_w);
  }
  e.g_dp = {e.a, e.tp};
  if (e.etp == e.w) {
    e.g_etp = e.g_w;
    e.s_etp = e.s_w;
  } else if (e.etp == e.tp) {  // (then ep = attn_dp: etp = tp x attn_dp / ep)
    e.g_etp = e.g_tp;
    e.s_etp = e.s_tp;
  } else {
    e.g_etp = worst_placed(cl, e.etp, 1, 0, e.etp, reps * e.pp * e.ep);
    e.s_etp = span_of(cl, e.g_etp);
  }
  e.g_pp = {2, e.w};
  if (e.pp > 1) e.g_pp = worst_pp_pair(cl, e.w, inst, reps);
  if (ctx.model.is_moe()) {
    const double k = static_cast<double>(ctx.model.moe.top_k);
    e.moe = moe_terms(ctx.moe_z_experts, ctx.moe_log_untouched, static_cast<double>(ctx.model.moe.num_experts),
                      static_cast<double>(plan.redundant_experts), static_cast<double>(e.ep), ctx.params.expert_skew);
    e.moe.dedup = network_dedup(e, k);
  }
  return e;
}

}  // namespace shardwise::detail
