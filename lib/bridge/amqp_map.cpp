// amqp_map.cpp: the mapping between mq messages and AMQP messages (amqp_map.hpp has the
// table). Every x-mq-* header is written only when its property differs from its default,
// and read back into the same property, so a round trip gives the message back.
#include "bridge/amqp_map.hpp"

#include <algorithm>
#include <string_view>

#include "base/codec.hpp"
#include "base/ids.hpp"

namespace mq::bridge {

namespace {

constexpr std::string_view kPrefix = "x-mq-";
constexpr size_t kShortStr = 255;

struct ContentType {
  uint32_t body_type;
  const char* mime;
};
constexpr ContentType kContentTypes[] = {
    {kBodyText, "text/plain"},
    {kBodyJson, "application/json"},
    {kBodyXml, "application/xml"},
    {kBodyBytes, "application/octet-stream"},
};

// "text/plain; charset=utf-8" -> "text/plain".
std::string_view MimeOf(std::string_view content_type) {
  auto semi = content_type.find(';');
  if (semi != std::string_view::npos) content_type = content_type.substr(0, semi);
  while (!content_type.empty() && content_type.back() == ' ') content_type.remove_suffix(1);
  return content_type;
}

std::optional<uint32_t> BodyTypeOfMime(std::string_view content_type) {
  std::string mime(MimeOf(content_type));
  std::transform(mime.begin(), mime.end(), mime.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const auto& c : kContentTypes)
    if (mime == c.mime) return c.body_type;
  if (mime.size() > 5 && mime.compare(mime.size() - 5, 5, "+json") == 0) return kBodyJson;
  if (mime.size() > 4 && mime.compare(mime.size() - 4, 4, "+xml") == 0) return kBodyXml;
  if (mime == "text/xml") return kBodyXml;
  return std::nullopt;
}

// Writes the x-mq-* headers of `m` that differ from their defaults.
class HeaderWriter {
 public:
  explicit HeaderWriter(nlohmann::ordered_json& h) : h_(h) {}
  void Int(const char* name, int64_t v) {
    if (v != 0) h_[Name(name)] = v;
  }
  void Bool(const char* name, bool v) {
    if (v) h_[Name(name)] = true;
  }
  void Str(const char* name, const std::string& v) {
    if (!v.empty()) h_[Name(name)] = v;
  }
  void Id(const char* name, const Guid& g) {
    if (!IsNil(g)) h_[Name(name)] = FormatGuid(g);
  }

 private:
  static std::string Name(const char* name) { return std::string(kPrefix) + name; }
  nlohmann::ordered_json& h_;
};

// Reads them back; records which headers it used.
class HeaderReader {
 public:
  explicit HeaderReader(const nlohmann::ordered_json& h) : h_(h) {}
  template <typename T>
  void Int(const char* name, T& out) {
    if (auto* v = Find(name); v && v->is_number_integer())
      out = static_cast<T>(v->get<int64_t>());
  }
  void Bool(const char* name, bool& out) {
    if (auto* v = Find(name); v && v->is_boolean()) out = v->get<bool>();
  }
  void Str(const char* name, std::string& out) {
    if (auto* v = Find(name); v && v->is_string()) out = v->get<std::string>();
  }
  void Id(const char* name, Guid& out) {
    if (auto* v = Find(name); v && v->is_string())
      if (auto g = ParseGuid(v->get<std::string>())) out = *g;
  }
  bool Has(const char* name) { return Find(name) != nullptr; }

 private:
  const nlohmann::ordered_json* Find(const char* name) {
    auto it = h_.find(std::string(kPrefix) + name);
    return it == h_.end() ? nullptr : &*it;
  }
  const nlohmann::ordered_json& h_;
};

size_t Utf8Chars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

bool IsBytesHeader(const std::string& name) {
  return name == "x-mq-extension" || name == "x-mq-xact-id";
}

AmqpMessage ToAmqp(const Message& m, int64_t now_ms) {
  AmqpMessage a;
  a.body = m.body;
  a.delivery_mode = 2;
  a.app_id = "mq";
  if (m.id.size() == kIdSize) a.message_id = FormatMessageId(m.id);
  a.priority = m.priority;
  if (m.correlation_id.size() == kIdSize) a.correlation_id = FormatMessageId(m.correlation_id);
  if (!m.response_queue.empty()) a.reply_to = m.response_queue;
  for (const auto& c : kContentTypes)
    if (m.body_type == c.body_type) a.content_type = c.mime;
  if (m.sent_time > 0) a.timestamp = static_cast<uint64_t>(m.sent_time / 1000);
  if (m.ttbr) a.expiration = std::to_string(std::max<int64_t>(m.ttbr - now_ms, 1));
  HeaderWriter w(a.headers);
  if (!m.label.empty() && m.label.size() <= kShortStr)
    a.type = m.label;
  else
    w.Str("label", m.label);
  w.Int("ttbr", m.ttbr);
  w.Int("body-type", m.body_type);
  w.Int("sent-time", m.sent_time);
  w.Int("class", m.msg_class);
  w.Int("app-specific", m.app_specific);
  w.Bool("journal", m.journal);
  w.Bool("deadletter", m.deadletter);
  w.Int("ack", m.ack);
  w.Str("admin-queue", m.admin_queue);
  w.Str("destination-queue", m.destination_queue);
  w.Int("arrived-time", m.arrived_time);
  w.Int("ttrq", m.ttrq);
  w.Id("source-qm-guid", m.source_qm_guid);
  w.Int("hash-algorithm", m.hash_algorithm);
  w.Int("provider-type", m.provider_type);
  w.Str("provider-name", m.provider_name);
  w.Id("connector-id", m.connector_id);
  w.Bool("eod-first", m.eod_first);
  w.Bool("eod-last", m.eod_last);
  w.Str("xact-id", m.xact_id);
  w.Int("tx-sequence-id", static_cast<int64_t>(m.tx_sequence_id));
  w.Int("tx-sequence-number", m.tx_sequence_number);
  w.Int("tx-previous-sequence-number", m.tx_previous_sequence_number);
  w.Bool("express", m.express);
  w.Str("extension", m.extension);
  w.Int("abort-count", m.abort_count);
  w.Int("move-count", m.move_count);
  w.Int("last-move-time", m.last_move_time);
  w.Id("conversation", m.conversation_handle);
  w.Id("group", m.conversation_group_id);
  w.Int("sequence", static_cast<int64_t>(m.message_sequence_number));
  w.Str("service", m.service_name);
  w.Str("contract", m.service_contract_name);
  w.Str("message-type", m.message_type_name);
  if (m.validation != 'N') w.Str("validation", std::string(1, m.validation));
  if (m.status != 1) a.headers["x-mq-status"] = m.status;
  w.Int("queuing-order", static_cast<int64_t>(m.queuing_order));
  w.Int("enqueue-time", m.message_enqueue_time);
  w.Int("delivery-count", m.delivery_count);
  return a;
}

Message FromAmqp(const AmqpMessage& a, int64_t now_ms) {
  Message m;
  nlohmann::ordered_json unmapped = nlohmann::ordered_json::object();
  m.body = a.body;
  if (a.message_id) {
    if (auto id = ParseMessageId(*a.message_id))
      m.id = *id;
    else
      unmapped["message_id"] = *a.message_id;
  }
  if (a.priority) m.priority = std::min<uint8_t>(*a.priority, 7);
  if (a.priority && *a.priority > 7) unmapped["priority"] = *a.priority;
  if (a.correlation_id) {
    auto c = ParseCorrelationId(*a.correlation_id);
    if (c.ok())
      m.correlation_id = *c;
    else
      unmapped["correlation_id"] = *a.correlation_id;
  }
  if (a.reply_to) m.response_queue = *a.reply_to;
  if (a.timestamp) m.sent_time = static_cast<int64_t>(*a.timestamp) * 1000;
  if (a.expiration) {
    char* end = nullptr;
    long long ttl = std::strtoll(a.expiration->c_str(), &end, 10);
    if (end && *end == '\0' && ttl >= 0)
      m.ttbr = now_ms + std::max<long long>(ttl, 1);
    else
      unmapped["expiration"] = *a.expiration;
  }
  HeaderReader r(a.headers);
  if (r.Has("body-type")) {
    r.Int("body-type", m.body_type);
  } else if (a.content_type) {
    if (auto bt = BodyTypeOfMime(*a.content_type))
      m.body_type = *bt;
    else
      unmapped["content_type"] = *a.content_type;
  }
  if (a.content_type && r.Has("body-type") && !BodyTypeOfMime(*a.content_type))
    unmapped["content_type"] = *a.content_type;
  if (r.Has("label")) {
    r.Str("label", m.label);
    if (a.type) unmapped["type"] = *a.type;
  } else if (a.type) {
    // A label has at most 250 characters; a longer type is carried instead.
    if (Utf8Chars(*a.type) <= kMaxLabel && IsValidUtf8(*a.type))
      m.label = *a.type;
    else
      unmapped["type"] = *a.type;
  }
  r.Int("ttbr", m.ttbr);
  r.Int("sent-time", m.sent_time);
  r.Int("class", m.msg_class);
  r.Int("app-specific", m.app_specific);
  r.Bool("journal", m.journal);
  r.Bool("deadletter", m.deadletter);
  r.Int("ack", m.ack);
  r.Str("admin-queue", m.admin_queue);
  r.Str("destination-queue", m.destination_queue);
  r.Int("arrived-time", m.arrived_time);
  r.Int("ttrq", m.ttrq);
  r.Id("source-qm-guid", m.source_qm_guid);
  r.Int("hash-algorithm", m.hash_algorithm);
  r.Int("provider-type", m.provider_type);
  r.Str("provider-name", m.provider_name);
  r.Id("connector-id", m.connector_id);
  r.Bool("eod-first", m.eod_first);
  r.Bool("eod-last", m.eod_last);
  r.Str("xact-id", m.xact_id);
  r.Int("tx-sequence-id", m.tx_sequence_id);
  r.Int("tx-sequence-number", m.tx_sequence_number);
  r.Int("tx-previous-sequence-number", m.tx_previous_sequence_number);
  r.Bool("express", m.express);
  r.Str("extension", m.extension);
  r.Int("abort-count", m.abort_count);
  r.Int("move-count", m.move_count);
  r.Int("last-move-time", m.last_move_time);
  r.Id("conversation", m.conversation_handle);
  r.Id("group", m.conversation_group_id);
  r.Int("sequence", m.message_sequence_number);
  r.Str("service", m.service_name);
  r.Str("contract", m.service_contract_name);
  r.Str("message-type", m.message_type_name);
  std::string validation;
  r.Str("validation", validation);
  if (validation.size() == 1) m.validation = validation[0];
  r.Int("status", m.status);
  r.Int("queuing-order", m.queuing_order);
  r.Int("enqueue-time", m.message_enqueue_time);
  r.Int("delivery-count", m.delivery_count);

  // Everything else is carried in the extension.
  nlohmann::ordered_json other = nlohmann::ordered_json::object();
  for (auto it = a.headers.begin(); it != a.headers.end(); ++it)
    if (it.key().rfind(kPrefix, 0) != 0) other[it.key()] = it.value();
  if (!other.empty()) unmapped["headers"] = std::move(other);
  if (a.content_encoding) unmapped["content_encoding"] = *a.content_encoding;
  if (a.user_id) unmapped["user_id"] = *a.user_id;
  if (a.app_id && *a.app_id != "mq") unmapped["app_id"] = *a.app_id;
  if (a.cluster_id) unmapped["cluster_id"] = *a.cluster_id;
  if (a.delivery_mode == 1 && !r.Has("express")) m.express = true;  // transient: express
  if (!unmapped.empty()) {
    nlohmann::ordered_json ext;
    ext["amqp"] = std::move(unmapped);
    if (!m.extension.empty()) ext["extension_hex"] = HexEncode(m.extension);
    m.extension = ext.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  return m;
}

}  // namespace mq::bridge
