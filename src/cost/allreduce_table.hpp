// The engines' custom all-reduce, measured (data/silicon/allreduce.csv; docs/silicon.md,
// "All-reduce"): vLLM, SGLang and TensorRT-LLM reduce small messages inside one NVLink
// domain with their own one-shot / two-shot kernels rather than NCCL. Its time by message
// size and group (cost/time_curve.hpp: log-log between measured sizes, the latency floor
// below, the last measured marginal bandwidth above).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/silicon.hpp"
#include "cost/time_curve.hpp"
#include "hardware/gpu.hpp"

namespace shardwise {

// One group size's curve: seconds by bytes (the whole tensor each rank holds), with where it
// comes from and the NVLink bandwidth (per GPU, per direction) of the system the rows were
// measured on: the curve applies on links at least as fast (a slower NVLink keeps the
// alpha-beta model).
struct AllReduceCurve : TimeCurve {
  double link_bw = 0;
  friend bool operator==(const AllReduceCurve&, const AllReduceCurve&) = default;
};

// The custom all-reduce of one GPU: a curve per measured group size (2 to 8 GPUs).
struct AllReduceProfile {
  bool present = false;
  std::array<AllReduceCurve, 9> by_size{};  // index: the group size (0, 1 and unmeasured sizes empty)
  const AllReduceCurve* of(std::int64_t group) const {  // inline: every all-reduce of an evaluation asks
    if (!present || group < 2 || group >= static_cast<std::int64_t>(by_size.size())) return nullptr;
    const AllReduceCurve& c = by_size[static_cast<std::size_t>(group)];
    return c.empty() ? nullptr : &c;
  }
  friend bool operator==(const AllReduceProfile&, const AllReduceProfile&) = default;
};

// The table's rows (header silicon,collective,kernel,group,bytes,value,unit,source_locator);
// errors name the file, row and value.
Expected<std::vector<AllReduceRow>> parse_allreduce_table(const std::string& text, const std::string& file);
// The built-in table's rows (data/silicon/allreduce.csv, as builtin_silicon() holds them).
const std::vector<AllReduceRow>& builtin_allreduce_rows();
// The curve of the rows of one kernel and group.
AllReduceCurve build_allreduce_curve(const std::vector<AllReduceRow>& rows);
// The kernel label of the engines' custom all-reduce rows (the others are cross-checks).
inline constexpr const char* kEngineCustomAllReduce = "engine custom all-reduce";
inline bool is_engine_allreduce(const AllReduceRow& r) { return r.kernel.rfind(kEngineCustomAllReduce, 0) == 0; }
// The kernel label of NCCL's all-reduce as an engine calls it for the messages above its custom
// kernel's limit (torch.distributed's all_reduce: the time of a call, its launch included).
inline constexpr const char* kNcclAllReduce = "NCCL all-reduce";
inline bool is_nccl_allreduce(const AllReduceRow& r) { return r.kernel.rfind(kNcclAllReduce, 0) == 0; }
// Messages from which an engine with no custom-kernel limit of its own (the generic one) is
// taken to call NCCL: the limit the three profiles share (TensorRT-LLM 8,000,000 B, vLLM and
// SGLang 8 MiB; data/engines/*.yaml).
inline constexpr double kNcclAllReduceFromBytes = 8000000.0;
// The engines' custom all-reduce on `gpu` from the tables' rows, per group size: its own rows
// (measured; a --silicon folder may hold any GPU's), else the H100's for the H200 (transferred:
// the same NVLink 4 and NVSwitch); not present where no group size has rows.
AllReduceProfile custom_allreduce_profile_for(const GpuSpec& gpu, const SiliconTables& tables);
AllReduceProfile custom_allreduce_profile_for(const GpuSpec& gpu);  // the built-in tables
// NCCL's all-reduce on `gpu` inside one NVLink domain, per group size (docs/silicon.md,
// "All-reduce"): its own rows (measured), else those of the GPU of the same NVLink generation
// and bandwidth that has them (H100 and H20 from the H200; GB200, B300 and GB300 from the
// B200: transferred). A group size without rows takes a measured size's curve at the same bus
// bandwidth (time x [2(g-1)/g] / [2(m-1)/m], the ring's bytes per rank; transferred). Not
// present where the GPU and its generation have none.
AllReduceProfile nccl_allreduce_profile_for(const GpuSpec& gpu, const SiliconTables& tables);
AllReduceProfile nccl_allreduce_profile_for(const GpuSpec& gpu);  // the built-in tables

}  // namespace shardwise
