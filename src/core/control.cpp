#include "core/control.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

namespace shardwise {
namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

std::optional<Error> check_time_limit(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxTimeLimitSeconds) {
    return Error{"--time-limit", "", fmt::format("a number of seconds from 0 (none) to {:.0f} (a week)", kMaxTimeLimitSeconds),
                 fmt::format("{}", seconds)};
  }
  return std::nullopt;
}

Watch::Watch(RunControl c) : c_(std::move(c)), start_(now_s()), owner_(std::this_thread::get_id()) {
  next_progress_ = start_ + c_.first_progress_s;
}

double Watch::elapsed_s() const { return now_s() - start_; }

double Watch::remaining_s() const {
  if (c_.time_limit_s <= 0) return std::numeric_limits<double>::max();
  return std::max(0.0, c_.time_limit_s - elapsed_s());
}

bool Watch::should_stop(double reserve_s) {
  if (reason_.load(std::memory_order_relaxed) != StopReason::kNone) return true;
  const double t = now_s();
  if (c_.time_limit_s > 0 && t - start_ + reserve_s >= c_.time_limit_s) {
    reason_ = StopReason::kTimeLimit;
    return true;
  }
  if (c_.cancelled && t >= next_cancel_check_.load(std::memory_order_relaxed) && std::this_thread::get_id() == owner_) {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (lock.owns_lock() && t >= next_cancel_check_.load()) {
      next_cancel_check_ = t + 0.1;
      if (c_.cancelled()) {
        reason_ = StopReason::kCancelled;
        return true;
      }
    }
  }
  return false;
}

std::string Watch::stop_text() const {
  switch (stopped()) {
    case StopReason::kTimeLimit: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "the time limit (%g s)", c_.time_limit_s);
      return buf;
    }
    case StopReason::kCancelled: return "an interrupt";
    case StopReason::kNone: break;
  }
  return "nothing";
}

void Watch::progress(const std::function<std::string()>& line) {
  if (!c_.emit) return;
  const double t = now_s();
  if (t < next_progress_.load(std::memory_order_relaxed)) return;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || t < next_progress_.load()) return;
  next_progress_ = t + c_.progress_every_s;
  c_.emit(context_.empty() ? line() : context_ + ": " + line());
}

void Watch::set_context(std::string context) {
  std::lock_guard lock(mu_);
  context_ = std::move(context);
}

}  // namespace shardwise
