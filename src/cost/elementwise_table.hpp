// The elementwise kernels between the GEMMs, measured (data/silicon/elementwise.csv; docs/silicon.md,
// "Elementwise kernels"): the gated activation (vLLM's silu_and_mul: reads gate and up, writes
// their product) and the rotary embedding (vLLM's rotary_embedding: q and k in place), by the
// bytes they move, from vidur's per-operator profiles of five models at TP 1-8 and 1-4,096
// tokens on the H100. The cost model had no op for either; with the kernel tables each is an op
// of its own. Another GPU takes the H100's curve with its time above the measured floor scaled
// by the HBM bandwidths (transferred): floor + (t - floor) x HBM_H100 / HBM_gpu.
#pragma once
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/silicon.hpp"
#include "cost/time_curve.hpp"
#include "hardware/gpu.hpp"

namespace shardwise {

struct ElementwiseProfile {
  bool present = false;
  TimeCurve act, rope;  // seconds by bytes on the source silicon
  // per curve: its source's HBM bandwidth over this GPU's (1 on the GPU's own rows; each op
  // falls back to the H100's alone, so a folder measuring one op keeps the other transferred)
  double act_scale = 1.0, rope_scale = 1.0;
  // The time of `c`'s kernel (act or rope of this profile) moving `bytes` on this GPU.
  double seconds(const TimeCurve& c, double bytes) const;
  friend bool operator==(const ElementwiseProfile&, const ElementwiseProfile&) = default;
};

// The table's rows (header silicon,op,model,tokens,tp,bytes,value,unit,source_locator; op
// mlp_act or attn_rope, unit us); errors name the file, row and value.
Expected<std::vector<ElementwiseRow>> parse_elementwise_table(const std::string& text, const std::string& file);
// The profile of `gpu` from the tables' rows: its own rows of each op (measured), else the
// H100's (transferred by the HBM bandwidths); not present where neither has rows.
ElementwiseProfile elementwise_profile_for(const GpuSpec& gpu, const SiliconTables& tables);

}  // namespace shardwise
