// units_test.cpp: durations, sizes and times as users write them.
#include <catch2/catch.hpp>

#include "units.hpp"

using namespace mq;

TEST_CASE("durations", "[units]") {
  CHECK(*ParseDuration("250ms") == 250);
  CHECK(*ParseDuration("250") == 250);
  CHECK(*ParseDuration("30s") == 30000);
  CHECK(*ParseDuration("5m") == 300000);
  CHECK(*ParseDuration("2h") == 7200000);
  CHECK(*ParseDuration("1d") == 86400000);
  CHECK(*ParseDuration("infinite") == kInfinite);
  CHECK(*ParseDuration("-1") == kInfinite);
  for (const char* bad : {"", "s", "5x", "-5", "1.5s", "99999999999999999999"})
    CHECK(ParseDuration(bad).status().code() == Code::kInvalidArg);
  CHECK(FormatDuration(90000) == "90s");
  CHECK(FormatDuration(120000) == "2m");
  CHECK(FormatDuration(1) == "1ms");
}

TEST_CASE("sizes", "[units]") {
  CHECK(*ParseSize("4096") == 4096);
  CHECK(*ParseSize("64K") == 65536);
  CHECK(*ParseSize("4MiB") == 4194304);
  CHECK(*ParseSize("1G") == 1073741824);
  CHECK_FALSE(ParseSize("4Q").ok());
  CHECK_FALSE(ParseSize("").ok());
}

TEST_CASE("times", "[units]") {
  CHECK(FormatTime(0) == "1970-01-01T00:00:00.000Z");
  CHECK(*ParseTime("1970-01-01T00:00:01.5Z") == 1500);
  CHECK(*ParseTime("@1764466379") == 1764466379000);
  CHECK(*ParseTime("2026-11-30T03:00:00+01:00") == *ParseTime("2026-11-30T02:00:00Z"));
  int64_t now = NowMs();
  CHECK(*ParseTime(FormatTime(now)) == now);
  CHECK_FALSE(ParseTime("yesterday").ok());
  CHECK_FALSE(ParseTime("2026-13-01T00:00:00Z").ok());
}
