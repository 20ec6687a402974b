// Decode attention of grouped-query (and multi-head) attention, measured
// (data/silicon/attention.csv; docs/silicon.md, "GQA decode attention"): the time of one
// decode-attention kernel call (one query token per sequence against its cached keys and
// values) by the key and value bytes it reads, 2 x batch x kv_len x kv_heads x head_dim x
// the cache's bytes per element. The file has the columns bench/silicon/measure.py writes
// (its attention.csv), so that a folder of one's own measurements (--silicon DIR) replaces
// the built-in rows of its GPU. On every path (with or without the kernel tables) a GQA
// decode step's attention is that curve at its bytes, in place of the fitted
// attn_mem_efficiency: measured on a GPU with rows
// of its own, else transferred from the measured chip of its architecture (Hopper: the H100's
// rows; Blackwell: the B200's) with the time above the measured floor scaled by the two
// GPUs' HBM bandwidths; no curve (the fitted model) on any other GPU.
#pragma once
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/silicon.hpp"
#include "cost/time_curve.hpp"
#include "hardware/gpu.hpp"

namespace shardwise {

struct GqaDecodeProfile {
  bool present = false;
  TimeCurve curve;     // seconds by KV bytes on the source silicon
  double scale = 1.0;  // the source's HBM bandwidth over this GPU's (1 on the GPU's own rows)
  // The time of one decode-attention call reading `bytes` of keys and values on this GPU.
  double seconds(double bytes) const;
  friend bool operator==(const GqaDecodeProfile&, const GqaDecodeProfile&) = default;
};

// The table's rows (header silicon,dtype,kernel,phase,batch,q_heads,kv_heads,head_dim,q_len,
// kv_len,causal,value,unit,source_locator: measure.py's attention.csv). Every row is checked
// (a catalog GPU, phase decode or prefill, dtype bf16/fp16/fp8, positive sizes, unit us); the
// decode rows with one query token are kept, each with the bytes its shape reads, except torch
// SDPA's (a kernel named "...SDPA...": measure.py's fallback, not an engine's decode kernel).
// Errors name the file, row, column and value.
Expected<std::vector<AttentionKernelRow>> parse_attention_kernel_table(const std::string& text, const std::string& file);
// The profile of `gpu` from the tables' decode rows: its own (measured), else its
// architecture's measured chip's (transferred); not present where neither has rows.
GqaDecodeProfile gqa_decode_profile_for(const GpuSpec& gpu, const SiliconTables& tables);

}  // namespace shardwise
