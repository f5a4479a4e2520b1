// ids.cpp: GUIDs (from libuuid), message ids and correlation ids.
#include "base/ids.hpp"

#include <uuid/uuid.h>

#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "base/codec.hpp"

namespace mq {

Guid NewGuid() {
  Guid g;
  uuid_generate_random(g.data());
  return g;
}

namespace {

// Where the 32 hex digits of a GUID's text go: 8-4-4-4-12, dashes between.
constexpr bool IsDash(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

}  // namespace

// By hand rather than by uuid_unparse_lower and uuid_parse (the same text, both ways): an SRMP
// document has three or four GUIDs, and libuuid's strtoul calls were 5% of accept's work.
std::string FormatGuid(const Guid& g) {
  std::string out(36, '-');
  size_t at = 0;
  for (uint8_t b : g) {
    if (IsDash(at)) ++at;
    out[at++] = kHexDigits[b >> 4];
    out[at++] = kHexDigits[b & 15];
  }
  return out;
}

std::optional<Guid> ParseGuid(std::string_view s) {
  if (s.size() == 38 && s.front() == '{' && s.back() == '}') s = s.substr(1, 36);
  if (s.size() != 36) return std::nullopt;
  Guid g;
  size_t at = 0;
  for (uint8_t& b : g) {
    if (IsDash(at) && s[at++] != '-') return std::nullopt;
    int hi = HexValue(s[at]), lo = HexValue(s[at + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    b = static_cast<uint8_t>(hi << 4 | lo);
    at += 2;
  }
  return g;
}

Guid GuidFromBytes(std::string_view b) {
  Guid g{};
  std::memcpy(g.data(), b.data(), std::min(b.size(), g.size()));
  return g;
}

std::string MakeMessageId(const Guid& g, uint32_t counter) {
  std::string id(GuidBytes(g));
  PutU32BE(id, counter);
  return id;
}

std::string FormatMessageId(std::string_view id20) {
  if (id20.size() != kIdSize) return HexEncode(id20);
  return fmt::format("{{{}}}\\{}", FormatGuid(GuidFromBytes(id20.substr(0, 16))),
                     GetU32BE(id20, 16));
}

std::optional<std::string> ParseMessageId(std::string_view text) {
  auto slash = text.find('\\');
  if (slash == std::string_view::npos) return std::nullopt;
  auto g = ParseGuid(text.substr(0, slash));
  std::string_view num = text.substr(slash + 1);
  // {GUID}\\N is the id as a tsv row prints it (its backslash escaped): a user copies it
  // from --columns output, and it can mean nothing else.
  if (!num.empty() && num.front() == '\\') num.remove_prefix(1);
  uint32_t counter = 0;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), counter);
  if (!g || num.empty() || ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
  return MakeMessageId(*g, counter);
}

Result<std::string> ParseCorrelationId(std::string_view text) {
  if (auto id = ParseMessageId(text)) return *id;
  if (text.size() == 2 * kIdSize) {
    if (auto raw = HexDecode(text)) return *raw;
  }
  return Status::InvalidArg(
      fmt::format("invalid correlation id '{}': use 40 hex digits or a message id", text));
}

std::string FormatCorrelationId(std::string_view id20) { return HexEncode(id20); }

}  // namespace mq
