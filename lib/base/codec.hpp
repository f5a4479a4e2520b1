// codec.hpp: byte encodings shared by keys and records.
//
// Keys are big-endian so that LMDB's default memcmp order is numeric order; no custom
// comparators (every program opening the store would need the same one).
// Records are tag-length-value: a varint tag, a varint length, the bytes. A reader skips tags
// it does not know, and a field a record lacks keeps its default, so records written by an
// older version decode, and new fields never need a rewrite of the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mq {

void PutU16BE(std::string& out, uint16_t v);
// Inline: every key is built and read with these (a bulk send makes millions). The Store
// forms write at `p`: for a key made at its final size (std::string k(12, 0)) and filled in
// place, without an append (and its capacity check) per field.
inline void StoreU32BE(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (24 - 8 * i));
}
inline void StoreU64BE(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (56 - 8 * i));
}
inline void PutU32BE(std::string& out, uint32_t v) {
  char buf[4];
  StoreU32BE(buf, v);
  out.append(buf, 4);
}
inline void PutU64BE(std::string& out, uint64_t v) {
  char buf[8];
  StoreU64BE(buf, v);
  out.append(buf, 8);
}
uint16_t GetU16BE(std::string_view in, size_t pos);
inline uint32_t GetU32BE(std::string_view in, size_t pos) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[pos + i]);
  return v;
}
inline uint64_t GetU64BE(std::string_view in, size_t pos) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(in[pos + i]);
  return v;
}

void PutVarint(std::string& out, uint64_t v);
// Reads a varint at `pos`, advancing it; nullopt if truncated or longer than 10 bytes.
std::optional<uint64_t> GetVarintLong(std::string_view in, size_t& pos);
// A varint of one byte (every tag and most lengths and values of a record) without a call.
inline std::optional<uint64_t> GetVarint(std::string_view in, size_t& pos) {
  if (pos < in.size() && !(static_cast<uint8_t>(in[pos]) & 0x80))
    return static_cast<uint8_t>(in[pos++]);
  return GetVarintLong(in, pos);
}

// Writes TLV fields. Integers are varints; strings and bytes are raw.
class TlvWriter {
 public:
  explicit TlvWriter(std::string& out) : out_(out) {}
  void Uint(uint32_t tag, uint64_t v);
  void Bytes(uint32_t tag, std::string_view v);
  // Omits the field when it equals the default, keeping records small.
  void UintIfNot(uint32_t tag, uint64_t v, uint64_t dflt) {
    if (v != dflt) Uint(tag, v);
  }
  void BytesIfNotEmpty(uint32_t tag, std::string_view v) {
    if (!v.empty()) Bytes(tag, v);
  }

 private:
  std::string& out_;
};

// Reads TLV fields until the input ends.
class TlvReader {
 public:
  explicit TlvReader(std::string_view in) : in_(in) {}
  // Next field; false at the end. Sets error() if the input is malformed.
  bool Next();
  uint32_t tag() const { return tag_; }
  std::string_view bytes() const { return value_; }
  // The value as a varint (0 and error() if it is not one).
  uint64_t uint();
  bool error() const { return error_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  uint32_t tag_ = 0;
  std::string_view value_;
  bool error_ = false;
};

std::string Base64Encode(std::string_view in);
std::optional<std::string> Base64Decode(std::string_view in);
bool IsValidUtf8(std::string_view s);
// UTF-8 (valid) to UTF-16LE, and back: null when `s` is no valid UTF-16LE (an odd length, an
// unpaired surrogate).
std::string Utf8ToUtf16Le(std::string_view s);
std::optional<std::string> Utf16LeToUtf8(std::string_view s);
// `s` with each byte that is not part of a UTF-8 sequence replaced by U+FFFD.
std::string ToValidUtf8(std::string_view s);
// Lower-case hex digits, and the value of one digit of either case (-1: not a hex digit).
inline constexpr char kHexDigits[] = "0123456789abcdef";
int HexValue(char c);
std::string HexEncode(std::string_view in);
std::optional<std::string> HexDecode(std::string_view in);

// Text that came from elsewhere (a peer's error frame, a stored error), made safe to print on
// a terminal or in a line of a table: control characters (C0, DEL, and C1 in UTF-8, which
// terminals also obey) as \xNN, and cut to `max` bytes (at a character boundary) with the
// length it had.
std::string EscapeControls(std::string_view text);
std::string PeerText(std::string_view text, size_t max = 300);

}  // namespace mq
