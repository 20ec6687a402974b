// Kernels: the roofline of GEMMs and streaming ops, the breakdown records, and the
// evaluation state built from a plan (docs/cost-model.md, "Compute").
#include "cost/env.hpp"

namespace shardwise::detail {

// --- compute ---------------------------------------------------------------
// Roofline: max(FLOPs / (peak x eff(rows)), bytes / (HBM x mem_eff)) + overhead,
// eff(rows) = gemm_efficiency x rows / (rows + gemm_half_rows).
double gemm_time(Env& e, double rows, double flops, double bytes) {
  e.op_flops = flops;
  e.op_bytes = bytes;
  const double eff = e.p->gemm_efficiency * rows / (rows + e.p->gemm_half_rows);
  const double tc = flops / (e.gemm_peak * std::max(eff, 1e-6));
  const double tm = bytes / (e.hbm * e.p->mem_efficiency);
  return std::max(tc, tm) + e.p->kernel_overhead_us * 1e-6;
}
double stream_time(Env& e, double bytes) {
  e.op_flops = 0;
  e.op_bytes = bytes;
  return bytes / (e.hbm * e.p->mem_efficiency) + e.p->kernel_overhead_us * 1e-6;
}

void record(Env& e, const char* op, int slot, double compute_s, double comm_s) {
  if (!e.bd) return;
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
  e.bd->ops.push_back(std::move(c));
  e.pend_kind = CollKind::kNone;
  e.pend_s = e.pend_bytes = 0;
  e.pend_group = "";
  e.op_flops = e.op_bytes = 0;
}

GemmLay gemm_lay(int choice_col_row_none, std::int64_t g, bool first_is_col) {
  // choices are (col, row, none) for ffn1/qkv and (row, col, none) for ffn2/o_proj
  const int c = choice_col_row_none;
  const bool col = first_is_col ? c == 0 : c == 1;
  const bool row = first_is_col ? c == 1 : c == 0;
  if (col) return {Lay::kR, Lay::kSf, static_cast<double>(g)};
  if (row) return {Lay::kSf, Lay::kP, static_cast<double>(g)};
  return {Lay::kR, Lay::kR, 1.0};
}

Env make_env(const SimContext& ctx, const Plan& plan, Phase phase, Breakdown* bd) {
  Env e;
  e.ctx = &ctx;
  e.plan = &plan;
  e.p = &ctx.params;
  e.phase = phase;
  e.bd = bd;
  if (bd) bd->phase = phase;
  const GpuSpec& gpu = ctx.cluster.gpu;
  e.wb = bytes_per_element(ctx.workload.weights_dtype);
  e.kvb = bytes_per_element(ctx.workload.kv_dtype);
  e.ab = 2.0;
  // GEMMs run in the weights' format where the GPU has tensor cores for it, else in bf16
  const DType wd = ctx.workload.weights_dtype;
  e.gemm_peak = gpu.bf16.value();
  if ((wd == DType::kFp8 || wd == DType::kInt8) && gpu.fp8.value() > 0) e.gemm_peak = gpu.fp8.value();
  if ((wd == DType::kFp4 || wd == DType::kInt4) && gpu.fp4.value() > 0) e.gemm_peak = gpu.fp4.value();
  if ((wd == DType::kFp4 || wd == DType::kInt4) && gpu.fp4.value() <= 0 && gpu.fp8.value() > 0) e.gemm_peak = gpu.fp8.value();
  // attention math runs in fp8 when the KV cache is fp8 and the GPU has fp8 tensor cores (FP8 FMHA)
  const DType kd = ctx.workload.kv_dtype;
  e.attn_peak = ((kd == DType::kFp8 || kd == DType::kInt8) && gpu.fp8.value() > 0) ? gpu.fp8.value() : gpu.bf16.value();
  e.hbm = gpu.hbm_bandwidth.value();
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
  e.g_tp = worst_placed(cl, e.tp, 1, 0, e.tp, reps * e.pp * e.a);
  e.g_w = worst_placed(cl, e.w, 1, 0, e.w, reps * e.pp);
  e.g_dp = {e.a, e.tp};
  e.g_etp = worst_placed(cl, e.etp, 1, 0, e.etp, reps * e.pp * e.ep);
  e.g_pp = {2, e.w};
  if (e.pp > 1) e.g_pp = worst_pp_pair(cl, e.w, inst, reps);
  return e;
}

}  // namespace shardwise::detail
