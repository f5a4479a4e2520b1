// srmp_mime.cpp: the MIME framing of SRMP documents (srmp_mime.hpp).
#include "wire/srmp_mime.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "base/ids.hpp"

namespace mq::srmp_mime {

Status Bad(std::string text) { return Status::InvalidArg(std::move(text)); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' ||
                        s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' ||
                        s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

bool IStartsWith(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i], b = prefix[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = static_cast<char>(b - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

std::string SwapObjectId(std::string_view id) {
  std::string out(id);
  if (out.size() != kIdSize) return out;
  std::reverse(out.begin(), out.begin() + 4);
  std::reverse(out.begin() + 4, out.begin() + 6);
  std::reverse(out.begin() + 6, out.begin() + 8);
  std::reverse(out.begin() + 16, out.end());
  return out;
}

bool Contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

void AppendPart(std::string& out, std::string_view boundary, std::string_view type,
                std::string_view content_id, std::string_view content) {
  out += "--";
  out += boundary;
  out += "\r\nContent-Type: ";
  out += type;
  out += "\r\nContent-Length: ";
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, content.size());
  (void)ec;
  out.append(digits, end);
  out += "\r\n";
  if (!content_id.empty()) {
    out += "Content-Id: ";
    out += content_id;
    out += "\r\n";
  }
  out += "\r\n";
  out += content;
  out += "\r\n";
}

namespace {

// ---- reading: MIME --------------------------------------------------------------------------

// The line at `pos` without its line end; *next is where the next line starts.
std::string_view LineAt(std::string_view s, size_t pos, size_t* next) {
  size_t nl = s.find('\n', pos);
  size_t end = nl == std::string_view::npos ? s.size() : nl;
  *next = nl == std::string_view::npos ? s.size() : nl + 1;
  std::string_view line = s.substr(pos, end - pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsHeaderLine(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  for (size_t i = 0; i < colon; ++i)
    if (!IsTokenChar(line[i])) return false;
  return true;
}

bool IsRequestLine(std::string_view line) {
  size_t sp = line.find(' ');
  if (sp == 0 || sp == std::string_view::npos) return false;
  for (size_t i = 0; i < sp; ++i)
    if (line[i] < 'A' || line[i] > 'Z') return false;
  size_t http = line.rfind(" HTTP/");
  return http != std::string_view::npos && http > sp;
}

struct Headers {
  std::string content_type;
  std::string content_id;
  std::optional<uint64_t> content_length;
};

// Reads header lines from `pos` up to a blank line (consumed) or the first line that is not a
// header (not consumed: [MC-MQSRM]'s samples put content right after the headers at times).
Status ParseHeaders(std::string_view s, size_t& pos, Headers& h, std::string_view what) {
  std::string* last = nullptr;
  while (pos < s.size()) {
    size_t next;
    std::string_view line = LineAt(s, pos, &next);
    if (line.empty()) {
      pos = next;
      return {};
    }
    if ((line[0] == ' ' || line[0] == '\t') && last) {
      *last += ' ';
      *last += Trim(line);
      pos = next;
      continue;
    }
    if (!IsHeaderLine(line)) return {};
    size_t colon = line.find(':');
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    last = nullptr;
    if (IStartsWith(name, "content-type") && name.size() == 12) {
      h.content_type = value;
      last = &h.content_type;
    } else if (IStartsWith(name, "content-id") && name.size() == 10) {
      h.content_id = value;
    } else if (IStartsWith(name, "content-length") && name.size() == 14) {
      auto n = ParseUnsigned<uint64_t>(value);
      if (!n)
        return Bad(fmt::format("{}: Content-Length '{}' is not a number", what, value));
      h.content_length = *n;
    }
    pos = next;
  }
  return {};
}

std::string BoundaryOf(std::string_view content_type) {
  for (size_t i = 0; i + 9 <= content_type.size(); ++i) {
    if (!IStartsWith(content_type.substr(i), "boundary=")) continue;
    std::string_view v = content_type.substr(i + 9);
    if (!v.empty() && v[0] == '"') {
      size_t q = v.find('"', 1);
      return std::string(v.substr(1, q == std::string_view::npos ? v.size() - 1 : q - 1));
    }
    size_t end = v.find_first_of("; \t");
    return std::string(v.substr(0, end));
  }
  return {};
}

// The next delimiter line "--BOUNDARY" at or after `from`: MSMQ writes it right after the
// content, with no line break before it; the rest of its line is "--" (the closing one) or
// white space.
size_t FindDelimiter(std::string_view s, std::string_view delim, size_t from) {
  for (;;) {
    size_t d = s.find(delim, from);
    if (d == std::string_view::npos) return d;
    size_t after = d + delim.size();
    if (s.substr(after, 2) == "--") return d;
    // The rest of its line is white space: looked at only as far as the first other byte, so
    // that look-alikes with no line break ("--Bx--Bx...") cost linear time, not a scan to the
    // end of the document each (issue 23).
    size_t i = after;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    if (i == s.size() || s[i] == '\n') return d;
    from = d + 1;
  }
}


size_t EnvelopeOnlyEnd(std::string_view doc, size_t from) {
  size_t post = doc.find("\nPOST ", from);
  return post == std::string_view::npos ? doc.size() : post + 1;
}

}  // namespace

Status Frame(std::string_view doc, Framing& f) {
  size_t pos = 0;
  while (pos < doc.size() && Trim(doc.substr(pos, 1)).empty()) ++pos;
  size_t next;
  if (IsRequestLine(LineAt(doc, pos, &next))) pos = next;
  Headers top;
  if (doc.substr(pos, 2) != "--" && doc.substr(pos, 1) != "<")
    MQ_RETURN_IF_ERROR(ParseHeaders(doc, pos, top, "HTTP headers"));
  std::string boundary = BoundaryOf(top.content_type);
  if (boundary.empty()) {
    if (IStartsWith(top.content_type, "multipart/"))
      return Bad(fmt::format("HTTP headers: Content-Type '{}' has no boundary",
                             top.content_type));
    size_t p = pos;
    while (p < doc.size() && Trim(doc.substr(p, 1)).empty()) ++p;
    if (!top.content_type.empty() || doc.substr(p, 1) == "<") {
      // An envelope alone (receipts are sent so: text/xml, no attachment).
      f.end = EnvelopeOnlyEnd(doc, p);
      f.envelope = doc.substr(p, f.end - p);
      return {};
    }
    for (size_t l = p; l < doc.size(); l = next) {
      std::string_view line = LineAt(doc, l, &next);
      if (line.substr(0, 2) == "--" && line.size() > 2) {
        boundary = std::string(Trim(line.substr(2)));
        break;
      }
    }
    if (boundary.empty())
      return Bad("MIME: no multipart boundary and no <se:Envelope> found");
  }
  const std::string delim = "--" + boundary;
  size_t d = FindDelimiter(doc, delim, pos);
  if (d == std::string_view::npos)
    return Bad(fmt::format("MIME: boundary '{}' not found", boundary));
  bool have_body = false;
  for (int index = 1;; ++index) {
    size_t after = d + delim.size();
    if (doc.substr(after, 2) == "--") {
      LineAt(doc, after, &f.end);
      break;
    }
    size_t start;
    LineAt(doc, after, &start);
    Headers ph;
    std::string what = fmt::format("MIME part {}", index);
    MQ_RETURN_IF_ERROR(ParseHeaders(doc, start, ph, what));
    bool xml = index == 1 || IStartsWith(ph.content_type, "text/xml");
    size_t end, next_d;
    if (ph.content_length && !xml) {
      // The length rules: a body may hold anything, the boundary too.
      if (*ph.content_length > doc.size() - start)
        return Bad(fmt::format("{}: Content-Length {} but only {} bytes follow (truncated "
                               "document)",
                               what, *ph.content_length, doc.size() - start));
      end = start + *ph.content_length;
      next_d = FindDelimiter(doc, delim, end);
    } else {
      next_d = FindDelimiter(doc, delim, start);
      end = next_d == std::string_view::npos ? doc.size() : next_d;
      // The line break before a delimiter belongs to the delimiter (RFC 2046 5.1.1).
      if (end > start && doc[end - 1] == '\n') --end;
      if (end > start && doc[end - 1] == '\r') --end;
    }
    std::string_view content = doc.substr(start, end - start);
    if (index == 1) {
      if (!ph.content_type.empty() && !IStartsWith(ph.content_type, "text/xml"))
        return Bad(fmt::format("{}: Content-Type '{}' is not text/xml: the SOAP envelope must "
                               "come first",
                               what, ph.content_type));
      f.envelope = content;
    } else {
      std::string_view cid = Trim(ph.content_id);
      if (!cid.empty() && cid.front() == '<' && cid.back() == '>')
        cid = cid.substr(1, cid.size() - 2);
      if (IStartsWith(cid, "body@") || (cid.empty() && !have_body)) {
        if (have_body) return Bad(fmt::format("{}: a second body part", what));
        f.body = content;
        have_body = true;
      } else if (IStartsWith(cid, "extension@")) {
        f.extension = content;
      }
    }
    if (next_d == std::string_view::npos) {
      f.end = doc.size();  // no closing boundary: the document runs to the end
      break;
    }
    d = next_d;
  }
  return {};
}

}  // namespace mq::srmp_mime
