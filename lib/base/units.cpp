// units.cpp: parsing and printing of durations, sizes and times.
#include "base/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace mq {

namespace {

bool ParseU64(std::string_view s, uint64_t& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

// The largest finite duration, in milliseconds (some 73 million years): far beyond any wait,
// and small enough that adding it to a time of day cannot overflow.
constexpr int64_t kMaxDurationMs = INT64_MAX / 4;

Result<int64_t> ParseDuration(std::string_view text) {
  if (text == "infinite" || text == "-1" || text == "INFINITE") return kInfinite;
  auto bad = [text](std::string_view why = {}) {
    return Status::InvalidArg(
        why.empty() ? fmt::format("invalid duration '{}': use e.g. 250ms, 1.5s, 1m30s, "
                                  "5min, 2h, 1d, 0, or infinite",
                                  text)
                    : fmt::format("invalid duration '{}': {}", text, why));
  };
  uint64_t plain = 0;
  if (ParseU64(text, plain)) {
    // A number alone is seconds to sleep(1), timeout(1) and read -t, and milliseconds to
    // MSMQ's API: neither reading is silently taken. Zero is zero in both.
    if (plain == 0) return int64_t{0};
    return bad(fmt::format("give a unit: {}s or {}ms", text, text));
  }
  // Parts of NUMBER[.FRACTION]UNIT, each unit larger than the next ("1h30m", "1m30s"). The sum
  // is worked out in whole milliseconds, with no floating point: 1.5s is 1500 exactly.
  struct Unit {
    std::string_view name;
    int64_t ms;
  };
  static constexpr Unit kUnits[] = {{"ms", 1},        {"s", 1000},          {"sec", 1000},
                                    {"m", 60'000},    {"min", 60'000},      {"h", 3'600'000},
                                    {"d", 86'400'000}};
  if (text.empty()) return bad();
  int64_t total = 0;
  int64_t last_unit = INT64_MAX;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    uint64_t whole = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    bool has_whole = i > start;
    if (has_whole && !ParseU64(text.substr(start, i - start), whole)) return bad("too long");
    uint64_t frac = 0, frac_scale = 1;
    if (i < text.size() && text[i] == '.') {
      size_t f = ++i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
      if (i - f > 9) return bad("more than 9 digits after the point");
      for (size_t k = f; k < i; ++k) {
        frac = frac * 10 + static_cast<uint64_t>(text[k] - '0');
        frac_scale *= 10;
      }
      if (i == f && !has_whole) return bad();
    } else if (!has_whole) {
      return bad();
    }
    size_t u = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(u, i - u);
    if (unit.empty() && i < text.size()) return bad();
    if (unit.empty())
      return bad(last_unit == INT64_MAX ? "a number with a fraction needs a unit (1.5s)"
                                        : "its last number needs a unit (1m30s)");
    const Unit* found = nullptr;
    for (const Unit& k : kUnits)
      if (k.name == unit) found = &k;
    if (!found) return bad();
    if (found->ms >= last_unit) return bad("give each unit once, the largest first (1h30m)");
    last_unit = found->ms;
    if (whole > static_cast<uint64_t>(kMaxDurationMs / found->ms)) return bad("too long");
    // frac < frac_scale <= 10^9 and ms <= 86,400,000: the product fits in 64 bits.
    uint64_t frac_ms = frac * static_cast<uint64_t>(found->ms);
    if (frac_ms % frac_scale) return bad("not a whole number of milliseconds");
    total += static_cast<int64_t>(whole) * found->ms + static_cast<int64_t>(frac_ms / frac_scale);
    if (total > kMaxDurationMs) return bad("too long");
  }
  return total;
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) return "infinite";
  if (ms % 86'400'000 == 0 && ms) return fmt::format("{}d", ms / 86'400'000);
  if (ms % 3'600'000 == 0 && ms) return fmt::format("{}h", ms / 3'600'000);
  if (ms % 60'000 == 0 && ms) return fmt::format("{}m", ms / 60'000);
  if (ms % 1000 == 0 && ms) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

Result<double> ParseNumber(std::string_view text, double lo, double hi, std::string_view what) {
  std::string_view digits = text;
  bool percent = !digits.empty() && digits.back() == '%';
  if (percent) digits.remove_suffix(1);
  double v = 0;
  auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), v, std::chars_format::fixed);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
      !std::isfinite(v))
    return Status::InvalidArg(
        fmt::format("{} must be a number, such as 2 or 0.25: '{}'", what, text));
  if (percent) v /= 100;
  if (v < lo || v > hi)
    return Status::InvalidArg(
        fmt::format("{} must be from {:g} to {:g}: '{}'", what, lo, hi, text));
  return v;
}

Result<uint64_t> ParseSize(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  uint64_t n = 0;
  std::string_view unit = text.substr(i);
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "k" || unit == "K" || unit == "KiB" || unit == "KB" || unit == "kB") shift = 10;
  else if (unit == "M" || unit == "MiB" || unit == "MB") shift = 20;
  else if (unit == "G" || unit == "GiB" || unit == "GB") shift = 30;
  else if (unit == "T" || unit == "TiB" || unit == "TB") shift = 40;
  if (!ParseU64(text.substr(0, i), n) || shift < 0 || (shift && (n >> (63 - shift))))
    return Status::InvalidArg(fmt::format("invalid size '{}': use e.g. 4096, 64K, 4M, 1G", text));
  return n << shift;
}

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

Result<Rate> ParseRate(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArg(fmt::format("invalid rate '{}': {}", text, why));
  };
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return bad("give COUNT/PERIOD, such as 20/s or 5/h");
  std::string_view count = text.substr(0, slash), period = text.substr(slash + 1);
  Rate r;
  auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), r.count);
  if (count.empty() || ec != std::errc() || end != count.data() + count.size() || r.count < 1 ||
      r.count > 1'000'000'000)
    return bad("COUNT must be a whole number from 1 to 1000000000");
  // A bare unit is one of it: "s" is "1s".
  std::string p(period);
  bool bare = !p.empty() && !(p[0] >= '0' && p[0] <= '9');
  if (bare) p.insert(0, "1");
  auto ms = ParseDuration(p);
  if (!ms.ok())
    return bad(bare ? std::string("PERIOD must be a duration or a unit: ms, s, m, h, d")
                    : ms.status().text());
  constexpr int64_t kLongest = 366LL * 86'400'000;
  if (*ms < 1 || *ms > kLongest) return bad("PERIOD must be from 1ms to 366d");
  r.period_ms = *ms;
  return r;
}

std::string FormatRate(const Rate& r) {
  static constexpr std::pair<int64_t, const char*> kUnits[] = {
      {86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  for (auto [ms, unit] : kUnits)
    if (r.period_ms == ms) return fmt::format("{}/{}", r.count, unit);
  return fmt::format("{}/{}", r.count, FormatDuration(r.period_ms));
}

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

std::string FormatTime(int64_t ms) {
  time_t secs = static_cast<time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int frac = static_cast<int>(ms - static_cast<int64_t>(secs) * 1000);
  tm t;
  gmtime_r(&secs, &t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", t.tm_year + 1900, t.tm_mon + 1,
                     t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, frac);
}

Result<int64_t> ParseTime(std::string_view text) {
  Status bad = Status::InvalidArg(
      fmt::format("invalid time '{}': use RFC 3339 (2026-12-01T08:00:00Z) or @EPOCH", text));
  if (!text.empty() && text[0] == '@') {
    uint64_t secs = 0;
    if (!ParseU64(text.substr(1), secs) || secs > 1ULL << 40) return bad;
    return static_cast<int64_t>(secs) * 1000;
  }
  std::string s(text);
  tm t{};
  int consumed = 0;
  if (sscanf(s.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &t.tm_year, &t.tm_mon, &t.tm_mday,
             &t.tm_hour, &t.tm_min, &t.tm_sec, &consumed) != 6)
    return bad;
  std::string_view rest = text.substr(static_cast<size_t>(consumed));
  int64_t frac_ms = 0;
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    int64_t scale = 100;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      frac_ms += (rest[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == 1) return bad;
    rest.remove_prefix(i);
  }
  int64_t offset_s = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    uint64_t hh = 0, mm = 0;
    if (!ParseU64(rest.substr(1, 2), hh) || !ParseU64(rest.substr(4, 2), mm) || hh > 23 || mm > 59)
      return bad;
    offset_s = static_cast<int64_t>(hh * 3600 + mm * 60) * (rest[0] == '+' ? 1 : -1);
  } else {
    return bad;
  }
  if (t.tm_mon < 1 || t.tm_mon > 12 || t.tm_hour > 23 || t.tm_min > 59 || t.tm_sec > 60)
    return bad;
  // timegm() would carry a day past the month's end into the next month (February 31st
  // becoming March 3rd): a date that does not exist is refused instead.
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (t.tm_year % 4 == 0 && t.tm_year % 100 != 0) || t.tm_year % 400 == 0;
  int days = kDays[t.tm_mon - 1] + (t.tm_mon == 2 && leap ? 1 : 0);
  if (t.tm_mday < 1 || t.tm_mday > days)
    return Status::InvalidArg(
        fmt::format("invalid time '{}': {:04}-{:02} has {} days", text, t.tm_year, t.tm_mon, days));
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  time_t secs = timegm(&t);
  return (static_cast<int64_t>(secs) - offset_s) * 1000 + frac_ms;
}

}  // namespace mq
