// Efficiency parameters of the cost model: one set per GPU type, fitted on
// public measurements (bench/calibrate, data/calibration.yaml), never per model.
#pragma once
#include <memory>
#include <string>

#include "core/error.hpp"
#include "cost/silicon.hpp"

namespace shardwise {

// Multipliers on the predicted time of each op kind, from a calibration profile
// (`shardwise calibrate`, cost/calibration.hpp): 1 = the model as built. gemm: dense GEMMs
// (projections, dense MLPs, router, LM head); experts: grouped expert GEMMs; attention: the
// attention kernel itself; comm: every collective call (alpha-beta and its fixed cost).
struct TimeScales {
  double gemm = 1.0, experts = 1.0, attention = 1.0, comm = 1.0;
  friend bool operator==(const TimeScales&, const TimeScales&) = default;
};

struct CostParams {
  std::string gpu;               // the GPU type these were fitted for
  double gemm_efficiency = 0.7;  // achieved / peak tensor FLOP rate for large GEMMs
  double gemm_half_rows = 64;    // rows (tokens per rank) at which a GEMM reaches half of that
  double mem_efficiency = 0.8;   // achieved / peak HBM bandwidth for streaming reads
  double attn_efficiency = 0.5;  // achieved / peak FLOP rate of flash attention (prefill)
  double kernel_overhead_us = 4; // fixed cost per fused op (launch, tail effects)
  double comm_efficiency = 0.8;  // achieved / link bandwidth of collectives on large messages
  double comm_overhead_us = 10;  // fixed cost per collective call (launch, synchronisation) on top of alpha-beta
  double attn_mem_efficiency = 0.7;  // achieved / peak HBM bandwidth of decode attention (paged KV reads)
  double step_overhead_us = 0;   // fixed engine cost per iteration (scheduling, sampling, launches)
  double expert_skew = 0.3;      // coefficient of variation of the experts' shares of the routed tokens
  double expert_mem_efficiency = 0.8;  // achieved / peak HBM bandwidth of the grouped expert GEMMs' weight reads
  bool calibrated = false;       // false: defaults or another GPU's fit
  TimeScales scales;             // a calibration profile's op-kind scales (all 1 without one)
  // Dense GEMMs from the kernel tables (data/silicon/): when present, they replace
  // gemm_efficiency, gemm_half_rows and kernel_overhead_us for every GEMM (docs/silicon.md)
  // (make_context fills it from the cluster's GPU when kernel_tables is true). Off by
  // default: on the public rows the tables alone do not yet beat the fitted priors (the
  // end-to-end gap they leave is absorbed by an unphysical step overhead when refitted;
  // docs/silicon.md, "Status"), so they are opt-in until the rest of the step is measured.
  GemmProfile gemm;
  bool kernel_tables = false;
  // The tables the profile is built from: null is the built-in data/silicon/; --silicon DIR
  // gives the built-in tables with one's own measurements read beside them (load_silicon_dir).
  std::shared_ptr<const SiliconTables> silicon;
  friend bool operator==(const CostParams&, const CostParams&) = default;
};

// The fitted parameters for a GPU (calibration data compiled into the binary);
// a GPU without its own fit gets the closest fitted one, marked uncalibrated.
CostParams cost_params_for(const std::string& gpu);
Expected<CostParams> parse_cost_params(std::string_view yaml, const std::string& file, const std::string& gpu);

}  // namespace shardwise
