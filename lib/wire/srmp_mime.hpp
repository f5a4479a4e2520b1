// srmp_mime.hpp: the MIME side of the SRMP codec (srmp.cpp): an SRMP document is a MIME
// multipart/related entity, read and written here by hand, as it is not XML ([MC-MQSRM] 2.2.2,
// RFC 2046): the parts written one after the other, and on reading the framing that finds the
// envelope, the body and the extension, by Content-Length where a part has one, else by the
// boundary. Also the small text helpers both halves of the codec use. For srmp.cpp only.
#pragma once

#include <charconv>
#include <cstddef>
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
