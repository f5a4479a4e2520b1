// http_forward.cpp: the forward engine of an HTTP link (http_forward.hpp has the rules).
#include "link/http_forward.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/fd.hpp"
#include "base/units.hpp"
#include "link/http_api.hpp"
#include "proc/backoff.hpp"
#include "wire/srmp.hpp"

namespace mq::link {

namespace {

// "http://host:8080/msmq" of a receipts URL "http://host:8080/msmq/private$/order_queue$":
// the machine that this store's queues are reached at, in MsmqBaseUrl's form. Empty if the
// URL has no /msmq.
std::string MsmqBaseOf(std::string_view url) {
  size_t scheme = url.find("://");
  size_t path = url.find('/', scheme == std::string_view::npos ? 0 : scheme + 3);
  if (path == std::string_view::npos || (path + 5 < url.size() && url[path + 5] != '/')) return {};
  auto base = MsmqBaseUrl(url.substr(0, path + 5));
  return base.ok() ? *base : std::string();
}

class HttpForward {
 public:
  HttpForward(Store& store, const LinkInfo& link, const ForwardOptions& o,
              const proc::StopSignal& stop, const NoteFn& note)
      : store_(store),
        link_(link),
        o_(o),
        stop_(stop),
        note_(note),
        backoff_(o.follow ? proc::Backoff::kNever : o.retry_ms) {}

  ~HttpForward() {
    for (auto& t : transfers_) {
      if (!t.easy) continue;
      if (t.active) Api().curl_multi_remove_handle(multi_, t.easy);
      Api().curl_easy_cleanup(t.easy);
      Api().curl_slist_free_all(t.headers);
    }
    if (multi_) Api().curl_multi_cleanup(multi_);
    ReleaseAll();
  }

  Status Run() {
    MQ_RETURN_IF_ERROR(Api().status);
    out_ref_ = QueueRef{std::string(kOutgoingBase), link_.name};
    auto st = store_.StatQueue(out_ref_);
    if (!st.ok()) return st.status();
    stream_ = fmt::format("uid:{}\\{}", FormatGuid(store_.guid()), st->info.id);
    receipts_base_ = MsmqBaseOf(link_.receipts_url);
    multi_ = Api().curl_multi_init();
    if (!multi_) return Status::InsufficientResources("cannot make a libcurl multi handle");
    unsigned conns = std::max(1u, o_.connections);
    Api().curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(conns));
    Api().curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(conns));
    transfers_.resize(conns);
    // libcurl's sockets are watched here, with epoll (its multi_socket API): a wake costs
    // what woke, where curl_multi_poll looked at every connection each time (with 64
    // connections, a third of forward's CPU went to poll).
    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (epoll_.get() < 0) return ErrnoStatus(errno, "epoll", "cannot make an epoll descriptor");
    events_.resize(conns + 1);
    Api().curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &HttpForward::OnSocket);
    Api().curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    Api().curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &HttpForward::OnTimer);
    Api().curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    epoll_event se{};
    se.events = EPOLLIN;
    se.data.fd = stop_.fd();
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, stop_.fd(), &se) != 0)
      return ErrnoStatus(errno, "epoll", "cannot watch the stop pipe");
    stop_watched_ = true;
    (void)store_.NoteLink(link_.name, LinkEvent{LinkEvent::kConnected, link_.url, ""});
    MQ_RETURN_IF_ERROR(ReadReceipted());
    std::unique_ptr<Doorbell> bell;
    if (o_.follow) {
      auto b = store_.ArmDoorbell(out_ref_);
      if (!b.ok()) return b.status();
      bell = std::move(*b);
    }
    bool drained = false;  // the queue had nothing more to Lock
    int64_t last_receipt_check = MonotonicMs();
    for (;;) {
      bool stopping = stop_.Requested();
      int64_t now = MonotonicMs();
      // Lock more while the window has room.
      if (!stopping && now >= pause_until_) {
        for (;;) {
          auto more = LockMore();
          if (!more.ok()) return Fail(more.status());
          if (!*more) break;
        }
        drained = !locked_more_;
      }
      if (!stopping && now >= pause_until_) MQ_RETURN_IF_ERROR(StartPosts(now));
      DriveCurl();
      Status done = TakeAnswers();
      if (!done.ok()) return Fail(done);
      if (awaiting_ > 0 && MonotonicMs() - last_receipt_check >= kReceiptPollMs) {
        last_receipt_check = MonotonicMs();
        MQ_RETURN_IF_ERROR(ReadReceipted());
      }
      Status fin = FinishDone();
      if (!fin.ok()) return Fail(fin);
      if (!failure_.ok() && !o_.follow && backoff_.Failed(MonotonicMs()))
        return Fail(o_.retry_ms > 0 ? Status(failure_.code(),
                                             fmt::format("{} (gave up after {})", failure_.text(),
                                                         FormatDuration(o_.retry_ms)),
                                             link_.name)
                                    : failure_);
      bool idle = batches_.empty() && active_ == 0;
      if (stopping && active_ == 0) {
        ReleaseAll();
        (void)store_.NoteLink(link_.name, LinkEvent{LinkEvent::kDisconnected, "", ""});
        return {};
      }
      if (idle && drained && !o_.follow) {
        (void)store_.NoteLink(link_.name, LinkEvent{LinkEvent::kDisconnected, "", ""});
        return {};
      }
      if (idle && o_.follow) {
        auto deadline = store_.NextDeadline(out_ref_);
        auto wake = bell->Wait(deadline.ok() ? *deadline : 0, MonotonicMs() + 1000, stop_.fd());
        if (!wake.ok()) return Fail(wake.status());
        continue;
      }
      // Wait for answers, a stop, the next receipt poll or resend, or the end of a pause.
      int64_t wait = 1000;
      if (awaiting_ > 0) wait = std::min<int64_t>(wait, kReceiptPollMs);
      if (pause_until_ > MonotonicMs()) wait = std::min(wait, pause_until_ - MonotonicMs());
      if (active_ < transfers_.size() && HasWork() && MonotonicMs() >= pause_until_) wait = 0;
      if (curl_due_ >= 0) wait = std::min(wait, curl_due_ - MonotonicMs());
      if (stopping && stop_watched_) {
        // The stop pipe stays readable: no longer watched, or every wait would end at once.
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, stop_.fd(), nullptr);
        stop_watched_ = false;
      }
      int n = ::epoll_wait(epoll_.get(), events_.data(), static_cast<int>(events_.size()),
                           static_cast<int>(std::max<int64_t>(0, wait)));
      if (n < 0 && errno != EINTR) return Fail(ErrnoStatus(errno, "epoll", "wait failed"));
      ready_ = std::max(n, 0);
    }
  }

 private:
  static constexpr int64_t kReceiptPollMs = 100;
  static constexpr size_t kBatch = 1000;

  enum class State { kNew, kPosting, kPosted, kDone };
  struct Item {
    State state = State::kNew;
    uint16_t outcome = 0;  // kDone: 0 stored there, else the NACK class
    bool tx = false;
    uint64_t previous = 0;  // a transactional message's <previous>, fixed at its first POST
    int64_t posted_at = 0;  // kPosted: when its POST was answered
  };
  struct Batch {
    std::unique_ptr<Lease> lease;
    std::vector<Item> items;
    size_t done = 0;
  };
  struct Transfer {
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    bool active = false;
    std::string doc;     // what it posts (the document after its Content-Type line)
    std::string answer;  // the first bytes of the answer's body (a refusal's reason)
    std::string url;     // what CURLOPT_URL holds
    std::string content_type;  // the Content-Type line of `headers`
    Batch* batch = nullptr;
    size_t index = 0;
  };

  void Note(ForwardNote::Kind kind, std::string text) {
    if (note_) note_(ForwardNote{kind, std::move(text)});
  }

  Status Fail(Status s) {
    s = s.WithSubject(link_.name);
    (void)store_.NoteLink(link_.name, LinkEvent{LinkEvent::kError, "", s.text()});
    return s;
  }

  void ReleaseAll() {
    while (!batches_.empty()) {
      Status s = store_.Release(*batches_.back()->lease);
      if (!s.ok())
        Note(ForwardNote::kReleaseFailed,
             "could not return a batch: " + s.text() + " (the next forward takes it back)");
      batches_.pop_back();
    }
    inflight_ = 0;
    to_post_.clear();
  }

  Status ReadReceipted() {
    auto l = store_.GetLink(link_.name);
    if (!l.ok()) return l.status();
    if (l->receipted_stream == stream_) receipted_ = std::max(receipted_, l->receipted);
    return {};
  }

  // Locks the next batch if the window has room: false when it has none or the queue has no
  // more (locked_more_ says which).
  Result<bool> LockMore() {
    locked_more_ = true;
    if (inflight_ >= o_.window) return false;
    Selection sel;
    sel.limit = std::max<uint64_t>(1, std::min<uint64_t>(kBatch, o_.window - inflight_));
    LockOptions lo;
    lo.count_delivery = false;  // a mover is not a reader
    auto lease = store_.Lock(out_ref_, sel, ReadOptions{}, lo, nullptr);
    if (!lease.ok()) {
      if (lease.status().code() == Code::kMessageNotFound) {
        locked_more_ = false;
        return false;
      }
      return lease.status();
    }
    // A batch ends as a whole: one of transactional messages waits for a stream receipt,
    // so that the others are not kept waiting with it, a batch holds one kind. When the
    // head of the queue changes kind inside it, it is returned and its first run Locked.
    LeaseMessages got = (*lease)->messages();
    size_t run = 1;
    while (run < got.size() && got[run].xact_id.empty() == got[0].xact_id.empty()) ++run;
    if (run < got.size()) {
      MQ_RETURN_IF_ERROR(store_.Release(**lease));
      sel.limit = run;
      lease = store_.Lock(out_ref_, sel, ReadOptions{}, lo, nullptr);
      if (!lease.ok()) return lease.status();
    }
    Batch& b = *batches_.emplace_back(std::make_unique<Batch>());
    b.lease = std::move(*lease);
    b.items.resize(b.lease->messages().size());
    for (size_t i = 0; i < b.items.size(); ++i) {
      const Message& m = b.lease->messages()[i];
      b.items[i].tx = !m.xact_id.empty();
      // Covered by a receipt already (posted by an earlier session): ends without a POST.
      if (b.items[i].tx && m.lookup_id <= receipted_) {
        b.items[i].state = State::kDone;
        b.done++;
      } else {
        to_post_.emplace_back(&b, i);
      }
    }
    inflight_ += b.items.size();
    return true;
  }

  // Whether a message waits for a POST.
  bool HasWork() const { return !to_post_.empty(); }

  // Transactional messages posted `timeout_ms` ago that no receipt covers yet: posted again.
  void QueueResends(int64_t now) {
    if (awaiting_ == 0 || now < next_resend_scan_) return;
    next_resend_scan_ = now + std::min<int64_t>(1000, std::max<int64_t>(1, o_.timeout_ms / 4));
    for (auto& b : batches_)
      for (size_t i = 0; i < b->items.size(); ++i) {
        Item& it = b->items[i];
        if (it.state == State::kPosted && now - it.posted_at >= o_.timeout_ms) {
          it.state = State::kNew;
          awaiting_--;
          to_post_.emplace_back(b.get(), i);
        }
      }
  }

  // The ordinal a transactional message at (batch, index) follows: the one before it in
  // out;LINK that was not refused, else the last receipted.
  uint64_t PreviousOf(const Batch* at, size_t index) const {
    size_t bi = 0;
    while (bi < batches_.size() && batches_[bi].get() != at) ++bi;
    for (size_t b = bi + 1; b-- > 0;) {
      const Batch& batch = *batches_[b];
      for (size_t i = (b == bi ? index : batch.items.size()); i-- > 0;) {
        const Item& it = batch.items[i];
        if (it.tx && !(it.state == State::kDone && it.outcome))
          return batch.lease->messages()[i].lookup_id;
      }
    }
    return receipted_;
  }

  Status StartPosts(int64_t now) {
    QueueResends(now);
    size_t free_slot = 0;
    while (!to_post_.empty()) {
      auto [b, i] = to_post_.front();
      Item& it = b->items[i];
      if (it.state != State::kNew) {
        to_post_.pop_front();
        continue;
      }
      while (free_slot < transfers_.size() && transfers_[free_slot].active) ++free_slot;
      if (free_slot == transfers_.size()) return {};
      to_post_.pop_front();
      if (it.tx) {
        uint64_t prev = PreviousOf(b, i);
        if (!it.posted_at || prev < it.previous) it.previous = prev;
      }
      MQ_RETURN_IF_ERROR(Post(transfers_[free_slot], *b, i));
      it.state = State::kPosting;
    }
    return {};
  }

  // libcurl says which of its sockets to watch for what (CURLMOPT_SOCKETFUNCTION). A socket
  // it stops watching (a POST answered: its kept-alive connection goes back to libcurl's pool)
  // stays in the epoll set, so that the next POST on it costs no epoll_ctl; if it wakes while
  // libcurl does not watch it (the far side closed it), it is taken out then (DriveCurl).
  // A socket libcurl closes is forgotten then (OnClose).
  static int OnSocket(CURL*, curl_socket_t fd, int what, void* self_p, void*) {
    auto* self = static_cast<HttpForward*>(self_p);
    if (fd < 0) return 0;
    auto at = static_cast<size_t>(fd);
    if (at >= self->sockets_.size()) self->sockets_.resize(at + 1);
    Socket& sock = self->sockets_[at];
    if (what == CURL_POLL_REMOVE) {
      if (sock.in_set) sock.watched = false;
      return 0;
    }
    uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    epoll_event e{};
    e.events = events;
    e.data.fd = fd;
    int ep = self->epoll_.get();
    if (!sock.in_set) {
      if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0 && errno == EEXIST)
        ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
    } else if (sock.events != events) {
      if (::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e) != 0 && errno == ENOENT)
        ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    }
    sock = Socket{true, true, events};
    return 0;
  }

  // libcurl closes a socket (CURLOPT_CLOSESOCKETFUNCTION): it leaves the epoll set with its
  // close, and its number, made again for a new connection, must be added again.
  static int OnClose(void* self_p, curl_socket_t fd) {
    auto* self = static_cast<HttpForward*>(self_p);
    if (fd >= 0 && static_cast<size_t>(fd) < self->sockets_.size())
      self->sockets_[static_cast<size_t>(fd)] = Socket{};
    return ::close(fd);
  }

  // libcurl's one timer (CURLMOPT_TIMERFUNCTION): -1 none, else due in `ms`.
  static int OnTimer(CURLM*, long ms, void* self) {
    static_cast<HttpForward*>(self)->curl_due_ = ms < 0 ? -1 : MonotonicMs() + ms;
    return 0;
  }

  // Lets libcurl act on the sockets the last wait found ready, then on its timer if due.
  void DriveCurl() {
    int running = 0;
    for (int i = 0; i < ready_; ++i) {
      const epoll_event& e = events_[static_cast<size_t>(i)];
      if (e.data.fd == stop_.fd()) continue;
      auto at = static_cast<size_t>(e.data.fd);
      if (at < sockets_.size() && sockets_[at].in_set && !sockets_[at].watched) {
        // A pooled connection woke (closed by the far side, most likely): libcurl finds it
        // dead when it next looks; it is no longer watched here.
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, e.data.fd, nullptr);
        sockets_[at].in_set = false;
        continue;
      }
      int mask = (e.events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                 (e.events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                 (e.events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
      Api().curl_multi_socket_action(multi_, e.data.fd, mask, &running);
    }
    ready_ = 0;
    if (curl_due_ >= 0 && curl_due_ <= MonotonicMs()) {
      curl_due_ = -1;
      Api().curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }

  static size_t Collect(char* data, size_t size, size_t n, void* user) {
    auto* s = static_cast<std::string*>(user);
    if (s->size() < 300) s->append(data, std::min(size * n, 300 - s->size()));
    return size * n;
  }

  Status Post(Transfer& t, Batch& b, size_t index) {
    const Message& m = b.lease->messages()[index];
    const Item& it = b.items[index];
    Message copy = m;
    copy.destination_queue = fmt::format("DIRECT={}/private$/{}", link_.url, m.destination_queue);
    auto local = [](const std::string& q) {
      return !q.empty() && q.find(':') == std::string::npos && q.find('=') == std::string::npos;
    };
    if (!receipts_base_.empty())
      for (std::string* q : {&copy.response_queue, &copy.admin_queue})
        if (local(*q)) *q = fmt::format("DIRECT={}/private$/{}", receipts_base_, *q);
    std::string url = SrmpUrlOf(copy.destination_queue);
    t.doc.clear();
    uint16_t cls = m.msg_class;
    if (HasSrmpReceipt(cls)) {
      // An acknowledgement for a message that came from that machine: MSMQ's receipt of it
      // ([MC-MQSRM] 2.2.6.2, 2.2.6.3), to the admin queue it names.
      t.doc = "Content-Type: text/xml; charset=utf-8\r\n\r\n" + EncodeReceipt(ReceiptOfAck(m, url));
    } else if (it.tx) {
      if (link_.receipts_url.empty())
        return Status::LinkFailed(
            fmt::format("a transactional message ends only when the far side's stream receipt "
                        "comes back, and the link has no --receipts-url to say where: mq-admin "
                        "link set {} --receipts-url http://THIS-HOST:PORT/msmq/private$/"
                        "order_queue$ (with mq-admin serve --http there)",
                        link_.name),
            link_.name);
      SrmpStream s;
      s.stream_id = stream_;
      s.current = m.lookup_id;
      s.previous = it.previous;
      s.previous_given = it.previous + 1 != m.lookup_id;
      s.receipt_request = true;
      if (!started_ || it.previous == 0) s.send_receipts_to = link_.receipts_url;
      started_ = true;
      AppendSrmp(t.doc, copy, &s, false);
    } else {
      copy.tx_sequence_number = 0;  // no <Stream> of its own either
      AppendSrmp(t.doc, copy, nullptr, false);
    }
    // The document's first line is its Content-Type header; the rest is the body.
    size_t eol = t.doc.find("\r\n");
    std::string content_type = t.doc.substr(0, eol);
    size_t body = t.doc.find("\r\n\r\n");
    body = body == std::string::npos ? t.doc.size() : body + 4;
    if (!t.easy) {
      // What every POST of this handle shares is set once: a POST's own work is its URL and
      // headers when they change (rarely: one link, one boundary), and its document.
      t.easy = Api().curl_easy_init();
      if (!t.easy) return Status::InsufficientResources("cannot make a libcurl handle");
      CURL* e = t.easy;
      Api().curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &HttpForward::OnClose);
      Api().curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);
      Api().curl_easy_setopt(e, CURLOPT_PRIVATE, static_cast<void*>(&t));
      Api().curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
      Api().curl_easy_setopt(e, CURLOPT_POST, 1L);
      Api().curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
      Api().curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.timeout_ms));
      Api().curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o_.timeout_ms));
      Api().curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &HttpForward::Collect);
      Api().curl_easy_setopt(e, CURLOPT_WRITEDATA, &t.answer);
      Api().curl_easy_setopt(e, CURLOPT_USERAGENT, "mq-admin forward");
      if (!o_.ca_file.empty()) Api().curl_easy_setopt(e, CURLOPT_CAINFO, o_.ca_file.c_str());
    }
    CURL* e = t.easy;
    if (content_type != t.content_type || !t.headers) {
      if (t.headers) Api().curl_slist_free_all(t.headers);
      t.headers = nullptr;
      for (const std::string& h :
           {content_type, std::string("SOAPAction: \"MSMQMessage\""),
            std::string("Proxy-Accept: NonInteractiveClient"), std::string("Expect:")})
        t.headers = Api().curl_slist_append(t.headers, h.c_str());
      Api().curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
      t.content_type = std::move(content_type);
    }
    if (url != t.url) {
      Api().curl_easy_setopt(e, CURLOPT_URL, url.c_str());
      t.url = std::move(url);
    }
    Api().curl_easy_setopt(e, CURLOPT_POSTFIELDS, t.doc.data() + body);
    Api().curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                           static_cast<curl_off_t>(t.doc.size() - body));
    t.answer.clear();
    t.batch = &b;
    t.index = index;
    t.active = true;
    active_++;
    if (Api().curl_multi_add_handle(multi_, e) != CURLM_OK)
      return Status::InsufficientResources("libcurl could not take a POST");
    return {};
  }

  // The answers of POSTs that ended.
  Status TakeAnswers() {
    int left = 0;
    while (CURLMsg* msg = Api().curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      char* priv = nullptr;  // CURLOPT_PRIVATE: its Transfer
      Api().curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      auto* t = reinterpret_cast<Transfer*>(priv);
      if (!t) continue;
      CURLcode rc = msg->data.result;
      Api().curl_multi_remove_handle(multi_, t->easy);
      t->active = false;
      active_--;
      Item& it = t->batch->items[t->index];
      const Message& m = t->batch->lease->messages()[t->index];
      long code = 0;
      if (rc == CURLE_OK) Api().curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
      std::string reason = t->answer;
      while (!reason.empty() && std::isspace(static_cast<unsigned char>(reason.back())))
        reason.pop_back();
      if (rc == CURLE_OK && code >= 200 && code < 300) {
        if (it.tx) {
          it.state = State::kPosted;
          it.posted_at = MonotonicMs();
          awaiting_++;
          if (m.lookup_id <= receipted_) Done(*t->batch, it, 0);
        } else {
          Done(*t->batch, it, 0);
        }
        Progress();
      } else if (rc == CURLE_OK && code == 400) {
        // The far side refuses it for good: MSMQ's sender dead-letters it.
        Note(ForwardNote::kRetrying,
             fmt::format("the far side refused message {} (HTTP 400{}): NACK_BAD_DST_Q",
                         FormatMessageId(m.id), reason.empty() ? "" : ": " + PeerText(reason)));
        Done(*t->batch, it, kClassNackBadDstQ);
        Progress();
      } else {
        it.state = State::kNew;
        to_post_.emplace_front(t->batch, t->index);
        std::string why =
            rc != CURLE_OK
                ? fmt::format("cannot post to {}: {}", link_.url, Api().curl_easy_strerror(rc))
                : fmt::format("{} answered HTTP {}{}", link_.url, code,
                              reason.empty() ? "" : ": " + PeerText(reason));
        Failure(Status::LinkFailed(why, link_.name));
      }
    }
    return {};
  }

  void Done(Batch& b, Item& it, uint16_t outcome) {
    if (it.state == State::kPosted) awaiting_--;
    it.state = State::kDone;
    it.outcome = outcome;
    b.done++;
  }

  void Progress() {
    if (!failure_.ok()) {
      failure_ = Status();
      last_noted_.clear();
    }
    backoff_.Progress();
  }

  // A POST failed: the next wait a backoff's delay (posting pauses), said once per new text.
  void Failure(Status s) {
    failure_ = s;
    // No retry left (--once, --retry spent): Run gives up with it, nothing to say first.
    if (backoff_.Failed(MonotonicMs()) && !o_.follow) return;
    int64_t delay = backoff_.Next();
    pause_until_ = MonotonicMs() + delay;
    (void)store_.NoteLink(link_.name, LinkEvent{LinkEvent::kError, "", s.text()});
    if (s.text() != last_noted_)
      Note(ForwardNote::kRetrying,
           fmt::format("{}; retrying in {}", s.text(), FormatDuration(delay)));
    last_noted_ = s.text();
  }

  // Ends the batches all of whose messages are done, or covered by a receipt.
  Status FinishDone() {
    std::vector<Lease*> done;
    std::vector<std::vector<uint16_t>> outcomes;
    // The messages a receipt covers are looked for only when a new one has come: a look is
    // O(window), and this runs at every turn of the loop.
    bool covered = awaiting_ > 0 && receipted_ > swept_receipted_;
    swept_receipted_ = receipted_;
    for (auto& bp : batches_) {
      Batch& b = *bp;
      for (size_t i = 0; covered && i < b.items.size() && awaiting_ > 0; ++i) {
        Item& it = b.items[i];
        if (it.state == State::kPosted && b.lease->messages()[i].lookup_id <= receipted_)
          Done(b, it, 0);
      }
      if (b.done < b.items.size()) continue;
      done.push_back(b.lease.get());
      std::vector<uint16_t>& o = outcomes.emplace_back();
      for (const Item& it : b.items) o.push_back(it.outcome);
    }
    if (done.empty()) return {};
    MQ_RETURN_IF_ERROR(store_.FinishForwarded(done, outcomes, link_.name));
    std::erase_if(to_post_, [&](const std::pair<Batch*, size_t>& t) {
      return std::find(done.begin(), done.end(), t.first->lease.get()) != done.end();
    });
    std::erase_if(batches_, [&](const std::unique_ptr<Batch>& b) {
      bool gone = std::find(done.begin(), done.end(), b->lease.get()) != done.end();
      if (gone) inflight_ -= b->items.size();
      return gone;
    });
    return {};
  }

  Store& store_;
  const LinkInfo& link_;
  const ForwardOptions& o_;
  const proc::StopSignal& stop_;
  const NoteFn& note_;
  proc::Backoff backoff_;
  QueueRef out_ref_;
  std::string stream_;
  std::string receipts_base_;
  CURLM* multi_ = nullptr;
  Fd epoll_;
  struct Socket {
    bool in_set = false;   // in epoll_'s set
    bool watched = false;  // libcurl watches it (else it is a pooled connection)
    uint32_t events = 0;   // what it is in the set for
  };
  std::vector<Socket> sockets_;  // by descriptor
  std::vector<epoll_event> events_;
  int ready_ = 0;          // events_ the last wait found
  int64_t curl_due_ = -1;  // libcurl's timer: monotonic ms, -1 none
  bool stop_watched_ = false;
  std::vector<Transfer> transfers_;
  size_t active_ = 0;
  std::vector<std::unique_ptr<Batch>> batches_;
  std::deque<std::pair<Batch*, size_t>> to_post_;  // messages to post, in this order
  int64_t next_resend_scan_ = 0;
  uint64_t inflight_ = 0;
  uint64_t awaiting_ = 0;  // transactional messages posted, waiting for a receipt
  uint64_t receipted_ = 0;
  uint64_t swept_receipted_ = 0;  // receipted_ when FinishDone last ended what it covers
  bool started_ = false;  // a stream message was posted in this session
  bool locked_more_ = true;
  Status failure_;  // the last POST's failure, until one succeeds
  int64_t pause_until_ = 0;
  std::string last_noted_;
};

}  // namespace

Status ForwardHttp(Store& store, const LinkInfo& link, const ForwardOptions& options,
                   const proc::StopSignal& stop, const NoteFn& note) {
  HttpForward f(store, link, options, stop, note);
  return f.Run();
}

}  // namespace mq::link
