// ids.hpp: GUIDs, message ids and correlation ids.
//
// A message id is MSMQ's 20 bytes: a 16-byte GUID and a 4-byte counter, written
// "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}\N". A correlation id is any 20 bytes, written as 40
// hex digits; a message id in its text form is accepted as a correlation id too.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.hpp"

namespace mq {

using Guid = std::array<uint8_t, 16>;
inline constexpr size_t kIdSize = 20;

Guid NewGuid();
std::string FormatGuid(const Guid& g);  // lowercase, without braces
std::optional<Guid> ParseGuid(std::string_view s);  // with or without braces
// Inline: called for every message a walk looks at (its conversation handle).
inline bool IsNil(const Guid& g) {
  uint64_t a, b;
  std::memcpy(&a, g.data(), 8);
  std::memcpy(&b, g.data() + 8, 8);
  return (a | b) == 0;
}

// 20 raw bytes.
std::string MakeMessageId(const Guid& g, uint32_t counter);
std::string FormatMessageId(std::string_view id20);
std::optional<std::string> ParseMessageId(std::string_view text);

// 40 hex digits or a message id -> 20 bytes; E_INVALIDARG otherwise.
Result<std::string> ParseCorrelationId(std::string_view text);
std::string FormatCorrelationId(std::string_view id20);

inline std::string_view GuidBytes(const Guid& g) {
  return {reinterpret_cast<const char*>(g.data()), g.size()};
}
Guid GuidFromBytes(std::string_view b);  // b.size() must be 16

}  // namespace mq
