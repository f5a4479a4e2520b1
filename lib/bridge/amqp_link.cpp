// amqp_link.cpp: rabbitmq-c behind Link (amqp_link.hpp). Channel 1 carries the publishes or
// the consumer; channel 2 is opened for passive declares (ReadyCount, CheckExchange), so that
// their replies never interleave with deliveries or confirms on channel 1.
#include "bridge/amqp_link.hpp"

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <dlfcn.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/units.hpp"
#include "store/waiter.hpp"

namespace mq::bridge {

namespace {

// rabbitmq-c is loaded when a bridge starts (LoadRabbitmq), not linked: with its OpenSSL it
// costs mq-admin start-up time that every other subcommand would pay. The headers come from
// librabbitmq-dev; the ABI is librabbitmq.so.4's. Every function used is in this list.
#define MQ_RABBITMQ_FUNCTIONS(X)         \
  X(amqp_basic_ack)                      \
  X(amqp_basic_consume)                  \
  X(amqp_basic_nack)                     \
  X(amqp_basic_publish)                  \
  X(amqp_basic_qos)                      \
  X(amqp_channel_close)                  \
  X(amqp_channel_open)                   \
  X(amqp_confirm_select)                 \
  X(amqp_connection_close)               \
  X(amqp_consume_message)                \
  X(amqp_decode_properties)              \
  X(amqp_default_connection_info)        \
  X(amqp_destroy_connection)             \
  X(amqp_destroy_envelope)               \
  X(amqp_destroy_message)                \
  X(amqp_encode_properties)              \
  X(amqp_error_string2)                  \
  X(amqp_exchange_declare)               \
  X(amqp_get_rpc_reply)                  \
  X(amqp_login)                          \
  X(amqp_maybe_release_buffers)          \
  X(amqp_new_connection)                 \
  X(amqp_parse_url)                      \
  X(amqp_queue_bind)                     \
  X(amqp_queue_declare)                  \
  X(amqp_read_message)                   \
  X(amqp_send_method)                    \
  X(amqp_set_rpc_timeout)                \
  X(amqp_simple_wait_frame_noblock)      \
  X(amqp_socket_open_noblock)            \
  X(amqp_ssl_socket_new)                 \
  X(amqp_ssl_socket_set_cacert)          \
  X(amqp_ssl_socket_set_key)             \
  X(amqp_ssl_socket_set_verify_hostname) \
  X(amqp_ssl_socket_set_verify_peer)     \
  X(amqp_tcp_socket_new)                 \
  X(empty_amqp_pool)                     \
  X(init_amqp_pool)

struct RabbitmqApi {
#define MQ_RABBITMQ_MEMBER(f) decltype(&::f) f = nullptr;
  MQ_RABBITMQ_FUNCTIONS(MQ_RABBITMQ_MEMBER)
#undef MQ_RABBITMQ_MEMBER
  Status status;  // why it could not be loaded
};

const RabbitmqApi& LoadedApi() {
  static const RabbitmqApi api = [] {
    RabbitmqApi a;
    void* lib = ::dlopen(kRabbitmqLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = ::dlerror();
      a.status = Status::Error(fmt::format("cannot load the RabbitMQ client library (install "
                                           "librabbitmq4): {}",
                                           e ? e : "dlopen failed"));
      return a;
    }
    const char* missing = nullptr;
#define MQ_RABBITMQ_BIND(f)                                \
  a.f = reinterpret_cast<decltype(a.f)>(::dlsym(lib, #f)); \
  if (!a.f && !missing) missing = #f;
    MQ_RABBITMQ_FUNCTIONS(MQ_RABBITMQ_BIND)
#undef MQ_RABBITMQ_BIND
    if (missing)
      a.status = Status::Error(
          fmt::format("{} lacks {}, which mq-admin bridge needs", kRabbitmqLibrary, missing));
    return a;
  }();
  return api;
}

// The loaded library: LoadRabbitmq() succeeded before any Link or endpoint is made.
const RabbitmqApi& Rmq() { return LoadedApi(); }

// What amqp.h offers as variables and an inline-able helper, made here.
const amqp_table_t kEmptyTable{0, nullptr};
const amqp_bytes_t kEmptyBytes{0, nullptr};
amqp_bytes_t CBytes(const char* s) { return amqp_bytes_t{std::strlen(s), const_cast<char*>(s)}; }

}  // namespace

Status LoadRabbitmq() { return LoadedApi().status; }

namespace {

constexpr amqp_channel_t kChannel = 1;
constexpr amqp_channel_t kSideChannel = 2;
constexpr int kHeartbeatS = 30;

amqp_bytes_t Bytes(const std::string& s) {
  return amqp_bytes_t{s.size(), const_cast<char*>(s.data())};
}
std::string Str(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

timeval Tv(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

// A broker's close (connection or channel) as a Status.
Status FromReplyCode(int code, const std::string& text, const std::string& subject) {
  std::string what = fmt::format("broker: {} {}", code, text);
  switch (code) {
    case 403:  // ACCESS_REFUSED
    case 530:  // NOT_ALLOWED (a vhost the user may not use)
      return Status::AccessDenied(what, subject);
    case 404:  // NOT_FOUND
      return Status::QueueNotFound(what, subject);
    case 320:  // CONNECTION_FORCED: the broker is stopping
    case 541:  // INTERNAL_ERROR
      return Status::BrokerUnavailable(what, subject);
    default: return Status::BrokerRefused(what, subject);
  }
}

// Converts an AMQP field value to JSON (amqp_map.hpp's header representation).
nlohmann::ordered_json FieldToJson(const amqp_field_value_t& v);

nlohmann::ordered_json TableToJson(const amqp_table_t& t) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (int i = 0; i < t.num_entries; ++i)
    j[Str(t.entries[i].key)] = FieldToJson(t.entries[i].value);
  return j;
}

nlohmann::ordered_json FieldToJson(const amqp_field_value_t& v) {
  switch (v.kind) {
    case AMQP_FIELD_KIND_BOOLEAN: return v.value.boolean != 0;
    case AMQP_FIELD_KIND_I8: return v.value.i8;
    case AMQP_FIELD_KIND_U8: return v.value.u8;
    case AMQP_FIELD_KIND_I16: return v.value.i16;
    case AMQP_FIELD_KIND_U16: return v.value.u16;
    case AMQP_FIELD_KIND_I32: return v.value.i32;
    case AMQP_FIELD_KIND_U32: return v.value.u32;
    case AMQP_FIELD_KIND_I64: return v.value.i64;
    case AMQP_FIELD_KIND_U64: return v.value.u64;
    case AMQP_FIELD_KIND_TIMESTAMP: return v.value.u64;
    case AMQP_FIELD_KIND_F32: return v.value.f32;
    case AMQP_FIELD_KIND_F64: return v.value.f64;
    case AMQP_FIELD_KIND_DECIMAL:
      return nlohmann::ordered_json{{"decimals", v.value.decimal.decimals},
                                    {"value", v.value.decimal.value}};
    case AMQP_FIELD_KIND_UTF8: return Str(v.value.bytes);
    case AMQP_FIELD_KIND_BYTES: return Str(v.value.bytes);
    case AMQP_FIELD_KIND_TABLE: return TableToJson(v.value.table);
    case AMQP_FIELD_KIND_ARRAY: {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (int i = 0; i < v.value.array.num_entries; ++i)
        a.push_back(FieldToJson(v.value.array.entries[i]));
      return a;
    }
    default: return nullptr;  // VOID
  }
}

// Builds rabbitmq-c properties that point into `m` and into storage owned here.
class OutProps {
 public:
  explicit OutProps(const AmqpMessage& m) {
    std::memset(&p_, 0, sizeof p_);
    auto set = [&](const std::optional<std::string>& v, amqp_bytes_t& field, amqp_flags_t flag) {
      if (!v) return;
      field = Bytes(*v);
      p_._flags |= flag;
    };
    set(m.content_type, p_.content_type, AMQP_BASIC_CONTENT_TYPE_FLAG);
    set(m.content_encoding, p_.content_encoding, AMQP_BASIC_CONTENT_ENCODING_FLAG);
    set(m.message_id, p_.message_id, AMQP_BASIC_MESSAGE_ID_FLAG);
    set(m.correlation_id, p_.correlation_id, AMQP_BASIC_CORRELATION_ID_FLAG);
    set(m.reply_to, p_.reply_to, AMQP_BASIC_REPLY_TO_FLAG);
    set(m.expiration, p_.expiration, AMQP_BASIC_EXPIRATION_FLAG);
    set(m.type, p_.type, AMQP_BASIC_TYPE_FLAG);
    set(m.user_id, p_.user_id, AMQP_BASIC_USER_ID_FLAG);
    set(m.app_id, p_.app_id, AMQP_BASIC_APP_ID_FLAG);
    set(m.cluster_id, p_.cluster_id, AMQP_BASIC_CLUSTER_ID_FLAG);
    if (m.priority) {
      p_.priority = *m.priority;
      p_._flags |= AMQP_BASIC_PRIORITY_FLAG;
    }
    if (m.timestamp) {
      p_.timestamp = *m.timestamp;
      p_._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
    }
    if (m.delivery_mode) {
      p_.delivery_mode = m.delivery_mode;
      p_._flags |= AMQP_BASIC_DELIVERY_MODE_FLAG;
    }
    if (!m.headers.empty()) {
      // The mapping writes flat headers of strings, integers and booleans only.
      keys_.reserve(m.headers.size());
      values_.reserve(m.headers.size());
      for (auto it = m.headers.begin(); it != m.headers.end(); ++it) {
        keys_.push_back(it.key());
        amqp_table_entry_t e;
        std::memset(&e, 0, sizeof e);
        e.key = Bytes(keys_.back());
        const auto& v = it.value();
        if (v.is_boolean()) {
          e.value.kind = AMQP_FIELD_KIND_BOOLEAN;
          e.value.value.boolean = v.get<bool>();
        } else if (v.is_number_integer()) {
          e.value.kind = AMQP_FIELD_KIND_I64;
          e.value.value.i64 = v.get<int64_t>();
        } else {
          values_.push_back(v.is_string() ? v.get<std::string>() : v.dump());
          e.value.kind = IsBytesHeader(it.key()) ? AMQP_FIELD_KIND_BYTES : AMQP_FIELD_KIND_UTF8;
          e.value.value.bytes = Bytes(values_.back());
        }
        entries_.push_back(e);
      }
      p_.headers.num_entries = static_cast<int>(entries_.size());
      p_.headers.entries = entries_.data();
      p_._flags |= AMQP_BASIC_HEADERS_FLAG;
    }
  }
  const amqp_basic_properties_t* get() const { return &p_; }

 private:
  amqp_basic_properties_t p_;
  std::vector<std::string> keys_, values_;  // reserved up front: pointers into them stay valid
  std::vector<amqp_table_entry_t> entries_;
};

AmqpMessage FromProps(const amqp_basic_properties_t& p, amqp_bytes_t body) {
  AmqpMessage m;
  m.body = Str(body);
  auto get = [&](amqp_flags_t flag, amqp_bytes_t field, std::optional<std::string>& out) {
    if (p._flags & flag) out = Str(field);
  };
  get(AMQP_BASIC_CONTENT_TYPE_FLAG, p.content_type, m.content_type);
  get(AMQP_BASIC_CONTENT_ENCODING_FLAG, p.content_encoding, m.content_encoding);
  get(AMQP_BASIC_MESSAGE_ID_FLAG, p.message_id, m.message_id);
  get(AMQP_BASIC_CORRELATION_ID_FLAG, p.correlation_id, m.correlation_id);
  get(AMQP_BASIC_REPLY_TO_FLAG, p.reply_to, m.reply_to);
  get(AMQP_BASIC_EXPIRATION_FLAG, p.expiration, m.expiration);
  get(AMQP_BASIC_TYPE_FLAG, p.type, m.type);
  get(AMQP_BASIC_USER_ID_FLAG, p.user_id, m.user_id);
  get(AMQP_BASIC_APP_ID_FLAG, p.app_id, m.app_id);
  get(AMQP_BASIC_CLUSTER_ID_FLAG, p.cluster_id, m.cluster_id);
  if (p._flags & AMQP_BASIC_PRIORITY_FLAG) m.priority = p.priority;
  if (p._flags & AMQP_BASIC_TIMESTAMP_FLAG) m.timestamp = p.timestamp;
  if (p._flags & AMQP_BASIC_DELIVERY_MODE_FLAG) m.delivery_mode = p.delivery_mode;
  if (p._flags & AMQP_BASIC_HEADERS_FLAG) {
    for (int i = 0; i < p.headers.num_entries; ++i) {
      const auto& e = p.headers.entries[i];
      std::string key = Str(e.key);
      // A byte array from another producer: hex, so that the JSON it may end up in stays text.
      if (e.value.kind == AMQP_FIELD_KIND_BYTES && !IsBytesHeader(key))
        m.headers[key] = nlohmann::ordered_json{{"bytes_hex", HexEncode(Str(e.value.value.bytes))}};
      else
        m.headers[key] = FieldToJson(e.value);
    }
  }
  return m;
}

}  // namespace

// A nack or a return, and the delivery tags it may concern.
struct Refusal {
  uint64_t first = 0, last = 0;
  Status status;
};

struct Link::State {
  amqp_connection_state_t conn = nullptr;
  bool side_open = false;
  uint64_t published = 0;  // delivery tags given
  uint64_t confirmed = 0;  // every tag up to this one is confirmed (ack or nack)
  std::vector<uint64_t> confirmed_above;  // tags confirmed singly above `confirmed`
  std::vector<Refusal> refused;           // nacks and returns, with the tags they may touch
  Status broken;           // the connection or channel is gone
};

Result<Endpoint> ParseEndpoint(const std::string& url, const std::string& credentials_file) {
  MQ_RETURN_IF_ERROR(LoadRabbitmq());
  std::vector<char> buf(url.begin(), url.end());
  buf.push_back('\0');
  amqp_connection_info info;
  Rmq().amqp_default_connection_info(&info);
  if (url.empty() || Rmq().amqp_parse_url(buf.data(), &info) != AMQP_STATUS_OK)
    return Status::InvalidArg(
        "not an AMQP URL (amqp://[USER[:PASSWORD]@]HOST[:PORT][/VHOST], or amqps://)", "--amqp");
  Endpoint ep;
  ep.host = info.host;
  ep.port = info.port;
  ep.vhost = info.vhost;
  ep.user = info.user;
  ep.password = info.password;
  ep.tls = info.ssl != 0;
  ep.url_shown = fmt::format("{}://{}@{}:{}/{}", ep.tls ? "amqps" : "amqp", ep.user, ep.host,
                             ep.port, ep.vhost == "/" ? "%2F" : ep.vhost);
  if (!credentials_file.empty()) {
    std::ifstream in(credentials_file);
    if (!in)
      return Status::InvalidArg(fmt::format("cannot read: {}", std::strerror(errno)),
                                credentials_file);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0)
      return Status::InvalidArg("the first line must be USER:PASSWORD", credentials_file);
    ep.user = line.substr(0, colon);
    ep.password = line.substr(colon + 1);
    ep.url_shown = fmt::format("{}://{}@{}:{}/{}", ep.tls ? "amqps" : "amqp", ep.user, ep.host,
                               ep.port, ep.vhost == "/" ? "%2F" : ep.vhost);
  }
  return ep;
}

AmqpMessage ThroughWire(const AmqpMessage& m) {
  if (!LoadRabbitmq().ok()) return {};
  OutProps props(m);
  std::string buf(1 << 20, '\0');
  amqp_bytes_t encoded{buf.size(), buf.data()};
  int n = Rmq().amqp_encode_properties(AMQP_BASIC_CLASS,
                                       const_cast<amqp_basic_properties_t*>(props.get()), encoded);
  if (n < 0) return {};
  encoded.len = static_cast<size_t>(n);
  amqp_pool_t pool;
  Rmq().init_amqp_pool(&pool, 4096);
  void* decoded = nullptr;
  AmqpMessage out;
  if (Rmq().amqp_decode_properties(AMQP_BASIC_CLASS, &pool, encoded, &decoded) >= 0)
    out = FromProps(*static_cast<amqp_basic_properties_t*>(decoded), Bytes(m.body));
  Rmq().empty_amqp_pool(&pool);
  return out;
}

Link::Link(Endpoint ep) : ep_(std::move(ep)), st_(std::make_unique<State>()) {}

Link::~Link() {
  if (st_ && st_->conn) {
    if (st_->broken.ok()) {
      Rmq().amqp_channel_close(st_->conn, kChannel, AMQP_REPLY_SUCCESS);
      Rmq().amqp_connection_close(st_->conn, AMQP_REPLY_SUCCESS);
    }
    Rmq().amqp_destroy_connection(st_->conn);
  }
}

namespace {

// The Status of a failed rpc; marks the link broken when the connection or channel is gone.
Status RpcStatus(amqp_connection_state_t conn, const amqp_rpc_reply_t& r, const std::string& doing,
                 const std::string& subject, Status* broken) {
  Status s;
  switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return {};
    case AMQP_RESPONSE_NONE:
      s = Status::BrokerUnavailable(doing + ": no reply from the broker", subject);
      break;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      s = Status::BrokerUnavailable(fmt::format("{}: {}", doing,
                                                Rmq().amqp_error_string2(r.library_error)),
                                    subject);
      break;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        auto* c = static_cast<amqp_connection_close_t*>(r.reply.decoded);
        amqp_connection_close_ok_t ok{};
        Rmq().amqp_send_method(conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
        s = FromReplyCode(c->reply_code, Str(c->reply_text), subject);
      } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        auto* c = static_cast<amqp_channel_close_t*>(r.reply.decoded);
        s = FromReplyCode(c->reply_code, Str(c->reply_text), subject);
      } else {
        s = Status::BrokerUnavailable(doing + ": unexpected reply from the broker", subject);
      }
      s = Status(s.code(), fmt::format("{}: {}", doing, s.text()), subject);
      break;
  }
  if (broken && broken->ok()) *broken = s;
  return s;
}

}  // namespace

Result<std::unique_ptr<Link>> Link::Connect(const Endpoint& ep, int timeout_ms) {
  MQ_RETURN_IF_ERROR(LoadRabbitmq());
  std::unique_ptr<Link> link(new Link(ep));
  State& st = *link->st_;
  const std::string& subject = ep.url_shown;
  st.conn = Rmq().amqp_new_connection();
  if (!st.conn) return Status::InsufficientResources("out of memory", subject);
  amqp_socket_t* sock = nullptr;
  if (ep.tls) {
    sock = Rmq().amqp_ssl_socket_new(st.conn);
    if (!sock) return Status::BrokerUnavailable("cannot make a TLS socket", subject);
    Rmq().amqp_ssl_socket_set_verify_peer(sock, 1);
    Rmq().amqp_ssl_socket_set_verify_hostname(sock, 1);
    if (!ep.cacert.empty() &&
        Rmq().amqp_ssl_socket_set_cacert(sock, ep.cacert.c_str()) != AMQP_STATUS_OK)
      return Status::InvalidArg("cannot load the CA certificates", ep.cacert);
    if (!ep.cert.empty() &&
        Rmq().amqp_ssl_socket_set_key(sock, ep.cert.c_str(), ep.key.c_str()) != AMQP_STATUS_OK)
      return Status::InvalidArg("cannot load the client certificate and key", ep.cert);
  } else {
    sock = Rmq().amqp_tcp_socket_new(st.conn);
    if (!sock) return Status::BrokerUnavailable("cannot make a socket", subject);
  }
  timeval tv = Tv(timeout_ms);
  int rc = Rmq().amqp_socket_open_noblock(sock, ep.host.c_str(), ep.port, &tv);
  if (rc != AMQP_STATUS_OK) {
    switch (rc) {
      // The broker could not be verified: no reconnection cures it.
      case AMQP_STATUS_SSL_PEER_VERIFY_FAILED:
        st.broken =
            Status::AccessDenied("TLS: the broker's certificate is not signed by a trusted CA "
                                 "(--cacert names the CA certificates to trust)",
                                 subject);
        break;
      case AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED:
        st.broken = Status::AccessDenied(
            fmt::format("TLS: the broker's certificate is not for host '{}' (use the host "
                        "name the certificate names)",
                        ep.host),
            subject);
        break;
      case AMQP_STATUS_SSL_ERROR:
      case AMQP_STATUS_SSL_CONNECTION_FAILED:
        st.broken = Status::BrokerUnavailable(
            fmt::format("TLS handshake failed (is port {} a TLS listener? Does the broker "
                        "want a client certificate, --cert and --key?)",
                        ep.port),
            subject);
        break;
      default: {
        // rabbitmq-c keeps the connect's errno to itself: a socket error here is a refusal or
        // an unreachable host.
        std::string why = rc == AMQP_STATUS_SOCKET_ERROR
                              ? std::string("connection refused or host unreachable")
                              : std::string(Rmq().amqp_error_string2(rc));
        st.broken = Status::BrokerUnavailable(fmt::format("cannot connect: {}", why), subject);
      }
    }
    return st.broken;
  }
  // Reads and writes give up after the timeout too: a dead peer cannot hang the bridge.
  if (Rmq().amqp_set_rpc_timeout(st.conn, &tv) != AMQP_STATUS_OK)
    return Status::InvalidArg("bad timeout", subject);
  amqp_rpc_reply_t r =
      Rmq().amqp_login(st.conn, ep.vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE, kHeartbeatS,
                       AMQP_SASL_METHOD_PLAIN, ep.user.c_str(), ep.password.c_str());
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
      r.library_error == AMQP_STATUS_CONNECTION_CLOSED) {
    // Brokers that do not send connection.close on a failed login just hang up.
    st.broken = Status::AccessDenied(
        fmt::format("login refused for user '{}' (wrong user, password or vhost)", ep.user),
        subject);
    return st.broken;
  }
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && ep.tls &&
      r.library_error == AMQP_STATUS_SSL_ERROR) {
    // TLS 1.3: the broker checks the client's certificate after the client's side of the
    // handshake is done, and hangs up at the first read.
    st.broken =
        Status::BrokerUnavailable("TLS handshake failed: the broker hung up (does it want a client "
                                  "certificate, --cert and --key?)",
                                  subject);
    return st.broken;
  }
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && !ep.tls &&
      (r.library_error == AMQP_STATUS_SOCKET_ERROR ||
       r.library_error == AMQP_STATUS_BAD_AMQP_DATA)) {
    st.broken = Status::BrokerUnavailable(
        fmt::format("the broker broke off the AMQP handshake (if port {} is a "
                    "TLS listener, the URL is amqps://)",
                    ep.port),
        subject);
    return st.broken;
  }
  if (r.reply_type != AMQP_RESPONSE_NORMAL)
    return RpcStatus(st.conn, r, "login", subject, &st.broken);
  Rmq().amqp_channel_open(st.conn, kChannel);
  r = Rmq().amqp_get_rpc_reply(st.conn);
  if (r.reply_type != AMQP_RESPONSE_NORMAL)
    return RpcStatus(st.conn, r, "opening a channel", subject, &st.broken);
  return link;
}

Status Link::DeclareExchange(const std::string& exchange) {
  if (exchange.empty()) return {};  // the default exchange always exists
  Rmq().amqp_exchange_declare(st_->conn, kChannel, Bytes(exchange), CBytes("direct"), 0, 1, 0, 0,
                              kEmptyTable);
  return RpcStatus(st_->conn, Rmq().amqp_get_rpc_reply(st_->conn), "declaring exchange " + exchange,
                   ep_.url_shown, &st_->broken);
}

Status Link::DeclareQueue(const std::string& queue) {
  amqp_table_entry_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.key = CBytes("x-queue-type");
  arg.value.kind = AMQP_FIELD_KIND_UTF8;
  arg.value.value.bytes = CBytes("quorum");
  amqp_table_t args{1, &arg};
  Rmq().amqp_queue_declare(st_->conn, kChannel, Bytes(queue), 0, 1, 0, 0, args);
  return RpcStatus(st_->conn, Rmq().amqp_get_rpc_reply(st_->conn), "declaring queue " + queue,
                   ep_.url_shown, &st_->broken);
}

Status Link::Bind(const std::string& queue, const std::string& exchange,
                  const std::string& routing_key) {
  if (exchange.empty()) return {};  // the default exchange binds every queue by its name
  Rmq().amqp_queue_bind(st_->conn, kChannel, Bytes(queue), Bytes(exchange), Bytes(routing_key),
                        kEmptyTable);
  return RpcStatus(st_->conn, Rmq().amqp_get_rpc_reply(st_->conn),
                   fmt::format("binding queue {} to exchange {}", queue, exchange), ep_.url_shown,
                   &st_->broken);
}

namespace {

// Opens channel 2 if needed. A passive declare that fails closes the channel: it is opened
// again next time.
Status OpenSide(amqp_connection_state_t conn, bool& open, const std::string& subject,
                Status* broken) {
  if (open) return {};
  Rmq().amqp_channel_open(conn, kSideChannel);
  MQ_RETURN_IF_ERROR(
      RpcStatus(conn, Rmq().amqp_get_rpc_reply(conn), "opening a channel", subject, broken));
  open = true;
  return {};
}

}  // namespace

Status Link::CheckExchange(const std::string& exchange) {
  if (exchange.empty()) return {};
  MQ_RETURN_IF_ERROR(OpenSide(st_->conn, st_->side_open, ep_.url_shown, &st_->broken));
  Rmq().amqp_exchange_declare(st_->conn, kSideChannel, Bytes(exchange), CBytes("direct"), 1, 0, 0,
                              0, kEmptyTable);
  amqp_rpc_reply_t r = Rmq().amqp_get_rpc_reply(st_->conn);
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    st_->side_open = false;
    amqp_channel_close_ok_t ok{};
    Rmq().amqp_send_method(st_->conn, kSideChannel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
    Status s = RpcStatus(st_->conn, r, "exchange " + exchange, ep_.url_shown, nullptr);
    if (s.code() == Code::kQueueNotFound)
      return Status(s.code(),
                    fmt::format("no exchange '{}' in vhost {} (create it, or pass --declare)",
                                exchange, ep_.vhost),
                    ep_.url_shown);
    return s;
  }
  return RpcStatus(st_->conn, r, "exchange " + exchange, ep_.url_shown, &st_->broken);
}

Result<uint32_t> Link::ReadyCount(const std::string& queue) {
  MQ_RETURN_IF_ERROR(OpenSide(st_->conn, st_->side_open, ep_.url_shown, &st_->broken));
  auto* ok =
      Rmq().amqp_queue_declare(st_->conn, kSideChannel, Bytes(queue), 1, 0, 0, 0, kEmptyTable);
  amqp_rpc_reply_t r = Rmq().amqp_get_rpc_reply(st_->conn);
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    st_->side_open = false;
    amqp_channel_close_ok_t cok{};
    Rmq().amqp_send_method(st_->conn, kSideChannel, AMQP_CHANNEL_CLOSE_OK_METHOD, &cok);
    return RpcStatus(st_->conn, r, "queue " + queue, ep_.url_shown, nullptr);
  }
  MQ_RETURN_IF_ERROR(RpcStatus(st_->conn, r, "queue " + queue, ep_.url_shown, &st_->broken));
  return ok ? ok->message_count : 0;
}

Status Link::EnableConfirms() {
  Rmq().amqp_confirm_select(st_->conn, kChannel);
  return RpcStatus(st_->conn, Rmq().amqp_get_rpc_reply(st_->conn), "confirm mode", ep_.url_shown,
                   &st_->broken);
}

Status Link::Publish(const std::string& exchange, const std::string& routing_key,
                     const AmqpMessage& m) {
  if (!st_->broken.ok()) return st_->broken;
  OutProps props(m);
  int rc = Rmq().amqp_basic_publish(st_->conn, kChannel, Bytes(exchange), Bytes(routing_key),
                                    /*mandatory=*/1, /*immediate=*/0, props.get(), Bytes(m.body));
  if (rc != AMQP_STATUS_OK) {
    st_->broken =
        Status::BrokerUnavailable(fmt::format("publish failed: {}", Rmq().amqp_error_string2(rc)),
                                  ep_.url_shown);
    return st_->broken;
  }
  ++st_->published;
  return {};
}

namespace {

// Handles one frame that is not a delivery: confirms, returns, closes. Returns an error when
// the link can no longer be used.
Status HandleFrame(amqp_connection_state_t conn, const amqp_frame_t& f, const std::string& subject,
                   uint64_t published, uint64_t& confirmed, std::vector<uint64_t>& above,
                   std::vector<Refusal>& refused, Status& broken) {
  if (f.frame_type != AMQP_FRAME_METHOD) return {};
  switch (f.payload.method.id) {
    case AMQP_BASIC_ACK_METHOD:
    case AMQP_BASIC_NACK_METHOD: {
      uint64_t tag;
      bool multiple;
      if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
        auto* a = static_cast<amqp_basic_ack_t*>(f.payload.method.decoded);
        tag = a->delivery_tag;
        multiple = a->multiple;
      } else {
        auto* n = static_cast<amqp_basic_nack_t*>(f.payload.method.decoded);
        tag = n->delivery_tag;
        multiple = n->multiple;
        refused.push_back(
            Refusal{multiple ? confirmed + 1 : tag, tag,
                    Status::BrokerRefused("the broker refused a message (basic.nack)", subject)});
      }
      if (multiple) {
        confirmed = std::max(confirmed, tag);
      } else {
        above.push_back(tag);
      }
      // Fold single confirms that now follow `confirmed`.
      std::sort(above.begin(), above.end());
      size_t i = 0;
      while (i < above.size() && above[i] <= confirmed + 1) {
        confirmed = std::max(confirmed, above[i]);
        ++i;
      }
      above.erase(above.begin(), above.begin() + static_cast<long>(i));
      return {};
    }
    case AMQP_BASIC_RETURN_METHOD: {
      auto* r = static_cast<amqp_basic_return_t*>(f.payload.method.decoded);
      Status s = Status::QueueNotFound(
          fmt::format("exchange '{}' routed a message with routing key '{}' to no queue "
                      "(broker: {} {}); bind a queue, or pass --declare",
                      Str(r->exchange), Str(r->routing_key), r->reply_code, Str(r->reply_text)),
          subject);
      // It is one of the messages published and not yet confirmed (its confirm follows).
      refused.push_back(Refusal{confirmed + 1, published, s});
      // The returned message (header and body frames) follows: read it and let it go.
      amqp_message_t msg;
      amqp_rpc_reply_t rr = Rmq().amqp_read_message(conn, f.channel, &msg, 0);
      if (rr.reply_type != AMQP_RESPONSE_NORMAL)
        return RpcStatus(conn, rr, "reading a returned message", subject, &broken);
      Rmq().amqp_destroy_message(&msg);
      return {};
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      auto* c = static_cast<amqp_channel_close_t*>(f.payload.method.decoded);
      Status s = FromReplyCode(c->reply_code, Str(c->reply_text), subject);
      amqp_channel_close_ok_t ok{};
      Rmq().amqp_send_method(conn, f.channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
      if (s.code() == Code::kQueueNotFound)
        s = Status(s.code(), s.text() + " (create it, or pass --declare)", subject);
      if (broken.ok()) broken = s;
      return broken;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      auto* c = static_cast<amqp_connection_close_t*>(f.payload.method.decoded);
      Status s = FromReplyCode(c->reply_code, Str(c->reply_text), subject);
      amqp_connection_close_ok_t ok{};
      Rmq().amqp_send_method(conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      if (broken.ok()) broken = s;
      return broken;
    }
    default:
      return {};
  }
}

}  // namespace

uint64_t Link::Published() const { return st_->published; }

Status Link::WaitConfirmed(uint64_t tag, int timeout_ms) {
  State& st = *st_;
  int64_t until = MonotonicMs() + timeout_ms;
  while (st.broken.ok() && st.confirmed < tag) {
    int64_t left = until - MonotonicMs();
    if (left <= 0) {
      st.broken = Status::BrokerUnavailable("the broker did not confirm in time", ep_.url_shown);
      break;
    }
    amqp_frame_t f;
    timeval tv = Tv(static_cast<int>(std::min<int64_t>(left, 1000)));
    int rc = Rmq().amqp_simple_wait_frame_noblock(st.conn, &f, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) continue;
    if (rc != AMQP_STATUS_OK) {
      st.broken = Status::BrokerUnavailable(fmt::format("connection lost: {}",
                                                        Rmq().amqp_error_string2(rc)),
                                            ep_.url_shown);
      break;
    }
    Status s = HandleFrame(st.conn, f, ep_.url_shown, st.published, st.confirmed,
                           st.confirmed_above, st.refused, st.broken);
    if (!s.ok()) break;
  }
  Rmq().amqp_maybe_release_buffers(st.conn);
  return st.broken;
}

Status Link::Refused(uint64_t first, uint64_t last) const {
  for (const Refusal& r : st_->refused)
    if (r.first <= last && first <= r.last) return r.status;
  return {};
}

Status Link::Poll() {
  State& st = *st_;
  while (st.broken.ok()) {
    amqp_frame_t f;
    timeval tv{0, 0};
    int rc = Rmq().amqp_simple_wait_frame_noblock(st.conn, &f, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) break;
    if (rc != AMQP_STATUS_OK) {
      st.broken = Status::BrokerUnavailable(fmt::format("connection lost: {}",
                                                        Rmq().amqp_error_string2(rc)),
                                            ep_.url_shown);
      break;
    }
    (void)HandleFrame(st.conn, f, ep_.url_shown, st.published, st.confirmed, st.confirmed_above,
                      st.refused, st.broken);
  }
  return st.broken;
}

Status Link::Consume(const std::string& queue, uint16_t prefetch) {
  Rmq().amqp_basic_qos(st_->conn, kChannel, 0, prefetch, 0);
  MQ_RETURN_IF_ERROR(RpcStatus(st_->conn, Rmq().amqp_get_rpc_reply(st_->conn), "basic.qos",
                               ep_.url_shown, &st_->broken));
  Rmq().amqp_basic_consume(st_->conn, kChannel, Bytes(queue), kEmptyBytes, 0, /*no_ack=*/0, 0,
                           kEmptyTable);
  Status s = RpcStatus(st_->conn, Rmq().amqp_get_rpc_reply(st_->conn), "consuming from " + queue,
                       ep_.url_shown, &st_->broken);
  if (s.code() == Code::kQueueNotFound)
    return Status(s.code(),
                  fmt::format("no queue '{}' in vhost {} (create it, or pass --declare)", queue,
                              ep_.vhost),
                  ep_.url_shown);
  return s;
}

Result<std::optional<Delivery>> Link::Next(int timeout_ms) {
  State& st = *st_;
  if (!st.broken.ok()) return st.broken;
  for (;;) {
    Rmq().amqp_maybe_release_buffers(st.conn);
    amqp_envelope_t env;
    timeval tv = Tv(timeout_ms);
    amqp_rpc_reply_t r = Rmq().amqp_consume_message(st.conn, &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
      Delivery d;
      d.tag = env.delivery_tag;
      d.redelivered = env.redelivered != 0;
      d.message = FromProps(env.message.properties, env.message.body);
      Rmq().amqp_destroy_envelope(&env);
      return std::optional<Delivery>(std::move(d));
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT)
      return std::optional<Delivery>();
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
      // Something other than a delivery: a close, or a cancel.
      amqp_frame_t f;
      timeval zero = Tv(timeout_ms);
      int rc = Rmq().amqp_simple_wait_frame_noblock(st.conn, &f, &zero);
      if (rc == AMQP_STATUS_TIMEOUT) return std::optional<Delivery>();
      if (rc != AMQP_STATUS_OK) {
        st.broken = Status::BrokerUnavailable(fmt::format("connection lost: {}",
                                                          Rmq().amqp_error_string2(rc)),
                                              ep_.url_shown);
        return st.broken;
      }
      if (f.frame_type == AMQP_FRAME_METHOD && f.payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        st.broken =
            Status::BrokerUnavailable("the broker cancelled the consumer (queue deleted or moved)",
                                      ep_.url_shown);
        return st.broken;
      }
      Status s = HandleFrame(st.conn, f, ep_.url_shown, st.published, st.confirmed,
                             st.confirmed_above, st.refused, st.broken);
      if (!s.ok()) return s;
      continue;
    }
    return RpcStatus(st.conn, r, "consuming", ep_.url_shown, &st.broken);
  }
}

Status Link::Ack(uint64_t tag, bool multiple) {
  if (!st_->broken.ok()) return st_->broken;
  int rc = Rmq().amqp_basic_ack(st_->conn, kChannel, tag, multiple);
  if (rc != AMQP_STATUS_OK)
    st_->broken =
        Status::BrokerUnavailable(fmt::format("ack failed: {}", Rmq().amqp_error_string2(rc)),
                                  ep_.url_shown);
  return st_->broken;
}

Status Link::Nack(uint64_t tag, bool multiple, bool requeue) {
  if (!st_->broken.ok()) return st_->broken;
  int rc = Rmq().amqp_basic_nack(st_->conn, kChannel, tag, multiple, requeue);
  if (rc != AMQP_STATUS_OK)
    st_->broken =
        Status::BrokerUnavailable(fmt::format("nack failed: {}", Rmq().amqp_error_string2(rc)),
                                  ep_.url_shown);
  return st_->broken;
}

Result<std::unique_ptr<Channel>> LinkConnector::Connect() {
  auto link = Link::Connect(ep_, timeout_ms_);
  if (!link.ok()) return link.status();
  return std::unique_ptr<Channel>(std::move(*link));
}

}  // namespace mq::bridge
