// Attention kernels' published ceilings. Prefill (data/silicon/attention_prefill.csv; docs/
// silicon.md, "Prefill attention"): the best forward FLOP rate FlashAttention-3 reaches on the
// H100 (bf16 and fp8) and FlashMLA's SM100 MHA prefill kernel on the B200 (bf16), as shares of
// the GPU's peak in that format; a prefill step's attention (GQA and MLA alike) runs at that
// share of its format's peak on every path, in place of the fitted attn_efficiency: measured
// on the GPU with rows, transferred to its architecture's other chips (Hopper: H200, H20;
// Blackwell: GB200, B300, GB300) at the same share of their own peak; an fp8 attention with
// no fp8 row runs at the bf16 kernel's measured FLOP rate (extrapolated); no ceiling (the
// fitted model) on any other GPU.
// MLA decode attention, measured (data/silicon/mla_decode.csv; docs/silicon.md, "MLA decode
// attention"): FlashMLA's published ceilings on the H800, the best bandwidth its
// memory-bound configurations reach and the best FLOP rate of its compute-bound ones, as
// shares of the H800's HBM bandwidth and bf16 peak (the H100's die, clocks and HBM). With the
// kernel tables an MLA decode step's attention is the roofline at those shares: measured on
// the H100, transferred to the H200 (the same SMs and clocks, other HBM); other GPUs keep the
// fitted model.
#pragma once
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/silicon.hpp"
#include "hardware/gpu.hpp"

namespace shardwise {

struct MlaDecodeProfile {
  bool present = false;
  double mem_share = 0;      // of the GPU's HBM bandwidth (memory-bound configurations)
  double compute_share = 0;  // of its bf16 peak (compute-bound configurations)
  Basis basis = Basis::kModel;
  std::string source;  // for --explain
  friend bool operator==(const MlaDecodeProfile&, const MlaDecodeProfile&) = default;
};

// The prefill ceilings of one GPU: the FLOP rate its attention reaches in each format, with
// where it comes from (an fp8 attention without an fp8 row: the bf16 kernel's rate, extrapolated).
struct PrefillAttentionProfile {
  struct Ceiling {
    double share = 0;  // of the source GPU's peak in the row's format (as measured)
    double rate = 0;   // FLOP/s on this GPU
    Basis basis = Basis::kModel;
    std::string source;  // for --explain
    friend bool operator==(const Ceiling&, const Ceiling&) = default;
  };
  bool present = false;
  Ceiling bf16, fp8;
  friend bool operator==(const PrefillAttentionProfile&, const PrefillAttentionProfile&) = default;
};
// The table's rows (header silicon,kernel,dtype,metric,value,unit,source_locator; dtype bf16 or
// fp8, metric throughput_max, unit TFLOPS); errors name the file, row and value.
Expected<std::vector<PrefillCeilingRow>> parse_prefill_ceiling_table(const std::string& text, const std::string& file);
// The profile of `gpu`: its own rows (measured), else its architecture's measured chip's
// (detail::architecture_sibling; transferred); not present without a bf16 row.
PrefillAttentionProfile prefill_attention_profile_for(const GpuSpec& gpu, const SiliconTables& tables);

// The table's rows (header silicon,kernel,phase,metric,value,unit,source_locator; metric
// memory_bandwidth_max in GB/s or throughput_max in TFLOPS); errors name the file, row and value.
Expected<std::vector<AttentionRow>> parse_attention_table(const std::string& text, const std::string& file);
// The MLA decode profile of `gpu` from the tables' rows: its own (an H800's count as the
// H100's), else the H100's for the H200; not present without both metrics.
MlaDecodeProfile mla_decode_profile_for(const GpuSpec& gpu, const SiliconTables& tables);

}  // namespace shardwise
