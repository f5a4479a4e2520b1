// units_test.cpp: durations, sizes and times as users write them.
#include <catch2/catch.hpp>

#include "base/units.hpp"

using namespace mq;

TEST_CASE("durations", "[units]") {
  CHECK(*ParseDuration("250ms") == 250);
  // A number alone is refused, naming both readings: mq-receive -w 5 waited 5ms before.
  CHECK(ParseDuration("250").status().code() == Code::kInvalidArg);
  CHECK(ParseDuration("5").status().text() == "invalid duration '5': give a unit: 5s or 5ms");
  CHECK(*ParseDuration("00") == 0);
  CHECK(*ParseDuration("30s") == 30000);
  CHECK(*ParseDuration("5m") == 300000);
  CHECK(*ParseDuration("2h") == 7200000);
  CHECK(*ParseDuration("1d") == 86400000);
  CHECK(*ParseDuration("infinite") == kInfinite);
  CHECK(*ParseDuration("-1") == kInfinite);
  for (const char* bad : {"", "s", "5x", "-5", "99999999999999999999", "1.5", "1m30", "30s1m",
                          "1s1s", "1m1min", ".s", "1.s5", "0.5ms", "1 s", "1.0000000001s",
                          "106751991167d", "5mins"})
    CHECK(ParseDuration(bad).status().code() == Code::kInvalidArg);
  // issue 15: fractions, parts and the long unit names.
  CHECK(*ParseDuration("1.5s") == 1500);
  CHECK(*ParseDuration("0.25s") == 250);
  CHECK(*ParseDuration(".5s") == 500);
  CHECK(*ParseDuration("1m30s") == 90000);
  CHECK(*ParseDuration("1h30m") == 5400000);
  CHECK(*ParseDuration("1d2h3m4s5ms") == 93784005);
  CHECK(*ParseDuration("5min") == 300000);
  CHECK(*ParseDuration("10sec") == 10000);
  CHECK(*ParseDuration("1.5m") == 90000);
  CHECK(*ParseDuration("0.001s") == 1);
  CHECK(*ParseDuration("0") == 0);
  CHECK(*ParseDuration("0s") == 0);
  CHECK(ParseDuration("1x").status().text().find("'1x'") != std::string::npos);
  CHECK(ParseDuration("0.5ms").status().text().find("whole number of milliseconds") !=
        std::string::npos);
  CHECK(ParseDuration("1.5").status().text().find("needs a unit (1.5s)") != std::string::npos);
  CHECK(ParseDuration("1m30").status().text().find("needs a unit (1m30s)") != std::string::npos);
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
  // issue 15: a date that does not exist is refused, not carried into the next month.
  for (const char* bad : {"2027-02-31T00:00:00Z", "2027-02-29T00:00:00Z", "2100-02-29T00:00:00Z",
                          "2026-04-31T00:00:00Z", "2026-01-32T00:00:00Z", "2026-01-00T00:00:00Z"})
    CHECK(ParseTime(bad).status().code() == Code::kInvalidArg);
  CHECK(ParseTime("2027-02-31T00:00:00Z").status().text().find("2027-02 has 28 days") !=
        std::string::npos);
  CHECK(*ParseTime("2028-02-29T00:00:00Z") == *ParseTime("2028-03-01T00:00:00Z") - 86400000);
  CHECK(*ParseTime("2000-02-29T00:00:00Z") == 951782400000);
  CHECK(*ParseTime("2026-12-31T23:59:59Z") == 1798761599000);
}

TEST_CASE("rates", "[units]") {
  auto r = ParseRate("20/s");
  REQUIRE(r.ok());
  CHECK(r->count == 20);
  CHECK(r->period_ms == 1000);
  CHECK(ParseRate("5/h")->period_ms == 3'600'000);
  CHECK(ParseRate("1000/m")->period_ms == 60'000);
  CHECK(ParseRate("100/10s")->period_ms == 10'000);
  CHECK(ParseRate("1/1.5s")->period_ms == 1500);
  CHECK(ParseRate("3/d")->period_ms == 86'400'000);
  for (const char* text : {"20/s", "5/h", "1000/m", "3/d", "100/10s", "1/1500ms", "7/ms"})
    CHECK(FormatRate(*ParseRate(text)) == text);
  for (const char* bad : {"", "5", "/s", "0/s", "-1/s", "x/s", "1/", "1/x", "1/0s", "1/infinite",
                          "2000000000/s", "1/400d", "1.5/s", "5/s/s"}) {
    INFO(bad);
    CHECK(ParseRate(bad).status().code() == Code::kInvalidArg);
  }
}
