// units.hpp: durations, sizes and times as users write them on the command line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.hpp"

namespace mq {

// A duration in milliseconds; kInfinite for "infinite" or -1.
inline constexpr int64_t kInfinite = -1;

// "250ms", "30s", "5m", "2h", "1d", "0", "infinite" or "-1"; a number may have a fraction
// ("1.5s", as long as the whole is in milliseconds) and parts may follow one another, the
// largest first ("1m30s", "1h30m"). Units: ms, s (sec), m (min), h, d. Any other number
// without a unit is refused ("give a unit: 5s or 5ms"): seconds to the shell, milliseconds
// to MSMQ's API.
Result<int64_t> ParseDuration(std::string_view text);
std::string FormatDuration(int64_t ms);

// "4096", "64k", "4MiB", "1G" (powers of 1024; k/K, M, G, T with optional "iB"/"B").
Result<uint64_t> ParseSize(std::string_view text);

// A decimal number ("2", "1.5", "0.25") or a percentage ("25%": 0.25) from `lo` to `hi`;
// `what` names the option in the error.
Result<double> ParseNumber(std::string_view text, double lo, double hi, std::string_view what);

// A rate as users write it: COUNT/PERIOD, where PERIOD is a duration or a bare unit of
// one ("20/s", "1000/m", "5/h", "100/10s", "1/1.5s"); COUNT from 1 to 10^9, PERIOD from 1 ms
// to 366 days.
struct Rate {
  uint64_t count = 0;
  int64_t period_ms = 0;
  double PerSecond() const { return period_ms ? static_cast<double>(count) * 1000 / period_ms : 0; }
  bool operator==(const Rate&) const = default;
};
Result<Rate> ParseRate(std::string_view text);
// "20/s", "100/10s": the shortest form that parses back to the same rate.
std::string FormatRate(const Rate& r);

// Milliseconds since the epoch now (CLOCK_REALTIME).
int64_t NowMs();
// Nanoseconds since the epoch now (CLOCK_REALTIME).
int64_t NowNs();
// Milliseconds of CLOCK_MONOTONIC: for timeouts, backoff and rates (never goes back).
int64_t MonotonicMs();
// RFC 3339 UTC with milliseconds: 2026-11-30T02:12:59.123Z.
std::string FormatTime(int64_t ms);
// RFC 3339 (with Z or a +hh:mm offset, optional fraction) or "@EPOCH" (seconds). A date
// that does not exist (2027-02-31) is E_INVALIDARG.
Result<int64_t> ParseTime(std::string_view text);

}  // namespace mq
