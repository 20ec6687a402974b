// The serving half of a workload (mode serve): how requests arrive, how long they are,
// and SLOs on percentiles. Plain values read from the workload YAML, the command line
// or a trace file; the request-level simulation that uses them is serve/
// (docs/serving.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace shardwise {

// A distribution of token counts. Fixed: always `mean`. Uniform: integers in [min, max].
// Lognormal: ln(x) normal with standard deviation `sigma` and E[x] = `mean`, clamped to
// [min, max]. Histogram: `bins` (value, weight) drawn in proportion to the weights.
struct LengthDist {
  enum class Kind : std::uint8_t { kFixed, kUniform, kLognormal, kHistogram };
  Kind kind = Kind::kFixed;
  double mean = 0;  // fixed and lognormal (the workload's isl / osl when not given)
  double sigma = 0;
  std::int64_t min = 1, max = 0;  // uniform; lognormal's clamp (max 0: none)
  std::vector<std::pair<std::int64_t, double>> bins;
  friend bool operator==(const LengthDist&, const LengthDist&) = default;
};
const char* to_string(LengthDist::Kind k);
// The distribution's mean in tokens (a lognormal's clamp is ignored).
double mean_of(const LengthDist& d);

// How requests arrive at the deployment (all replicas together).
struct Arrivals {
  enum class Kind : std::uint8_t {
    kPoisson,  // at `rate` requests/s
    kClosed,   // `concurrency` users, each sends its next request when the last one ends
    kBurst,    // every request at time 0 (offline)
    kTrace,    // times and lengths from `trace`
  };
  Kind kind = Kind::kClosed;
  double rate = 0;
  std::int64_t concurrency = 0;
  friend bool operator==(const Arrivals&, const Arrivals&) = default;
};
const char* to_string(Arrivals::Kind k);

// One request of a trace file: arrival time (seconds from the start) and lengths.
struct TraceRequest {
  double arrival_s = 0;
  std::int64_t input = 0, output = 0;
  friend bool operator==(const TraceRequest&, const TraceRequest&) = default;
};
// A trace: CSV with a header naming arrival_s (or timestamp), input_tokens, output_tokens
// (in any order; other columns ignored), or JSONL with those keys, one request per line.
// Arrival times need not be sorted; they are shifted so that the first is 0.
Expected<std::vector<TraceRequest>> load_trace(const std::string& path);

// An SLO bound on one statistic of TTFT or TPOT: the mean, or a percentile.
struct SloBound {
  double pct = 0;  // 0: the mean; else 50, 90, 95, 99 or 99.9
  double ms = 0;
  friend bool operator==(const SloBound&, const SloBound&) = default;
};
// "mean", "p50", "p99.9"
std::string slo_stat_name(double pct);
// The statistic a latency is reported at (reports that show one): its SLO's percentile (the
// highest of several), the mean (0) for a mean SLO, p99 (99) without one.
double reported_slo_pct(const std::optional<double>& mean, const std::vector<SloBound>& pcts);

// The serving fields of a workload.
struct ServeSpec {
  Arrivals arrivals;
  std::int64_t requests = 0;  // requests simulated; 0: automatic (from kDefaultRequests per instance, doubling until steady: docs/serving.md), a trace all of its own
  std::uint64_t seed = 1;
  std::optional<LengthDist> input, output;  // nullopt: fixed at isl / osl
  std::vector<TraceRequest> trace;          // arrivals kTrace
  std::string trace_file;
  friend bool operator==(const ServeSpec&, const ServeSpec&) = default;
};
constexpr std::int64_t kDefaultRequests = 2000;
constexpr std::int64_t kMaxRequests = 10'000'000;

}  // namespace shardwise
