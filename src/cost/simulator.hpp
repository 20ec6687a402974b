// The simulator: evaluate(plan) -> Metrics (feasible, or why not). Equations
// and assumptions: docs/cost-model.md. Layers of one class are evaluated once
// and multiplied; the hot path allocates nothing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cost/allreduce_table.hpp"
#include "cost/attention_table.hpp"
#include "cost/gqa_decode_table.hpp"
#include "cost/elementwise_table.hpp"
#include "cost/layer_floor.hpp"
#include "cost/moe_comm_table.hpp"
#include "cost/params.hpp"
#include "graph/graph.hpp"
#include "hardware/cluster.hpp"
#include "hardware/collective.hpp"
#include "model/model_spec.hpp"
#include "plan/plan.hpp"
#include "workload/workload.hpp"

namespace shardwise {

enum class Infeasible : std::uint8_t {
  kNone,
  kInvalidPlan,  // breaks a divisibility or size rule (see `reason`)
  kMemory,       // weights + KV + activations + reserve exceed HBM
  kTpotSlo,
  kTtftSlo,
};

struct MemoryBreakdown {
  Bytes weights, kv_cache, activations, reserve;
  Bytes capacity;
  [[nodiscard]] Bytes total() const { return weights + kv_cache + activations + reserve; }
};

struct Metrics {
  Infeasible infeasible = Infeasible::kNone;
  std::string reason;  // set only when infeasible
  double tpot_s = 0;   // time per output token (decode, offline)
  double ttft_s = 0;   // time to first token (prefill, offline)
  double step_s = 0;   // one decode step or one prefill batch
  double output_tok_s_per_gpu = 0;
  double input_tok_s_per_gpu = 0;
  std::int64_t batch = 0;  // concurrency evaluated (resolved when the plan asks for max)
  std::int32_t micro_batches = 1;
  std::int64_t gpus_used = 0;
  MemoryBreakdown memory;  // per GPU, the fullest pipeline stage
  [[nodiscard]] bool feasible() const { return infeasible == Infeasible::kNone; }
  // The objective of the search: output tokens/s per GPU (input tokens/s for prefill); 0 if infeasible.
  double objective = 0;
  // batch "max" stopped at the named engine's running-sequence cap (engine_batch_cap), not at
  // memory or an SLO
  bool batch_at_engine_cap = false;
};

// One collective call of an op in the breakdown (the executor checks each against what it moves).
struct CollRecord {
  CollKind kind = CollKind::kNone;
  std::string group;          // "tp", "mlp", "attn_dp", "etp", "pp" (the same names as OpCost::comm_group)
  std::int64_t group_size = 0;
  double full_bytes = 0;      // B: the logical size of the whole tensor the collective works on
  double bytes_per_gpu = 0;   // what each GPU sends (CollCost::bytes of collective_cost)
  double time_s = 0;          // its time (with the calibration's scale)
  // where the time comes from: the alpha-beta model, or a measured all-reduce (the engine's
  // custom kernel or NCCL's: cost/allreduce_table.hpp) and that table
  Basis basis = Basis::kModel;
  std::string table;
};

// One fused op of one layer class in the breakdown (per layer, per micro-batch step).
struct OpCost {
  int layer_class = -1;  // -1: embedding / lm head / pipeline
  std::string op;
  std::string choice;
  double compute_s = 0;
  double comm_s = 0;
  CollKind collective = CollKind::kNone;  // inserted before this op (its input conversion)
  double comm_bytes = 0;                  // per GPU
  std::string comm_group;                 // "tp", "mlp", "attn_dp", "etp", "pp"
  // every collective of this op that moves something, in call order (collective,
  // comm_bytes and comm_group above summarise them: one kind, the summed bytes)
  std::vector<CollRecord> colls;
  std::int64_t layers = 0;                // layers of this class on the slowest stage
  double flops = 0;                       // per GPU, this op once
  double hbm_bytes = 0;                   // per GPU: weights + activations (+ KV read) this op once
  Basis basis = Basis::kModel;            // where its compute time comes from (cost/silicon.hpp)
  const char* bound = "";                 // what bounds its compute: "compute", "memory", "latency" ("" none)
  std::string table;                      // the kernel table behind it ("" none)
};
struct Breakdown {
  Phase phase = Phase::kDecode;
  std::vector<OpCost> ops;
  double stage_s = 0;  // time of the slowest stage for one micro-batch
  bool two_batch_overlap = false;  // the ops are one of two overlapped micro-batches (docs/cost-model.md)
};

// Tokens per prefill iteration of a serving engine (chunked prefill), in the offline mode:
// the budget of each attention-DP group (each DP rank schedules its own requests). The
// engines' default (max_num_tokens, --max-num-batched-tokens, --chunked-prefill-size).
constexpr std::int64_t kPrefillChunkTokens = 8192;

// What the serving engine does, where it changes the cost: its profile (data/engines/,
// cost/engine.hpp) at a version, with the settings a deployment overrides.
struct EngineTraits {
  std::string name = "generic";  // trtllm, vllm, sglang; generic: the defaults below
  std::string version;           // the profile's version ("" for generic)
  // Decode attention reads each KV head once for its whole query group (XQA,
  // FlashInfer, FlashAttention). False for kernels that read it once per query
  // head (TensorRT-LLM before its Hopper XQA kernels in 0.10).
  bool gqa_grouped_kv_reads = true;
  // Tokens one iteration of one attention-DP rank may prefill (the offline stream's chunk).
  std::int64_t max_num_tokens = kPrefillChunkTokens;
  // The scheduler, as the serving simulation (serve/, docs/serving.md) runs it:
  // prefill_first: waiting prompts run as a batch of their own, the decodes wait (SGLang);
  // else the running sequences decode first and prompts fill the rest of the token budget
  // in the same iteration (vLLM, TensorRT-LLM).
  bool prefill_first = false;
  // reserve_full_kv: a request is admitted only when the KV cache holds its whole prompt and
  // output, never preempted (TensorRT-LLM's GUARANTEED_NO_EVICT); else KV blocks on demand,
  // and the newest running request is preempted (recomputed later) when they run out.
  bool reserve_full_kv = false;
  std::int64_t max_num_seqs = 1024;    // running sequences per scheduling lane (scheduler_lanes)
  // Where max_num_seqs and max_num_tokens came from when not the profile or a flag: "trtllm-bench"
  // (offline mode: what trtllm-bench throughput derives, cost/bench_settings.hpp); "" otherwise.
  std::string caps_origin;
  // With pipeline parallelism, whether each of the pp micro-batches in flight is scheduled
  // under limits of its own: TensorRT-LLM's capacity scheduler admits max_batch_size x pp
  // requests (CapacityScheduler(getMaxBatchSize() * mNumMicroBatches), mNumMicroBatches = pp;
  // the PyTorch backend's get_max_num_sequences = pp_size x batch_size) and each micro-batch
  // takes up to max_num_tokens. Then an instance has pp scheduling lanes per attention-DP
  // rank. False: one set of limits per attention-DP rank, however deep the pipeline.
  bool limits_per_micro_batch = false;
  std::int64_t kv_block_tokens = 16;   // tokens per KV-cache block (paged attention)
  // Decode iterations one scheduling decision runs (vLLM V0's --num-scheduler-steps,
  // SGLang's --num-continuous-decode-steps): an iteration that decodes starts a run of this
  // many, during which the running sequences only decode; no request is admitted and no
  // prompt runs until the run ends. 1: the scheduler decides every iteration.
  std::int64_t decode_steps = 1;
  // A decode-batch target (AMD's MLPerf v5.1 vLLM V0 scheduler patch, VLLM_LLAMA2_MLPERF_SCHED;
  // prefill-first engines; docs/serving.md, "Decode-batch targets"): at each scheduling
  // decision the oldest decode_target(n) of the n running sequences decode, the rest wait;
  // prompts are admitted only while fewer than decode_target_max run and more than
  // prefill_min_free_tokens of KV are free, and, with fewer than prefill_min_waiting waiting,
  // only at every other decision. decode_target_max 0: off.
  std::int64_t decode_target_min = 0, decode_target_max = 0, decode_target_step = 1;
  std::int64_t prefill_min_waiting = 0, prefill_min_free_tokens = 0;
  // The GPU vendors the engine is built for (GpuSpec::vendor; empty: any): TensorRT-LLM runs
  // on NVIDIA GPUs only, vLLM and SGLang on NVIDIA and AMD (ROCm builds).
  std::vector<std::string> vendors;
  // The kernel the engine runs a tensor-parallel MoE layer with (every rank all experts,
  // sliced; the tokens replicated): kTritonFusedMoe for vLLM and SGLang (their Triton
  // fused_moe_kernel, measured in data/silicon/grouped_gemm.csv, layout `routed`); kOther
  // for the others (TensorRT-LLM's CUTLASS MoE), priced as grouped expert GEMMs whose weights
  // stream at moe_expert_stream where the profile measures it, else at the fitted expert
  // efficiency.
  enum class MoeKernel : std::uint8_t { kOther, kTritonFusedMoe };
  MoeKernel moe_kernel = MoeKernel::kOther;
  // Whether the engine runs a layer's small kernels (the activations' fp8 quantisation, the
  // KV-cache store, the router's top-k, moe_align, the routed sum) as kernels of their own, as
  // vLLM and SGLang do (`small_kernels: separate`): then the fixed time per priced op is the
  // measured decode layer's (cost/layer_floor.hpp), not the fitted kernel_overhead_us.
  // False (`fused`, the default): unmeasured for that engine's fusions, the fit stands.
  bool small_kernels_separate = false;
  // The fixed time per MoE layer of the engine's MoE module beyond the ops the model counts
  // (router, expert GEMMs, activation, routed sum): TensorRT-LLM's CUTLASS backend, measured on
  // one TP8 rank of a B200 (data/silicon/published/trtllm_moe_b200.csv: 96.8 us at one token,
  // where those ops take 42.3; docs/silicon.md, "TensorRT-LLM's MoE module on the B200").
  // Added to each MoE layer's combine; 0: none (the engines' fused Triton MoE, TensorRT-LLM's
  // TRTLLM-Gen backend).
  double moe_module_floor_us = 0;
  // The share of the GPU's HBM bandwidth at which the engine's MoE backend streams the expert
  // weights of a grouped (not Triton-routed) expert GEMM, where a kernel table measures it:
  // TensorRT-LLM's CUTLASS backend, 0.376 (data/silicon/published/trtllm_moe_b200.csv, the
  // slope of its module time over the touched experts' bytes on one TP8 rank of a B200; docs/
  // silicon.md, "TensorRT-LLM's MoE module on the B200"). In place of the GPU fit's
  // expert_mem_efficiency, which no longer prices that engine's expert weights; 0: none (the
  // fit's, as for the generic engine).
  double moe_expert_stream = 0;
  // The engine's own all-reduce for messages up to this many bytes inside one NVLink domain
  // (vLLM's and SGLang's custom_all_reduce, TensorRT-LLM's one-shot / two-shot AllReduce):
  // measured in data/silicon/allreduce.csv, the faster of it and NCCL taken (the engines
  // dispatch by size). 0: NCCL alone (the generic engine).
  std::int64_t custom_all_reduce_max_bytes = 0;
  // The kernel the engine's expert-parallel dispatch and combine run on (the all-to-all of
  // an MoE layer whose tokens are split over the ranks): TensorRT-LLM's NVLinkOneSided,
  // DeepEP's low-latency kernels (SGLang, vLLM), measured in data/silicon/moe_comm.csv and
  // read with the kernel tables; kModel: the alpha-beta model (the generic engine).
  MoeAllToAll moe_all_to_all = MoeAllToAll::kModel;
  // TensorRT-LLM's attention-DP balancing (attention_dp_config: enable_balance,
  // batching_wait_iters, timeout_iters; off by default in its LLM API): with attention DP,
  // new prompts are held until every DP rank has one (then, while every rank decodes, for
  // adp_wait_iters more iterations) or adp_timeout_iters iterations pass (docs/serving.md,
  // "Attention-DP balancing"). adp_timeout_iters 0: off.
  std::int64_t adp_wait_iters = 0, adp_timeout_iters = 0;
  // The CUDA-graph batch sizes of decode-only iterations, per attention-DP rank, ascending
  // (TensorRT-LLM's cuda_graph_config batch_sizes with enable_padding, vLLM's
  // cudagraph_capture_sizes, SGLang's --cuda-graph-bs): such an iteration of b sequences on a
  // rank runs as the smallest listed size at or above b, the padding rows computed and
  // moved like real ones, the KV cache read for the real sequences only; above the largest
  // size it runs as it is (eagerly). Empty: no padding modelled (every profile's default;
  // docs/serving.md, "CUDA-graph batch padding").
  std::vector<std::int64_t> cuda_graph_batch_sizes;
  // The engine's own capture sizes where none are given (its profile's versions[].cuda_graphs):
  // kNone, no padding (TensorRT-LLM pads only with enable_padding, off by default; SGLang's
  // list depends on a memory heuristic not modelled); kVllm, vLLM 0.11's default ladder
  // (vllm_default_graph_size), read at the engine's current caps.
  enum class GraphDefaults : std::uint8_t { kNone, kVllm };
  GraphDefaults graph_defaults = GraphDefaults::kNone;
  // make_context's: the defaults apply (graph_defaults kVllm, no sizes given, no speculative
  // drafts: vLLM's sizes count tokens)
  bool graph_defaults_on = false;
  friend bool operator==(const EngineTraits&, const EngineTraits&) = default;
};

// The instance batch a decode-only iteration of b sequences over attn_dp ranks runs as under
// the engine's CUDA graphs (EngineTraits::cuda_graph_batch_sizes): the per-rank batch
// ceil(b / attn_dp) padded up to the smallest listed size at or above it, times attn_dp; b
// itself with no sizes listed or above the largest (for sizes given to TensorRT-LLM or SGLang,
// the largest at or below the running-sequence cap, max_num_seqs; to vLLM, at or below its
// token budget, max_num_tokens, as vLLM filters them; vLLM's own ladder reaches 2 x max_num_seqs,
// so a batch at the cap pads to the size above it).
std::int64_t graph_padded_batch(const EngineTraits& e, std::int64_t b, std::int64_t attn_dp);
// vLLM 0.11's default CUDA-graph capture sizes (cuda_graph_sizes [min(max_num_seqs x 2, 512)]
// expanded to [1, 2, 4] + [8 i ...], then filtered by max_num_batched_tokens: 67 graphs at 512,
// vllm@6c728f77 vllm/model_executor/models/config.py as quoted in SemiAnalysisAI/InferenceX#117,
// and vllm-project/vllm#18698): 1, 2, 4, then every 8 up to m = min(2 max_num_seqs, 512,
// max_num_tokens). vllm_default_graph_size: the smallest at or above b, 0 above m (eager);
// vllm_default_graph_sizes: the list (reports). Later vLLM steps by 16 from 256 (vllm@09f030ea).
std::int64_t vllm_default_graph_size(std::int64_t b, std::int64_t max_num_seqs, std::int64_t max_num_tokens);
std::vector<std::int64_t> vllm_default_graph_sizes(std::int64_t max_num_seqs, std::int64_t max_num_tokens);
// The engine's default sizes in force for `e` (empty: none; graph_defaults_on)
std::vector<std::int64_t> default_graph_sizes(const EngineTraits& e);
// The context scale of such a padded iteration: the busiest rank's real sequences over its
// padded batch, ceil(b / attn_dp) / (padded / attn_dp) (at most 1), so that the padded batch at
// the scaled context reads the KV cache the busiest rank's real sequences hold.
double graph_kv_share(std::int64_t b, std::int64_t padded, std::int64_t attn_dp);
// The shape a decode-only step of b sequences at context seq (KV sized for kv_ctx) runs as
// under the engine's CUDA graphs: the padded batch, its contexts scaled by graph_kv_share
// (at least 1 token); b, seq and kv_ctx themselves where nothing is padded. The closed form
// of decode mode and the exact search's decomposition both price this shape.
struct DecodeShape {
  std::int64_t batch = 0, seq = 0, kv_ctx = 0;
};
DecodeShape graph_decode_shape(const EngineTraits& e, std::int64_t attn_dp, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx);

// Everything derived once per (model, cluster, workload).
// The terms of an evaluation that the GPU and the formats fix (bytes per element, the
// tensor-core peak and few-row ramp of each component's GEMMs: compute.cpp's rules),
// computed once by make_context; `set` false (a context built otherwise): make_env computes them
struct FormatTerms {
  bool set = false;
  // weight bytes per element and the tensor-core peak its GEMMs run at, per component
  // (Formats: attention, dense MLP / shared experts, routed experts, the rest), and the
  // KV cache's bytes per element
  double wb = 2.0, wb_attn = 2.0, wb_dense = 2.0, wb_exp = 2.0, kvb = 2.0;
  double peak = 0, peak_attn = 0, peak_dense = 0, peak_exp = 0;
  // the gemm_half_rows scale of each component's GEMMs: 1 where the weights run in their own
  // tensor-core format; the stored over the computed bytes per weight where they are
  // dequantised (weight-only: W4A16 0.5625 / 2), so that the few-row ramp holds the same
  // FLOPs per weight byte read (compute.cpp, weight_only_ramp)
  double ramp = 1, ramp_attn = 1, ramp_dense = 1, ramp_exp = 1;
  // bytes per element of the MoE dispatch payload (the experts' input format), the attention
  // kernels' tensor-core peak and the HBM bandwidth
  double disp_b = 2.0, attn_peak = 0, hbm = 0;
  // the measured compute share that caps weight-only expert GEMMs on this GPU (1: none;
  // env.hpp, weight_only_compute)
  double wo_compute = 1.0;
  // MXFP4 experts on a GPU with fp4 tensor cores run W4A8 (MXFP8 activations): the mixed
  // MMA at the fp8 rate (peak_exp), natively: not the weight-only stream share and compute
  // cap, though the ramp keeps the fp4 bytes per fp8 FLOP (compute.cpp, mxfp4_experts_w4a8)
  bool exp_mixed = false;
};

struct SimContext {
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  CostParams params;
  ModelGraph graph;
  // layers of each class among the first i layers (i = 0 .. layers), from graph.layer_class:
  // a stage's class counts in O(classes) (make_context fills it; empty: counted layer by layer)
  std::vector<std::array<std::int32_t, kMaxLayerClasses>> class_prefix;
  // The distinct stages of each pipeline depth: stage_kinds[pp] lists the stages of a pp-stage
  // split by their class counts and role (first, last), in the order of their first stage, each
  // with how many stages it stands for; make_context fills pp = 1 .. layers (stage() then prices
  // each kind once, not every stage). Empty: every stage walked.
  struct StageKind {
    std::array<std::int32_t, kMaxLayerClasses> counts{};
    bool first = false, last = false;
    std::int32_t stages = 0;
  };
  std::vector<std::vector<StageKind>> stage_kinds;
  EngineTraits engine;
  Formats formats;  // resolve_formats(model, workload)
  bool weights_given = false;  // the workload named the weights' format (else the checkpoint's own)
  // model-only terms of the expert load (docs/cost-model.md, "Expert load"), computed once:
  // sqrt(2 ln E) and ln(1 - k / E) for E routed experts and top-k
  double moe_z_experts = 0, moe_log_untouched = 0;
  // The GPU's measured share of spec over that of the silicon its parameters were fitted on
  // (GemmFormatProfile::ceiling_ratio: at the engines' shapes where both are measured there,
  // else their best-shape ceilings, data/silicon/gemm_ceiling.csv; 1 where unmeasured): the
  // fitted GEMM efficiency carried to a GPU whose kernels reach another share of its spec
  // (docs/silicon.md, "Carrying GEMM efficiency between GPUs")
  double ceiling_bf16 = 1.0, ceiling_fp8 = 1.0, ceiling_fp4 = 1.0;
  // The fitted few-row ramp (gemm_half_rows) carried to this GPU, per tensor format: the ramp
  // holds a GEMM's time at few rows to its weight read (on the fitted silicon gemm_half_rows is
  // about its ridge point, ~240 rows on the H100 in bf16 and fp8 alike), so the rows it spans
  // scale with this GPU's peak x ceiling x bytes per weight over its HBM bandwidth, against the
  // fitted silicon's bf16 (ridge_scale in simulator.cpp; 1 on the fitted GPU itself, 0.69 in bf16
  // and 0.71 in fp8 on the H200, 0.53 on the MI300X, 0.125 on the compute-poor H20; docs/cost-model.md, "Compute")
  double half_rows_bf16 = 1.0, half_rows_fp8 = 1.0, half_rows_fp4 = 1.0;
  // The engine's tensor-parallel MoE kernel as measured on this GPU (engine.moe_kernel's
  // curve for the experts' format; an empty curve where none is measured or carried) and the
  // small-kernel floor its shares were taken over: the expert GEMMs of a replicated-token
  // MoE layer read it whether or not the other kernel tables are on (docs/silicon.md).
  GemmFormatProfile moe_routed;
  // The engine's custom all-reduce as measured on this GPU (present where the engine runs one
  // and the GPU's NVLink has rows: docs/silicon.md, "All-reduce")
  AllReduceProfile custom_ar;
  // NCCL's all-reduce as measured on this GPU's NVLink (or its generation's), for the messages
  // above the engine's custom kernel: on every path (docs/silicon.md, "All-reduce")
  AllReduceProfile nccl_ar;
  // The elementwise kernels between the GEMMs as measured (activation, rotary embedding): each
  // an op of its own, with or without the kernel tables (docs/silicon.md, "Elementwise kernels")
  ElementwiseProfile elementwise;
  // The measured decode layer's fixed time per priced op, for an engine that runs its small
  // kernels separately (EngineTraits::small_kernels_separate): the fitted path's kernel floor
  // (cost/layer_floor.hpp); not present otherwise, or with the kernel tables on
  LayerFloor layer_floor;
  // MLA decode attention at FlashMLA's measured ceilings (with the kernel tables)
  MlaDecodeProfile mla_decode;
  // GQA (and multi-head) decode attention by the bytes it reads, as measured: on every path,
  // with or without the kernel tables, where the GPU or its architecture's measured chip has
  // rows (docs/silicon.md, "GQA decode attention"); else the fitted attn_mem_efficiency
  GqaDecodeProfile gqa_decode;
  // Prefill attention at the published kernels' ceilings, on every path where the GPU or its
  // architecture's measured chip has one (docs/silicon.md, "Prefill attention"); else the
  // fitted attn_efficiency
  PrefillAttentionProfile prefill_attention;
  // The engine's dispatch and combine kernel as measured on this GPU (with the kernel tables;
  // present where the engine names a kernel the tables hold rows of, or carry, for this GPU)
  MoeCommProfile moe_comm;
  double moe_routed_floor_s = 0;
  FormatTerms terms;  // format_terms(cluster.gpu, formats, model.attention)
};
// A context is built whole: the terms derived from its inputs (FormatTerms, the ceilings, the
// kernel profiles) are computed here, so a GPU, topology or format changed afterwards does not
// reach them: change the inputs and build it again.
SimContext make_context(const ModelSpec& m, const ClusterSpec& c, const Workload& w, const CostParams& p,
                        EngineTraits engine = {});


// The offline stream's prefill at concurrency b over attn_dp groups (docs/cost-model.md,
// "offline"). Whole prompts, as many per group as the chunk budget holds (at least one),
// every group alike, so that what is computed is what is credited.
struct OfflinePrefill {
  std::int64_t chunk = 1;     // requests per prefill iteration, all groups: per group clamp(8192 / isl, 1, b / a)
  std::int64_t arrivals = 1;  // requests prefilled in the iteration a new request joins, all groups:
                              // per group clamp(ceil((b / a) / osl), 1, chunk / a) (b / osl finish per decode step)
};
// `budget`: the engine's max_num_tokens per attention group (EngineTraits).
OfflinePrefill offline_prefill(const Workload& w, std::int64_t b, std::int64_t attn_dp, std::int64_t budget = kPrefillChunkTokens);

// The offline metrics from the step times: tpot_dec one decode iteration of b sequences,
// chunk_s one prefill iteration of `chunk` requests, arrivals_s one of `arrivals` (stage
// times with the iteration overhead).
//   round = osl x tpot_dec + b x chunk_s / chunk      (every request's prefill once per round)
//   TPOT  = round / osl
//   TTFT  = pp x arrivals_s + tpot_dec x (b - arrivals) / b + (ceil(isl / 8192) - 1) x tpot_dec
// (a new request is prefilled in the next iteration beside the arrivals and the decode of
// the other sequences; a prompt over the chunk budget spans more iterations).
// Attention-DP groups decode in lockstep (the MoE all-to-all waits for every one), each over
// its own sequences, whose contexts in the offline stream are spread evenly over [isl, isl +
// osl] (standard deviation osl / sqrt(12)). The busiest of a groups of bg sequences reads
//   1 + z(a) · (osl / sqrt(12)) / ((isl + osl/2) · sqrt(bg))
// times the mean KV: the factor on decode attention. 1 in decode mode (one context for all),
// in prefill (whole prompts of one length) and for a = 1.
double attn_dp_imbalance(const Workload& w, Phase phase, std::int64_t a, std::int64_t bg);

// Two-batch overlap (Plan::two_batch_overlap): one micro-batch's layer time by part, as vLLM's
// DBO schedule orders them: attention (every op before the dispatch, the router included),
// the shared experts, the routed experts (with the combine's weighted sum), and the dispatch
// and combine all-to-alls, which run beside the other micro-batch's compute.
struct TboParts {
  double attn = 0, shared = 0, experts = 0, dispatch = 0, combine = 0;
  void add(const char* op, double comp, double comm);  // an op of the breakdown, by its name
};
// The layer time of two equal micro-batches under that schedule (docs/cost-model.md):
//   max(A, D) + max(X, D) + max(S + X, C) + max(S + A, C),
// 2 (A + S + X) where there is no all-to-all (a dense layer).
double tbo_layer_time(const TboParts& t);

struct OfflineTimes {
  double round = 0, tpot = 0, ttft = 0;
};
OfflineTimes offline_times(const Workload& w, std::int64_t b, std::int64_t pp, const OfflinePrefill& op, double tpot_dec,
                           double chunk_s, double arrivals_s, std::int64_t budget = kPrefillChunkTokens);

// The scheduling lanes of an instance: each attention-DP rank schedules its own requests,
// and an engine with limits per micro-batch (EngineTraits::limits_per_micro_batch) has pp
// lanes per rank. Each lane runs at most max_num_seqs sequences and max_num_tokens tokens per
// iteration; a prompt's chunk in one iteration is at most one lane's max_num_tokens.
std::int64_t scheduler_lanes(const EngineTraits& e, const Degrees& d);
// What one max_num_seqs covers, for messages: "per attention-DP rank", or "per attention-DP
// rank and pipeline micro-batch" where the engine's limits are per micro-batch and pp > 1.
std::string running_cap_unit(const EngineTraits& e, const Degrees& d);

// The running sequences per scheduling lane that bound batch "max" in the closed form: a
// named engine's max_num_seqs (TensorRT-LLM's max_batch_size, vLLM's --max-num-seqs, SGLang's
// --max-running-requests) in every mode whose batch is running sequences (decode, offline,
// serve); 0 (none) for the generic engine and in prefill mode, where the batch is prompts.
std::int64_t engine_batch_cap(const SimContext& ctx);

// The running-sequence cap per scheduling lane a closed-form plan runs under on the engine:
// the engine's own (its default or a given --max-num-seqs), raised to the plan's batch per lane
// where that is larger, the engine is named and the mode's batch is running sequences (not
// prefill mode's prompts). launch starts such a plan with the cap raised so, and check and
// simulate --plan replay it so: plan = launch.
std::int64_t plan_running_cap(const EngineTraits& e, const Plan& p, Mode mode);

// Evaluates a plan for the context's workload. A plan batch of 0 means "max":
// the largest concurrency that fits memory and meets the SLOs, within engine_batch_cap. `bd` (optional)
// receives the per-op breakdown of the evaluated step.
// `explain` = false skips formatting the reason of an infeasible plan (the kind is
// still set): search loops use it so that no evaluation allocates.
Metrics evaluate(const SimContext& ctx, const Plan& plan, Breakdown* bd = nullptr, bool explain = true);
// The plan at batch "max", the doubling started at the largest power of two of attention
// groups' worth within `feasible_batch` (a batch known to be feasible: the exact search's
// ladder winner). The same answer as evaluate() with batch max when feasibility is
// monotone in the batch, with fewer evaluations; no reason is formatted.
Metrics evaluate_max_from(const SimContext& ctx, const Plan& plan, std::int64_t feasible_batch);

// The breakdown of one step (decode of b sequences at context `seq`, or prefill of b
// prompts of `seq` tokens) of a valid plan, with the automatic or planned
// micro-batching; no memory or SLO checks. `micro_batches` receives the m used.
Breakdown breakdown_step(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq,
                         std::int32_t* micro_batches = nullptr);

// The bytes a tied LM head adds with embedding=vocab and lm_head=none on one stage
// (the rest of the shared matrix); 0 when untied or pp > 1. The only weight term that
// couples two slot groups, so the exact search adds it to that combination itself.
double tied_lm_head_extra_bytes(const SimContext& ctx, const Plan& plan);

// The weight bytes each GPU of every pipeline stage holds, stage by stage (the memory
// breakdown reports the fullest stage's).
std::vector<double> stage_weight_bytes(const SimContext& ctx, const Plan& plan);

// Static batching (all sequences start and end together): output tokens/s per GPU
// for batch B with isl/osl, = B*osl / (TTFT(B, isl) + osl * TPOT(B, isl + osl/2)).
Metrics evaluate_static_batch(const SimContext& ctx, const Plan& plan);

const char* to_string(Infeasible k);

// One engine iteration of a valid plan, for the serving simulation (serve/): decode of b
// sequences at context `seq` (kv_ctx tokens cached), or prefill of b prompts of `seq`
// tokens, with the iteration overhead. iteration_s is max(m, pp) x stage in both phases: a
// round of the pipeline, in which each stage works on the m micro-batches in turn (fewer
// than pp leave it idle part of the round): the time between two tokens of one decoding
// sequence (drafts not divided out), and a prompt chunk's time through the pipeline while the
// engine keeps it fed (a lone chunk, m = 1, takes pp stages, its latency). No SLO or memory
// check: `mem` says what the step holds.
struct StepTime {
  double iteration_s = 0, stage_s = 0;
  std::int32_t micro_batches = 1;
  MemoryBreakdown mem;
};
StepTime step_time(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx);

// How far an infeasible plan is from feasible, as a relative excess: memory needed /
// HBM - 1, TPOT / its SLO - 1, TTFT / its SLO - 1 (the broken limit's); 0 for a feasible
// plan, +inf for an invalid one. The search reports the plan with the smallest excess
// when nothing feasible was found.
double infeasibility_excess(const Metrics& m, const Workload& w);

// --- decomposition for the exact search -------------------------------------
// Given the two norm slots (attn_norm, ffn_norm), a stage's time and memory are
// sums of independent contributions of these slot groups (every layout change
// belongs to exactly one of them); docs/search.md derives it and the exact
// search is checked against brute force.
enum SlotGroup : int {
  kGroupConst = 0,    // norms' compute, the residual's conversions between the two norms' layouts, dispatch, pipeline send/recv, final norm
  kGroupAttention,    // qkv_proj, attention, o_proj (and the conversion of o_proj's output into ffn_norm)
  kGroupMlp,          // ffn1, ffn2 (dense MLP / shared experts) and the conversion of the MLP output into the next attn_norm
  kGroupRouter,       // router
  kGroupExperts,      // expert_ffn1, expert_ffn2, combine
  kGroupEmbedding,    // embedding and its conversion into attn_norm
  kGroupLmHead,       // lm_head
  kNumSlotGroups
};
int slot_group(int slot);  // -1 for the hub slots attn_norm and ffn_norm
constexpr int kMaxStageTypes = 8;

struct GroupTables {
  int stage_types = 0;                                   // distinct stages (first, middle, last, ...)
  double time[kMaxStageTypes][kNumSlotGroups] = {};      // seconds per micro-batch
  double weights[kMaxStageTypes][kNumSlotGroups] = {};   // bytes per GPU
  double kv_per_seq[kMaxStageTypes][kNumSlotGroups] = {};// bytes per GPU per sequence of the attention group
  double act[kNumSlotGroups] = {};                       // largest per-op activation footprint per group
  double overhead_s = 0;                                 // per iteration
  double reserve = 0;
  std::int32_t micro_batches = 1;
  std::int64_t seqs_per_group = 1;                       // sequences per attention group (KV multiplier)
};
// One step (decode of b sequences at `seq`, or prefill of b prompts of `seq`) of a
// valid plan, split by group. Returns false when the stage types exceed the table.
bool evaluate_grouped(const SimContext& ctx, const Plan& plan, Phase phase, std::int64_t b, std::int64_t seq, std::int64_t kv_ctx,
                      GroupTables* out);

}  // namespace shardwise
