// How a long run is watched (issue 30): a time limit, a cancel request (Ctrl-C in Python)
// and progress lines, shared by the serving simulation, the serve planner, the plan search
// and the sweep. One Watch per command; every layer below only asks `should_stop()` and
// hands `progress()` a line. Thread-safe: search threads and the serving simulation inside
// them may ask at once. docs/formats.md, "Limits".
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <optional>
#include <thread>

#include "core/error.hpp"

namespace shardwise {

struct RunControl {
  double time_limit_s = 0;                          // 0: none
  std::function<bool()> cancelled;                  // asked on the watch's own thread at most every 0.1 s; true stops the run
  std::function<void(const std::string&)> emit;     // one progress line (no newline); none: silent
  double first_progress_s = 2.0;                    // runs shorter than this print nothing
  double progress_every_s = 10.0;                   // then at most one line per this many seconds
};

// --time-limit (time_limit= in Python): seconds from 0 (none) to a week; else the Error.
constexpr double kMaxTimeLimitSeconds = 7 * 24 * 3600.0;
std::optional<Error> check_time_limit(double seconds);

enum class StopReason : unsigned char { kNone, kTimeLimit, kCancelled };

class Watch {
 public:
  explicit Watch(RunControl c = {});
  // True once the time limit has passed or the run was cancelled (and from then on).
  // `reserve_s`: stop that much before the limit (the work that must follow a loop, such as
  // the statistics of its results).
  bool should_stop(double reserve_s = 0);
  [[nodiscard]] StopReason stopped() const { return reason_.load(std::memory_order_relaxed); }
  // "the time limit (30 s)" or "an interrupt": what stopped the run, for messages.
  [[nodiscard]] std::string stop_text() const;
  [[nodiscard]] double elapsed_s() const;
  [[nodiscard]] double time_limit_s() const { return c_.time_limit_s; }
  // A progress line, if one is due: `line` is called only then (it may format freely).
  void progress(const std::function<std::string()>& line);
  // Said before every later progress line ("sweep: point 3 of 36 (16 x h100)"; "" none): the
  // work around the one that reports (a sweep's point around its serving simulations).
  void set_context(std::string context);
  // Seconds left before the time limit (a large number when there is none).
  [[nodiscard]] double remaining_s() const;

 private:
  RunControl c_;
  double start_ = 0;
  std::atomic<StopReason> reason_{StopReason::kNone};
  std::atomic<double> next_cancel_check_{0};
  std::atomic<double> next_progress_{0};
  std::thread::id owner_;  // the thread that made the watch: the only one that asks `cancelled`
  std::mutex mu_;  // one caller of `cancelled` and `emit` at a time
  std::string context_;  // under mu_
};

// A watch that never stops and prints nothing: the default of every options struct.
inline bool should_stop(Watch* w) { return w != nullptr && w->should_stop(); }

}  // namespace shardwise
