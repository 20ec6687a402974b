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

// The table's rows (header silicon,kernel,phase,metric,value,unit,source_locator; metric
// memory_bandwidth_max in GB/s or throughput_max in TFLOPS); errors name the file, row and value.
Expected<std::vector<AttentionRow>> parse_attention_table(const std::string& text, const std::string& file);
// The MLA decode profile of `gpu` from the tables' rows: its own (an H800's count as the
// H100's), else the H100's for the H200; not present without both metrics.
MlaDecodeProfile mla_decode_profile_for(const GpuSpec& gpu, const SiliconTables& tables);

}  // namespace shardwise
