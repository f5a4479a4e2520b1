// srmp_read.cpp: the SRMP codec's reader (srmp.hpp: DecodeSrmp): the MIME framing is found by
// srmp_mime.cpp, the SOAP envelope read here with libxml2's SAX2 parser. The writer, and what
// both share, is srmp.cpp; libxml2 is linked as it says.
#include "wire/srmp.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <memory>
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

using srmp_mime::Bad;
using srmp_mime::Frame;
using srmp_mime::Framing;
using srmp_mime::IStartsWith;
using srmp_mime::kInfiniteMs;
using srmp_mime::kMqNs;
using srmp_mime::kSeNs;
using srmp_mime::ParseUnsigned;
using srmp_mime::SwapObjectId;
using srmp_mime::Trim;

// ---- reading: the envelope -------------------------------------------------------------------

struct XmlCtxtFree {
  void operator()(xmlParserCtxt* c) const { xmlFreeParserCtxt(c); }
};

// The envelope's elements as libxml2's SAX2 parser reports them, in a flat table instead of
// libxml2's DOM tree (which cost a node, a text node and a namespace search per element to
// build, and as much again to free): only what the reader below looks at. Every character of
// element content (text, CDATA, entities and character references as the parser resolved
// them) goes into one buffer in document order, so that an element's text, descendants
// included, is one range of it: what xmlNodeGetContent gave.
struct XmlTree;
struct XmlNode {
  const XmlTree* tree = nullptr;
  std::string_view name;  // local name, from the parser's dictionary (alive while it is)
  std::string_view ns;    // namespace URI, from the same dictionary; empty for none
  uint32_t first_child = 0, next = 0, last_child = 0;  // indices into nodes; 0: none
  uint32_t text_begin = 0, text_end = 0;               // into text
  std::string encoding;  // the value of an attribute named encoding (any namespace)
};
// An SRMP envelope has a few dozen elements; a document with more than this many is no
// envelope, and is refused before its table of elements (about 90 bytes each) grows with it:
// 8 MB of <a/> took 438 MB (issue 23).
constexpr size_t kMaxEnvelopeElements = 4096;

struct XmlTree {
  std::vector<XmlNode> nodes;  // nodes[0] stands for the document
  std::vector<uint32_t> open;  // the elements being read, innermost last
  std::string text;
  bool dtd = false;  // a document type declaration was met (the parse was stopped there)
  bool too_many = false;  // more than kMaxEnvelopeElements (the parse was stopped there)

  void Reset() {
    nodes.clear();
    nodes.emplace_back();
    nodes[0].tree = this;
    open.assign(1, 0);
    text.clear();
    dtd = false;
    too_many = false;
  }
  const XmlNode* At(uint32_t i) const { return i ? &nodes[i] : nullptr; }
};

XmlTree& TreeOf(void* ctx) {
  return *static_cast<XmlTree*>(static_cast<xmlParserCtxt*>(ctx)->_private);
}

std::string_view View(const xmlChar* s) {
  return s ? std::string_view(reinterpret_cast<const char*>(s)) : std::string_view();
}

void OnStart(void* ctx, const xmlChar* localname, const xmlChar*, const xmlChar* uri, int,
             const xmlChar**, int nb_attributes, int, const xmlChar** attributes) {
  XmlTree& t = TreeOf(ctx);
  if (t.nodes.size() > kMaxEnvelopeElements) {
    if (!t.too_many) xmlStopParser(static_cast<xmlParserCtxt*>(ctx));
    t.too_many = true;
    return;
  }
  auto index = static_cast<uint32_t>(t.nodes.size());
  XmlNode& n = t.nodes.emplace_back();
  n.tree = &t;
  n.name = View(localname);
  n.ns = View(uri);
  n.text_begin = n.text_end = static_cast<uint32_t>(t.text.size());
  // Five pointers an attribute: local name, prefix, URI, value, end of the value.
  for (int i = 0; i < nb_attributes; ++i) {
    const xmlChar** a = attributes + 5 * i;
    if (View(a[0]) == "encoding") {
      n.encoding.assign(reinterpret_cast<const char*>(a[3]), static_cast<size_t>(a[4] - a[3]));
      break;
    }
  }
  XmlNode& parent = t.nodes[t.open.back()];
  if (parent.last_child)
    t.nodes[parent.last_child].next = index;
  else
    parent.first_child = index;
  parent.last_child = index;
  t.open.push_back(index);
}

void OnEnd(void* ctx, const xmlChar*, const xmlChar*, const xmlChar*) {
  XmlTree& t = TreeOf(ctx);
  if (t.too_many) return;
  t.nodes[t.open.back()].text_end = static_cast<uint32_t>(t.text.size());
  t.open.pop_back();
}

void OnCharacters(void* ctx, const xmlChar* ch, int len) {
  TreeOf(ctx).text.append(reinterpret_cast<const char*>(ch), static_cast<size_t>(len));
}

void OnDoctype(void* ctx, const xmlChar*, const xmlChar*, const xmlChar*) {
  TreeOf(ctx).dtd = true;
  xmlStopParser(static_cast<xmlParserCtxt*>(ctx));
}

std::string_view Name(const XmlNode* n) { return n->name; }

bool InNs(const XmlNode* n, const char* ns) { return n->ns == ns; }

const XmlNode* FirstElement(const XmlNode* parent) {
  return parent->tree->At(parent->first_child);
}
const XmlNode* NextElement(const XmlNode* n) { return n->tree->At(n->next); }

// An element's text; with encoding="base64", decoded. `where()` names the element for an
// error (made only then: this runs for every element of every message a link carries).
template <typename Where>
Result<std::string> TextOf(const XmlNode* n, const Where& where) {
  std::string text(std::string_view(n->tree->text).substr(n->text_begin,
                                                           n->text_end - n->text_begin));
  const std::string& encoding = n->encoding;
  if (encoding.empty()) return text;
  if (encoding != "base64")
    return Bad(fmt::format("{}: unknown encoding '{}' (base64 or none)", where(), encoding));
  auto d = Base64Decode(Trim(text));
  if (!d) return Bad(fmt::format("{}: invalid base64", where()));
  return *d;
}

// An element's text as a view: into the tree's text, or (encoding="base64") into `scratch`.
template <typename Where>
Result<std::string_view> TextView(const XmlNode* n, const Where& where, std::string& scratch) {
  if (n->encoding.empty())
    return std::string_view(n->tree->text).substr(n->text_begin, n->text_end - n->text_begin);
  auto t = TextOf(n, where);
  if (!t.ok()) return t.status();
  scratch = std::move(*t);
  return std::string_view(scratch);
}

// The children of one element by local name, each at most once. They are looked up in the
// tree's list of them, which no allocation is made for (a dozen elements at most, as a rule).
class Children {
 public:
  Status Load(const XmlNode* parent, std::string where) {
    where_ = std::move(where);
    parent_ = parent;
    for (const XmlNode* c = FirstElement(parent); c; c = NextElement(c)) {
      for (const XmlNode* seen = FirstElement(parent); seen != c; seen = NextElement(seen)) {
        if (Name(seen) == Name(c))
          return Bad(fmt::format("{}/<{}>: appears twice", where_, Name(c)));
      }
    }
    return {};
  }
  const XmlNode* Get(std::string_view name) const {
    for (const XmlNode* c = FirstElement(parent_); c; c = NextElement(c))
      if (Name(c) == name) return c;
    return nullptr;
  }
  // Optional text as a view (valid until the next call): nullopt when the element is absent.
  Result<std::optional<std::string_view>> View(std::string_view name) const {
    const XmlNode* n = Get(name);
    if (!n) return std::optional<std::string_view>();
    auto t = TextView(n, [&] { return Where(name); }, scratch_);
    if (!t.ok()) return t.status();
    return std::optional<std::string_view>(*t);
  }
  std::string Where(std::string_view name) const { return fmt::format("{}/<{}>", where_, name); }
  Result<const XmlNode*> Need(std::string_view name) const {
    const XmlNode* n = Get(name);
    if (!n) return Bad(fmt::format("{}: missing", Where(name)));
    return n;
  }
  // Optional text: nullopt when the element is absent.
  Result<std::optional<std::string>> Text(std::string_view name) const {
    const XmlNode* n = Get(name);
    if (!n) return std::optional<std::string>();
    auto t = TextOf(n, [&] { return Where(name); });
    if (!t.ok()) return t.status();
    return std::optional<std::string>(std::move(*t));
  }
  template <typename T>
  Status Number(std::string_view name, T& out, uint64_t max, bool required) const {
    auto t = View(name);
    if (!t.ok()) return t.status();
    if (!*t) return required ? Bad(fmt::format("{}: missing", Where(name))) : Status();
    auto v = ParseUnsigned<uint64_t>(**t);
    if (!v) return Bad(fmt::format("{}: '{}' is not a number", Where(name), Trim(**t)));
    if (*v > max)
      return Bad(fmt::format("{}: {} is out of range 0..{}", Where(name), *v, max));
    out = static_cast<T>(*v);
    return {};
  }
  Status Time(std::string_view name, int64_t& out, bool required, bool infinite_is_none) const {
    auto t = View(name);
    if (!t.ok()) return t.status();
    if (!*t) return required ? Bad(fmt::format("{}: missing", Where(name))) : Status();
    auto ms = ParseSrmpTime(**t);
    if (!ms.ok()) return Bad(fmt::format("{}: {}", Where(name), ms.status().text()));
    out = infinite_is_none && *ms == kInfiniteMs ? 0 : *ms;
    return {};
  }
  Status GuidValue(std::string_view name, Guid& out, bool required) const {
    auto t = View(name);
    if (!t.ok()) return t.status();
    if (!*t) return required ? Bad(fmt::format("{}: missing", Where(name))) : Status();
    auto g = ParseGuid(Trim(**t));
    if (!g) return Bad(fmt::format("{}: '{}' is not a GUID", Where(name), Trim(**t)));
    out = *g;
    return {};
  }
  Status String(std::string_view name, std::string& out) const {
    auto t = Text(name);
    if (!t.ok()) return t.status();
    if (*t) out = std::move(**t);
    return {};
  }

 private:
  std::string where_;
  const XmlNode* parent_ = nullptr;
  mutable std::string scratch_;  // a decoded text View returns
};

// An SRMP address as an MSMQ format name ([MC-MQSRM] 3.1.5.1.1): an http(s) URL is a direct
// format name, "MSMQ:NAME" is NAME, anything else (an mq queue name) stays.
std::string FormatNameOf(std::string_view url) {
  url = Trim(url);
  if (IStartsWith(url, "http://") || IStartsWith(url, "https://"))
    return "DIRECT=" + std::string(url);
  if (IStartsWith(url, "MSMQ:")) return std::string(url.substr(5));
  return std::string(url);
}

// <Correlation>: MSMQ's 20 bytes in base64, or 40 hex digits (seed 002's example), both in
// MSMQ's OBJECTID layout; or an mq message id in its text form.
Result<std::string> CorrelationOf(std::string_view text, std::string_view where) {
  text = Trim(text);
  if (text.size() == 2 * kIdSize) {
    if (auto raw = HexDecode(text)) return SwapObjectId(*raw);
  }
  if (auto raw = Base64Decode(text); raw && raw->size() == kIdSize) return SwapObjectId(*raw);
  if (auto id = ParseMessageId(text)) return *id;
  return Bad(fmt::format("{}: '{}' is neither 20 bytes in base64 nor 40 hex digits", where,
                         text));
}

Status ParsePath(const XmlNode* path, Message& m, std::string& id_text, std::string& to,
                 std::string& via) {
  Children c;
  MQ_RETURN_IF_ERROR(c.Load(path, "<path>"));
  auto action = c.Need("action");
  if (!action.ok()) return action.status();
  auto label = TextOf(*action, [&] { return c.Where("action"); });
  if (!label.ok()) return label.status();
  // [MC-MQSRM] 3.1.5.1.1: a label is what follows "MSMQ:"; anything else is no label.
  if (label->substr(0, 5) == "MSMQ:") m.label = label->substr(5);
  auto to_node = c.Need("to");
  if (!to_node.ok()) return to_node.status();
  auto to_text = TextOf(*to_node, [&] { return c.Where("to"); });
  if (!to_text.ok()) return to_text.status();
  to = *to_text;
  auto id_node = c.Need("id");
  if (!id_node.ok()) return id_node.status();
  auto id = TextOf(*id_node, [&] { return c.Where("id"); });
  if (!id.ok()) return id.status();
  id_text = std::string(Trim(*id));
  if (const XmlNode* rev = c.Get("rev")) {
    Children r;
    MQ_RETURN_IF_ERROR(r.Load(rev, c.Where("rev")));
    auto v = r.Text("via");
    if (!v.ok()) return v.status();
    if (*v) via = **v;
  }
  return {};
}

Status ParseId(std::string_view text, Message& m) {
  if (text.empty()) return {};
  m.id = SrmpIdOfText(text);
  if (!m.id.empty()) return {};
  constexpr std::string_view kWhere = "<path>/<id>";
  size_t at = text.find('@');
  auto index =
      at == std::string_view::npos ? std::nullopt : ParseUnsigned<uint64_t>(text.substr(5, at - 5));
  if (IStartsWith(text, "uuid:") && index && *index > UINT32_MAX && ParseGuid(text.substr(at + 1)))
    return Bad(fmt::format("{}: index {} does not fit a message id's 32-bit counter", kWhere,
                           *index));
  return Bad(fmt::format("{}: '{}' is not uuid:INDEX@GUID", kWhere, text));
}

Status ParseServices(const XmlNode* services, Message& m, std::string& send_to) {
  Children c;
  MQ_RETURN_IF_ERROR(c.Load(services, "<services>"));
  m.express = !c.Get("durable");
  for (const char* name : {"deliveryReceiptRequest", "commitmentReceiptRequest"}) {
    const XmlNode* req = c.Get(name);
    if (!req) continue;
    Children r;
    MQ_RETURN_IF_ERROR(r.Load(req, c.Where(name)));
    auto to = r.Text("sendTo");
    if (!to.ok()) return to.status();
    if (!*to) return Bad(fmt::format("{}: missing", r.Where("sendTo")));
    if (send_to.empty()) send_to = **to;
    if (std::string_view(name) == "deliveryReceiptRequest") {
      m.ack |= kAckPosArrival;
    } else {
      if (r.Get("positiveOnly")) m.ack |= kAckPosReceive;
      if (r.Get("negativeOnly")) m.ack |= kAckNegReceive;
    }
  }
  return {};
}

Status ParseStream(const XmlNode* node, Message& m, SrmpStream* stream) {
  Children c;
  MQ_RETURN_IF_ERROR(c.Load(node, "<Stream>"));
  auto id = c.Text("streamId");
  if (!id.ok()) return id.status();
  if (!*id) return Bad(fmt::format("{}: missing", c.Where("streamId")));
  std::string_view sid = Trim(**id);
  size_t slash = sid.rfind('\\');
  std::optional<uint64_t> seq;
  if (IStartsWith(sid, "uid:") && slash != std::string_view::npos &&
      ParseGuid(sid.substr(4, slash - 4)))
    seq = ParseUnsigned<uint64_t>(sid.substr(slash + 1));
  if (!seq)
    return Bad(fmt::format("{}: '{}' is not uid:GUID\\NUMBER", c.Where("streamId"), sid));
  SrmpStream s;
  s.stream_id = std::string(sid);
  MQ_RETURN_IF_ERROR(c.Number("current", s.current, UINT64_MAX, true));
  MQ_RETURN_IF_ERROR(c.Number("previous", s.previous, UINT64_MAX, false));
  s.previous_given = c.Get("previous") != nullptr;
  s.receipt_request = c.Get("streamReceiptRequest") != nullptr;
  if (const XmlNode* start = c.Get("start")) {
    Children st;
    MQ_RETURN_IF_ERROR(st.Load(start, c.Where("start")));
    auto to = st.Text("sendReceiptsTo");
    if (!to.ok()) return to.status();
    if (*to) s.send_receipts_to = std::string(Trim(**to));
  }
  // The message's own sequence fields, where they fit (seed 004's are 32-bit); <Mq> carries
  // them exactly when the stream is a link's.
  m.tx_sequence_id = *seq;
  if (s.current <= UINT32_MAX) m.tx_sequence_number = static_cast<uint32_t>(s.current);
  if (s.previous <= UINT32_MAX)
    m.tx_previous_sequence_number = static_cast<uint32_t>(s.previous);
  if (stream) *stream = std::move(s);
  return {};
}

Status ParseMsmq(const XmlNode* node, Message& m, std::string& dest, std::string& admin,
                 std::string& response, bool& have_dest, bool& have_admin,
                 bool& have_response) {
  Children c;
  MQ_RETURN_IF_ERROR(c.Load(node, "<Msmq>"));
  MQ_RETURN_IF_ERROR(c.Number("Class", m.msg_class, 0xFFFF, true));
  MQ_RETURN_IF_ERROR(c.Number("Priority", m.priority, 7, true));
  m.journal = c.Get("Journal") != nullptr;
  m.deadletter = c.Get("DeadLetter") != nullptr;
  auto corr = c.Text("Correlation");
  if (!corr.ok()) return corr.status();
  if (*corr) {
    auto raw = CorrelationOf(**corr, c.Where("Correlation"));
    if (!raw.ok()) return raw.status();
    m.correlation_id = std::move(*raw);
  }
  MQ_RETURN_IF_ERROR(c.Number("App", m.app_specific, UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.Number("BodyType", m.body_type, UINT32_MAX, true));
  MQ_RETURN_IF_ERROR(c.Number("HashAlgorithm", m.hash_algorithm, UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.GuidValue("ConnectorId", m.connector_id, false));
  if (const XmlNode* eod = c.Get("Eod")) {
    Children e;
    MQ_RETURN_IF_ERROR(e.Load(eod, c.Where("Eod")));
    m.eod_first = e.Get("First") != nullptr;
    m.eod_last = e.Get("Last") != nullptr;
    // [MC-MQSRM] 2.2.6.11 puts <ConnectorId> here; seed 002 beside <Eod>.
    MQ_RETURN_IF_ERROR(e.GuidValue("ConnectorId", m.connector_id, false));
  }
  if (const XmlNode* prov = c.Get("Provider")) {
    Children p;
    MQ_RETURN_IF_ERROR(p.Load(prov, c.Where("Provider")));
    MQ_RETURN_IF_ERROR(p.Number("Type", m.provider_type, UINT32_MAX, true));
    if (!p.Get("Name")) return Bad(fmt::format("{}: missing", p.Where("Name")));
    MQ_RETURN_IF_ERROR(p.String("Name", m.provider_name));
  }
  MQ_RETURN_IF_ERROR(c.GuidValue("SourceQmGuid", m.source_qm_guid, true));
  for (auto [name, out, have] : {std::tuple{"DestinationMqf", &dest, &have_dest},
                                 std::tuple{"AdminMqf", &admin, &have_admin},
                                 std::tuple{"ResponseMqf", &response, &have_response}}) {
    auto t = c.Text(name);
    if (!t.ok()) return t.status();
    if (*t) {
      *out = std::string(Trim(**t));
      *have = true;
    }
  }
  MQ_RETURN_IF_ERROR(c.Time("TTrq", m.ttrq, true, true));
  return {};
}

Status ParseMqExtras(const XmlNode* node, Message& m, uint64_t& mq_body_type) {
  Children c;
  MQ_RETURN_IF_ERROR(c.Load(node, "<Mq>"));
  MQ_RETURN_IF_ERROR(c.Number("Ack", m.ack, 0x0F, false));
  MQ_RETURN_IF_ERROR(c.Time("ArrivedTime", m.arrived_time, false, false));
  MQ_RETURN_IF_ERROR(c.Time("VisibleTime", m.visible_time, false, false));
  m.awaiting_arrival = c.Get("AwaitingArrival") != nullptr;
  auto xact = c.Text("XactId");
  if (!xact.ok()) return xact.status();
  if (*xact) {
    auto raw = HexDecode(Trim(**xact));
    if (!raw || raw->size() != kIdSize)
      return Bad(fmt::format("{}: '{}' is not 40 hex digits", c.Where("XactId"), **xact));
    m.xact_id = std::move(*raw);
  }
  MQ_RETURN_IF_ERROR(c.Number("BodyType", mq_body_type, UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.Number("TxSequenceId", m.tx_sequence_id, UINT64_MAX, false));
  MQ_RETURN_IF_ERROR(c.Number("TxSequenceNumber", m.tx_sequence_number, UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.Number("TxPreviousSequenceNumber", m.tx_previous_sequence_number,
                              UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.Number("AbortCount", m.abort_count, UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.Number("MoveCount", m.move_count, UINT32_MAX, false));
  MQ_RETURN_IF_ERROR(c.Time("LastMoveTime", m.last_move_time, false, false));
  MQ_RETURN_IF_ERROR(c.GuidValue("ConversationHandle", m.conversation_handle, false));
  MQ_RETURN_IF_ERROR(c.GuidValue("ConversationGroupId", m.conversation_group_id, false));
  MQ_RETURN_IF_ERROR(
      c.Number("MessageSequenceNumber", m.message_sequence_number, UINT64_MAX, false));
  MQ_RETURN_IF_ERROR(c.String("ServiceName", m.service_name));
  MQ_RETURN_IF_ERROR(c.String("ServiceContractName", m.service_contract_name));
  MQ_RETURN_IF_ERROR(c.String("MessageTypeName", m.message_type_name));
  auto v = c.Text("Validation");
  if (!v.ok()) return v.status();
  if (*v) {
    std::string_view t = Trim(**v);
    if (t != "N" && t != "E" && t != "X")
      return Bad(fmt::format("{}: '{}' is not N, E or X", c.Where("Validation"), t));
    m.validation = t[0];
  }
  MQ_RETURN_IF_ERROR(c.Number("Status", m.status, 3, false));
  MQ_RETURN_IF_ERROR(c.Number("QueuingOrder", m.queuing_order, UINT64_MAX, false));
  MQ_RETURN_IF_ERROR(c.Time("MessageEnqueueTime", m.message_enqueue_time, false, false));
  MQ_RETURN_IF_ERROR(c.Number("DeliveryCount", m.delivery_count, UINT32_MAX, false));
  // The exact times behind SRMP's whole seconds (mq writes them when they have milliseconds).
  MQ_RETURN_IF_ERROR(c.Time("SentTime", m.sent_time, false, false));
  MQ_RETURN_IF_ERROR(c.Time("Ttbr", m.ttbr, false, false));
  MQ_RETURN_IF_ERROR(c.Time("Ttrq", m.ttrq, false, false));
  return {};
}

void InitXml() {
  static const bool once = [] {
    xmlInitParser();
    return true;
  }();
  (void)once;
}

// A receipt of the header ([MC-MQSRM] 2.2.5.4 <streamReceipt>, 2.2.6.2 <deliveryReceipt>,
// 2.2.6.3 <commitmentReceipt>), if it holds one.
Status ParseReceipt(const Children& h, SrmpReceipt& r) {
  if (const XmlNode* sr = h.Get("streamReceipt")) {
    Children c;
    MQ_RETURN_IF_ERROR(c.Load(sr, "<streamReceipt>"));
    auto id = c.Text("streamId");
    if (!id.ok()) return id.status();
    if (!*id) return Bad(fmt::format("{}: missing", c.Where("streamId")));
    r.kind = SrmpReceipt::Kind::kStream;
    r.stream_id = std::string(Trim(**id));
    return c.Number("lastOrdinal", r.last_ordinal, UINT64_MAX, true);
  }
  for (const char* name : {"deliveryReceipt", "commitmentReceipt"}) {
    const XmlNode* n = h.Get(name);
    if (!n) continue;
    Children c;
    MQ_RETURN_IF_ERROR(c.Load(n, fmt::format("<{}>", name)));
    auto id = c.Text("id");
    if (!id.ok()) return id.status();
    if (!*id) return Bad(fmt::format("{}: missing", c.Where("id")));
    r.message_id = std::string(Trim(**id));
    if (std::string_view(name) == "deliveryReceipt") {
      r.kind = SrmpReceipt::Kind::kDelivery;
    } else {
      r.kind = SrmpReceipt::Kind::kCommitment;
      auto d = c.Text("decision");
      if (!d.ok()) return d.status();
      r.positive = !*d || Trim(**d) != "negative";
    }
    return {};
  }
  return {};
}

Status ParseEnvelope(std::string_view text, Message& m, SrmpStream* stream, SrmpReceipt* receipt,
                     uint64_t& mq_body_type) {
  if (Trim(text).empty()) return Bad("<se:Envelope>: the first MIME part is empty");
  if (text.size() > INT_MAX) return Bad("<se:Envelope>: too large");
  InitXml();
  // One parser for many documents (xmlCtxtReadMemory resets it; its dictionary of names is
  // kept, so that the same element names are not looked up and copied again), made anew
  // every so many documents so that the dictionary stays small whatever names they hold.
  // It reports to SAX2 handlers that fill an XmlTree, not to libxml2's tree builder.
  thread_local std::unique_ptr<xmlParserCtxt, XmlCtxtFree> cached;
  thread_local unsigned uses = 0;
  thread_local XmlTree tree;
  if (!cached || ++uses > 1000) {
    cached.reset(xmlNewParserCtxt());
    uses = 0;
    if (cached) {
      xmlSAXHandler& sax = *cached->sax;
      sax = xmlSAXHandler{};
      sax.initialized = XML_SAX2_MAGIC;
      sax.startElementNs = OnStart;
      sax.endElementNs = OnEnd;
      sax.characters = OnCharacters;
      sax.ignorableWhitespace = OnCharacters;
      sax.cdataBlock = OnCharacters;
      sax.internalSubset = OnDoctype;
      sax.externalSubset = OnDoctype;
    }
  }
  if (!cached) return Status::InsufficientResources("cannot allocate an XML parser");
  xmlParserCtxt* ctxt = cached.get();
  tree.Reset();
  ctxt->_private = &tree;
  // No network, no entity expansion, no DTD loading. The whole envelope is one chunk of
  // libxml2's push parser, the last: it reads it as xmlCtxtReadMemory would, without asking
  // its input for more at each token of the last 250 bytes (the pull parser's input of a
  // memory buffer grows itself at each of those asks). No document is built; ctxt says
  // whether the XML was well-formed.
  if (xmlCtxtResetPush(ctxt, nullptr, 0, nullptr, nullptr) != 0 ||
      xmlCtxtUseOptions(ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING) != 0)
    return Status::InsufficientResources("cannot reset the XML parser");
  (void)xmlParseChunk(ctxt, text.data(), static_cast<int>(text.size()), 1);
  // SOAP 1.1 (section 3): a SOAP message must not contain a Document Type Declaration. The
  // parse stops at one, so no entity of one is ever read, let alone expanded.
  if (tree.dtd)
    return Bad("<se:Envelope>: a document type declaration (DTD) is not allowed in SOAP");
  if (tree.too_many)
    return Bad(fmt::format("<se:Envelope>: more than {} elements: no SRMP envelope has that "
                           "many",
                           kMaxEnvelopeElements));
  if (!ctxt->wellFormed || tree.open.size() != 1) {
    std::string why = "not well-formed";
    if (const xmlError* err = xmlCtxtGetLastError(ctxt); err && err->message) {
      why = err->message;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      if (err->line > 0) why += fmt::format(" (line {})", err->line);
    }
    return Bad(fmt::format("<se:Envelope>: not well-formed XML: {}", why));
  }
  const XmlNode* root = FirstElement(&tree.nodes[0]);
  if (!root || Name(root) != "Envelope" || !InNs(root, kSeNs))
    return Bad(fmt::format("<se:Envelope>: the root element is <{}>, not a SOAP 1.1 envelope",
                           root ? Name(root) : ""));
  const XmlNode* header = FirstElement(root);
  if (!header || Name(header) != "Header" || !InNs(header, kSeNs))
    return Bad("<se:Header>: missing (it must be the first child of <se:Envelope>)");
  const XmlNode* body = NextElement(header);
  if (!body || Name(body) != "Body" || !InNs(body, kSeNs))
    return Bad("<se:Body>: missing (it must follow <se:Header>)");

  Children h;
  MQ_RETURN_IF_ERROR(h.Load(header, "<se:Header>"));
  auto path = h.Need("path");
  if (!path.ok()) return path.status();
  std::string id_text, to, via, send_to;
  MQ_RETURN_IF_ERROR(ParsePath(*path, m, id_text, to, via));
  if (receipt) receipt->path_id = std::string(Trim(id_text));

  auto props = h.Need("properties");
  if (!props.ok()) return props.status();
  Children p;
  MQ_RETURN_IF_ERROR(p.Load(*props, "<properties>"));
  int64_t expires = 0;
  MQ_RETURN_IF_ERROR(p.Time("expiresAt", expires, true, true));
  MQ_RETURN_IF_ERROR(p.Time("sentAt", m.sent_time, false, false));

  m.express = true;  // without <durable/>
  if (const XmlNode* services = h.Get("services"))
    MQ_RETURN_IF_ERROR(ParseServices(services, m, send_to));
  const XmlNode* st = h.Get("Stream");
  if (!st) st = h.Get("stream");  // [MC-MQSRM] 2.2.5.3 spells it so; its samples <Stream>
  if (st) MQ_RETURN_IF_ERROR(ParseStream(st, m, stream));
  if (receipt) MQ_RETURN_IF_ERROR(ParseReceipt(h, *receipt));

  std::string dest, admin, response;
  bool have_dest = false, have_admin = false, have_response = false;
  const XmlNode* msmq = h.Get("Msmq");
  if (msmq) {
    MQ_RETURN_IF_ERROR(ParseMsmq(msmq, m, dest, admin, response, have_dest, have_admin,
                                 have_response));
    // Without <Msmq> the <id> is to be ignored ([MC-MQSRM] 2.2.4.3).
    MQ_RETURN_IF_ERROR(ParseId(id_text, m));
    m.ttbr = expires;
  } else {
    m.ttrq = expires;  // [MC-MQSRM] 3.1.5.1.1: without <Msmq>, the time to reach the queue
  }
  m.destination_queue = have_dest ? dest : FormatNameOf(to);
  m.admin_queue = have_admin ? admin : FormatNameOf(send_to);
  m.response_queue = have_response ? response : FormatNameOf(via);
  if (const XmlNode* mq = h.Get("Mq"); mq && InNs(mq, kMqNs))
    MQ_RETURN_IF_ERROR(ParseMqExtras(mq, m, mq_body_type));
  return {};
}

}  // namespace

void AckOfCommitmentReceipt(const SrmpReceipt& receipt, Message& m) {
  if (receipt.positive)
    m.msg_class = kClassAckReceive;
  else if ((m.msg_class & 0xC000) != 0xC000)
    m.msg_class = kClassNackReceiveTimeout;
  m.response_queue.clear();
  m.admin_queue.clear();
  m.ack = 0;
  m.body.clear();
}

Status DecodeSrmp(std::string_view doc, Message& m, SrmpStream* stream, SrmpReceipt* receipt) {
  m = Message{};
  Framing f;
  MQ_RETURN_IF_ERROR(Frame(doc, f));
  if (!Trim(doc.substr(f.end)).empty())
    return Bad("MIME: data after the closing boundary (one document at a time)");
  if (receipt) *receipt = SrmpReceipt{};
  uint64_t mq_body_type = UINT64_MAX;  // <Mq><BodyType>: mq's own, when not the wire's
  MQ_RETURN_IF_ERROR(ParseEnvelope(f.envelope, m, stream, receipt, mq_body_type));
  m.body = std::string(f.body);
  // A string body as MSMQ writes it (VT_BSTR, VT_LPWSTR: UTF-16LE) is stored as mq's text,
  // UTF-8; one that is no valid UTF-16 is kept as it came.
  if (m.body_type == kBodyText || m.body_type == kBodyLpwstr) {
    if (auto text = Utf16LeToUtf8(f.body)) {
      m.body = std::move(*text);
      m.body_type = kBodyText;
    }
  }
  if (mq_body_type != UINT64_MAX) m.body_type = static_cast<uint32_t>(mq_body_type);
  m.extension = std::string(f.extension);
  return {};
}

}  // namespace mq
