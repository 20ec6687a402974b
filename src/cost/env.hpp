// Internal to cost/: the state of one evaluation (Env), the activation layouts, and the
// functions the simulator's files share. Not included outside src/cost/.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cost/moe_load.hpp"
#include "cost/simulator.hpp"

namespace shardwise::detail {

// Layout of an activation tensor [tokens, features] over the ranks of a group:
// replicated, split on tokens, split on features, or partial sums.
enum class Lay : std::uint8_t { kR, kSt, kSf, kP };

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

inline int ch(const Plan& p, Slot s) { return p.sharding[static_cast<std::size_t>(s)]; }
struct Env;
// Expert slots each EP group holds: (routed experts + redundant copies) / ep.
double expert_slots_per_rank(const Env& e, const LayerShape& s);

// The state of one evaluation: the context's FormatTerms (wb*, peak*, ramp*, kvb, disp_b,
// attn_peak, hbm: simulator.hpp) and what the plan and phase fix.
struct Env : FormatTerms {
  const SimContext* ctx = nullptr;
  const Plan* plan = nullptr;
  const CostParams* p = nullptr;
  Phase phase = Phase::kDecode;
  double ab = 2.0;  // activation bytes per element
  double q_per_seq = 1.0;  // tokens each sequence brings to a decode step (1 + speculative drafts)
  MoeTerms moe;  // the batch-independent terms of the expert load, computed once per evaluation
  double attn_dp_skew = 1.0;  // the busiest attention-DP group's decode attention over the mean (attn_dp_imbalance)
  std::int64_t tp = 1, a = 1, w = 1, ep = 1, etp = 1, pp = 1;
  Group g_tp, g_w, g_dp, g_etp, g_pp;
  GroupSpan s_tp, s_w, s_etp;  // span_of each, once per evaluation (coll looks them up)
  // per-evaluation accumulators
  double max_act = 0;  // largest per-rank activation footprint of one op (in + out)
  // breakdown
  Breakdown* bd = nullptr;
  int cls = -1;
  std::int64_t cls_layers = 0;
  double op_flops = 0, op_bytes = 0;  // of the op being costed, for the breakdown
  const GemmFormatProfile* op_table = nullptr;  // the kernel table behind it (nullptr: the model)
  const ShapeCurve* op_shape = nullptr;         // and the curve of its shape in it, where measured
  const TimeCurve* op_curve = nullptr;          // or the measured curve behind an elementwise op
  // or the measured ceilings behind an attention op (MLA decode, prefill): their basis for this
  // op and the rows they come from (nullptr: none)
  Basis op_ceiling_basis = Basis::kModel;
  const std::string* op_ceiling_source = nullptr;
  const char* op_bound = "";
  double op_rows = 0;
  // the shares a kernel-table curve gave at a row count, the last four (round robin): the
  // GEMMs of one evaluation read few curves at few row counts (attention, MLP and expert rows,
  // repeated by every layer class), so most reads skip the logarithm and the search
  struct ShareMemo {
    const GemmCurve* curve = nullptr;
    double rows = -1, share = 0;
  };
  std::array<ShareMemo, 4> shares{};
  std::size_t share_next = 0;
  double curve_share(const GemmCurve& c, double rows) {
    for (const ShareMemo& m : shares) {
      if (m.curve == &c && m.rows == rows) return m.share;
    }
    ShareMemo& m = shares[share_next];
    share_next = (share_next + 1) % shares.size();
    m = ShareMemo{&c, rows, c.share_at_log(std::log(std::max(rows, 1e-9)))};
    return m.share;
  }
  // the last time read from each elementwise curve (rope: 0, activation: 1) at its bytes: the
  // layer classes of one evaluation repeat their attention's rope, the dense and shared MLPs
  // their activation sizes
  const TimeCurve* ew_curve[2] = {nullptr, nullptr};
  double ew_bytes[2] = {0, 0}, ew_val[2] = {0, 0};
  // the attention half of each layer class costed so far by this stage() (a bit per class;
  // stage() clears them, its classes share one micro-batch and context): a class whose
  // attention_twin is an earlier one reuses it (the search's evaluations only: not with a
  // breakdown, groups or overlap). The times are left unset until their bit is.
  std::uint32_t attn_half_valid = 0;
  double attn_half[kMaxLayerClasses];
  double* group_time = nullptr;       // when set: time of the current layer class by slot group
  double* group_act = nullptr;        // when set: largest activation footprint by slot group
  bool tbo_on = false;                // two-batch overlap: layers costed per micro-batch, combined by tbo_layer_time
  TboParts* tbo = nullptr;            // when set: the current layer's time by overlap part
  CollKind pend_kind = CollKind::kNone;
  double pend_s = 0, pend_bytes = 0;
  const char* pend_group = "";
  std::vector<CollRecord> pend_colls;  // every collective of the op being costed (breakdown only)
};

Env make_env(const SimContext& ctx, const Plan& plan, Phase phase, Breakdown* bd);
// The terms of an evaluation fixed by the GPU, the formats and the attention kind
// (make_context computes them once per context; make_env copies them).
FormatTerms format_terms(const GpuSpec& gpu, const Formats& f, AttentionKind attention);
// The tensor-core peak of a GEMM on weights of format d (compute.cpp has the rule).
double gemm_peak_for(const GpuSpec& gpu, DType d);
// The tensor-core format a GEMM runs in, from the peak gemm_peak_for gave it.
inline DType tensor_format(const GpuSpec& gpu, double peak) {
  if (peak > 0 && peak == gpu.fp4.value()) return DType::kFp4;
  if (peak > 0 && peak == gpu.fp8.value() && peak != gpu.bf16.value()) return DType::kFp8;
  return DType::kBf16;
}
// Bytes per element of the tokens sent to experts of format `experts`.
double dispatch_bytes(const GpuSpec& gpu, DType experts);
// Tokens per sequence in a decode step: the new one plus the speculative drafts verified.
double tokens_verified(const Workload& w);

inline double expert_slots_per_rank(const Env& e, const LayerShape& s) {
  return static_cast<double>((s.experts + e.plan->redundant_experts) / e.ep);
}
// --- collectives and layouts (collectives.cpp) ---------------------------------
// coll_priced prices one that moves bytes; coll, inline, answers 0 without a call where
// nothing moves (a group of one, no bytes: most of an evaluation's conversions)
// (g: the Env's own groups by reference, which coll_priced knows the spans of by address)
double coll_priced(Env& e, CollKind k, const Group& g, double full, const char* gname, double slowest);
inline double coll(Env& e, CollKind k, const Group& g, double full, const char* gname, double slowest = 1.0) {
  if (k == CollKind::kNone || g.size <= 1 || full <= 0) return 0.0;
  return coll_priced(e, k, g, full, gname, slowest);
}
// The MoE dispatch (combine: false) or combine all-to-all over the W ranks of `full` bytes,
// the busiest rank receiving `imbalance` x the mean: the engine's kernel as measured where
// the tables describe this deployment (SimContext::moe_comm: its kernel, topology and phase;
// no expert TP), else coll's model (docs/silicon.md, "Dispatch and combine").
double moe_all_to_all(Env& e, bool combine, double full, double imbalance);
// The collective a layout change needs: same -> none; R -> split: local slice;
// split -> R: all-gather; P -> R: all-reduce; P -> split: reduce-scatter;
// one split -> the other: all-to-all. Nothing ever requires partial sums.
inline CollKind transition(Lay from, Lay to) {
  if (from == to) return CollKind::kNone;
  switch (from) {
    case Lay::kR: return CollKind::kNone;
    case Lay::kSt: return to == Lay::kR ? CollKind::kAllGather : CollKind::kAllToAll;
    case Lay::kSf: return to == Lay::kR ? CollKind::kAllGather : CollKind::kAllToAll;
    case Lay::kP: return to == Lay::kR ? CollKind::kAllReduce : CollKind::kReduceScatter;
  }
  return CollKind::kNone;
}
inline double convert(Env& e, Lay from, Lay to, const Group& g, double full, const char* gname, double slowest = 1.0) {
  return coll(e, transition(from, to), g, full, gname, slowest);
}
double to_mlp(Env& e, Lay from, Lay need, double full);
double to_attn(Env& e, Lay from, Lay need, double full);

// --- compute (compute.cpp) -------------------------------------------------------
// The fixed cost of one priced op: the kernel tables' measured small-kernel floor; else, for an
// engine that launches its small kernels separately, the measured decode layer's fixed time
// per priced op (cost/layer_floor.hpp); else the fitted kernel_overhead_us.
inline double kernel_floor(const Env& e) {
  if (e.p->gemm.present) return e.p->gemm.floor_s;
  return e.ctx->layer_floor.present ? e.ctx->layer_floor.per_op_s : e.p->kernel_overhead_us * 1e-6;
}
// The share of HBM a grouped expert GEMM streams its weights at: the engine's measured MoE
// backend's where its profile has one (EngineTraits::moe_expert_stream), else the fit's.
inline double expert_stream(const Env& e) {
  return e.ctx->engine.moe_expert_stream > 0 ? e.ctx->engine.moe_expert_stream : e.p->expert_mem_efficiency;
}
// What TensorRT-LLM's measured MoE module (data/silicon/published/trtllm_moe_b200.csv) is to an
// op on this GPU: measured on the B200, transferred to its architecture's other chips (the rule
// the attention rows carry), extrapolated elsewhere; --explain's basis of the module floor and of
// an expert GEMM streaming at the engine's measured share.
Basis trtllm_moe_table_basis(const std::string& gpu);
// What bounds an op of compute time tc, memory time tm and a fixed floor (for --explain).
inline const char* bound_of(double tc, double tm, double floor_s) {
  return std::max(tc, tm) < floor_s ? "latency" : tc >= tm ? "compute" : "memory";
}
// mem_eff: the achieved share of HBM bandwidth (0: the dense kernels' mem_efficiency)
// A weight-only grouped expert GEMM streams its weights at this share of what the native
// kernels stream: vLLM's W4A16 fused Marlin MoE reaches 0.40 of HBM at 1-4 rows per expert
// (data/silicon/published/w4a16_moe.csv: FlagGems PR 3609's vLLM column on an H20, the
// median of the five memory-bound rows, 0.375-0.425), the engines' fp8 Triton fused MoE on
// the same die 0.83 (the project's H100 routed rows at 1.4-4 rows per expert): 0.40 / 0.83.
// The dequantisation, not HBM, bounds it; tests/cost/weight_only_test.cpp recomputes both.
inline constexpr double kWeightOnlyMoeStream = 0.40 / 0.83;
// Where it is compute-bound (many rows per expert) it issues the dequantisation beside its
// MMAs, which caps the share of the computed format's peak it reaches
// (data/silicon/published/w4a16_moe_compute.csv; tests/cost/weight_only_test.cpp recomputes
// both): on the H100 0.257 (SGLang PR 38884: an nsys capture of W4A16 Marlin MoE in
// 16,384-token prefill chunks, 1.237 TFLOP per layer in 4.863 ms = 254 of 989.4 TFLOP/s),
// where its bf16 GEMMs reach about 0.7; on the H20 0.50 (SGLang PR 34682: Marlin over 64k and
// 128k tokens of DeepSeek-V4-Flash's experts, 73-74 of 148 TFLOP/s; its tensor cores are
// throttled, its SMs are not, so the dequantisation binds less).
inline constexpr double kWeightOnlyMoeComputeH100 = 0.257;
inline constexpr double kWeightOnlyMoeComputeH20 = 0.50;
// The cap of one GPU and where it comes from: measured on the H100 and the H20, transferred
// to the H200 (the H100's die), extrapolated (the H100's) to every other GPU; 1 (no cap) on
// a GPU whose expert GEMMs all run in a native format.
struct WeightOnlyCompute {
  double share = 1.0;
  Basis basis = Basis::kModel;
};
WeightOnlyCompute weight_only_compute(const GpuSpec& gpu);
const std::string& weight_only_compute_source(const GpuSpec& gpu);
// ramp: the component's gemm_half_rows scale (Env::ramp*, 1 for GEMMs in the weights' own format)
double gemm_time(Env& e, double peak, double rows, double flops, double bytes, bool grouped = false, double ramp = 1.0);
// The gemm_half_rows scale of GEMMs on weights of format d (wb bytes per weight, block scales
// counted) run at `peak`: 1 when the GPU computes in d's format, else wb over the bytes of
// the format computed in (fp4/int4 in bf16 on Hopper: 0.5625 / 2 = 0.28125).
double weight_only_ramp(const GpuSpec& gpu, DType d, double wb, double peak);
// MXFP4 experts on a GPU with fp4 tensor cores run W4A8: MXFP8 activations through the
// mixed fp8 x fp4 MMA at the fp8 rate, natively (not the weight-only dequantisation)
bool mxfp4_experts_w4a8(const GpuSpec& gpu, const Formats& f);
double stream_time(Env& e, double bytes);
// An elementwise kernel between the GEMMs (`c`: the activation or the rotary curve of
// SimContext::elementwise) moving `bytes`: its measured time on this GPU
double elementwise_time(Env& e, const TimeCurve& c, double bytes);
// An expert GEMM of a tensor-parallel MoE layer run by the engine's own fused MoE kernel:
// the floor plus the roofline over the share its measured rows reach at `rows` token copies
// per touched expert (SimContext::moe_routed; the caller checks that the curve is present):
// the rows of its own GEMM (gate + up when `up`, else down; n output columns, k deep, per
// expert on this rank) where they are measured, else the curve pooled over every measured shape.
double routed_gemm_time(Env& e, double rows, bool up, double n, double k, double flops, double bytes);
// The breakdown's record of the op being costed (a no-op unless a breakdown is asked for:
// inline, so that the search's evaluations pay one test).
void record_op(Env& e, const char* op, int slot, double compute_s, double comm_s);
inline void record(Env& e, const char* op, int slot, double compute_s, double comm_s) {
  if (e.bd) record_op(e, op, slot, compute_s, comm_s);
}
// A GEMM-like op over group size g with a column / row / none choice.
struct GemmLay {
  Lay in, out;
  double split;  // weight and FLOP divisor
};
inline GemmLay gemm_lay(int choice_col_row_none, std::int64_t g, bool first_is_col) {
  // choices are (col, row, none) for ffn1/qkv and (row, col, none) for ffn2/o_proj
  const int c = choice_col_row_none;
  const bool col = first_is_col ? c == 0 : c == 1;
  const bool row = first_is_col ? c == 1 : c == 0;
  if (col) return {Lay::kR, Lay::kSf, static_cast<double>(g)};
  if (row) return {Lay::kSf, Lay::kP, static_cast<double>(g)};
  return {Lay::kR, Lay::kR, 1.0};
}
inline Lay norm_lay(const Plan& p, Slot s) { return ch(p, s) == 0 ? Lay::kR : Lay::kSt; }

// The compute and communication of the op being costed, added to the layer's total (and
// to its slot group's, when decomposing) when the op is flushed.
struct OpTimer {
  Env& e;
  double comp = 0, comm = 0, total = 0;
  void flush(const char* name, int slot, int group) {
    record(e, name, slot, comp, comm);
    total += comp + comm;
    if (e.group_time) e.group_time[group] += comp + comm;
    if (e.tbo) e.tbo->add(name, comp, comm);
    comp = comm = 0;
  }
  // an op's activation footprint (input + output) on one rank
  void act(int group, double bytes) const {
    e.max_act = std::max(e.max_act, bytes);
    if (e.group_act) e.group_act[group] = std::max(e.group_act[group], bytes);
  }
};

// --- memory (memory.cpp) ---------------------------------------------------------
double qkv_params_per_rank(const Plan& p, const LayerShape& s, double tp);
double layer_weight_bytes(const Env& e, const LayerShape& s);
void layer_weight_bytes_grouped(const Env& e, const LayerShape& s, double* out);
double layer_kv_bytes_per_seq(const Env& e, const LayerShape& s, std::int64_t ctx);
double embedding_weight_bytes(const Env& e);
double lm_head_params(const Env& e);
double tied_head_extra_params(const Env& e);
double lm_head_weight_bytes(const Env& e);
double reserve_bytes(const GpuSpec& g);
// Bytes as the memory messages print them: "12.3 GB" (decimal).
std::string gb(double bytes);
void check_memory(const MemoryBreakdown& m, Metrics& out, bool explain);

// --- one layer (layer.cpp, moe.cpp) -----------------------------------------------
double layer_time(Env& e, const LayerShape& s, double T, std::int64_t seq);
// The network share of an MoE all-to-all with DeepEP-style dedup (prefill: one copy of a token
// per remote NVLink domain, fanned out there) over the plain per-expert copies; 1 in decode.
double network_dedup(const Env& e, double k);
// A replicated MoE input: no attention data parallel and the input whole on each of W > 1
// ranks (docs/cost-model.md, "Replicated input"): no token travels, and the block ends in
// partial sums over W.
inline bool replicated_moe_input(const Env& e, Lay ffn_need) { return e.a == 1 && ffn_need == Lay::kR && e.w > 1; }
// The MoE block of an MoE layer: router, dispatch, expert FFNs, combine. Its input is in
// ffn_need's layout. Returns the layout it leaves the routed output in: partial sums over W (P) for a replicated
// MoE input, to be reduced once at layer_out; tokens split over W (St) after an all-to-all.
Lay moe_block(Env& e, OpTimer& t, const LayerShape& s, double T, Lay ffn_need);

// --- a pipeline stage and a step (stage.cpp) ----------------------------------------
// The LM head over `rows` tokens of one attention group: the GEMM, the fp32 logits' gather
// over the tp group (vocab split) and the logits' bytes per rank.
struct HeadCost {
  double gemm = 0, gather = 0, logits = 0;
};
HeadCost lm_head_cost(Env& e, double rows);
struct StageResult {
  double time = 0;        // the slowest stage, one micro-batch
  double weights = 0;     // bytes per rank on the fullest stage
  double kv_per_seq = 0;  // KV bytes per rank per sequence on the fullest stage
};
StageResult stage(Env& e, double T, std::int64_t seq, std::int64_t kv_ctx, std::int64_t seqs_per_group, GroupTables* gt = nullptr);
struct StepResult {
  double stage_s = 0;
  std::int32_t m = 1;
  MemoryBreakdown mem;
};
// One decode step of b sequences (or one prefill batch of b prompts) with the
// automatic or planned micro-batching; memory counted for kv_ctx tokens per sequence.
// The speculative draft pass of a decode step over `seqs` sequences (none without drafts).
struct Draft {
  double time = 0, weights = 0, kv_per_seq = 0, max_act = 0;
};
Draft draft_pass(const SimContext& ctx, const Plan& plan, double seqs, std::int64_t seq, std::int64_t kv_ctx);
// Two-batch overlap runs when the plan asks for it and each micro-batch gets a token per
// attention group (the engines fall back to one batch below that).
inline bool two_batch_overlap_applies(const Plan& plan, double tokens_per_group) { return plan.two_batch_overlap && tokens_per_group >= 2.0; }
StepResult step(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx,
                Breakdown* bd);

}  // namespace shardwise::detail
