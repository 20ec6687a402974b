#include "cost/time_curve.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace shardwise {

double TimeCurve::seconds_at(double bytes) const {
  if (log_b.empty()) return std::numeric_limits<double>::infinity();
  if (!(bytes > b_lo)) return t_lo;  // at or below the range (or not a number)
  if (bytes >= b_hi) return t_hi + (bytes - b_hi) / tail_bw;
  if (log_b.size() < 2) return t_lo;  // one size measured: b_lo = b_hi, handled above
  const double x = std::log(bytes);
  // the first measured size beyond x (the ends are handled above): the count of sizes at or
  // below it, branch-free (a binary search's branches follow the sizes asked, and mispredict)
  std::size_t u = 0;
  for (const double lb : log_b) u += lb <= x ? 1u : 0u;
  // inside (b_lo, b_hi) the count is 1 .. size - 1, but the logarithm of a size just below b_hi
  // can round to log_b.back(), and one just above b_lo to below log_b.front(): kept in range
  u = std::clamp<std::size_t>(u, 1, log_b.size() - 1);
  const double f = (x - log_b[u - 1]) / (log_b[u] - log_b[u - 1]);
  return std::exp(log_t[u - 1] + f * (log_t[u] - log_t[u - 1]));
}

TimeCurve build_time_curve(std::vector<std::pair<double, double>> pts, bool bin_octaves) {
  TimeCurve c;
  c.rows = static_cast<int>(pts.size());
  if (bin_octaves) {
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> octaves;
    for (const auto& [b, t] : pts) {
      auto& o = octaves[static_cast<int>(std::floor(std::log2(b)))];
      o.first.push_back(b);
      o.second.push_back(t);
    }
    pts.clear();
    for (const auto& [k, o] : octaves) pts.emplace_back(detail::median(o.first), detail::median(o.second));
  }
  std::sort(pts.begin(), pts.end());
  double running = 0;
  for (const auto& [b, t] : pts) {
    running = std::max(running, t);  // more bytes never faster: a measured dip is noise
    if (!c.log_b.empty() && std::log(b) <= c.log_b.back()) {  // the same size again: the slower (the running maximum)
      c.log_t.back() = std::log(running);
      continue;
    }
    c.log_b.push_back(std::log(b));
    c.log_t.push_back(std::log(running));
  }
  if (c.log_b.empty()) return c;
  c.b_lo = std::exp(c.log_b.front());
  c.b_hi = std::exp(c.log_b.back());
  const std::size_t n = c.log_b.size();
  c.t_lo = std::exp(c.log_t.front());
  c.t_hi = std::exp(c.log_t.back());
  const double t_hi = c.t_hi;
  const double db = n > 1 ? c.b_hi - std::exp(c.log_b[n - 2]) : 0.0, dt = n > 1 ? t_hi - std::exp(c.log_t[n - 2]) : 0.0;
  c.tail_bw = db > 0 && dt > 0 ? db / dt : c.b_hi / t_hi;  // the last segment's marginal bandwidth
  return c;
}

}  // namespace shardwise
