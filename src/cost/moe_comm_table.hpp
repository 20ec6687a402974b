// The expert-parallel dispatch and combine kernels, measured (data/silicon/moe_comm.csv;
// docs/silicon.md, "Dispatch and combine"): the time of the all-to-all kernel an engine sends
// the tokens to their experts with, and brings their outputs back with, by EP size and the
// payload one rank sends (tokens x top-k x hidden x bytes per element), from the kernels'
// published benchmarks:
//   nvlink_one_sided: TensorRT-LLM's NVLinkOneSided AlltoAll on GB200 NVL72 (EP 8-64, 1-2,048
//     tokens per rank), its first choice wherever the EP group shares one NVLink domain;
//   deepep_ll: DeepEP's low-latency kernels (H800, 8-GPU nodes, one 400 Gb/s NIC per GPU, EP
//     8-256 at 128 tokens per rank), what SGLang and vLLM decode with under --moe-a2a-backend
//     deepep / deepep_low_latency; on AMD, ROCm's MORI-EP low-latency kernels (MI300X, MI355X).
// A curve is read where the measurement describes the deployment: the same kernel family, the
// same topology (one NVLink domain; or 8-GPU nodes, inside one or across nodes at the measured
// NIC bandwidth) and, for the low-latency kernels, the decode phase. Elsewhere the alpha-beta
// model prices the all-to-all as before.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/silicon.hpp"
#include "cost/time_curve.hpp"
#include "hardware/gpu.hpp"

namespace shardwise {

// The all-to-all kernel an engine runs for expert parallelism (EngineTraits::moe_all_to_all).
enum class MoeAllToAll : std::uint8_t { kModel, kNvlinkOneSided, kDeepEpLowLatency };
const char* moe_all_to_all_name(MoeAllToAll k);  // "model", "nvlink-one-sided", "deepep-low-latency"

struct MoeCommProfile {
  bool present = false;
  MoeAllToAll family = MoeAllToAll::kModel;
  // where the rows apply: decode_only (the low-latency kernels; prefill runs DeepEP's normal
  // kernels, which no time row measures); one_domain (the EP group inside one NVLink domain);
  // else nodes of `node` GPUs, the group inside one node or across nodes whose network gives
  // each GPU `network_bw` bytes/s (within 10%)
  bool decode_only = false, one_domain = false;
  std::int64_t node = 0;
  double network_bw = 0;
  struct Ep {
    std::int64_t ep = 0;
    TimeCurve dispatch, combine;  // seconds by payload bytes per rank
    friend bool operator==(const Ep&, const Ep&) = default;
  };
  std::vector<Ep> curves;  // ascending ep, each with both ops
  Basis basis = Basis::kModel;  // measured (the GPU's own rows) or transferred
  std::string source;           // for --explain
  // The time of the dispatch (or combine) over `ep` ranks sending `bytes` each: log-log
  // between the measured EP sizes at the same bytes, the nearest EP outside them. `basis`
  // receives the profile's, or extrapolated where the EP or the bytes lie outside the rows.
  double seconds(bool combine, double ep, double bytes, Basis* basis) const;
  friend bool operator==(const MoeCommProfile&, const MoeCommProfile&) = default;
};

// The table's rows (header silicon,family,library,op,ep,tokens,hidden,topk,payload_bytes,
// bytes,value,unit,source_locator; family nvlink_one_sided or deepep_ll, op dispatch or
// combine, unit us); errors name the file, row and value.
Expected<std::vector<MoeCommRow>> parse_moe_comm_table(const std::string& text, const std::string& file);
// The profile of `family` on `gpu`: its own rows (measured), else those of the GPU it is
// carried from (transferred: GB200's NVL72 rows to the GB300's rack, the same NVLink 5 and
// fabric memory that NVLinkOneSided needs, which the 8-GPU HGX B200 and B300 are not known to
// offer (MnnvlMemory.supports_mnnvl), so they keep the model; the H800's
// DeepEP rows to the H100 and H200, whose low-latency kernels are bound by latency and the
// NIC, not NVLink, at these sizes; MI300X's to MI325X); not present otherwise.
MoeCommProfile moe_comm_profile_for(const GpuSpec& gpu, MoeAllToAll family, const SiliconTables& tables);

}  // namespace shardwise
