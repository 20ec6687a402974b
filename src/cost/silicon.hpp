// Kernel tables: what published measurements say a GPU's kernels reach (data/silicon/,
// curated from ../shared/silicon by scripts/curate_silicon.py; docs/silicon.md). A dense
// GEMM's time is the roofline over the share of it the measured kernels reach at that many
// rows, plus the measured small-kernel floor; a GPU without its own rows borrows a sibling's
// curve scaled by the share of spec each reaches (at the engines' shapes where both are measured
// there, else their best-shape ceilings), and says so (Basis).
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "hardware/gpu.hpp"
#include "model/dtype.hpp"

namespace shardwise {

// Where an op's time comes from: the GPU's own measured rows, another chip's rows carried
// over by a documented rule, rows extended beyond their measured range, or the analytic
// model alone (no table covers the op).
enum class Basis : std::uint8_t { kModel, kMeasured, kTransferred, kExtrapolated };
const char* basis_name(Basis b);

// The share of the roofline max(FLOPs / peak, bytes / HBM) a GEMM reaches, as a function of
// its rows M (tokens per rank), interpolated in log M between measured rows; outside the
// measured range the nearest measured share (the roofline at the nearest measured efficiency).
struct GemmCurve {
  static constexpr int kMaxPoints = 32;
  std::array<double, kMaxPoints> log_m{};
  std::array<double, kMaxPoints> share{};
  int n = 0;
  double m_lo = 0, m_hi = 0;  // the measured range of rows
  int rows = 0;               // table rows behind the curve
  double share_at(double m) const;
  double share_at_log(double log_m) const;  // the same at log(m) (a caller that reuses the logarithm)
  bool in_range(double m) const { return m >= m_lo * 0.999 && m <= m_hi * 1.001; }
  friend bool operator==(const GemmCurve&, const GemmCurve&) = default;
};

// A routed (fused MoE) table's rows of one GEMM shape, N x K (the experts' output columns
// and reduction depth on one rank): the engine's kernel by copies per touched expert at that
// shape alone. The op of that exact shape reads it before the curve pooled over every shape,
// whose median share mixes kernels of unlike efficiency (an fp8 down projection over a
// 256-deep K streams at half the share of its up projection: docs/silicon.md, "The engines'
// fused MoE").
// Keyed by the GEMM's role too (gate + up, or down: their kernels differ, in tuned config and
// in the routing weights the down one multiplies in), so that one model's up GEMM never reads
// another's down rows of the same N x K (GPT-OSS-120B's at TP2 and TP1: 2,880 x 2,880).
struct ShapeCurve {
  bool up = true;  // the gate + up GEMM (else down); from the rows' kernel text
  double n = 0, k = 0;
  GemmCurve curve;
  std::string source;  // "up GEMM N 512 x K 7168 alone (14 rows, 1-256 per expert)", for --explain
  friend bool operator==(const ShapeCurve&, const ShapeCurve&) = default;
};

// One GPU's dense-GEMM profile for one tensor-core format.
struct GemmFormatProfile {
  GemmCurve curve;     // on the source silicon
  // routed profiles only: the curves of each measured shape (empty: the pooled curve for all)
  std::vector<ShapeCurve> shapes;
  double ratio = 1.0;  // the target's measured share of spec over the source's (compute-bound GEMMs)
  // the target's measured share of spec over the H100's, whatever the curve's source: at the
  // engines' shapes where both are measured there (measured_share_ratio), else at their best
  // shapes (gemm_ceiling.csv); what carries the fitted model's GEMM efficiency to this GPU
  // (SimContext::ceiling_bf16)
  double ceiling_ratio = 1.0;
  Basis basis = Basis::kModel;
  std::string source;  // "vidur h100 fp16 (1,680 rows)" etc., for --explain
  // the curve of a measured up (or down) GEMM of shape N x K (nullptr: none; the pooled curve then)
  const ShapeCurve* shape(bool up, double n, double k) const {
    for (const ShapeCurve& s : shapes) {
      if (s.up == up && std::abs(s.n - n) < 0.5 && std::abs(s.k - k) < 0.5) return &s;
    }
    return nullptr;
  }
  friend bool operator==(const GemmFormatProfile&, const GemmFormatProfile&) = default;
};

struct GemmProfile {
  bool present = false;
  double floor_s = 0;       // the measured small-kernel floor (gemm_floor over the source's dense rows)
  GemmFormatProfile bf16;   // bf16/fp16 GEMMs (and weight-only int4, which run in bf16)
  GemmFormatProfile fp8;    // fp8 (and int8) GEMMs
  // fp4 GEMMs (NVFP4, MXFP4): the GPU's own fp4 rows (B200's), its die sibling's (GB200:
  // transferred), another Blackwell's (B300/GB300: extrapolated), else fp8's curve at fp4's
  // peak (extrapolated)
  GemmFormatProfile fp4;
  // grouped expert GEMMs by rows per expert (data/silicon/grouped_gemm.csv); a format with
  // no grouped rows has an empty curve (the dense curve and the fitted weight-read
  // efficiency then price the experts)
  GemmFormatProfile grouped_bf16, grouped_fp8, grouped_fp4;
  // the engines' own tensor-parallel MoE kernel (vLLM's and SGLang's Triton fused MoE,
  // grouped_gemm.csv layout `routed`; AITER's fused MoE on AMD) by token copies per touched
  // expert: measured on Hopper (an H100's rows carried to the H20) and on the MI300X (bf16) and
  // MI325X (fp8), each carried to the other, extrapolated on Blackwell (the H100's rows at its
  // measured share ratio), else empty. routed_fp4: on Blackwell the fp8 curve at the fp4
  // ceiling ratio (the engines' fp4 MoE kernels stream their weights, no fp4 row measures
  // them: extrapolated); empty elsewhere (4-bit experts on Hopper or AMD run weight-only kernels)
  GemmFormatProfile routed_bf16, routed_fp8, routed_fp4;
  friend bool operator==(const GemmProfile&, const GemmProfile&) = default;
  // inline: the kernel tables' GEMMs read them on every op of an evaluation
  const GemmFormatProfile& of(DType d) const { return d == DType::kFp8 || d == DType::kInt8 ? fp8 : d == DType::kFp4 ? fp4 : bf16; }
  const GemmFormatProfile& grouped_of(DType d) const {
    return d == DType::kFp8 || d == DType::kInt8 ? grouped_fp8 : d == DType::kFp4 ? grouped_fp4 : grouped_bf16;
  }
  const GemmFormatProfile& routed_of(DType d) const;  // fp4: routed_fp4 (empty off Blackwell)
};

// The tables themselves, parsed (the rows behind a profile, for tests and --explain).
struct GemmRow {
  std::string silicon, dtype, kernel;
  double m = 0, n = 0, k = 0;
  double seconds = 0;  // measured kernel time
  std::string locator;
};
Expected<std::vector<GemmRow>> parse_gemm_table(const std::string& text, const std::string& file);
struct CeilingRow {
  std::string gpu, dtype;
  double share = 0;  // best-shape achieved TFLOP/s over the spec
  std::string locator;
};
Expected<std::vector<CeilingRow>> parse_ceiling_table(const std::string& text, const std::string& file);
// One grouped GEMM: `groups` experts of N x K weights, m rows each (the kernel may pad them
// to m_padded; the time is what m rows cost).
struct GroupedRow {
  std::string silicon, dtype, kernel, layout;
  double groups = 0, m = 0, m_padded = 0, n = 0, k = 0;
  double seconds = 0;
  std::string locator;
};
Expected<std::vector<GroupedRow>> parse_grouped_table(const std::string& text, const std::string& file);

// One measured all-reduce (data/silicon/allreduce.csv; cost/allreduce_table.hpp reads it):
// `group` GPUs reducing `bytes` (the whole tensor each holds) in `seconds`.
struct AllReduceRow {
  std::string silicon, kernel;
  std::int64_t group = 0;
  double bytes = 0, seconds = 0;
  std::string locator;
};

// One measured small kernel of a decode layer (data/silicon/layer_kernels.csv;
// cost/layer_floor.hpp reads it): `kernel` (fused_add_rmsnorm, rmsnorm, quant_fp8, kv_store,
// kv_store_latent, router_topk, moe_align, moe_sum, residual_add, graph_kernel) as measured in
// `model`'s layer at `tokens` per step, in `seconds`.
struct LayerKernelRow {
  std::string silicon, kernel, model;
  std::int64_t tokens = 0;
  double seconds = 0;
  std::string locator;
};

// One measured elementwise kernel between the GEMMs (data/silicon/elementwise.csv;
// cost/elementwise_table.hpp reads it): `op` (mlp_act, attn_rope) of `model` at `tokens` on
// one rank of `tp`, moving `bytes` (computed from the shape) in `seconds`.
struct ElementwiseRow {
  std::string silicon, op, model;
  std::int64_t tokens = 0, tp = 0;
  double bytes = 0, seconds = 0;
  std::string locator;
};

// One published attention-kernel ceiling (data/silicon/mla_decode.csv; cost/attention_table.hpp
// reads it): `metric` memory_bandwidth_max (bytes/s) or throughput_max (FLOP/s) of `kernel`.
struct AttentionRow {
  std::string silicon, kernel, metric;
  double value = 0;
  std::string locator;
};

// One published prefill-attention ceiling (data/silicon/attention_prefill.csv;
// cost/attention_table.hpp reads it): the best forward FLOP rate `kernel` reaches in `dtype`
// (bf16 or fp8) on `silicon`.
struct PrefillCeilingRow {
  std::string silicon, kernel, dtype;
  double flops = 0;  // FLOP/s
  std::string locator;
};

// One measured decode-attention kernel call (data/silicon/attention.csv, bench/silicon/measure.py's
// attention.csv; cost/gqa_decode_table.hpp reads it): `batch` sequences of one query token each
// against `kv_len` cached tokens of `kv_heads` x `head_dim` keys and values in `dtype`, reading
// `bytes` (computed from the shape) in `seconds`.
struct AttentionKernelRow {
  std::string silicon, dtype, kernel;
  std::int64_t batch = 0, q_heads = 0, kv_heads = 0, head_dim = 0, kv_len = 0;
  double bytes = 0, seconds = 0;
  std::string locator;
};

// One measured expert-parallel dispatch or combine kernel (data/silicon/moe_comm.csv;
// cost/moe_comm_table.hpp reads it): `op` (dispatch, combine) of kernel `family`
// (nvlink_one_sided, deepep_ll) over `ep` ranks, each rank sending `tokens` tokens whose
// logical payload is `bytes` (tokens x top-k x hidden x bytes per element), in `seconds`.
struct MoeCommRow {
  std::string silicon, family, op;
  std::int64_t ep = 0, tokens = 0;
  double bytes = 0, seconds = 0;
  std::string locator;
};

// Builds a curve from rows on a GPU with the given peak FLOP/s and HBM bytes/s and a floor:
// at each measured M the median over shapes of roofline / (time - floor).
GemmCurve build_gemm_curve(const std::vector<GemmRow>& rows, double peak, double hbm, double bytes_per_weight, double floor_s);
// The same for grouped GEMMs, by rows per group: the roofline reads every group's weights
// once (groups x N x K) and moves its rows' activations.
GemmCurve build_grouped_curve(const std::vector<GroupedRow>& rows, double peak, double hbm, double bytes_per_weight, double floor_s);
// The small-kernel floor the rows measure: the least time any of them takes beyond its
// roofline (a GEMM of a few KFLOP still takes a launch and a tail), never below 0.
double gemm_floor(const std::vector<GemmRow>& rows, double peak, double hbm, double bytes_per_weight);
// How much of its spec a GPU's dense GEMMs reach at the shapes the engines run, against the
// H100's at the same shapes: over every (M, N, K) that `rows` hold for both `gpu` and the H100
// (rows of silicon "h100"; an H800's DeepGEMM rows are another kernel and do not count) in
// `format` ("bf16" or "fp8"; any other: 0) at M >= kShareMinRows (compute-bound), the median of
// (H100 seconds / this GPU's seconds) x (H100 peak / this GPU's peak), each side's seconds the
// fastest of its rows at that shape (the kernel an engine would pick). 0 with fewer than
// kShareMinShapes shapes in common. (A best-shape ceiling says what a GPU's library reaches at
// the shape it suits best; this says what it reaches at the shapes a model has: the B200
// reaches 0.85 of the H100's share there, against 1.08 at best.)
inline constexpr double kShareMinRows = 512;
inline constexpr int kShareMinShapes = 3;
double measured_share_ratio(const std::vector<GemmRow>& rows, const std::string& gpu, const std::string& format);

// Every kernel table the cost model reads, and the curves built once from them for each
// source silicon (an H800's rows count as the H100's: the same die, clocks and HBM).
struct SiliconTables {
  struct Curve {
    GemmCurve curve;
    std::vector<std::string> silicon;  // the GPUs whose rows it holds
    std::string source;                // what --explain names
    std::vector<ShapeCurve> shapes;    // routed curves: each measured shape's own
  };
  struct Source {
    double floor_s = 0;
    Curve bf16, fp8, fp4, grouped_bf16, grouped_fp8;
    Curve routed_bf16, routed_fp8;  // grouped rows of layout `routed` (the engines' fused MoE)
    // measured_share_ratio of this silicon's bf16 and fp8 rows (gemm.csv and gemm_carry.csv)
    // over the H100's at the same shapes; 0 where too few shapes match
    double share_ratio_bf16 = 0, share_ratio_fp8 = 0;
  };
  std::vector<GemmRow> gemm;
  // dense GEMMs of a GPU without a table of its own, measured at projection shapes the H100's
  // rows also hold (data/silicon/gemm_carry.csv): they carry the fitted GEMM efficiency and
  // the H100's curves to it (measured_share_ratio), and build no curve
  std::vector<GemmRow> carry;
  // the H100 rows every share ratio is taken against: the built-in ones (a --silicon folder's
  // own H100 rows replace the H100's curves, not this reference); empty: gemm's H100 rows
  std::vector<GemmRow> share_reference;
  std::vector<CeilingRow> ceilings;
  std::vector<GroupedRow> grouped;
  std::vector<AllReduceRow> allreduce;  // the engines' custom all-reduce (cost/allreduce_table.hpp builds its curves)
  std::vector<ElementwiseRow> elementwise;  // activation and rotary kernels (cost/elementwise_table.hpp builds their curves)
  std::vector<AttentionRow> attention;  // MLA decode ceilings (cost/attention_table.hpp)
  std::vector<AttentionKernelRow> attention_kernels;  // GQA decode-attention calls (cost/gqa_decode_table.hpp)
  std::vector<PrefillCeilingRow> prefill_ceilings;    // prefill-attention ceilings (cost/attention_table.hpp)
  std::vector<MoeCommRow> moe_comm;     // dispatch and combine kernels (cost/moe_comm_table.hpp)
  std::vector<LayerKernelRow> layer_kernels;  // a decode layer's small kernels (cost/layer_floor.hpp)
  std::vector<std::pair<std::string, Source>> sources;  // by catalog name
  // a folder of one's own (load_silicon_dir) and the (silicon/format) curves its files replaced
  std::string dir;
  std::vector<std::string> dir_gemm, dir_grouped;
  std::vector<std::string> dir_allreduce;  // "gpu/group" of the engine all-reduce curves, "gpu/group/nccl" of NCCL's, the folder measured
  std::vector<std::string> dir_elementwise;  // "gpu/op" of the elementwise curves the folder measured
  std::vector<std::string> dir_attention;    // "gpu/metric" of the attention ceilings the folder stated
  std::vector<std::string> dir_attention_kernels;  // the GPUs whose decode-attention rows the folder measured
  std::vector<std::string> dir_prefill;            // "gpu/dtype" of the prefill-attention ceilings the folder stated
  std::vector<std::string> dir_moe_comm;     // "gpu/family" of the dispatch and combine curves the folder measured
  const Source* source(const std::string& gpu) const;
};
// Builds the curves of `t` from its rows; an error names a row whose GPU is not in the catalog.
Expected<SiliconTables> make_silicon_tables(SiliconTables t);
// The tables compiled into the binary (data/silicon/), parsed and built once.
const SiliconTables& builtin_silicon();
// The built-in tables with a folder of one's own measurements (bench/silicon/measure.py's
// output, or files in the formats of data/silicon/) read beside them: a file of the folder
// replaces the built-in rows of each (GPU, format) it measures. gemm.csv, grouped_gemm.csv
// fused_moe.csv (the engines' fused MoE, routed rows), gemm_ceiling.csv, allreduce.csv (the
// engines' custom all-reduce: its rows replace the built-in ones of each GPU, group size and
// kernel class), elementwise.csv (by GPU and op), mla_decode.csv (by GPU and metric), attention.csv (decode
// attention calls, by GPU) and attention_prefill.csv (by GPU and format) are read where present; a folder with none of them is an error, as
// is a file that does not parse (naming the file, row and value). `flag` names the option.
Expected<SiliconTables> load_silicon_dir(const std::string& dir, const std::string& flag = "--silicon");

// The profile of `gpu` (a catalog name): its own rows where the tables hold them (measured),
// else the H100's carried over by the measured share ratios (transferred): docs/silicon.md,
// "Carrying GEMM efficiency between GPUs".
GemmProfile gemm_profile_for(const std::string& gpu, const SiliconTables& tables);
GemmProfile gemm_profile_for(const std::string& gpu);  // the built-in tables

namespace detail {
// The CSV reading the kernel tables share (cost/allreduce_table.cpp too): the records of a
// table with exactly `header` (RFC 4180 quoting), a positive number of a cell, and the text
// of an embedded data/silicon/<name>.csv ("" when absent).
Expected<std::vector<std::vector<std::string>>> read_csv_table(const std::string& text, const std::string& file,
                                                               const std::vector<std::string>& header);
Expected<double> positive_cell(const std::string& s, const std::string& file, int row, const char* column);
std::string embedded_silicon_text(const char* name);
// The silicon whose rows a GPU's rows count as: an H800's are the H100's (the same die, clocks
// and HBM; not for NVLink: the all-reduce rows name their GPU as it is).
std::string source_key(const std::string& silicon);
// The measured chip of a GPU's architecture, whose attention rows a GPU without its own borrows
// (transferred): h100 for h200, h20 and h800; b200 for gb200, b300 and gb300; "" for any other.
std::string architecture_sibling(const std::string& gpu);
double median(std::vector<double> v);
}  // namespace detail

}  // namespace shardwise
