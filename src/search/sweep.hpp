// `shardwise sweep`: the best plan at every point of GPU types x counts (x weight formats x
// engines) for one model and workload, with its price per million output tokens, and the
// fewest GPUs of each type that meet the SLOs (docs/sweep.md).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cost/calibration.hpp"
#include "cost/simulator.hpp"
#include "search/search.hpp"

namespace shardwise {

// USD per GPU-hour by GPU name (data/prices/default.yaml, or a file of the same format).
using PriceTable = std::map<std::string, double>;
Expected<PriceTable> load_prices(const std::string& path);  // "" = the shipped defaults

// A point's answer under a serving workload (sweep plans serve mode per point: docs/sweep.md,
// "Serving sweeps"): the deployment plan --mode serve chooses on the point's GPUs, or the
// fewest of them for the target rate.
struct SweepServing {
  bool disaggregated = false;
  Plan prefill;                  // the prefill pool (disaggregated; its replicas are its instances)
  std::int64_t gpus = 0;         // GPUs the deployment uses
  double rate = 0;               // requests/s it serves within the SLOs (the target rate when given)
  double ttft_pct = 99, tpot_pct = 99;  // the statistics reported: each latency's SLO percentile (0: the mean; 99 without an SLO)
  double ttft_ms = 0, tpot_ms = 0;      // at `rate`
  double output_tok_s_per_gpu = 0;      // at `rate`, over the GPUs used
  double usd_per_kreq = 0;              // 0: no price for this GPU
  [[nodiscard]] double per_gpu() const { return gpus > 0 ? rate / static_cast<double>(gpus) : 0.0; }
};

struct SweepPoint {
  std::string gpu;
  std::int64_t count = 0;
  std::string dtype;   // the weights' format asked for ("" = the checkpoint's own)
  std::string engine;  // "" = the generic engine and the free search
  bool found = false;
  Plan plan;
  Metrics metrics;          // of the best plan (when found)
  std::string reason;       // why none (when not found)
  double usd_per_mtok = 0;  // 0: no price for this GPU
  bool fewest = false;      // the fewest GPUs of this type (and format, engine) with a plan within the SLOs
  std::optional<SweepServing> serving;  // a serving sweep's answer (when found); `plan` is then the (decode pool's) deployment
  std::string skipped;      // why the point was not planned at all (an engine not built for the GPU), empty otherwise
};

// A sweep plans every point with a whole search: beyond this many points it is a slip (a
// range typed as a list), refused up front with the count.
constexpr std::size_t kMaxSweepPoints = 1000;

struct SweepOptions {
  std::vector<std::string> gpus;
  std::vector<std::int64_t> counts;
  std::vector<std::string> dtypes{""};
  std::vector<std::string> engines{""};
  std::string search = "exact";
  SearchOptions search_options;
  std::function<void(std::size_t, std::size_t)> progress;  // points done, of how many
  // spread over processes (mpirun): this one plans the points i with i mod ranks == rank
  // and leaves the others unplanned (found false, reason empty); the root gathers them
  int rank = 0, ranks = 1;
  // the kernel tables (docs/silicon.md): GEMMs from the measured tables, and a folder of
  // one's own measurements read beside the built-in ones (null: the built-in tables)
  bool kernel_tables = false;
  std::shared_ptr<const SiliconTables> silicon;
  // a calibration profile (--calibration): applied to the points of its GPU, the others as built
  std::optional<CalibrationProfile> calibration;
  // a serving workload (mode serve): each point planned as plan --mode serve plans it
  // (search/serve_plan.hpp); the target rate, when > 0, sizes the fewest of its GPUs
  double target_rate = 0;
  int serve_top_k = 24;
  std::int64_t serve_requests = 0;  // per simulation (0: 1,000, with steady checks of the target rate)
  bool disaggregated = true;
};

// What a sweep of workload `w` cannot take (bad input, refused rather than ignored): a serving
// workload's arrivals from the flags (the rate is searched) or a trace; a target rate or a
// request count without serve mode; a target rate or top-k out of range. Errors name the
// flag (--target-rate, --top-k, --rate, --concurrency, --requests), or `workload` and its field.
std::optional<Error> sweep_input_error(const Workload& w, const WorkloadOverrides& o, const std::string& workload, double target_rate,
                                       int top_k);

// Errors name the flag (--gpus, --counts, --dtypes, --engines, --search). The fewest-GPUs
// marks are set when every point is this process's (ranks 1); else by mark_fewest after
// the gather.
Expected<std::vector<SweepPoint>> run_sweep(const ModelSpec& model, const Workload& workload, const SweepOptions& opt,
                                            const PriceTable& prices);
void mark_fewest(std::vector<SweepPoint>& points);
// One point as a JSON line and back, every figure the renderings use kept exactly (the
// gather of a sweep over MPI ranks).
std::string sweep_point_to_json(const SweepPoint& p);
SweepPoint sweep_point_from_json(const std::string& line);

}  // namespace shardwise
