// srmp_mime.hpp: the MIME side of the SRMP codec: an SRMP document is a MIME multipart/related
// entity, read and written here by hand, as it is not XML ([MC-MQSRM] 2.2.2, RFC 2046): the
// parts written one after the other, and on reading the framing that finds the envelope, the
// body and the extension, by Content-Length where a part has one, else by the boundary. Also
// the small helpers and constants both halves of the codec (the writer in srmp.cpp, the reader
// in srmp_read.cpp) use. For those two only.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.hpp"

namespace mq::srmp_mime {

// A malformed document: MQ_ERROR_INVALID_PARAMETER, exit 2.
Status Bad(std::string text);
// `s` without leading and trailing blanks (space, tab, CR, LF).
std::string_view Trim(std::string_view s);
// Whether `s` starts with `prefix`, ignoring ASCII case.
bool IStartsWith(std::string_view s, std::string_view prefix);

template <typename T>
std::optional<T> ParseUnsigned(std::string_view text) {
  text = Trim(text);
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}


bool Contains(std::string_view hay, std::string_view needle);
// Appends one part: its delimiter line, Content-Type, Content-Length, Content-Id if given, a
// blank line and the content.
void AppendPart(std::string& out, std::string_view boundary, std::string_view type,
                std::string_view content_id, std::string_view content);

// The envelope's XML namespaces, for its writer (srmp.cpp) and its reader (srmp_read.cpp).
inline constexpr const char* kSeNs = "http://schemas.xmlsoap.org/soap/envelope/";
inline constexpr const char* kSrmpNs = "http://schemas.xmlsoap.org/srmp/";
inline constexpr const char* kRpNs = "http://schemas.xmlsoap.org/rp/";
inline constexpr const char* kMsmqNs = "msmq.namespace.xml";
inline constexpr const char* kMqNs = "urn:x-mq:srmp";
// MSMQ's INFINITE deadline: LONG_MAX seconds after the epoch, 20380119T031407.
inline constexpr int64_t kInfiniteMs = int64_t{0x7FFFFFFF} * 1000;

// A 20-byte id (message, correlation) between mq's layout (the GUID in RFC 4122 byte order, the
// counter big-endian) and MSMQ's OBJECTID (the GUID as Windows stores it, Data1, Data2 and
// Data3 little-endian, and the counter little-endian), as <Correlation> carries it. The same
// swaps go both ways; other lengths are left alone.
std::string SwapObjectId(std::string_view id);

// Where the parts of one document are.
struct Framing {
  std::string_view envelope;
  std::string_view body;
  std::string_view extension;
  size_t end = 0;  // where the document ends
};

// Finds the parts of the document at the start of `doc` (an HTTP request line and headers in
// front are skipped, as [MC-MQSRM]'s samples have them).
Status Frame(std::string_view doc, Framing& f);

}  // namespace mq::srmp_mime
