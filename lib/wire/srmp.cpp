// srmp.cpp: the SRMP codec (srmp.hpp). The MIME framing, which is not XML, is read and written
// in srmp_mime.cpp; the SOAP envelope is written here with libxml2's text writer and read with
// its parser in srmp_read.cpp, so that escaping and well-formedness are libxml2's, never string
// concatenation.
//
// libxml2 is linked, not loaded with dlopen as lib/store/conversation.cpp does: only mq-admin
// (export, import, forward, accept) and the tests call these files, so only they link it;
// mq-send, mq-peek, mq-receive and mq-watch never pull srmp.o or srmp_read.o out of the static
// library and do not load libxml2 at start-up.
#include "wire/srmp.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdio>
#include <ctime>
#include <memory>
#include <new>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/ids.hpp"
#include "wire/srmp_mime.hpp"

namespace mq {

namespace {

using srmp_mime::AppendPart;
using srmp_mime::Contains;
using srmp_mime::Frame;
using srmp_mime::Framing;
using srmp_mime::kInfiniteMs;
using srmp_mime::kMqNs;
using srmp_mime::kMsmqNs;
using srmp_mime::kRpNs;
using srmp_mime::kSeNs;
using srmp_mime::kSrmpNs;
using srmp_mime::SwapObjectId;
using srmp_mime::Trim;

const xmlChar* X(const char* s) { return reinterpret_cast<const xmlChar*>(s); }

// Whether XML 1.0 carries `s` as element text unchanged: valid UTF-8, no control characters but
// tab and LF (a CR would come back as LF).
bool XmlSafe(std::string_view s) {
  if (!IsValidUtf8(s)) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && c != '\t' && c != '\n') return false;
    // U+FFFE and U+FFFF (EF BF BE / EF BF BF) are not XML characters.
    if (c == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE)
      return false;
  }
  return true;
}

// ---- writing ---------------------------------------------------------------------------------

// Whether element text needs libxml2's escaping: xmlEncodeSpecialChars changes <, >, &, " and
// CR (XmlSafe has refused CR already); anything else it writes as it is.
bool NeedsEscape(std::string_view s) {
  for (char c : s)
    if (c == '<' || c == '>' || c == '&' || c == '"' || c == '\r') return true;
  return false;
}

// libxml2's text writer into a memory buffer, one per thread for every document it writes
// (Begin empties the buffer; a document left unfinished by a failure gets a new writer). A
// failed call can only be an allocation failure. Text that escaping would leave as it is
// (numbers, dates, GUIDs, most strings: NeedsEscape) goes through xmlTextWriterWriteRawLen,
// the rest through xmlTextWriterWriteString, which escapes: the writer writes every tag
// either way, and the bytes are the same as escaping everything.
class XmlOut {
 public:
  static XmlOut& Begin() {
    thread_local std::unique_ptr<XmlOut> out;
    if (!out || !out->clean_) out = std::make_unique<XmlOut>();
    out->clean_ = false;
    xmlBufferEmpty(out->buf_);
    return *out;
  }
  XmlOut() : buf_(xmlBufferCreate()), w_(buf_ ? xmlNewTextWriterMemory(buf_, 0) : nullptr) {
    if (!w_) {
      xmlBufferFree(buf_);
      throw std::bad_alloc();
    }
  }
  ~XmlOut() {
    xmlFreeTextWriter(w_);  // frees nothing of buf_
    xmlBufferFree(buf_);
  }
  XmlOut(const XmlOut&) = delete;
  XmlOut& operator=(const XmlOut&) = delete;

  void Start(const char* name) { Check(xmlTextWriterStartElement(w_, X(name))); }
  // The namespace declaration is written as an attribute so that it comes first, as in
  // MSMQ's documents (the writer's own NS calls put it after the other attributes).
  void StartNs(const char* name, const char* xmlns_attr, const char* ns) {
    Start(name);
    Attr(xmlns_attr, ns);
  }
  // An attribute whose value is one of this file's constants: nothing in it to escape.
  void Attr(const char* name, const char* value) {
    Check(xmlTextWriterStartAttribute(w_, X(name)));
    Check(xmlTextWriterWriteRaw(w_, X(value)));
    Check(xmlTextWriterEndAttribute(w_));
  }
  void MustUnderstand() { Attr("se:mustUnderstand", "1"); }
  void End() { Check(xmlTextWriterEndElement(w_)); }
  void FullEnd() { Check(xmlTextWriterFullEndElement(w_)); }
  void Empty(const char* name) {
    Start(name);
    End();
  }
  // <name>value</name>; a value XML cannot carry goes base64 with encoding="base64".
  void Text(const char* name, std::string_view value) {
    Start(name);
    if (!XmlSafe(value)) {
      Attr("encoding", "base64");
      Raw(Base64Encode(value));
    } else if (NeedsEscape(value)) {
      Check(xmlTextWriterWriteString(w_, X(std::string(value).c_str())));
    } else {
      Raw(value);
    }
    End();
  }
  // <name>prefix value</name>, value as Text has it (XmlSafe).
  void Text(const char* name, std::string_view prefix, std::string_view value) {
    if (!XmlSafe(value) || NeedsEscape(value)) return Text(name, std::string(prefix) += value);
    Start(name);
    Raw(prefix);
    Raw(value);
    End();
  }
  // Digits, dates and GUIDs: nothing to escape.
  void Number(const char* name, uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    (void)ec;
    Plain(name, std::string_view(buf, static_cast<size_t>(end - buf)));
  }
  // SRMP's and MSMQ's elements: whole seconds (a deadline rounded up); mq's own: exact.
  void Time(const char* name, int64_t ms) { Plain(name, FormatSrmpTime(ms)); }
  void Deadline(const char* name, int64_t ms) { Plain(name, FormatSrmpTime(ms, true)); }
  void TimeMs(const char* name, int64_t ms) { Plain(name, FormatSrmpTimeMs(ms)); }
  void GuidText(const char* name, const Guid& g) { Plain(name, FormatGuid(g)); }
  // Text with nothing to escape.
  void Plain(const char* name, std::string_view text) {
    Start(name);
    Raw(text);
    End();
  }

  // The document written since Begin.
  std::string_view Finish() {
    Check(xmlTextWriterFlush(w_));
    clean_ = true;
    return std::string_view(reinterpret_cast<const char*>(xmlBufferContent(buf_)),
                            static_cast<size_t>(xmlBufferLength(buf_)));
  }

 private:
  static void Check(int rc) {
    if (rc < 0) throw std::bad_alloc();
  }
  void Raw(std::string_view text) {
    if (!text.empty())
      Check(xmlTextWriterWriteRawLen(w_, reinterpret_cast<const xmlChar*>(text.data()),
                                     static_cast<int>(text.size())));
  }
  xmlBufferPtr buf_;
  xmlTextWriterPtr w_;
  bool clean_ = true;  // no document is half written
};

// The mq properties SRMP has no element for, in <Mq xmlns="urn:x-mq:srmp">, each only when it
// is not its default. With `tx_always` (a link's <Stream> is in the header) the message's own
// sequence fields are written even when 0, so that the reader does not take the link's.
// Without `local_state`, what a store sets anew when a message arrives in it is left out
// (EncodeSrmp).
void WriteMqExtras(XmlOut& x, const Message& m, bool tx_always, bool local_state,
                   uint32_t wire_body_type) {
  static const Message kDefaults;  // for what is left out
  const Message& l = local_state ? m : kDefaults;
  bool any = tx_always || wire_body_type != m.body_type || (m.ack & kAckNegArrival) ||
             l.arrived_time || m.visible_time || l.awaiting_arrival || !m.xact_id.empty() ||
             m.tx_sequence_id || m.tx_sequence_number || m.tx_previous_sequence_number ||
             l.abort_count || m.move_count || m.last_move_time || !IsNil(m.conversation_handle) ||
             !IsNil(m.conversation_group_id) || m.message_sequence_number ||
             !m.service_name.empty() || !m.service_contract_name.empty() ||
             !m.message_type_name.empty() || m.validation != 'N' || l.status != 1 ||
             l.queuing_order || l.message_enqueue_time || l.delivery_count || m.sent_time % 1000 ||
             m.ttbr % 1000 || m.ttrq % 1000;
  if (!any) return;
  x.StartNs("Mq", "xmlns", kMqNs);
  if (m.ack & kAckNegArrival) x.Number("Ack", m.ack);
  if (wire_body_type != m.body_type) x.Number("BodyType", m.body_type);
  if (l.arrived_time) x.TimeMs("ArrivedTime", l.arrived_time);
  if (m.visible_time) x.TimeMs("VisibleTime", m.visible_time);
  if (l.awaiting_arrival) x.Empty("AwaitingArrival");
  if (!m.xact_id.empty()) x.Text("XactId", HexEncode(m.xact_id));
  if (tx_always || m.tx_sequence_id) x.Number("TxSequenceId", m.tx_sequence_id);
  if (tx_always || m.tx_sequence_number) x.Number("TxSequenceNumber", m.tx_sequence_number);
  if (tx_always || m.tx_previous_sequence_number)
    x.Number("TxPreviousSequenceNumber", m.tx_previous_sequence_number);
  if (l.abort_count) x.Number("AbortCount", l.abort_count);
  if (m.move_count) x.Number("MoveCount", m.move_count);
  if (m.last_move_time) x.TimeMs("LastMoveTime", m.last_move_time);
  if (!IsNil(m.conversation_handle)) x.GuidText("ConversationHandle", m.conversation_handle);
  if (!IsNil(m.conversation_group_id)) x.GuidText("ConversationGroupId", m.conversation_group_id);
  if (m.message_sequence_number) x.Number("MessageSequenceNumber", m.message_sequence_number);
  if (!m.service_name.empty()) x.Text("ServiceName", m.service_name);
  if (!m.service_contract_name.empty()) x.Text("ServiceContractName", m.service_contract_name);
  if (!m.message_type_name.empty()) x.Text("MessageTypeName", m.message_type_name);
  if (m.validation != 'N') x.Text("Validation", std::string(1, m.validation));
  if (l.status != 1) x.Number("Status", l.status);
  if (l.queuing_order) x.Number("QueuingOrder", l.queuing_order);
  if (l.message_enqueue_time) x.TimeMs("MessageEnqueueTime", l.message_enqueue_time);
  if (l.delivery_count) x.Number("DeliveryCount", l.delivery_count);
  // SRMP's dates are whole seconds: the exact times, where they have milliseconds.
  if (m.sent_time % 1000) x.TimeMs("SentTime", m.sent_time);
  if (m.ttbr % 1000) x.TimeMs("Ttbr", m.ttbr);
  if (m.ttrq % 1000) x.TimeMs("Ttrq", m.ttrq);
  x.End();
}

// The envelope, valid until the next one is written on this thread.
// Begins a document: <se:Envelope>, <se:Header> and <path>, up to its <action>.
XmlOut& BeginPath() {
  XmlOut& x = XmlOut::Begin();
  x.StartNs("se:Envelope", "xmlns:se", kSeNs);
  x.Attr("xmlns", kSrmpNs);
  x.Start("se:Header");
  x.StartNs("path", "xmlns", kRpNs);
  x.MustUnderstand();
  return x;
}

std::string_view Envelope(const Message& m, const SrmpStream* stream, bool local_state,
                          uint32_t wire_body_type) {
  XmlOut& x = BeginPath();
  x.Text("action", "MSMQ:", m.label);
  x.Text("to", SrmpUrlOf(m.destination_queue));
  x.Text("id", SrmpIdText(m.id));
  if (!m.response_queue.empty()) {
    x.Start("rev");
    x.Text("via", SrmpUrlOf(m.response_queue));
    x.End();
  }
  x.End();

  x.Start("properties");
  x.MustUnderstand();
  x.Deadline("expiresAt", m.ttbr ? m.ttbr : kInfiniteMs);
  if (m.sent_time) x.Time("sentAt", m.sent_time);
  x.End();

  bool delivery_receipt = m.ack & kAckPosArrival;
  bool commitment_receipt = m.ack & (kAckPosReceive | kAckNegReceive);
  if (!m.express || delivery_receipt || commitment_receipt) {
    x.Start("services");
    x.MustUnderstand();
    if (!m.express) x.Empty("durable");
    if (delivery_receipt) {
      x.Start("deliveryReceiptRequest");
      x.Text("sendTo", SrmpUrlOf(m.admin_queue));
      x.End();
    }
    if (commitment_receipt) {
      x.Start("commitmentReceiptRequest");
      x.Text("sendTo", SrmpUrlOf(m.admin_queue));
      if (m.ack & kAckPosReceive) x.Empty("positiveOnly");
      if (m.ack & kAckNegReceive) x.Empty("negativeOnly");
      x.End();
    }
    x.End();
  }

  const bool link_stream = stream != nullptr;
  SrmpStream own;
  if (!stream && m.tx_sequence_number) {
    own.stream_id = fmt::format("uid:{}\\{}", FormatGuid(m.source_qm_guid), m.tx_sequence_id);
    own.current = m.tx_sequence_number;
    own.previous = m.tx_previous_sequence_number;
    stream = &own;
  }
  if (stream) {
    x.Start("Stream");
    x.MustUnderstand();
    x.Text("streamId", stream->stream_id);
    x.Number("current", stream->current);
    if (stream->previous || stream->previous_given) x.Number("previous", stream->previous);
    if (!stream->send_receipts_to.empty()) {
      x.Start("start");
      x.Text("sendReceiptsTo", stream->send_receipts_to);
      x.End();
    }
    if (stream->receipt_request) x.Empty("streamReceiptRequest");
    x.End();
  }

  // Seed 002's order.
  x.StartNs("Msmq", "xmlns", kMsmqNs);
  x.Number("Class", m.msg_class);
  x.Number("Priority", m.priority);
  if (m.journal) x.Empty("Journal");
  if (m.deadletter) x.Empty("DeadLetter");
  if (!m.correlation_id.empty())
    x.Text("Correlation", Base64Encode(SwapObjectId(m.correlation_id)));
  x.Number("App", m.app_specific);
  x.Number("BodyType", wire_body_type);
  x.Number("HashAlgorithm", m.hash_algorithm);
  if (!IsNil(m.connector_id)) x.GuidText("ConnectorId", m.connector_id);
  if (m.eod_first || m.eod_last) {
    x.Start("Eod");
    if (m.eod_first) x.Empty("First");
    if (m.eod_last) x.Empty("Last");
    x.End();
  }
  if (m.provider_type || !m.provider_name.empty()) {
    x.Start("Provider");
    x.Number("Type", m.provider_type);
    x.Text("Name", m.provider_name);
    x.End();
  }
  x.GuidText("SourceQmGuid", m.source_qm_guid);
  if (!m.destination_queue.empty()) x.Text("DestinationMqf", m.destination_queue);
  if (!m.admin_queue.empty()) x.Text("AdminMqf", m.admin_queue);
  if (!m.response_queue.empty()) x.Text("ResponseMqf", m.response_queue);
  x.Deadline("TTrq", m.ttrq ? m.ttrq : kInfiniteMs);
  x.End();

  WriteMqExtras(x, m, link_stream, local_state, wire_body_type);

  x.End();  // se:Header
  x.Start("se:Body");
  x.FullEnd();
  x.End();  // se:Envelope
  return x.Finish();
}

}  // namespace

std::string SrmpIdText(std::string_view id) {
  if (id.size() != kIdSize) return {};
  std::string out = "uuid:";
  out += std::to_string(GetU32BE(id, 16));
  out += '@';
  out += FormatGuid(GuidFromBytes(id.substr(0, 16)));
  return out;
}

std::string SrmpIdOfText(std::string_view text) {
  size_t at = text.find('@');
  if (!srmp_mime::IStartsWith(text, "uuid:") || at == std::string_view::npos) return {};
  auto index = srmp_mime::ParseUnsigned<uint64_t>(text.substr(5, at - 5));
  auto guid = ParseGuid(text.substr(at + 1));
  if (!index || !guid || *index > UINT32_MAX) return {};
  return MakeMessageId(*guid, static_cast<uint32_t>(*index));
}

SrmpReceiptDoc ReceiptOfAck(const Message& ack, std::string url) {
  SrmpReceiptDoc r;
  r.kind = ack.msg_class == kClassAckReachQueue ? SrmpReceiptDoc::Kind::kDelivery
                                                : SrmpReceiptDoc::Kind::kCommitment;
  r.cls = ack.msg_class;
  r.to = std::move(url);
  r.message_id = ack.correlation_id;
  r.message_id_text = SrmpIdText(ack.correlation_id);
  r.received_time = ack.sent_time;
  r.qm_guid = ack.source_qm_guid;
  r.id_text = SrmpIdText(ack.id);
  r.sent_time = NowMs();
  return r;
}

std::string FormatSrmpTime(int64_t ms, bool round_up) {
  int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  if (round_up && ms - sec * 1000) ++sec;
  return FormatSrmpTimeMs(sec * 1000);
}

std::string FormatSrmpTimeMs(int64_t ms) {
  int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  int64_t frac = ms - sec * 1000;
  // The civil date of a day count (H. Hinnant's civil_from_days), without gmtime_r and its
  // time zone lock: this runs for each date of each message a link carries.
  int64_t days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400);
  int64_t secs = sec - days * 86400;
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t day = doy - (153 * mp + 2) / 5 + 1;
  int64_t mon = mp < 10 ? mp + 3 : mp - 9;
  int64_t year = yoe + era * 400 + (mon <= 2 ? 1 : 0);
  if (year < 0 || year > 9999)
    return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}{}", year, mon, day, secs / 3600,
                       secs / 60 % 60, secs % 60, frac ? fmt::format(".{:03}", frac) : "");
  char buf[19];
  auto put = [&](size_t at, int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i, v /= 10)
      buf[at + static_cast<size_t>(i)] = static_cast<char>('0' + v % 10);
  };
  put(0, year, 4);
  put(4, mon, 2);
  put(6, day, 2);
  buf[8] = 'T';
  put(9, secs / 3600, 2);
  put(11, secs / 60 % 60, 2);
  put(13, secs % 60, 2);
  if (!frac) return std::string(buf, 15);
  buf[15] = '.';
  put(16, frac, 3);
  return std::string(buf, 19);
}

Result<int64_t> ParseSrmpTime(std::string_view text) {
  text = Trim(text);
  auto bad = [&] {
    return Status::InvalidArg(fmt::format("'{}' is not a date YYYYMMDDTHHMMSS", text));
  };
  if (text.size() < 15 || text[8] != 'T') return bad();
  auto digits = [&](size_t pos, size_t n) -> std::optional<int> {
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return std::nullopt;
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  auto year = digits(0, 4), mon = digits(4, 2), day = digits(6, 2), hour = digits(9, 2),
       min = digits(11, 2), sec = digits(13, 2);
  if (!year || !mon || !day || !hour || !min || !sec || *mon < 1 || *mon > 12 || *day < 1 ||
      *day > 31 || *hour > 23 || *min > 59 || *sec > 60)
    return bad();
  int64_t frac_ms = 0;
  if (text.size() > 15) {
    if ((text[15] != '.' && text[15] != ',') || text.size() == 16) return bad();
    int64_t scale = 100;
    for (size_t i = 16; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') return bad();
      frac_ms += (text[i] - '0') * scale;
      scale /= 10;
    }
  }
  // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil),
  // without timegm and its time zone lock: this runs for each date of each message a link
  // carries.
  int64_t y = *year - (*mon <= 2 ? 1 : 0);
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (*mon + (*mon > 2 ? -3 : 9)) + 2) / 5 + *day - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = era * 146097 + doe - 719468;
  // 31 February and the like do not exist: the day must be within its month.
  static constexpr int kMonthDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  if (*day > kMonthDays[*mon - 1] + (*mon == 2 && leap ? 1 : 0)) return bad();
  int64_t t = days * 86400 + *hour * 3600 + *min * 60 + *sec;
  return t * 1000 + frac_ms;
}

std::string EncodeSrmp(const Message& m, const SrmpStream* stream, bool local_state) {
  std::string out;
  AppendSrmp(out, m, stream, local_state);
  return out;
}

void AppendSrmp(std::string& out, const Message& m, const SrmpStream* stream,
                bool local_state) {
  // The body as MSMQ's formatters read it: text (and json, text too) as VT_BSTR, UTF-16LE
  // (ActiveXMessageFormatter; sample 4.5); xml as VT_EMPTY (XmlMessageFormatter: the XML as
  // it is); a json or text body that is no UTF-8 as bytes. mq's own type, when it is not the
  // wire's, in <Mq><BodyType>.
  std::string utf16;
  std::string_view body = m.body;
  uint32_t wire = m.body_type;
  if (m.body_type == kBodyText || m.body_type == kBodyJson) {
    if (IsValidUtf8(m.body)) {
      utf16 = Utf8ToUtf16Le(m.body);
      body = utf16;
      wire = kBodyText;
    } else {
      wire = kBodyBytes;
    }
  } else if (m.body_type == kBodyXml) {
    wire = kBodyEmpty;
  }
  std::string_view env = Envelope(m, stream, local_state, wire);
  // A boundary that occurs in no part, so that a reader that goes by boundaries alone (RFC
  // 2046) finds the same parts as one that goes by Content-Length.
  std::string boundary;
  for (uint64_t n = 1;; ++n) {
    boundary = "MSMQ - SOAP boundary, ";
    boundary += std::to_string(n);
    std::string delim = "--" + boundary;
    if (!Contains(env, delim) && !Contains(body, delim) && !Contains(m.extension, delim)) break;
  }
  std::string guid = FormatGuid(m.source_qm_guid);
  out.reserve(out.size() + env.size() + body.size() + m.extension.size() + 512);
  out += "Content-Type: multipart/related; boundary=\"";
  out += boundary;
  out += "\"; type=text/xml\r\n\r\n";
  AppendPart(out, boundary, "text/xml; charset=UTF-8", {}, env);
  AppendPart(out, boundary, "application/octet-stream", "body@" + guid, body);
  if (!m.extension.empty())
    AppendPart(out, boundary, "application/octet-stream", "extension@" + guid, m.extension);
  out += "--";
  out += boundary;
  out += "--\r\n";
}

std::string EncodeReceipt(const SrmpReceiptDoc& r) {
  using Kind = SrmpReceiptDoc::Kind;
  XmlOut& x = BeginPath();
  x.Text("action", r.kind == Kind::kStream ? "MSMQ:QM Ordering Ack" : "MSMQ:");
  x.Text("to", r.to);
  if (!r.via.empty()) {
    x.Start("rev");
    x.Text("via", r.via);
    x.End();
  }
  x.Text("id", r.id_text.empty() ? fmt::format("uuid:{}@{}", r.counter, FormatGuid(r.qm_guid))
                                 : r.id_text);
  x.End();
  x.Start("properties");
  x.MustUnderstand();
  x.Time("expiresAt", kInfiniteMs);
  x.Time("sentAt", r.sent_time);
  x.End();
  uint16_t cls = 255;  // MQMSG_CLASS_ORDER_ACK
  switch (r.kind) {
    case Kind::kDelivery:
      cls = kClassAckReachQueue;
      x.Start("deliveryReceipt");
      x.Time("receivedAt", r.received_time);
      x.Text("id", r.message_id_text);
      x.End();
      break;
    case Kind::kCommitment:
      // [MC-MQSRM] 2.2.6.3 (section 4.3's sample): positive for MQMSG_CLASS_ACK_RECEIVE, else
      // negative; <Msmq><Class> says which failure.
      cls = r.cls ? r.cls : kClassAckReceive;
      x.Start("commitmentReceipt");
      x.Time("decidedAt", r.received_time);
      x.Text("decision", cls == kClassAckReceive ? "positive" : "negative");
      x.Text("id", r.message_id_text);
      x.End();
      break;
    case Kind::kStream:
      x.Start("streamReceipt");
      x.Text("streamId", r.stream_id);
      x.Number("lastOrdinal", r.last_ordinal);
      x.End();
      break;
  }
  // [MC-MQSRM] 3.1.5.1.5: MSMQ takes a stream receipt for one only with <Msmq> and
  // MQMSG_CLASS_ORDER_ACK; a delivery or commitment receipt has its class, its
  // <Correlation> the message's id (MS-MQMQ's OBJECTID layout).
  x.StartNs("Msmq", "xmlns", kMsmqNs);
  x.Number("Class", cls);
  x.Number("Priority", 0);
  x.Plain("Correlation", r.kind != Kind::kStream && r.message_id.size() == kIdSize
                             ? Base64Encode(SwapObjectId(r.message_id))
                             : std::string("AAAAAAAAAAAAAAAAAAAAAAAAAAA="));
  x.Number("App", 0);
  x.Number("BodyType", 0);
  x.Number("HashAlgorithm", 0);
  x.GuidText("SourceQmGuid", r.qm_guid);
  x.Time("TTrq", r.sent_time + 4LL * 86'400'000);  // LONG_LIVED, MSMQ's default
  x.End();
  x.End();  // se:Header
  x.Start("se:Body");
  x.FullEnd();
  x.End();  // se:Envelope
  return std::string(x.Finish());
}

std::string SrmpHttpRequest(std::string_view doc, std::string_view queue) {
  size_t split = doc.find("\r\n\r\n");
  std::string_view head =
      split == std::string_view::npos ? std::string_view() : doc.substr(0, split);
  std::string_view entity = split == std::string_view::npos ? doc : doc.substr(split + 4);
  std::string path;
  for (char c : queue) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || std::string_view("-._~$;:@!*'()+,=").find(c) != std::string_view::npos)
      path += c;
    else
      path += fmt::format("%{:02X}", u);
  }
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = '\0';
  std::string out = fmt::format(
      "POST /msmq/private$/{} HTTP/1.1\r\nHost: {}\r\n{}{}Content-Length: {}\r\n"
      "SOAPAction: \"MSMQMessage\"\r\nProxy-Accept: NonInteractiveClient\r\n\r\n",
      path, host, head, head.empty() ? "" : "\r\n", entity.size());
  out += entity;
  return out;
}

size_t SrmpDocumentEnd(std::string_view input) {
  if (Trim(input).empty()) return 0;
  Framing f;
  if (!Frame(input, f).ok()) return input.size();
  return f.end;
}

std::string SrmpUrlOf(std::string_view name) {
  if (srmp_mime::IStartsWith(name, "direct=http://")) return "http" + std::string(name.substr(11));
  if (srmp_mime::IStartsWith(name, "direct=https://"))
    return "https" + std::string(name.substr(12));
  return std::string(name);
}

}  // namespace mq
