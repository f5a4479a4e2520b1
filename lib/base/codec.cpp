// codec.cpp: big-endian integers, varints, TLV records, base64 and hex, and text from elsewhere
// made safe to print.
#include "base/codec.hpp"

#include <iconv.h>

#include <cerrno>

namespace mq {

void PutU16BE(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

uint16_t GetU16BE(std::string_view in, size_t pos) {
  return static_cast<uint16_t>((static_cast<uint8_t>(in[pos]) << 8) |
                               static_cast<uint8_t>(in[pos + 1]));
}

namespace {
// v as a varint in buf (at most 10 bytes); returns its length.
size_t EncodeVarint(char* buf, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  return n;
}
}  // namespace

void PutVarint(std::string& out, uint64_t v) {
  char buf[10];
  out.append(buf, EncodeVarint(buf, v));
}

std::optional<uint64_t> GetVarintLong(std::string_view in, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= in.size()) return std::nullopt;
    auto b = static_cast<uint8_t>(in[pos++]);
    if (shift == 63 && b > 1) return std::nullopt;
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  return std::nullopt;
}

void TlvWriter::Uint(uint32_t tag, uint64_t v) {
  // tag, length (one byte: a varint is at most 10), value, in one append.
  char buf[10 + 1 + 10];
  size_t n = EncodeVarint(buf, tag);
  size_t len = EncodeVarint(buf + n + 1, v);
  buf[n] = static_cast<char>(len);
  out_.append(buf, n + 1 + len);
}

void TlvWriter::Bytes(uint32_t tag, std::string_view v) {
  PutVarint(out_, tag);
  PutVarint(out_, v.size());
  out_.append(v.data(), v.size());
}

bool TlvReader::Next() {
  if (error_ || pos_ >= in_.size()) return false;
  auto tag = GetVarint(in_, pos_);
  auto len = GetVarint(in_, pos_);
  if (!tag || !len || *tag > UINT32_MAX || *len > in_.size() - pos_) {
    error_ = true;
    return false;
  }
  tag_ = static_cast<uint32_t>(*tag);
  value_ = in_.substr(pos_, *len);
  pos_ += *len;
  return true;
}

uint64_t TlvReader::uint() {
  size_t p = 0;
  auto v = GetVarint(value_, p);
  if (!v || p != value_.size()) {
    error_ = true;
    return 0;
  }
  return *v;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) |
                 static_cast<uint8_t>(in[i + 2]);
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += kB64[(n >> 6) & 63];
    out += kB64[n & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t n = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += kB64[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  for (size_t i = 0; i < in.size(); i += 4) {
    int pad = 0;
    uint32_t n = 0;
    for (size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
        n <<= 6;
        continue;
      }
      int v = val(c);
      if (v < 0 || pad) return std::nullopt;
      n = (n << 6) | static_cast<uint32_t>(v);
    }
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
  }
  return out;
}

namespace {

// The length of the UTF-8 sequence at s[i], or 0 where none is (a stray byte, a sequence cut
// short, an overlong form, a surrogate, a value past U+10FFFF).
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  auto c = static_cast<uint8_t>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n >= s.size()) return 0;
  for (size_t k = 1; k <= n; ++k) {
    auto cc = static_cast<uint8_t>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    return 0;
  return n + 1;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceAt(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

namespace {

// glibc's iconv, from one encoding to another: null if `s` is not valid in `from`.
std::optional<std::string> Iconv(const char* to, const char* from, std::string_view s) {
  iconv_t cd = ::iconv_open(to, from);
  if (cd == reinterpret_cast<iconv_t>(-1)) return std::nullopt;
  std::string out(s.size() * 2 + 16, '\0');
  char* in = const_cast<char*>(s.data());
  size_t in_left = s.size();
  char* o = out.data();
  size_t o_left = out.size();
  bool ok = true;
  while (in_left > 0) {
    if (::iconv(cd, &in, &in_left, &o, &o_left) != static_cast<size_t>(-1)) continue;
    if (errno != E2BIG) {
      ok = false;  // EILSEQ, EINVAL: not valid, or cut short
      break;
    }
    size_t used = out.size() - o_left;
    out.resize(out.size() * 2);
    o = out.data() + used;
    o_left = out.size() - used;
  }
  ::iconv_close(cd);
  if (!ok) return std::nullopt;
  out.resize(out.size() - o_left);
  return out;
}

}  // namespace

std::string Utf8ToUtf16Le(std::string_view s) {
  auto r = Iconv("UTF-16LE", "UTF-8", s);
  return r ? std::move(*r) : std::string();
}

std::optional<std::string> Utf16LeToUtf8(std::string_view s) {
  if (s.size() % 2) return std::nullopt;
  return Iconv("UTF-8", "UTF-16LE", s);
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceAt(s, i);
    if (n) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string HexEncode(std::string_view in) {
  std::string out;
  out.reserve(in.size() * 2);
  for (char ch : in) {
    auto c = static_cast<uint8_t>(ch);
    out += kHexDigits[c >> 4];
    out += kHexDigits[c & 15];
  }
  return out;
}

std::optional<std::string> HexDecode(std::string_view in) {
  if (in.size() % 2) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < in.size(); i += 2) {
    int h = HexValue(in[i]), l = HexValue(in[i + 1]);
    if (h < 0 || l < 0) return std::nullopt;
    out += static_cast<char>(h * 16 + l);
  }
  return out;
}

std::string EscapeControls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u == 0x7F) {
      out += "\\x";
      out += "0123456789abcdef"[u >> 4];
      out += "0123456789abcdef"[u & 15];
    } else if (u == 0xC2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      auto c1 = static_cast<unsigned char>(text[++i]);
      out += "\\xc2\\x";
      out += "0123456789abcdef"[c1 >> 4];
      out += "0123456789abcdef"[c1 & 15];
    } else {
      out += static_cast<char>(u);
    }
  }
  return out;
}

std::string PeerText(std::string_view text, size_t max) {
  if (text.size() <= max) return EscapeControls(text);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return EscapeControls(text.substr(0, cut)) + "... (" + std::to_string(text.size()) +
         " bytes in all)";
}

}  // namespace mq
