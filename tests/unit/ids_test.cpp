// ids_test.cpp: GUID text (lib/base/ids.hpp), formatted and parsed by hand, against libuuid's.
#include <catch2/catch.hpp>

#include <uuid/uuid.h>

#include <string>

#include "base/ids.hpp"

using namespace mq;

TEST_CASE("GUIDs format and parse as libuuid does", "[ids]") {
  for (int i = 0; i < 1000; ++i) {
    Guid g = i == 0 ? Guid{} : NewGuid();
    char theirs[37];
    uuid_unparse_lower(g.data(), theirs);
    REQUIRE(FormatGuid(g) == theirs);
    REQUIRE(ParseGuid(theirs) == g);
    char upper[37];
    uuid_unparse_upper(g.data(), upper);
    REQUIRE(ParseGuid(upper) == g);
    REQUIRE(ParseGuid("{" + std::string(theirs) + "}") == g);
  }
  const std::string good = "0123abcd-4567-89ef-ABCD-0123456789ef";
  REQUIRE(ParseGuid(good));
  // Every one-character change that libuuid refuses, refused; every one it takes, taken alike.
  for (size_t i = 0; i < good.size(); ++i) {
    for (char c : std::string("-0aFg \x01{")) {
      std::string s = good;
      s[i] = c;
      uuid_t u;
      bool theirs = uuid_parse(s.c_str(), u) == 0;
      auto ours = ParseGuid(s);
      INFO(s);
      REQUIRE(ours.has_value() == theirs);
      if (theirs) REQUIRE(std::equal(ours->begin(), ours->end(), u));
    }
  }
  CHECK(!ParseGuid(good.substr(1)));
  CHECK(!ParseGuid(good + "0"));
  CHECK(!ParseGuid("{" + good));
  CHECK(!ParseGuid(""));
}

TEST_CASE("a message id is read as printed and as a tsv row escapes it", "[ids]") {
  Guid g = NewGuid();
  std::string id = MakeMessageId(g, 7);
  std::string shown = FormatMessageId(id);  // {GUID}\7
  REQUIRE(ParseMessageId(shown) == id);
  // issue 25, trap 2: --columns message_id prints {GUID}\\7 (tsv escapes the backslash).
  std::string tsv = shown;
  tsv.insert(tsv.find('\\'), "\\");
  CHECK(ParseMessageId(tsv) == id);
  CHECK(*ParseCorrelationId(tsv) == id);
  // Only one escaping backslash, and only before the number.
  std::string three = shown;
  three.insert(three.find('\\'), "\\\\");
  CHECK(!ParseMessageId(three));
  CHECK(!ParseMessageId(shown + "\\"));
}
