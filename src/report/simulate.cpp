#include "report/simulate.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost/engine.hpp"
#include "report/format.hpp"

namespace shardwise {
namespace {
using nlohmann::json;

json metrics_json(const Metrics& m) {
  json j;
  j["feasible"] = m.feasible();
  j["reason"] = m.feasible() ? json(nullptr) : json(m.reason);
  j["infeasible_kind"] = to_string(m.infeasible);
  j["throughput_tok_s_per_gpu"] = m.output_tok_s_per_gpu;
  j["input_tok_s_per_gpu"] = m.input_tok_s_per_gpu;
  j["tpot_ms"] = m.tpot_s * 1e3;
  j["ttft_ms"] = m.ttft_s * 1e3;
  j["step_ms"] = m.step_s * 1e3;
  j["memory_gb_per_gpu"] = m.memory.total().value() / 1e9;
  j["memory"] = {{"weights_gb", m.memory.weights.value() / 1e9},
                 {"kv_cache_gb", m.memory.kv_cache.value() / 1e9},
                 {"activations_gb", m.memory.activations.value() / 1e9},
                 {"reserve_gb", m.memory.reserve.value() / 1e9},
                 {"capacity_gb", m.memory.capacity.value() / 1e9}};
  j["batch"] = m.batch;
  j["batch_at_engine_cap"] = m.batch_at_engine_cap;
  j["micro_batches"] = m.micro_batches;
  j["gpus_used"] = m.gpus_used;
  return j;
}
}  // namespace

std::string op_label(const SimContext& ctx, const OpCost& o) {
  if (o.layer_class < 0) return o.op;
  const LayerShape& s = ctx.graph.classes[static_cast<std::size_t>(o.layer_class)];
  std::string cls = s.moe ? "moe" : "dense";
  if (s.window > 0) cls += fmt::format("/swa{}", s.window);
  return fmt::format("{}:{}", cls, o.op);
}

std::string simulate_json(const SimContext& ctx, const Plan& plan, const Metrics& m, const Breakdown& bd, bool explain) {
  json j = metrics_json(m);
  const Degrees& d = plan.deg;
  j["plan"] = {{"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}, {"attn_dp", d.attn_dp}, {"replicas", d.replicas},
               {"sharding", sharding_to_string(plan.sharding)}};
  if (ctx.model.is_moe()) {
    j["plan"]["redundant_experts"] = plan.redundant_experts;
    j["plan"]["two_batch_overlap"] = plan.two_batch_overlap;
    // whether the step ran overlapped (off below two tokens per attention-DP rank); ops are then one micro-batch's
    j["two_batch_overlap_applied"] = bd.two_batch_overlap;
  }
  j["calibrated"] = ctx.params.calibrated;
  const Formats& f = ctx.formats;
  j["formats"] = {{"attention", to_string(f.attention)}, {"dense", to_string(f.dense)}, {"experts", to_string(f.experts)},
                  {"other", to_string(f.other)}, {"kv_cache", to_string(f.kv)}};
  if (!ctx.model.quant.method.empty()) j["formats"]["checkpoint"] = ctx.model.quant.method;
  j["engine"] = {{"name", ctx.engine.name}, {"version", ctx.engine.version}, {"max_num_tokens", ctx.engine.max_num_tokens},
                 {"gqa_grouped_kv_reads", ctx.engine.gqa_grouped_kv_reads}};
  if (!ctx.engine.cuda_graph_batch_sizes.empty()) j["engine"]["cuda_graph_batch_sizes"] = ctx.engine.cuda_graph_batch_sizes;
  // the engine's own sizes where none were given (vLLM's default ladder)
  const auto defaults = default_graph_sizes(ctx.engine);
  if (!defaults.empty()) j["engine"]["default_cuda_graph_batch_sizes"] = defaults;
  // the batch the decode step ran as (the closed form pads decode mode only)
  if ((!ctx.engine.cuda_graph_batch_sizes.empty() || !defaults.empty()) && ctx.workload.mode == Mode::kDecode) {
    j["graph_padded_batch"] = graph_padded_batch(ctx.engine, m.batch, d.attn_dp);
  }
  if (ctx.engine.name != "generic") j["engine"]["max_num_seqs"] = ctx.engine.max_num_seqs;  // the generic engine has no cap
  if (!ctx.engine.caps_origin.empty()) j["engine"]["caps_origin"] = ctx.engine.caps_origin;
  if (ctx.workload.spec_tokens > 0) {
    j["speculative"] = {{"tokens", ctx.workload.spec_tokens}, {"acceptance", ctx.workload.spec_acceptance},
                        {"tokens_per_step", tokens_per_step(ctx.workload)}};
  }
  json ops = json::array();
  for (const auto& o : bd.ops) {
    ops.push_back({{"op", op_label(ctx, o)},
                   {"choice", o.choice},
                   {"layers", o.layers},
                   {"compute_ms", o.compute_s * 1e3},
                   {"comm_ms", o.comm_s * 1e3},
                   {"collective", to_string(o.collective)},
                   {"collective_group", o.comm_group},
                   {"comm_bytes_per_gpu", o.comm_bytes},
                   {"flops_per_gpu", o.flops},
                   {"hbm_bytes_per_gpu", o.hbm_bytes}});
    if (explain) {
      ops.back()["bound"] = o.compute_s >= o.comm_s ? json(o.bound) : json("network");
      ops.back()["basis"] = basis_name(o.basis);
      ops.back()["table"] = o.table.empty() ? json(nullptr) : json(o.table);
      // the collectives' basis: the engine's measured custom all-reduce where it priced one
      const CollRecord* tabled = nullptr;
      for (const auto& c : o.colls) {
        if (c.basis != Basis::kModel) {
          tabled = &c;
          break;
        }
      }
      ops.back()["comm_basis"] = o.comm_s <= 0 ? json(nullptr) : json(basis_name(tabled ? tabled->basis : Basis::kModel));
      ops.back()["comm_table"] = tabled ? json(tabled->table) : json(nullptr);
    }
  }
  j["breakdown"] = {{"phase", to_string(bd.phase)}, {"stage_ms", bd.stage_s * 1e3}, {"ops", ops}};
  if (explain) {
    const ExplainShares e = explain_shares(bd);
    j["explain"] = {{"kernel_tables", ctx.params.gemm.present},
                    {"ops_ms", e.total_s * 1e3},
                    {"measured_ms", e.measured_s * 1e3},
                    {"transferred_ms", e.transferred_s * 1e3},
                    {"extrapolated_ms", e.extrapolated_s * 1e3},
                    {"model_ms", e.model_s * 1e3},
                    {"measured_share", e.backed()},
                    {"gemm_ceiling_bf16", ctx.ceiling_bf16},
                    {"gemm_ceiling_fp8", ctx.ceiling_fp8},
                    {"gemm_ceiling_fp4", ctx.ceiling_fp4},
                    {"gemm_half_rows_bf16", ctx.half_rows_bf16},
                    {"gemm_half_rows_fp8", ctx.half_rows_fp8},
                    {"gemm_half_rows_fp4", ctx.half_rows_fp4}};
    if (const LayerFloor& lf = ctx.layer_floor; lf.present) {
      j["explain"]["kernel_floor"] = {{"us_per_op", lf.per_op_s * 1e6}, {"basis", basis_name(lf.basis)}, {"source", lf.source},
                                      {"fitted_us", ctx.params.kernel_overhead_us}};
    }
  }
  return j.dump(2);
}

std::string plan_lines(const SimContext& ctx, const Plan& plan) {
  const Degrees& d = plan.deg;
  std::string s;
  const std::string redundant = plan.redundant_experts > 0 ? fmt::format(", {} redundant expert slots", plan.redundant_experts) : "";
  const std::string experts =
      ctx.model.is_moe() ? fmt::format(" (ep {}, expert tp {}{})", d.ep, d.expert_tp(), redundant) : std::string();
  const std::int64_t used = d.total_gpus(), all = ctx.cluster.num_gpus;
  s += fmt::format("plan         tp {} x attn_dp {} x pp {}{}, replicas {} = {} GPU{} of {}{}\n", d.tp, d.attn_dp, d.pp, experts, d.replicas, used,
                   used == 1 ? "" : "s", all, used < all ? fmt::format(" ({} idle)", all - used) : "");
  // over a stage of one GPU every split is the whole tensor: no choice changes anything
  s += d.stage_width() == 1 ? std::string("sharding     - (a stage of one GPU: nothing to split)\n")
                            : fmt::format("sharding     {}\n", sharding_to_string(plan.sharding));
  return s;
}

std::string context_lines(const SimContext& ctx) {
  std::string s;
  const std::string source = !ctx.weights_given && !ctx.model.quant.method.empty()
                                 ? fmt::format(" (the checkpoint's {})", ctx.model.quant.method)
                                 : "";
  s += fmt::format("formats      weights {}{}, KV cache {}\n", formats_label(ctx.formats, ctx.model.is_moe()), source, to_string(ctx.formats.kv));
  if (ctx.engine.name != "generic" || ctx.engine.max_num_tokens != kPrefillChunkTokens || !ctx.engine.cuda_graph_batch_sizes.empty()) {
    s += fmt::format("engine       {}{} (max_num_tokens {} per attention-DP rank{}{}{})\n", ctx.engine.name,
                     ctx.engine.version.empty() ? "" : " " + ctx.engine.version, ctx.engine.max_num_tokens,
                     ctx.engine.limits_per_micro_batch ? " and pipeline micro-batch" : "",
                     ctx.engine.gqa_grouped_kv_reads ? "" : "; decode attention reads KV once per query head",
                     ctx.engine.cuda_graph_batch_sizes.empty()
                         ? std::string()
                         : "; decode-only steps padded to CUDA-graph batch sizes " + cuda_graph_batch_sizes_text(ctx.engine.cuda_graph_batch_sizes));
  }
  if (ctx.workload.spec_tokens > 0) {
    s += fmt::format("speculative  {} draft tokens at acceptance {:.2f}: {:.2f} tokens per sequence per step\n", ctx.workload.spec_tokens,
                     ctx.workload.spec_acceptance, tokens_per_step(ctx.workload));
  }
  if (!ctx.params.calibrated) s += fmt::format("note         no calibration for {}: using the {} fit\n", ctx.cluster.gpu.name, ctx.params.gpu);
  const Formats& f = ctx.formats;
  const bool fp4 = f.attention == DType::kFp4 || f.dense == DType::kFp4 || f.experts == DType::kFp4 || f.other == DType::kFp4;
  if (ctx.terms.exp_mixed) {
    s += fmt::format("note         {} runs the MXFP4 experts W4A8: MXFP8 activations through the fp8 x fp4 MMA at the fp8 rate "
                     "(docs/cost-model.md, \"Number formats\")\n",
                     ctx.cluster.gpu.name);
  }
  if (fp4 && ctx.cluster.gpu.fp4.value() <= 0) {
    s += fmt::format("note         {} has no fp4 tensor cores: the 4-bit weights are read as such and dequantized for bf16 GEMMs "
                     "(docs/cost-model.md, \"Number formats\")\n",
                     ctx.cluster.gpu.name);
  }
  return s;
}

std::string simulate_text(const SimContext& ctx, const Plan& plan, const Metrics& m, const Breakdown& bd) {
  std::string s = plan_lines(ctx, plan);
  const std::string why_batch =
      plan.batch != 0          ? ""
      : m.batch_at_engine_cap ? fmt::format(" ({}'s cap of {} running sequences {}, --max-num-seqs; memory and the SLOs allow it)",
                                             ctx.engine.name, engine_batch_cap(ctx), running_cap_unit(ctx.engine, plan.deg))
                              : " (the largest that fits memory and the SLOs)";
  s += fmt::format("workload     {} ({}), batch {}{}\n", ctx.workload.name, to_string(ctx.workload.mode), m.batch, why_batch);
  s += context_lines(ctx);
  if (const std::int64_t padded = graph_padded_batch(ctx.engine, m.batch, plan.deg.attn_dp);
      ctx.workload.mode == Mode::kDecode && padded != m.batch) {
    s += fmt::format("cuda graphs  the decode step of {} sequences runs padded to {} (the ops below are the padded step's)\n", m.batch, padded);
  }
  if (m.infeasible == Infeasible::kInvalidPlan) {
    s += fmt::format("INFEASIBLE   {}: {}\n", to_string(m.infeasible), m.reason);
    return s;
  }
  if (!m.feasible()) s += fmt::format("INFEASIBLE   {}: {}\n", to_string(m.infeasible), m.reason);
  const Mode mode = ctx.workload.mode;
  if (mode != Mode::kPrefill) {
    s += fmt::format("throughput   {:.1f} output tokens/s per GPU\n", m.output_tok_s_per_gpu);
    s += fmt::format("tpot         {:.2f} ms\n", m.tpot_s * 1e3);
  }
  if (mode != Mode::kDecode) {
    s += fmt::format("input        {:.1f} input tokens/s per GPU\n", m.input_tok_s_per_gpu);
    s += fmt::format("ttft         {:.2f} ms\n", m.ttft_s * 1e3);
  }
  s += fmt::format("step time    {:.3f} ms per micro-batch and stage ({} micro-batch{}, {} phase; {:.3f} ms of it engine overhead)\n",
                   m.step_s * 1e3, m.micro_batches, m.micro_batches == 1 ? "" : "es", to_string(bd.phase), ctx.params.step_overhead_us * 1e-3);
  if (plan.two_batch_overlap) {
    s += bd.two_batch_overlap ? std::string("overlap      two-batch: two micro-batches per step, each one's all-to-all beside the other's "
                                            "compute; the ops below are one micro-batch's\n")
                              : std::string("overlap      two-batch asked for, off: under two tokens per attention-DP rank in this step\n");
  }
  s += fmt::format("memory/GPU   {} of {}: weights {}, KV cache {}, activations {}, reserve {}\n", si_bytes(m.memory.total()),
                   si_bytes(m.memory.capacity), si_bytes(m.memory.weights), si_bytes(m.memory.kv_cache),
                   si_bytes(m.memory.activations), si_bytes(m.memory.reserve));
  s += fmt::format("\n{:<22} {:<8} {:>6} {:>11} {:>10}  {:<15} {:<8} {:>12}\n", "op (per layer)", "choice", "layers", "compute ms",
                   "comm ms", "collective", "group", "bytes/GPU");
  for (const auto& o : bd.ops) {
    s += fmt::format("{:<22} {:<8} {:>6} {:>11.4f} {:>10.4f}  {:<15} {:<8} {:>12}\n", op_label(ctx, o), o.choice, o.layers, o.compute_s * 1e3,
                     o.comm_s * 1e3, to_string(o.collective), o.comm_group, o.comm_bytes > 0 ? si_bytes(Bytes(o.comm_bytes)) : "-");
  }
  return s;
}

ExplainShares explain_shares(const Breakdown& bd) {
  ExplainShares e;
  for (const auto& o : bd.ops) {
    const double n = static_cast<double>(std::max<std::int64_t>(o.layers, 1));
    const double comp = o.compute_s * n, comm = o.comm_s * n;
    e.total_s += comp + comm;
    const auto add = [&](Basis b, double t) {
      switch (b) {
        case Basis::kMeasured: e.measured_s += t; break;
        case Basis::kTransferred: e.transferred_s += t; break;
        case Basis::kExtrapolated: e.extrapolated_s += t; break;
        case Basis::kModel: e.model_s += t; break;
      }
    };
    add(o.basis, comp);
    // collectives: the engine's measured custom all-reduce where it priced them, else the
    // alpha-beta model
    double tabled = 0;
    for (const auto& c : o.colls) {
      if (c.basis == Basis::kModel) continue;
      add(c.basis, c.time_s * n);
      tabled += c.time_s * n;
    }
    e.model_s += std::max(0.0, comm - tabled);
  }
  return e;
}

std::string explain_text(const SimContext& ctx, const Breakdown& bd) {
  std::string s = fmt::format("\nexplain: where each op's time comes from ({})\n",
                              ctx.params.gemm.present ? "dense GEMMs from the kernel tables, --kernel-tables"
                                                      : ctx.gqa_decode.present
                                                            ? "the fitted model; GEMMs carried by the measured share ratios, the activation and rotary kernels and GQA decode attention measured, prefill attention at the published ceilings"
                                                            : ctx.prefill_attention.present
                                                            ? "the fitted model; GEMMs carried by the measured share ratios, the activation and rotary kernels measured, prefill attention at the published ceilings"
                                                            : "the fitted model; GEMMs carried by the measured share ratios, the activation and rotary kernels measured");
  s += fmt::format("{:<22} {:>6} {:>11} {:>10}  {:<8} {:<12} {}\n", "op (per layer)", "layers", "compute ms", "comm ms", "bound", "basis",
                   "table");
  for (const auto& o : bd.ops) {
    const bool net = o.compute_s < o.comm_s;
    const char* bound = !net ? (o.bound[0] ? o.bound : "-") : "network";
    // a network-bound op names its collectives' basis (the first one a table priced)
    Basis basis = o.basis;
    std::string table = o.table;
    if (net) {
      basis = Basis::kModel;
      table.clear();
      for (const auto& c : o.colls) {
        if (c.basis == Basis::kModel) continue;
        basis = c.basis;
        table = c.table;
        break;
      }
    }
    s += fmt::format("{:<22} {:>6} {:>11.4f} {:>10.4f}  {:<8} {:<12} {}\n", op_label(ctx, o), o.layers, o.compute_s * 1e3, o.comm_s * 1e3, bound,
                     basis_name(basis), table.empty() ? "-" : table);
  }
  const ExplainShares e = explain_shares(bd);
  const auto pct = [&](double x) { return e.total_s > 0 ? 100.0 * x / e.total_s : 0.0; };
  s += fmt::format("of the step's {:.3f} ms of ops: measured {:.1f}%, transferred {:.1f}%, extrapolated {:.1f}%, model {:.1f}%"
                   " -> {:.1f}% rests on measured or transferred rows\n",
                   e.total_s * 1e3, pct(e.measured_s), pct(e.transferred_s), pct(e.extrapolated_s), pct(e.model_s), 100.0 * e.backed());
  if (const LayerFloor& lf = ctx.layer_floor; lf.present) {
    s += fmt::format("kernel floor {:.2f} us per priced op ({} runs its small kernels separately): the measured decode layer's {:.1f} us of small "
                     "kernels and GEMM floors over its {:.1f} priced ops per layer ({}), not the fitted {:.2f} us\n",
                     lf.per_op_s * 1e6, ctx.engine.name, lf.fixed_s * 1e6 / static_cast<double>(ctx.model.num_layers),
                     static_cast<double>(lf.priced_ops) / static_cast<double>(ctx.model.num_layers), lf.source, ctx.params.kernel_overhead_us);
  }
  if (!ctx.params.gemm.present && (ctx.ceiling_bf16 != 1.0 || ctx.ceiling_fp8 != 1.0 || ctx.ceiling_fp4 != 1.0)) {
    s += fmt::format("GEMM efficiency carried to {} by its measured share of spec over the {} fit's (at the engines' shapes where both are "
                     "measured there, else at their best shapes): x{:.3f} (bf16), x{:.3f} (fp8), x{:.3f} (fp4)\n",
                     ctx.cluster.gpu.name, ctx.params.gpu, ctx.ceiling_bf16, ctx.ceiling_fp8, ctx.ceiling_fp4);
  }
  if (!ctx.params.gemm.present && (ctx.half_rows_bf16 != 1.0 || ctx.half_rows_fp8 != 1.0 || ctx.half_rows_fp4 != 1.0)) {
    s += fmt::format("GEMM few-row ramp carried to {}'s ridge (its peak x ceiling x bytes per weight over its HBM bandwidth, against the {} fit's): "
                     "x{:.3f} (bf16), x{:.3f} (fp8), x{:.3f} (fp4) of gemm_half_rows\n",
                     ctx.cluster.gpu.name, ctx.params.gpu, ctx.half_rows_bf16, ctx.half_rows_fp8, ctx.half_rows_fp4);
  }
  return s;
}

}  // namespace shardwise
