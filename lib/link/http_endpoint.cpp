// http_endpoint.cpp: the SRMP-over-HTTP endpoint (http_endpoint.hpp), on libmicrohttpd: one
// daemon per listening socket, run from this thread's own poll loop (no MHD thread: the store
// is used from one thread), requests suspended from their last byte until the batch they are
// in is committed.
#include "link/http_endpoint.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/ids.hpp"
#include "base/names.hpp"
#include "base/units.hpp"
#include "link/http_api.hpp"
#include "wire/srmp.hpp"

namespace mq::link {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// One request, from its headers to its answer.
struct Request {
  std::string queue;
  std::string content_type;
  // The document as DecodeSrmp reads it: its Content-Type line (the boundary is in it), then
  // the body, appended as it comes; `head` bytes of it are that line.
  std::string doc;
  size_t head = 0;
  uint64_t reserve = 0;  // its Content-Length, at most the limit
  uint64_t limit = 0;
  int64_t deadline = 0;  // monotonic ms
  enum class State { kReading, kPending, kAnswered } state = State::kReading;
  unsigned status = MHD_HTTP_OK;
  std::string reason;  // the answer's text
  MHD_Connection* connection = nullptr;
  Message msg;
  SrmpStream stream;
  bool streamed = false;
  std::string via;      // the URL it was posted to
  // No <Msmq> came with it, whose id SRMP says is the message's: its <path><id> is taken when
  // it is uuid:N@GUID (its receipts cite it so), else one made here; either is replaced if
  // another message of the store has it.
  bool own_id = false;
  // Posted to a path that names no queue of this store, as text/xml: taken only if it is a
  // receipt (MSMQ posts them to the sender's order queue, /msmq/private$/order_queue$), else
  // refused with this reason.
  std::string receipt_only;
  int64_t hold_until = 0;  // a stream's message after a gap waits until then for the gap
};

}  // namespace

Result<std::string> QueueOfSrmpPath(std::string_view path) {
  auto bad = [&] {
    return Status::InvalidArg(
        fmt::format("'{}' is not an MSMQ queue path (/msmq/private$/QUEUE or /msmq/QUEUE)", path));
  };
  std::string_view p = path;
  if (p.size() < 6 || p[0] != '/' || !IEquals(p.substr(1, 4), "msmq") || p[5] != '/') return bad();
  p.remove_prefix(6);
  if (p.size() > 9 && IEquals(p.substr(0, 9), "private$/")) p.remove_prefix(9);
  if (p.empty() || p.find('/') != std::string_view::npos) return bad();
  std::string name(p);
  auto ref = ParseQueueRef(name);
  if (!ref.ok())
    return Status::IllegalFormatname(fmt::format("'{}': {}", name, ref.status().text()));
  if (ref->IsSub() || ref->IsSystem())
    return Status::IllegalFormatname(
        fmt::format("'{}' is not a queue that takes messages over HTTP", name));
  return name;
}

namespace {

class Endpoint {
 public:
  Endpoint(Store& store, const HttpServeOptions& o, HttpServeStats& stats)
      : store_(store), o_(o), stats_(stats) {}

  ~Endpoint() {
    for (auto& [easy, t] : transfers_) {
      Api().curl_multi_remove_handle(multi_, easy);
      Api().curl_easy_cleanup(easy);
      Api().curl_slist_free_all(t.headers);
    }
    if (multi_) Api().curl_multi_cleanup(multi_);
    for (MHD_Daemon* d : daemons_) Api().MHD_stop_daemon(d);
    ReleaseOutbox();
  }

  Status Run() {
    MQ_RETURN_IF_ERROR(Api().status);
    multi_ = Api().curl_multi_init();
    if (!multi_) return Status::InsufficientResources("cannot make a libcurl multi handle");
    auto bell = store_.ArmReceipts();
    if (!bell.ok()) return bell.status();
    receipts_bell_ = std::move(*bell);
    for (int fd : o_.listen_fds) {
      unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
      std::vector<MHD_OptionItem> opts{
          {MHD_OPTION_LISTEN_SOCKET, static_cast<intptr_t>(fd), nullptr},
          {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(o_.max_connections), nullptr},
          {MHD_OPTION_CONNECTION_TIMEOUT,
           static_cast<intptr_t>(std::max<int64_t>(1, o_.idle_timeout_ms / 1000)), nullptr},
          {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Endpoint::OnCompleted), this},
          {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Endpoint::OnLog), this}};
      if (!o_.tls_cert_pem.empty()) {
        flags |= MHD_USE_TLS;
        opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(o_.tls_cert_pem.c_str())});
        opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(o_.tls_key_pem.c_str())});
        if (!o_.client_ca_pem.empty())
          opts.push_back(
              {MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(o_.client_ca_pem.c_str())});
      }
      opts.push_back({MHD_OPTION_END, 0, nullptr});
      MHD_Daemon* d = Api().MHD_start_daemon(flags, 0, nullptr, nullptr, &Endpoint::OnRequest, this,
                                             MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
      if (!d)
        return Status::Error(fmt::format("cannot serve HTTP on descriptor {} (libmicrohttpd "
                                         "refused it{})",
                                         fd, last_log_.empty() ? "" : ": " + last_log_));
      daemons_.push_back(d);
    }
    for (;;) {
      if (o_.stop && o_.stop->Requested()) {
        // Messages held after a gap are answered (as gaps: they come again), and the answers
        // of requests stored in the last turn go out before the end.
        MQ_RETURN_IF_ERROR(StorePending(true));
        if (resumed_)
          for (MHD_Daemon* d : daemons_) Api().MHD_run(d);
        ReleaseOutbox();
        return {};
      }
      // libcurl's sockets (receipts being posted) and these: libmicrohttpd's epoll
      // descriptors and the stop pipe.
      std::vector<curl_waitfd> fds;
      for (MHD_Daemon* d : daemons_) {
        const MHD_DaemonInfo* info = Api().MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info) return Status::Error("libmicrohttpd gave no epoll descriptor");
        fds.push_back(curl_waitfd{info->epoll_fd, CURL_WAIT_POLLIN, 0});
      }
      if (o_.stop) fds.push_back(curl_waitfd{o_.stop->fd(), CURL_WAIT_POLLIN, 0});
      size_t bell_at = fds.size();
      fds.push_back(curl_waitfd{receipts_bell_->fd(), CURL_WAIT_POLLIN, 0});
      // libmicrohttpd is run at least every kMhdTickMs. Without it, a sender that reopens
      // many kept-alive connections (a forward with --connections 48 or 64 after another)
      // was seen to have new connections wait unaccepted in the listen backlog until its
      // own timeout (30 s), while this loop slept on the epoll descriptor: libmicrohttpd
      // takes some of its work up only when run, not when its descriptor wakes.
      int64_t wait = kMhdTickMs;
      for (MHD_Daemon* d : daemons_) {
        MHD_UNSIGNED_LONG_LONG t = 0;
        if (Api().MHD_get_timeout(d, &t) == MHD_YES) wait = std::min(wait, static_cast<int64_t>(t));
      }
      int64_t now = MonotonicMs();
      for (auto& [id, st] : streams_)
        if (st.due) wait = std::min(wait, std::max<int64_t>(0, st.due - now));
      if (look_outbox_) wait = 0;
      if (outbox_due_) wait = std::min(wait, std::max<int64_t>(0, outbox_due_ - NowMs()));
      for (const Request* r : held_)
        wait = std::min(wait, std::max<int64_t>(0, r->hold_until - now));
      // Connections resumed after a commit have their answers to send: libmicrohttpd, run
      // from this loop, is not woken for them, so the loop runs it again before sleeping.
      if (resumed_) wait = 0;
      resumed_ = false;
      CURLMcode mc = Api().curl_multi_poll(multi_, fds.data(), static_cast<unsigned>(fds.size()),
                                           static_cast<int>(wait), nullptr);
      if (mc != CURLM_OK) return Status::Error("libcurl's poll failed");
      for (MHD_Daemon* d : daemons_) Api().MHD_run(d);
      MQ_RETURN_IF_ERROR(StorePending());
      if ((fds[bell_at].revents && receipts_bell_->Rang()) ||
          (outbox_due_ && outbox_due_ <= NowMs()))
        look_outbox_ = true;
      MQ_RETURN_IF_ERROR(LockOutbox());
      PostDueReceipts();
      MQ_RETURN_IF_ERROR(FinishReceipts());
    }
  }

 private:
  static void OnLog(void* cls, const char* fmt_text, va_list ap) {
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt_text, ap);
    std::string& last = static_cast<Endpoint*>(cls)->last_log_;
    last = buf;
    while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
  }

  static void OnCompleted(void* cls, MHD_Connection*, void** req_cls, MHD_RequestTerminationCode) {
    (void)cls;
    delete static_cast<Request*>(*req_cls);
    *req_cls = nullptr;
  }

  static MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload, size_t* upload_size,
                              void** req_cls) {
    return static_cast<Endpoint*>(cls)->Handle(c, url, method, upload, upload_size, req_cls);
  }

  MHD_Result Answer(MHD_Connection* c, unsigned status, const std::string& text) {
    std::string body = text.empty() ? std::string() : text + "\n";
    MHD_Response* resp =
        Api().MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    if (!body.empty())
      Api().MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) Api().MHD_add_response_header(resp, "Allow", "POST");
    MHD_Result ok = Api().MHD_queue_response(c, status, resp);
    Api().MHD_destroy_response(resp);
    return ok;
  }

  // Answers with an error now (the rest of the body is not read) and tells the note.
  MHD_Result Refuse(MHD_Connection* c, Request* r, unsigned status, const std::string& why) {
    stats_.refused++;
    if (o_.note)
      o_.note(fmt::format("{} {}{}", status,
                          r && !r->queue.empty() ? r->queue + ": " : std::string(), why));
    if (r) r->state = Request::State::kAnswered;
    return Answer(c, status, why);
  }

  MHD_Result Handle(MHD_Connection* c, const char* url, const char* method, const char* upload,
                    size_t* upload_size, void** req_cls) {
    auto* r = static_cast<Request*>(*req_cls);
    if (!r) {
      r = new Request;
      r->connection = c;
      r->deadline = MonotonicMs() + o_.request_timeout_ms;
      *req_cls = r;
      stats_.requests++;
      return Begin(c, r, url, method);
    }
    if (r->state == Request::State::kAnswered) {
      *upload_size = 0;  // the rest of a refused body is dropped
      return MHD_YES;
    }
    if (*upload_size) {
      if (MonotonicMs() > r->deadline) return TooSlow(c, r);
      if (r->doc.size() - r->head + *upload_size > r->limit)
        return Refuse(c, r, MHD_HTTP_CONTENT_TOO_LARGE,
                      fmt::format("the document is larger than {} bytes, the most {} takes",
                                  r->limit, r->queue));
      r->doc.append(upload, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    if (r->state == Request::State::kReading) return Complete(c, r);
    // Resumed after its batch was stored: the answer.
    r->state = Request::State::kAnswered;
    return Answer(c, r->status, r->reason);
  }

  // Whether the client presented a certificate that --client-ca signed (libmicrohttpd asks
  // for one, and leaves the check to the application).
  bool ClientVerified(MHD_Connection* c) {
    const MHD_ConnectionInfo* info =
        Api().MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session) return false;
    unsigned status = 0;
    int rc =
        Api().gnutls_certificate_verify_peers2(static_cast<gnutls_session_t>(info->tls_session),
                                               &status);
    return rc == GNUTLS_E_SUCCESS && status == 0;
  }

  // A request still coming in after its time: libmicrohttpd sends a response queued in the
  // middle of a body only once the body is whole, which a client that sends a byte now and
  // then never makes. So the 408 is written here, at once and without waiting (to the socket
  // of a plain HTTP connection, through the connection's TLS session over HTTPS), and the
  // connection closed (MHD_NO). libmicrohttpd has nothing of its own to write then: no
  // answer was queued.
  MHD_Result TooSlow(MHD_Connection* c, Request* r) {
    stats_.refused++;
    std::string why = "the request took too long";
    if (o_.note) o_.note(fmt::format("408 {}: {}", r->queue, why));
    r->state = Request::State::kAnswered;
    std::string answer = fmt::format(
        "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain; "
        "charset=utf-8\r\nContent-Length: {}\r\n\r\n{}\n",
        why.size() + 1, why);
    if (o_.tls_cert_pem.empty()) {
      const MHD_ConnectionInfo* info =
          Api().MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
      if (info)
        (void)!::send(info->connect_fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    } else {
      const MHD_ConnectionInfo* info =
          Api().MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
      // The socket is non-blocking: a record that does not fit now is given up.
      if (info && info->tls_session)
        (void)Api().gnutls_record_send(static_cast<gnutls_session_t>(info->tls_session),
                                       answer.data(), answer.size());
    }
    return MHD_NO;
  }

  MHD_Result Begin(MHD_Connection* c, Request* r, const char* url, const char* method) {
    if (!o_.client_ca_pem.empty() && !ClientVerified(c))
      return Refuse(c, r, MHD_HTTP_FORBIDDEN,
                    "a client certificate signed by the endpoint's --client-ca is required");
    if (std::string_view(method) != "POST")
      return Refuse(c, r, MHD_HTTP_METHOD_NOT_ALLOWED,
                    fmt::format("{} is not served: MSMQ's HTTP transport POSTs", method));
    const char* ct = Api().MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    r->content_type = ct ? ct : "";
    std::string_view type = r->content_type;
    type = type.substr(0, type.find(';'));
    while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
    const bool xml = IEquals(type, "text/xml");
    const char* host = Api().MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    r->via = fmt::format("http://{}{}", host ? host : "localhost", url);
    Status no_queue;
    // No MSMQ path: 404; a path that names no queue that takes messages: 400.
    unsigned no_queue_status = MHD_HTTP_BAD_REQUEST;
    auto q = QueueOfSrmpPath(url);
    if (!q.ok()) {
      no_queue = q.status();
      if (no_queue.code() != Code::kIllegalFormatname) no_queue_status = MHD_HTTP_NOT_FOUND;
    } else {
      r->queue = *q;
      if (!o_.queues.empty() &&
          std::find(o_.queues.begin(), o_.queues.end(), r->queue) == o_.queues.end())
        no_queue = Status::InvalidArg("this endpoint does not serve that queue");
    }
    std::optional<QueueInfo> st;
    if (no_queue.ok()) {
      auto ref = ParseQueueRef(r->queue);
      if (!ref.ok()) return Refuse(c, r, MHD_HTTP_NOT_FOUND, ref.status().text());
      auto got = store_.QueueInfoOf(*ref);
      if (!got.ok() && got.status().code() != Code::kQueueNotFound)
        return Refuse(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, got.status().text());
      if (got.ok())
        st = std::move(*got);
      else
        no_queue = Status::QueueNotFound("no such queue");  // 400: [MC-MQSRM] 3.1.5.1.3
    }
    if (!no_queue.ok()) {
      std::string_view path = url;
      bool msmq = path.size() > 6 && IEquals(path.substr(0, 6), "/msmq/");
      if (xml && msmq) {
        // Perhaps a receipt to the order queue: known once it is read.
        r->receipt_only = no_queue.text();
        if (r->queue.empty()) r->queue = std::string(path.substr(path.rfind('/') + 1));
        r->limit = kEnvelopeRoom;
      } else {
        return Refuse(c, r, no_queue_status, no_queue.text());
      }
    }
    if (!IEquals(type, "multipart/related") && !xml)
      return Refuse(c, r, MHD_HTTP_BAD_REQUEST,
                    fmt::format("Content-Type '{}' is not an SRMP document (multipart/related, "
                                "or text/xml for a receipt)",
                                r->content_type));
    if (st) r->limit = st->max_message_size + kEnvelopeRoom;
    if (const char* len = Api().MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length")) {
      uint64_t n = std::strtoull(len, nullptr, 10);
      if (n > r->limit)
        return Refuse(c, r, MHD_HTTP_CONTENT_TOO_LARGE,
                      fmt::format("the document ({} bytes) is larger than {} bytes, the most "
                                  "{} takes",
                                  n, r->limit, r->queue));
      r->reserve = n;
    }
    r->doc = fmt::format("Content-Type: {}\r\n\r\n", r->content_type);
    r->head = r->doc.size();
    r->doc.reserve(r->head + r->reserve);
    return MHD_YES;
  }

  // The whole body is here: read it; a message waits for the next commit, suspended.
  MHD_Result Complete(MHD_Connection* c, Request* r) {
    SrmpReceipt receipt;
    Status s = DecodeSrmp(r->doc, r->msg, &r->stream, &receipt);
    std::string().swap(r->doc);  // the message holds what it needs
    if (!s.ok()) return Refuse(c, r, MHD_HTTP_BAD_REQUEST, s.text());
    bool commitment = receipt.kind == SrmpReceipt::Kind::kCommitment && r->receipt_only.empty();
    if (receipt.kind != SrmpReceipt::Kind::kNone && !commitment) {
      // A receipt, never stored as a message. A stream receipt for the stream of one of this
      // store's HTTP links ends the messages it covers: recorded here, the link's forward
      // ends them (link/http_forward.hpp). A delivery receipt says what the POST's answer
      // said already (the message is ended by then, with its ACK_REACH_QUEUE); a commitment
      // receipt to a queue this store does not have is understood and dropped.
      stats_.receipts++;
      if (receipt.kind == SrmpReceipt::Kind::kStream) {
        auto link = store_.NoteStreamReceipt(receipt.stream_id, receipt.last_ordinal);
        if (!link.ok()) return Refuse(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, link.status().text());
        if (link->empty() && o_.note)
          o_.note(fmt::format("a stream receipt for {}, no stream of this store's links: "
                              "ignored",
                              receipt.stream_id));
      }
      r->state = Request::State::kAnswered;
      return Answer(c, MHD_HTTP_OK, "");
    }
    if (!r->receipt_only.empty()) return Refuse(c, r, MHD_HTTP_BAD_REQUEST, r->receipt_only);
    if (commitment) {
      // A commitment receipt to a queue of this store (the admin queue of a message it sent
      // over HTTP): stored there as the acknowledgement MSMQ makes of it, its class
      // ACK_RECEIVE or the NACK <Msmq><Class> names (NACK_RECEIVE_TIMEOUT without one), its
      // correlation id the message's id; the receipt's own id keeps a replay from being
      // stored twice.
      stats_.receipts++;
      AckOfCommitmentReceipt(receipt, r->msg);
    }
    r->streamed = !r->stream.stream_id.empty();
    r->msg.destination_queue = r->queue;
    if (r->streamed && r->msg.xact_id.empty()) {
      // A stream's message is MSMQ's transactional message; SRMP carries no transaction id
      // without <Msmq><XactId>: one of its own, the source machine and the ordinal.
      r->msg.xact_id.assign(reinterpret_cast<const char*>(r->msg.source_qm_guid.data()),
                            r->msg.source_qm_guid.size());
      PutU32BE(r->msg.xact_id, static_cast<uint32_t>(r->stream.current));
    }
    r->own_id = r->msg.id.empty();
    if (r->own_id) r->msg.id = SrmpIdOfText(receipt.path_id);
    if (r->msg.id.empty()) r->msg.id = MakeMessageId(NewGuid(), 1);
    r->state = Request::State::kPending;
    pending_.push_back(r);
    Api().MHD_suspend_connection(c);
    return MHD_YES;
  }

  // Stores the messages read in this turn: those of no stream together, each stream's in
  // ordinal order; then answers each.
  Status StorePending(bool stopping = false) {
    int64_t now = stopping ? INT64_MAX : MonotonicMs();
    // The messages held after a gap go again with the new ones: when their turn has come,
    // stored; when their time is up, answered as a gap.
    bool due = false;
    for (Request* r : held_) due = due || r->hold_until <= now;
    if (pending_.empty() && !due) return {};
    std::map<std::string, std::vector<Request*>> by_stream;
    Status failed;
    for (Request* r : held_) pending_.push_back(r);
    held_.clear();
    for (Request* r : pending_) {
      if (r->streamed && !r->hold_until && !stopping) r->hold_until = now + kGapHoldMs;
      by_stream[r->streamed ? r->stream.stream_id : ""].push_back(r);
    }
    for (auto& [stream, reqs] : by_stream) {
      std::stable_sort(reqs.begin(), reqs.end(), [](const Request* a, const Request* b) {
        return a->stream.current < b->stream.current;
      });
      std::vector<TransferItem> items(reqs.size());
      for (size_t i = 0; i < reqs.size(); ++i) {
        items[i].seq = reqs[i]->stream.current;
        items[i].msg = std::move(reqs[i]->msg);
        items[i].keep_late = true;
        items[i].new_id_if_taken = !stream.empty() || reqs[i]->own_id;
        if (!stream.empty())
          items[i].previous = reqs[i]->stream.previous || reqs[i]->stream.previous_given
                                  ? reqs[i]->stream.previous
                                  : reqs[i]->stream.current - 1;
      }
      std::string receipts_to;
      for (const Request* r : reqs)
        if (!r->stream.send_receipts_to.empty()) receipts_to = r->stream.send_receipts_to;
      // After a store error that ends serve, the rest are answered 503, unstored: no request
      // may stay suspended (libmicrohttpd cannot stop a daemon that has one).
      Result<uint64_t> last = failed.ok() ? store_.AcceptTransfer(stream, items, 0, receipts_to)
                                          : Result<uint64_t>(failed);
      if (last.ok() && !stream.empty()) ScheduleReceipt(stream, *last, receipts_to, reqs);
      for (size_t i = 0; i < reqs.size(); ++i) {
        Request* r = reqs[i];
        if (!last.ok()) {
          r->status = MHD_HTTP_SERVICE_UNAVAILABLE;
          r->reason = last.status().text();
        } else if (items[i].gap && now < r->hold_until) {
          // The ordinals before it are perhaps on their way on other connections (a sender
          // posts several at once): it waits for them, suspended, a while.
          r->msg = std::move(items[i].msg);
          held_.push_back(r);
          continue;
        } else if (items[i].gap) {
          // [MC-MQSRM] 3.1.5.1.6.3: ignored, and answered 200 (a 4xx would make MSMQ
          // dead-letter it); it comes again, in order, as no stream receipt covers it.
          r->status = MHD_HTTP_OK;
          stats_.gaps++;
          if (o_.note)
            o_.note(fmt::format("{}: ordinal {} of stream {} ignored: it does not follow {}, "
                                "the last one stored",
                                r->queue, items[i].seq, stream, *last));
        } else if (items[i].outcome) {
          // The queue refused it: 500 for a full queue (MSMQ's sender retries a 5xx), 400 for
          // the rest (it dead-letters the message: no retry can succeed) (3.1.5.1.3, 3.1.5.1.12).
          r->status = items[i].outcome == kClassNackQExceedQuota ? MHD_HTTP_INTERNAL_SERVER_ERROR
                                                                 : MHD_HTTP_BAD_REQUEST;
          r->reason = fmt::format("refused: {}", ClassName(items[i].outcome));
        } else {
          r->status = MHD_HTTP_OK;
          r->reason.clear();
          (items[i].duplicate ? stats_.duplicates : stats_.stored)++;
        }
        if (r->status != MHD_HTTP_OK) {
          stats_.refused++;
          if (o_.note) o_.note(fmt::format("{} {}: {}", r->status, r->queue, r->reason));
        }
        Api().MHD_resume_connection(r->connection);
        resumed_ = true;
      }
      if (!last.ok() && last.status().code() != Code::kInsufficientResources && failed.ok())
        failed = last.status();
    }
    pending_.clear();
    return failed;
  }

  // Stream receipts ([MC-MQSRM] 3.1.2.3, 3.1.6.3): one per stream, posted to its
  // <sendReceiptsTo> 500 ms after the last message of the stream stored or replayed here (a
  // replay means the sender lacks a receipt), at most 10 s after the first one not yet
  // receipted; cumulative (<lastOrdinal>: the stream's last stored ordinal). One failed is
  // posted again 30 s later, unless a message of the stream makes it due sooner.
  static constexpr int64_t kMhdTickMs = 50;
  static constexpr int64_t kReceiptDelayMs = 500;
  // A stream receipt goes at once when this many ordinals wait for one (a sender that posts
  // fast need not wait the coalescing out with its window full).
  static constexpr uint64_t kReceiptOrdinals = 1000;
  // How long a stream's message after a gap waits for the ordinals before it.
  static constexpr int64_t kGapHoldMs = 2000;
  static constexpr int64_t kReceiptMaxDelayMs = 10'000;
  static constexpr int64_t kReceiptRetryMs = 30'000;
  struct StreamState {
    std::string to;   // <sendReceiptsTo>
    std::string via;  // where its messages are posted
    uint64_t last = 0;
    uint64_t posted = 0;  // the last ordinal of the last receipt posted
    int64_t due = 0;    // monotonic ms; 0: none due
    int64_t first = 0;  // the first message not yet receipted came then
    bool in_flight = false;
    bool told_nowhere = false;
  };
  // The receipts of system;receipts (Store::EmitAck puts there those of messages that came
  // over HTTP from a machine no link reaches), Locked in batches of kOutboxBatch, at most
  // kOutboxWindow at once, each posted to its URL (the acknowledgement's destination). Once
  // each of a batch is answered, it ends in one transaction: those answered 2xx, or 4xx
  // (refused: no retry can succeed), are removed; the others (a failed connection, another
  // status) roll back, to come again after the queue's retry delay (1 s, doubling up to 5
  // minutes: LoadOrCreate), so that receipts to a machine that is down never hold up the
  // others. Those of a serve that stopped or died come back (its leases) and are posted
  // again: the same receipts, each with its acknowledgement's id.
  static constexpr size_t kOutboxBatch = 64;
  static constexpr size_t kOutboxWindow = 256;
  struct OutboxBatch {
    std::unique_ptr<Lease> lease;
    std::vector<bool> ended;  // answered 2xx or 4xx
    size_t answered = 0;
    std::string failure;  // the last failure's reason
  };
  struct Transfer {
    std::string stream;  // a stream receipt's
    curl_slist* headers = nullptr;
    uint64_t last = 0;
    OutboxBatch* batch = nullptr;  // else the receipt at `index` of this outbox batch
    size_t index = 0;
  };

  void ScheduleReceipt(const std::string& stream, uint64_t last, const std::string& to,
                       const std::vector<Request*>& reqs) {
    StreamState& st = streams_[stream];
    if (!to.empty()) st.to = to;
    if (st.to.empty()) {
      // Not given in this turn: kept in the store with the stream's position (a restart).
      auto kept = store_.StreamReceiptsTo(stream);
      if (kept.ok()) st.to = *kept;
    }
    if (st.via.empty()) st.via = reqs.front()->via;
    st.last = last;
    int64_t now = MonotonicMs();
    if (!st.first) st.first = now;
    st.due = std::min(now + kReceiptDelayMs, st.first + kReceiptMaxDelayMs);
    if (last >= st.posted + kReceiptOrdinals) st.due = now;
  }

  void PostDueReceipts() {
    int64_t now = MonotonicMs();
    for (auto& [id, st] : streams_) {
      if (!st.due || st.due > now || st.in_flight) continue;
      st.due = 0;
      st.first = 0;
      if (st.to.empty()) {
        if (!st.told_nowhere && o_.note)
          o_.note(fmt::format("stream {}: no <sendReceiptsTo> is known (its first message "
                              "never came here): its receipts cannot be sent",
                              id));
        st.told_nowhere = true;
        continue;
      }
      SrmpReceiptDoc r;
      r.to = st.to;
      r.via = st.via;
      r.stream_id = id;
      r.last_ordinal = st.last;
      r.qm_guid = store_.guid();
      r.counter = ++receipt_counter_;
      r.sent_time = NowMs();
      Transfer t;
      t.stream = id;
      t.last = st.last;
      st.posted = st.last;
      if (Post(st.to, EncodeReceipt(r), std::move(t)))
        st.in_flight = true;
      else
        st.due = now + kReceiptRetryMs;
    }
  }

  // Locks more of system;receipts while it has some and the window has room.
  Status LockOutbox() {
    if (!look_outbox_) return {};
    look_outbox_ = false;
    auto ref = ParseQueueRef(kReceiptsQueue);
    if (!ref.ok()) return ref.status();
    outbox_due_ = 0;
    for (;;) {
      size_t held = 0;
      for (const auto& b : outbox_) held += b->ended.size();
      if (held >= kOutboxWindow) return {};
      Selection sel;
      sel.limit = std::min(kOutboxBatch, kOutboxWindow - held);
      LockOptions lo;
      lo.count_delivery = false;  // a mover is not a reader
      auto lease = store_.Lock(*ref, sel, ReadOptions{}, lo, nullptr);
      Code code = lease.ok() ? Code::kOk : lease.status().code();
      if (code == Code::kMessageNotFound || code == Code::kQueueNotActive) {
        // None ready: perhaps some after their retry delay. Receiving paused, a rate limit or
        // the queue disabled (its doorbell rings when that changes): a look every second
        // while it holds some that are not ours.
        auto next = store_.NextDeadline(*ref);
        if (next.ok()) outbox_due_ = *next;
        auto info = store_.QueueInfoOf(*ref);
        if (!outbox_due_ && info.ok() && info->count > info->delayed + info->locked)
          outbox_due_ = NowMs() + 1000;
        if (code == Code::kQueueNotActive && o_.note && !told_inactive_)
          o_.note("system;receipts is disabled: its receipts wait until mq-admin set "
                  "'system;receipts' --status on");
        told_inactive_ = code == Code::kQueueNotActive;
        return {};
      }
      if (!lease.ok()) return lease.status();
      told_inactive_ = false;
      auto& b = *outbox_.emplace_back(std::make_unique<OutboxBatch>());
      b.lease = std::move(*lease);
      b.ended.assign(b.lease->messages().size(), false);
      for (size_t i = 0; i < b.ended.size(); ++i) {
        const Message& ack = b.lease->messages()[i];
        std::string url = SrmpUrlOf(ack.destination_queue);
        Transfer t;
        t.batch = &b;
        t.index = i;
        if (!Post(url, EncodeReceipt(ReceiptOfAck(ack, url)), std::move(t))) {
          b.answered++;  // libcurl could not take it: it goes back, to be tried again
          b.failure = "libcurl could not take the POST";
        }
      }
    }
  }

  // Ends the outbox's batches whose receipts are all answered.
  Status FinishOutbox() {
    for (size_t i = 0; i < outbox_.size();) {
      OutboxBatch& b = *outbox_[i];
      if (b.answered < b.ended.size()) {
        ++i;
        continue;
      }
      Failure why = Failure::Because(b.failure);
      MQ_RETURN_IF_ERROR(store_.FinishEach(*b.lease, b.ended, RetryDelay{}, nullptr, &why));
      outbox_.erase(outbox_.begin() + static_cast<std::ptrdiff_t>(i));
      look_outbox_ = true;  // more may wait
    }
    return {};
  }

  // At the end: the outbox's batches go back, as they are, for the next serve.
  void ReleaseOutbox() {
    for (auto& b : outbox_) {
      Status s = store_.Release(*b->lease);
      if (!s.ok() && o_.note)
        o_.note("could not return receipts to system;receipts: " + s.text() +
                " (the next serve takes them back)");
    }
    outbox_.clear();
  }

  // Starts posting `doc` to `url` (text/xml, as MSMQ posts its receipts); false if libcurl
  // could not take it.
  bool Post(const std::string& url, const std::string& doc, Transfer t) {
    CURL* easy = Api().curl_easy_init();
    if (!easy) return false;
    for (const char* h : {"Content-Type: text/xml; charset=UTF-8", "SOAPAction: \"MSMQMessage\"",
                          "Proxy-Accept: NonInteractiveClient", "Expect:"})
      t.headers = Api().curl_slist_append(t.headers, h);
    Api().curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    Api().curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    Api().curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(doc.size()));
    Api().curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, doc.c_str());
    Api().curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t.headers);
    Api().curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    Api().curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30'000L);
    Api().curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Endpoint::Discard);
    Api().curl_easy_setopt(easy, CURLOPT_USERAGENT, "mq-admin serve");
    Api().curl_multi_add_handle(multi_, easy);
    transfers_.emplace(easy, std::move(t));
    return true;
  }

  static size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

  Status FinishReceipts() {
    int running = 0;
    Api().curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* m = Api().curl_multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      CURL* easy = m->easy_handle;
      long code = 0;
      Api().curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
      auto found = transfers_.find(easy);
      if (found != transfers_.end() && found->second.batch) {
        OutboxBatch& b = *found->second.batch;
        size_t i = found->second.index;
        bool ok = m->data.result == CURLE_OK && code >= 200 && code < 300;
        bool refused = m->data.result == CURLE_OK && code >= 400 && code < 500;
        std::string url = SrmpUrlOf(b.lease->messages()[i].destination_queue);
        b.answered++;
        if (ok || refused) {
          b.ended[i] = true;
          if (ok) stats_.receipts_sent++;
          failing_.erase(url);
          if (refused && o_.note)
            o_.note(fmt::format("the receipt to {} was refused (HTTP {}): dropped", url, code));
        } else {
          b.failure =
              fmt::format("POST to {}: {}", url,
                          m->data.result != CURLE_OK ? Api().curl_easy_strerror(m->data.result)
                                                     : fmt::format("HTTP {}", code));
          if (o_.note && failing_.insert(url).second)
            o_.note(fmt::format("receipts to {} failed: {} (they wait in system;receipts and are "
                                "tried again, less and less often)",
                                url, b.failure.substr(b.failure.find(": ") + 2)));
        }
        Api().curl_slist_free_all(found->second.headers);
        transfers_.erase(found);
      } else if (found != transfers_.end()) {
        StreamState& st = streams_[found->second.stream];
        st.in_flight = false;
        bool ok = m->data.result == CURLE_OK && code >= 200 && code < 300;
        if (ok) {
          stats_.receipts_sent++;
        } else {
          std::string why = m->data.result != CURLE_OK ? Api().curl_easy_strerror(m->data.result)
                                                       : fmt::format("HTTP {}", code);
          if (o_.note)
            o_.note(fmt::format("stream {}: the receipt of ordinal {} to {} failed: {} (again "
                                "in {}s)",
                                found->second.stream, found->second.last, st.to, why,
                                kReceiptRetryMs / 1000));
          if (!st.due) st.due = MonotonicMs() + kReceiptRetryMs;
        }
        Api().curl_slist_free_all(found->second.headers);
        transfers_.erase(found);
      }
      Api().curl_multi_remove_handle(multi_, easy);
      Api().curl_easy_cleanup(easy);
    }
    return FinishOutbox();
  }

  Store& store_;
  const HttpServeOptions& o_;
  HttpServeStats& stats_;
  std::vector<MHD_Daemon*> daemons_;
  std::vector<Request*> pending_;
  std::vector<Request*> held_;  // stream messages after a gap, waiting for it (kGapHoldMs)
  std::string last_log_;
  bool resumed_ = false;
  CURLM* multi_ = nullptr;
  std::map<CURL*, Transfer> transfers_;
  std::map<std::string, StreamState> streams_;
  uint64_t receipt_counter_ = 0;
  std::unique_ptr<Doorbell> receipts_bell_;  // of system;receipts
  std::vector<std::unique_ptr<OutboxBatch>> outbox_;
  bool look_outbox_ = true;
  int64_t outbox_due_ = 0;         // wall-clock ms when a receipt's retry delay ends (0: none)
  bool told_inactive_ = false;     // that system;receipts is disabled
  std::set<std::string> failing_;  // URLs whose receipts fail, told about once
};

}  // namespace

Result<std::vector<int>> ListenTcp(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArg(
        fmt::format("'{}' is not ADDR:PORT (such as 127.0.0.1:8080 or :8080)", address));
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto num = ParseNumber(port, 0, 65535, "the port");
  if (!num.ok() || *num != static_cast<int>(*num))
    return Status::InvalidArg(
        fmt::format("'{}': the port must be a number from 0 to 65535", address));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Status::InvalidArg(fmt::format("'{}': {}", address, gai_strerror(rc)));
  std::vector<int> fds;
  Status err;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = ErrnoStatus(errno, address, "cannot make a socket");
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      err = ErrnoStatus(errno, address, "cannot listen");
      ::close(fd);
      continue;
    }
    fds.push_back(fd);
  }
  ::freeaddrinfo(res);
  if (fds.empty()) return err.ok() ? Status::InvalidArg(address + ": no address") : err;
  return fds;
}

Result<std::vector<int>> SystemdListenFds() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* n = std::getenv("LISTEN_FDS");
  std::vector<int> fds;
  if (!pid || !n || std::strtol(pid, nullptr, 10) != ::getpid()) return fds;
  long count = std::strtol(n, nullptr, 10);
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (count < 1 || count > 64)
    return Status::InvalidArg(fmt::format("LISTEN_FDS={} is not a number of sockets", n));
  for (int fd = 3; fd < 3 + count; ++fd) {
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM ||
        (len = sizeof listening,
         ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) ||
        !listening)
      return Status::InvalidArg(
          fmt::format("descriptor {} from systemd (LISTEN_FDS) is not a listening stream socket",
                      fd));
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    fds.push_back(fd);
  }
  return fds;
}

std::string SocketName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return ss.ss_family == AF_INET6 ? fmt::format("[{}]:{}", host, serv)
                                  : fmt::format("{}:{}", host, serv);
}

Status ServeHttp(Store& store, const HttpServeOptions& options, HttpServeStats* stats) {
  HttpServeStats local;
  Endpoint e(store, options, stats ? *stats : local);
  return e.Run();
}

}  // namespace mq::link
