// codec_test.cpp: big-endian keys sort numerically; varints, TLV, base64, UTF-8 and hex.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "base/codec.hpp"

using namespace mq;

TEST_CASE("big-endian keys sort in numeric order under memcmp", "[codec]") {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> nums;
  for (int i = 0; i < 2000; ++i) nums.push_back(rng() >> (rng() % 64));
  nums.push_back(0);
  nums.push_back(UINT64_MAX);
  std::vector<std::string> keys;
  for (uint64_t n : nums) {
    std::string k;
    PutU64BE(k, n);
    keys.push_back(k);
  }
  std::sort(nums.begin(), nums.end());
  std::sort(keys.begin(), keys.end());  // std::string compares like memcmp
  for (size_t i = 0; i < nums.size(); ++i) REQUIRE(GetU64BE(keys[i], 0) == nums[i]);
}

TEST_CASE("u16/u32/u64 round-trip", "[codec]") {
  std::string s;
  PutU16BE(s, 0xBEEF);
  PutU32BE(s, 0xDEADBEEF);
  PutU64BE(s, 0x0123456789ABCDEFULL);
  REQUIRE(s.size() == 14);
  CHECK(GetU16BE(s, 0) == 0xBEEF);
  CHECK(GetU32BE(s, 2) == 0xDEADBEEF);
  CHECK(GetU64BE(s, 6) == 0x0123456789ABCDEFULL);
}

TEST_CASE("varints round-trip and reject truncation", "[codec]") {
  for (uint64_t v : std::vector<uint64_t>{0, 1, 127, 128, 300, 1ULL << 35, UINT64_MAX}) {
    std::string s;
    PutVarint(s, v);
    size_t pos = 0;
    auto got = GetVarint(s, pos);
    REQUIRE(got);
    CHECK(*got == v);
    CHECK(pos == s.size());
    if (s.size() > 1) {
      size_t p2 = 0;
      CHECK_FALSE(GetVarint(std::string_view(s).substr(0, s.size() - 1), p2));
    }
  }
}

TEST_CASE("TLV reader skips unknown tags and flags malformed input", "[codec]") {
  std::string rec;
  TlvWriter w(rec);
  w.Uint(1, 42);
  w.Bytes(999, "from the future");
  w.Bytes(2, std::string("a\0b", 3));
  TlvReader r(rec);
  REQUIRE(r.Next());
  CHECK(r.tag() == 1);
  CHECK(r.uint() == 42);
  REQUIRE(r.Next());
  CHECK(r.tag() == 999);
  REQUIRE(r.Next());
  CHECK(r.bytes() == std::string("a\0b", 3));
  CHECK_FALSE(r.Next());
  CHECK_FALSE(r.error());

  TlvReader bad(std::string_view(rec).substr(0, rec.size() - 1));
  while (bad.Next()) {
  }
  CHECK(bad.error());
}

TEST_CASE("base64 round-trips every length and rejects garbage", "[codec]") {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n = 0; n < 20; ++n) {
    auto d = Base64Decode(Base64Encode(all.substr(0, n)));
    REQUIRE(d);
    CHECK(*d == all.substr(0, n));
  }
  CHECK(Base64Encode("foobar") == "Zm9vYmFy");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK_FALSE(Base64Decode("Zm9v!mFy"));
  CHECK_FALSE(Base64Decode("Zm9"));
  CHECK_FALSE(Base64Decode("Z=9v"));
}

TEST_CASE("UTF-8 validation", "[codec]") {
  CHECK(IsValidUtf8("plain ascii"));
  CHECK(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(IsValidUtf8("\xff"));
  CHECK_FALSE(IsValidUtf8("\xc3"));            // truncated
  CHECK_FALSE(IsValidUtf8("\xc0\xaf"));        // overlong
  CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));    // surrogate
  CHECK_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST_CASE("hex round-trip", "[codec]") {
  CHECK(HexEncode(std::string("\x00\xab", 2)) == "00ab");
  CHECK(*HexDecode("00AB") == std::string("\x00\xab", 2));
  CHECK_FALSE(HexDecode("0g"));
  CHECK_FALSE(HexDecode("abc"));
}

TEST_CASE("a peer's text: control characters escaped, cut at a character", "[codec]") {
  CHECK(EscapeControls("a\nb\x1b[31m\x7f") == "a\\x0ab\\x1b[31m\\x7f");
  CHECK(EscapeControls("\xc2\x9b" "1m \xc3\xa9") == "\\xc2\\x9b1m \xc3\xa9");  // C1 CSI; é kept
  CHECK(PeerText("short") == "short");
  std::string long_text = std::string(299, 'x') + "\xc3\xa9" + std::string(100, 'y');
  std::string cut = PeerText(long_text);
  CHECK(cut == std::string(299, 'x') + "... (401 bytes in all)");  // é not split
}

TEST_CASE("ToValidUtf8 keeps UTF-8 and replaces every stray byte", "[codec]") {
  CHECK(ToValidUtf8("plain \xc3\xa9t\xc3\xa9") == "plain \xc3\xa9t\xc3\xa9");
  CHECK(ToValidUtf8("a\xff"
                    "b") == "a\xEF\xBF\xBD"
                            "b");
  CHECK(ToValidUtf8("\xc3") == "\xEF\xBF\xBD");                  // cut short
  CHECK(ToValidUtf8("\xc0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  CHECK(ToValidUtf8("\xed\xa0\x80").size() == 9);                // a surrogate
  CHECK(IsValidUtf8(ToValidUtf8(std::string("\x80\x80\xf4\x90\x80\x80", 6))));
}
