#include "serve/step_times.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace shardwise {

int grid_index(double x) {
  if (x <= 16.0) return std::max(0, static_cast<int>(std::floor(x)) - 1);
  return 15 + static_cast<int>(std::floor(8.0 * std::log2(x / 16.0)));
}

double grid_point(int i) {
  if (i < 16) return static_cast<double>(i + 1);
  return std::round(16.0 * std::exp2(static_cast<double>(i - 15) / 8.0));
}

StepTimes::StepTimes(const SimContext& ctx, const Plan& plan, bool exact) : ctx_(&ctx), plan_(plan), exact_(exact) {
  // KV per token of one sequence on one GPU, at the workload's mean full context; the free
  // HBM after weights, the largest step's workspace and the reserve holds the pool.
  const Workload& w = ctx.workload;
  const std::int64_t a = std::max<std::int64_t>(1, plan.deg.attn_dp);
  const std::int64_t len = std::max<std::int64_t>(1, w.isl + w.osl);
  const StepTime d = step_time(ctx, plan, Phase::kDecode, a, len, len);
  const std::int64_t chunk = std::max<std::int64_t>(1, ctx.engine.max_num_tokens);
  const StepTime p = step_time(ctx, plan, Phase::kPrefill, 1, chunk, chunk);
  evaluations_ += 2;
  const double per_token = d.mem.kv_cache.value() / static_cast<double>(len);
  const double act = std::max(d.mem.activations.value(), p.mem.activations.value());
  const double free = d.mem.capacity.value() - d.mem.weights.value() - act - d.mem.reserve.value();
  if (free <= 0.0) {
    kv_reason_ = fmt::format("weights {:.1f} GB + workspace {:.1f} GB + reserve {:.1f} GB leave no KV cache in {:.1f} GB of HBM",
                             d.mem.weights.value() / 1e9, act / 1e9, d.mem.reserve.value() / 1e9, d.mem.capacity.value() / 1e9);
    return;
  }
  const double per_group = per_token > 0 ? free / per_token : 1e12;
  kv_tokens_ = static_cast<std::int64_t>(std::min(1e15, std::floor(per_group) * static_cast<double>(a)));
  if (kv_tokens_ < 1) kv_reason_ = "the KV cache holds no token";
}

std::int64_t StepTimes::kv_block_tokens() const {
  const std::int64_t b = std::max<std::int64_t>(1, ctx_->engine.kv_block_tokens);
  return kv_tokens_ / b * b;
}

double StepTimes::cached(bool decode, int i, int j) {
  const std::uint64_t key = (static_cast<std::uint64_t>(decode) << 63) | (static_cast<std::uint64_t>(i) << 32) | static_cast<std::uint32_t>(j);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const auto x = static_cast<std::int64_t>(grid_point(i)), y = static_cast<std::int64_t>(grid_point(j));
  double t = 0;
  if (decode) {
    t = step_time(*ctx_, plan_, Phase::kDecode, x, y, y + 1).iteration_s;  // x sequences at context y
  } else {
    const std::int64_t per = std::max<std::int64_t>(1, (y + x - 1) / x);  // x prompts of y tokens in all
    t = step_time(*ctx_, plan_, Phase::kPrefill, x, per, per).iteration_s;
  }
  ++evaluations_;
  cache_.emplace(key, t);
  return t;
}

// Bilinear between the grid points around (x, y).
double StepTimes::interpolate(bool decode, double x, double y) {
  x = std::max(1.0, x);
  y = std::max(1.0, y);
  const int i = grid_index(x), j = grid_index(y);
  const double x0 = grid_point(i), x1 = grid_point(i + 1), y0 = grid_point(j), y1 = grid_point(j + 1);
  const double fx = x1 > x0 ? std::clamp((x - x0) / (x1 - x0), 0.0, 1.0) : 0.0;
  const double fy = y1 > y0 ? std::clamp((y - y0) / (y1 - y0), 0.0, 1.0) : 0.0;
  Cell& cell = last_[decode ? 1 : 0];
  if (cell.i != i || cell.j != j) {
    cell = Cell{i, j, cached(decode, i, j), cached(decode, i + 1, j), cached(decode, i, j + 1), cached(decode, i + 1, j + 1)};
  }
  return (1 - fx) * (1 - fy) * cell.a + fx * (1 - fy) * cell.b + (1 - fx) * fy * cell.c + fx * fy * cell.d;
}

double StepTimes::decode(std::int64_t n, double c) {
  if (exact_) {
    ++evaluations_;
    const auto ci = std::max<std::int64_t>(1, std::llround(c));
    return step_time(*ctx_, plan_, Phase::kDecode, std::max<std::int64_t>(1, n), ci, ci + 1).iteration_s;
  }
  return interpolate(true, static_cast<double>(n), c);
}

double StepTimes::prefill(std::int64_t tokens, std::int64_t pieces) {
  if (exact_) {
    ++evaluations_;
    const std::int64_t k = std::max<std::int64_t>(1, pieces), per = std::max<std::int64_t>(1, (tokens + k - 1) / k);
    return step_time(*ctx_, plan_, Phase::kPrefill, k, per, per).iteration_s;
  }
  return interpolate(false, static_cast<double>(std::max<std::int64_t>(1, pieces)), static_cast<double>(tokens));
}

double StepTimes::graph_decode(std::int64_t n, double c) {
  const std::int64_t padded = graph_padded_batch(ctx_->engine, n, plan_.deg.attn_dp);
  if (padded == n) return decode(n, c);
  return decode(padded, std::max(1.0, c * graph_kv_share(n, padded, plan_.deg.attn_dp)));
}

double StepTimes::mixed(std::int64_t n, double c, std::int64_t tokens, std::int64_t pieces) {
  if (tokens <= 0) return graph_decode(n, c);
  const double p = prefill(tokens, pieces);
  if (n <= 0) return p;
  if (floor_s_ < 0) floor_s_ = decode(1, 1.0);
  return p + std::max(0.0, decode(n, c) - floor_s_);
}

}  // namespace shardwise
