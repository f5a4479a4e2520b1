// conversation.cpp: conversation and group records, index keys, message-type validation.
#include "store/conversation.hpp"

#include <optional>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "store/xml_check.hpp"

namespace mq {

const char* ConvStateName(ConvState s) {
  switch (s) {
    case ConvState::kOpen: return "open";
    case ConvState::kEnded: return "ended";
    case ConvState::kError: return "error";
  }
  return "open";
}

// Tags are never reused.
std::string EncodeConv(const ConvRecord& r) {
  std::string out(1, '\x01');
  TlvWriter w(out);
  w.Uint(1, r.qid);
  w.Bytes(2, GuidBytes(r.group));
  w.UintIfNot(3, static_cast<uint8_t>(r.state), 0);
  w.UintIfNot(4, r.next_seq, 0);
  w.Uint(5, r.priority);
  w.Uint(6, r.rank);
  w.UintIfNot(7, r.count, 0);
  w.BytesIfNotEmpty(8, r.service);
  w.BytesIfNotEmpty(9, r.contract);
  w.Uint(10, static_cast<uint64_t>(r.created));
  return out;
}

bool DecodeConv(std::string_view v, ConvRecord& r) {
  if (v.empty() || v[0] != 1) return false;
  TlvReader rd(v.substr(1));
  while (rd.Next()) {
    switch (rd.tag()) {
      case 1: r.qid = static_cast<uint32_t>(rd.uint()); break;
      case 2:
        if (rd.bytes().size() != 16) return false;
        r.group = GuidFromBytes(rd.bytes());
        break;
      case 3: r.state = static_cast<ConvState>(std::min<uint64_t>(rd.uint(), 2)); break;
      case 4: r.next_seq = rd.uint(); break;
      case 5: r.priority = static_cast<uint8_t>(std::min<uint64_t>(rd.uint(), 7)); break;
      case 6: r.rank = rd.uint(); break;
      case 7: r.count = rd.uint(); break;
      case 8: r.service = rd.bytes(); break;
      case 9: r.contract = rd.bytes(); break;
      case 10: r.created = static_cast<int64_t>(rd.uint()); break;
      default: break;
    }
  }
  return !rd.error();
}

std::string EncodeGroup(const GroupRecord& r) {
  std::string out(1, '\x01');
  TlvWriter w(out);
  w.UintIfNot(1, r.convs, 0);
  w.UintIfNot(2, r.count, 0);
  w.UintIfNot(3, r.locked, 0);
  w.UintIfNot(4, r.holder, 0);
  w.BytesIfNotEmpty(5, r.sel_key);
  return out;
}

bool DecodeGroup(std::string_view v, GroupRecord& r) {
  if (v.empty() || v[0] != 1) return false;
  TlvReader rd(v.substr(1));
  while (rd.Next()) {
    switch (rd.tag()) {
      case 1: r.convs = rd.uint(); break;
      case 2: r.count = rd.uint(); break;
      case 3: r.locked = rd.uint(); break;
      case 4: r.holder = rd.uint(); break;
      case 5: r.sel_key = rd.bytes(); break;
      default: break;
    }
  }
  return !rd.error();
}

Result<char> ParseValidation(std::string_view text) {
  if (text == "none" || text == "N") return 'N';
  if (text == "empty" || text == "E") return 'E';
  if (text == "well-formed-xml" || text == "X") return 'X';
  return Status::InvalidArg(
      fmt::format("unknown validation '{}' (none, empty or well-formed-xml)", text));
}

const char* ValidationName(char v) {
  switch (v) {
    case 'E': return "empty";
    case 'X': return "well-formed-xml";
    default: return "none";
  }
}

namespace {

// Limits no real document meets, checked in one linear pass before libxml2 sees a body: its
// duplicate-attribute check is quadratic in an element's attributes (60,000 of them took 37
// s), and its tree grows with every element.
constexpr size_t kMaxXmlAttributes = 1000;  // per element
constexpr size_t kMaxXmlDepth = 256;        // libxml2's own limit without XML_PARSE_HUGE
constexpr size_t kMaxXmlElements = 500000;

// What of `body` is over the limits, or empty. A lexical look only (tags, comments, CDATA,
// processing instructions, quoted attribute values): whether the body is well-formed is
// libxml2's to say, and a body this scan misreads is one libxml2 refuses.
std::string OverXmlLimits(std::string_view body) {
  const size_t n = body.size();
  size_t i = 0, depth = 0, elements = 0;
  auto skip_to = [&](std::string_view end) {
    size_t e = body.find(end, i);
    i = e == std::string_view::npos ? n : e + end.size();
  };
  while (i < n) {
    size_t lt = body.find('<', i);
    if (lt == std::string_view::npos) break;
    i = lt + 1;
    std::string_view rest = body.substr(i);
    if (rest.substr(0, 3) == "!--") {
      skip_to("-->");
    } else if (rest.substr(0, 8) == "![CDATA[") {
      skip_to("]]>");
    } else if (rest.substr(0, 1) == "?") {
      skip_to("?>");
    } else if (rest.substr(0, 1) == "!") {
      skip_to(">");
    } else if (rest.substr(0, 1) == "/") {
      if (depth) --depth;
      skip_to(">");
    } else {
      size_t attributes = 0;
      char quote = 0;
      size_t j = i;
      for (; j < n; ++j) {
        char c = body[j];
        if (quote) {
          if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == '=') {
          ++attributes;
        } else if (c == '>') {
          break;
        }
      }
      if (attributes > kMaxXmlAttributes)
        return fmt::format("an element has more than {} attributes", kMaxXmlAttributes);
      if (++elements > kMaxXmlElements)
        return fmt::format("more than {} elements", kMaxXmlElements);
      if (j < n && body[j - 1] != '/' && ++depth > kMaxXmlDepth)
        return fmt::format("elements nested more than {} deep", kMaxXmlDepth);
      i = j < n ? j + 1 : n;
    }
  }
  return {};
}

}  // namespace

namespace {

// What a look at `body` finds it lacks for `validation` ("" nothing), or nullopt when only an
// XML parser can say.
std::optional<std::string> LexicalFault(char validation, std::string_view body) {
  if (validation == 'E' && !body.empty())
    return fmt::format("an empty body ({} bytes given)", body.size());
  if (validation != 'X') return std::string();
  if (body.empty()) return std::string("well-formed XML: the body is empty");
  if (std::string over = OverXmlLimits(body); !over.empty())
    return fmt::format("well-formed XML, and mq checks no document over its limits: {}", over);
  return std::nullopt;
}

Status CannotCheck(const Status& why) {
  return Status(why.code(),
                fmt::format("cannot check well-formed XML: {}; nothing was sent", why.text()));
}

Status Refused(std::string_view type_name, const std::string& fault) {
  return Status::ValidationFailed(
      fmt::format("message type '{}' requires {}; nothing was sent", type_name, fault));
}

}  // namespace

Result<std::string> BodyFault(char validation, std::string_view body) {
  if (auto fault = LexicalFault(validation, body)) return *fault;
  auto error = XmlWellFormedError(body);
  if (!error.ok()) return error.status();
  if (error->empty()) return std::string();
  return fmt::format("well-formed XML: {}", *error);
}

Status ValidateBodies(const std::vector<BodyCheck>& bodies) {
  std::vector<std::optional<std::string>> faults;
  std::vector<std::string_view> xml;
  std::vector<size_t> xml_at;
  faults.reserve(bodies.size());
  for (const BodyCheck& b : bodies) {
    faults.push_back(LexicalFault(b.validation, b.body));
    if (faults.back()) continue;
    xml.push_back(b.body);
    xml_at.push_back(faults.size() - 1);
  }
  if (!xml.empty()) {
    auto errors = XmlWellFormedErrors(xml);
    if (!errors.ok()) return CannotCheck(errors.status());
    for (size_t k = 0; k < xml.size(); ++k)
      faults[xml_at[k]] = (*errors)[k].empty() ? "" : "well-formed XML: " + (*errors)[k];
  }
  for (size_t i = 0; i < bodies.size(); ++i)
    if (!faults[i]->empty()) return Refused(bodies[i].type_name, *faults[i]);
  return {};
}

Status ValidateBody(char validation, std::string_view body, std::string_view type_name) {
  auto fault = BodyFault(validation, body);
  if (!fault.ok()) return CannotCheck(fault.status());
  if (fault->empty()) return {};
  return Refused(type_name, *fault);
}

char BuiltinValidation(std::string_view name) {
  if (name == kDefaultMessageType) return 'N';
  if (name == kEndDialogType) return 'E';
  if (name == kErrorType) return 'X';
  if (name == "http://schemas.microsoft.com/SQL/ServiceBroker/DialogTimer") return 'E';
  return 0;
}

std::string ErrorBody(int64_t code, std::string_view description) {
  std::string escaped;
  for (char c : description) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      // XML 1.0 has no way to carry other control characters, not even as references.
      case '\t': case '\n': case '\r': escaped += c; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20) || c == 0x7f) escaped += "\xEF\xBF\xBD";
        else escaped += c;
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error "
      "xmlns=\"http://schemas.microsoft.com/SQL/ServiceBroker/Error\"><Code>{}</Code>"
      "<Description>{}</Description></Error>",
      code, escaped);
}

std::string ConvQKey(uint32_t qid, const Guid& handle) {
  std::string k;
  PutU32BE(k, qid);
  k += GuidBytes(handle);
  return k;
}

std::string GroupKey(uint32_t qid, const Guid& group) { return ConvQKey(qid, group); }

std::string ConvMsgGroupPrefix(uint32_t qid, const Guid& group) { return ConvQKey(qid, group); }

std::string ConvMsgConvPrefix(uint32_t qid, const Guid& group, uint8_t priority, uint64_t rank,
                              const Guid& handle) {
  std::string k = ConvMsgGroupPrefix(qid, group);
  k.push_back(static_cast<char>(7 - priority));
  PutU64BE(k, rank);
  k += GuidBytes(handle);
  return k;
}

std::string ConvMsgKey(uint32_t qid, const Guid& group, uint8_t priority, uint64_t rank,
                       const Guid& handle, bool error_first, uint64_t seq) {
  std::string k = ConvMsgConvPrefix(qid, group, priority, rank, handle);
  k.push_back(error_first ? '\0' : '\x01');
  PutU64BE(k, seq);
  return k;
}

std::string GroupSelKey(uint32_t qid, uint8_t priority, uint64_t head_lookup, const Guid& group) {
  std::string k;
  PutU32BE(k, qid);
  k.push_back(static_cast<char>(7 - priority));
  PutU64BE(k, head_lookup);
  k += GuidBytes(group);
  return k;
}

uint8_t OrderBand(uint8_t priority, bool conversation, bool retained) {
  uint8_t base = static_cast<uint8_t>(7 - std::min<uint8_t>(priority, 7));
  if (retained) return static_cast<uint8_t>(16 + base);
  return static_cast<uint8_t>((conversation ? 8 : 0) + base);
}

}  // namespace mq
