// backoff.hpp: reconnection with backoff, as forward and the bridge retry a failing link:
// the delay doubles from `first` to `max`; progress (a session that moved messages, a
// connection that came back) starts it over; the attempts give up once failures have lasted
// `budget` (kNever: never give up). Pure arithmetic on the caller's monotonic clock; the
// caller sleeps (StopSignal::SleepFor) and says what happened.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mq::proc {

class Backoff {
 public:
  static constexpr int64_t kNever = -1;
  static constexpr int64_t kFirstMs = 100;
  static constexpr int64_t kMaxMs = 10000;

  explicit Backoff(int64_t budget_ms = kNever, int64_t first_ms = kFirstMs,
                   int64_t max_ms = kMaxMs)
      : budget_(budget_ms), first_(first_ms), max_(max_ms), delay_(first_ms) {}

  // Something worked: the next failure waits `first` again, and its budget starts anew.
  void Progress() {
    delay_ = first_;
    failing_since_ = -1;
  }
  // A failure at `now_ms`: whether the budget is spent (then give up).
  bool Failed(int64_t now_ms) {
    if (failing_since_ < 0) failing_since_ = now_ms;
    return budget_ >= 0 && now_ms - failing_since_ >= budget_;
  }
  // The delay before the next attempt; the one after it is twice as long (up to max).
  int64_t Next() {
    int64_t d = delay_;
    delay_ = std::min(delay_ * 2, max_);
    return d;
  }
  int64_t budget() const { return budget_; }

 private:
  int64_t budget_, first_, max_, delay_;
  int64_t failing_since_ = -1;
};

}  // namespace mq::proc
