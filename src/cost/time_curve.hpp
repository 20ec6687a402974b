// A kernel's measured time by the bytes it moves (the engines' custom all-reduce, the
// elementwise kernels between the GEMMs): interpolated in log-log between measured sizes;
// below the smallest measured size the smallest's time (the latency floor), above the
// largest its last measured marginal bandwidth (the roofline at the nearest measured
// efficiency, never a fitted constant). docs/silicon.md.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "cost/silicon.hpp"

namespace shardwise {

struct TimeCurve {
  std::vector<double> log_b, log_t;  // the measured sizes and times (running maximum), ascending
  double b_lo = 0, b_hi = 0;         // the measured range of sizes
  double t_lo = 0, t_hi = 0;         // the times at b_lo and b_hi (exp of log_t's ends, kept)
  double tail_bw = 0;                // bytes/s of the last measured segment (beyond b_hi)
  int rows = 0;                      // table rows behind the curve
  Basis basis = Basis::kModel;       // measured (the GPU's own rows) or transferred
  std::string source;                // for --explain
  // The time for `bytes`: never less for more bytes (the measured times are taken as their
  // running maximum over sizes).
  double seconds_at(double bytes) const;
  bool in_range(double bytes) const { return bytes >= b_lo * 0.999 && bytes <= b_hi * 1.001; }
  bool empty() const { return log_b.empty(); }
  friend bool operator==(const TimeCurve&, const TimeCurve&) = default;
};

// The curve through (bytes, seconds) points: the same size twice keeps the slower. With
// `bin_octaves`, points are first pooled by octave of bytes (floor(log2 bytes)), each octave
// becoming one point at its median bytes and median time (rows of many shapes, as the
// per-operator profiles hold, pooled into one curve).
TimeCurve build_time_curve(std::vector<std::pair<double, double>> points, bool bin_octaves = false);

}  // namespace shardwise
