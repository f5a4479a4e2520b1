// forward.cpp: the forward engine (forward.hpp has the session).
#include "link/forward.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/units.hpp"
#include "link/http_forward.hpp"
#include "link/outgoing.hpp"
#include "proc/backoff.hpp"
#include "store/filelock.hpp"
#include "wire/transfer.hpp"

namespace mq::link {

namespace {

using transfer::Frame;
using transfer::Type;

// forward encodes more only while less than this waits to be written: enough to keep the
// pipe full, little enough that acknowledgements are read between batches.
constexpr size_t kOutgoingBytes = 1 << 20;

Status LinkError(std::string text, const std::string& link) {
  return Status::LinkFailed(std::move(text), link);
}

// A session failed: permanent failures (wrong peer, same store, wrong version) are not worth
// retrying with --once.
struct SessionError {
  Status status;
  bool permanent = false;
};

}  // namespace

class Forwarder::Impl {
 public:
  Impl(Store& store, ForwardOptions options, const proc::StopSignal& stop, NoteFn note,
       Connector* connector)
      : store_(store), opts_(std::move(options)), stop_(stop), note_(std::move(note)),
        connector_(connector) {}

  // The link's command runs as this process: only if it was last set by this account or by
  // the store's owner, so that a member of a group store cannot make the owner's service (or
  // root) run code of its choosing (mq(7) "Group stores").
  Status MayRunCommand() const {
    uid_t me = ::geteuid();
    uid_t owner = store_.owner_uid();
    if (link_.via_uid < 0) {
      if (!store_.group_store()) return {};  // only its owner could have set it
      return Status::AccessDenied(
          fmt::format("the link's command was set before mq recorded who sets it, and any "
                      "member of this group store could have: the store's owner must set it "
                      "again (mq-admin link set {} --via ...)",
                      opts_.link),
          opts_.link);
    }
    uid_t by = static_cast<uid_t>(link_.via_uid);
    if (by == me || by == owner) return {};
    return Status::AccessDenied(
        fmt::format("the link's command was last set by uid {}, neither this account (uid {}) "
                    "nor the store's owner (uid {}): refusing to run it (the owner can set it "
                    "again: mq-admin link set {} --via ...)",
                    by, me, owner, opts_.link),
        opts_.link);
  }

  Status Run() {
    auto link = store_.GetLink(opts_.link);
    if (!link.ok()) return link.status();
    link_ = std::move(*link);
    auto lock = store_.LockLink(opts_.link);
    if (!lock.ok()) return lock.status();
    lock_ = std::move(*lock);
    if (!link_.url.empty()) return ForwardHttp(store_, link_, opts_, stop_, note_);
    if (!connector_) {
      MQ_RETURN_IF_ERROR(MayRunCommand());
      own_connector_ = std::make_unique<CommandConnector>(link_.via);
      connector_ = own_connector_.get();
    }
    out_ref_.base = "out";
    out_ref_.sub = opts_.link;

    proc::Backoff backoff(opts_.retry_ms);
    for (;;) {
      if (stop_.Requested()) return {};
      auto st = store_.StatQueue(out_ref_);
      if (!st.ok()) {
        if (st.status().code() != Code::kQueueNotFound) return st.status();
        if (!opts_.follow) return {};  // nothing was ever sent through the link
      } else {
        stream_ = fmt::format("uid:{}\\{}", FormatGuid(store_.guid()), st->info.id);
        if (!opts_.follow && st->info.count == 0) return {};
      }
      if (!st.ok()) {
        if (stop_.SleepFor(1000)) return {};
        continue;
      }
      SessionError e = Session();
      if (e.status.ok()) return {};  // done (--once) or stopped
      Status shown = e.status.WithSubject(opts_.link);
      (void)store_.NoteLink(opts_.link, LinkEvent{LinkEvent::kError, "", shown.text()});
      if (progressed_) backoff.Progress();
      bool spent = backoff.Failed(MonotonicMs());
      if (!opts_.follow && (e.permanent || spent)) {
        if (!e.permanent && opts_.retry_ms > 0)
          return Status(shown.code(),
                        fmt::format("{} (gave up after {})", shown.text(),
                                    FormatDuration(opts_.retry_ms)),
                        shown.subject());
        return shown;
      }
      int64_t delay = backoff.Next();
      // The same failure again is said once, not on every retry.
      if (shown.text() != last_noted_)
        Note(ForwardNote::kRetrying,
             fmt::format("{}; retrying in {}", shown.text(), FormatDuration(delay)));
      last_noted_ = shown.text();
      if (stop_.SleepFor(delay)) return {};
    }
  }

 private:
  struct Batch {
    std::unique_ptr<Lease> lease;
    uint64_t max_seq = 0;  // of its last message
    size_t encoded = 0;    // its first messages framed so far
  };
  // Whether the last batch Locked has messages not yet framed.
  bool Unencoded() const {
    return !inflight_.empty() &&
           inflight_.back().encoded < inflight_.back().lease->messages().size();
  }

  void Note(ForwardNote::Kind kind, std::string text) {
    if (note_) note_(ForwardNote{kind, std::move(text)});
  }

  // Returns every unacknowledged batch to the queue, newest first (each to its place).
  void ReleaseAll() {
    while (!inflight_.empty()) {
      Status s = store_.Release(*inflight_.back().lease);
      if (!s.ok())
        Note(ForwardNote::kReleaseFailed,
             "could not return a batch: " + s.text() + " (the next forward takes it back)");
      inflight_.pop_back();
    }
    inflight_count_ = 0;
  }

  SessionError Fail(Connection& conn, Status s, bool permanent = false) {
    ReleaseAll();
    conn.CloseTo();
    std::string how = conn.Reap(2000);
    if (s.code() == Code::kLinkFailed && s.text().find("the link's command") != std::string::npos)
      s = Status(s.code(), fmt::format("{} ({})", s.text(), how), s.subject());
    conn.Stop();
    return SessionError{s, permanent};
  }

  // Reads what the command wrote; handles its acknowledgements. `eof` when it closed.
  Status Pump(Connection& conn, bool& eof) {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(conn.from(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0) return ErrnoStatus(errno, "link", "read failed");
      if (n == 0) {
        eof = true;
        break;
      }
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    for (;;) {
      auto f = reader_.Next();
      if (!f.ok()) return f.status();
      if (!*f) break;
      Frame& fr = **f;
      if (fr.type == Type::kError)
        return Status::LinkFailed("the far side reported: " + PeerText(fr.payload));
      if (fr.type != Type::kAck)
        return Status::LinkFailed(
            fmt::format("unexpected frame '{}' from the far side", static_cast<char>(fr.type)));
      transfer::Ack ack;
      MQ_RETURN_IF_ERROR(transfer::DecodeAck(fr.payload, ack));
      for (auto [seq, cls] : ack.nacks) nacks_[seq] = cls;
      last_ack_time_ = MonotonicMs();
      // Every batch this acknowledgement covers ends in one transaction.
      std::vector<Lease*> done;
      std::vector<std::vector<uint16_t>> outcomes;
      for (size_t i = 0; i < inflight_.size() && inflight_[i].max_seq <= ack.last; ++i) {
        Lease& lease = *inflight_[i].lease;
        done.push_back(&lease);
        std::vector<uint16_t>& o = outcomes.emplace_back();
        o.reserve(lease.messages().size());
        for (const Message& m : lease.messages()) {
          auto it = nacks_.find(m.lookup_id);
          o.push_back(it == nacks_.end() ? 0 : it->second);
          if (it != nacks_.end()) nacks_.erase(it);
        }
      }
      if (!done.empty()) {
        Status s = store_.FinishForwarded(done, outcomes, opts_.link);
        if (!s.ok()) return s;
        progressed_ = true;
        for (size_t i = 0; i < done.size(); ++i) {
          inflight_count_ -= inflight_.front().lease->messages().size();
          inflight_.pop_front();
        }
      }
    }
    return {};
  }

  // Frames more of the last batch Locked, or Locks the next (unless `lock_more` is false) and
  // frames its first messages; false if there was nothing to frame.
  Result<bool> SendBatch(Connection& conn, bool lock_more) {
    if (!Unencoded()) {
      if (!lock_more) return false;
      Selection sel;
      uint64_t room = opts_.window > inflight_count_ ? opts_.window - inflight_count_ : 0;
      // Batches of up to a quarter of the window (each a Lock and a removal here; accept
      // commits at each flush or when it holds 4000 messages), so that acknowledgements of
      // one come back while the next are on their way; of 1000 at most.
      uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(opts_.window / 4, 1000));
      sel.limit = std::max<uint64_t>(1, std::min(room, per));
      if (mid_tx_) sel.limit = per;  // a transaction is never cut by the window
      LockOptions lo;
      lo.count_delivery = false;  // a mover is not a reader
      auto lease = store_.Lock(out_ref_, sel, ReadOptions{}, lo, nullptr);
      if (!lease.ok()) {
        if (lease.status().code() == Code::kMessageNotFound) return false;
        return lease.status();
      }
      Batch b;
      b.lease = std::move(*lease);
      if (!b.lease->messages().empty()) b.max_seq = b.lease->messages().back().lookup_id;
      inflight_count_ += b.lease->messages().size();
      inflight_.push_back(std::move(b));
    }
    // Framed a part at a time: about what fits below kOutgoingBytes (by the bytes per
    // message of the last part), as what waits to be written is what a change of
    // compression waits for, and so that acknowledgements are read between parts; the first
    // messages of a batch are on their way while the next are framed.
    Batch& b = inflight_.back();
    LeaseMessages msgs = b.lease->messages();
    size_t part = 1000;
    if (frame_bytes_ > 0) {
      size_t room = kOutgoingBytes - std::min(out_.Size(), kOutgoingBytes);
      part = std::min<size_t>(part, std::max<size_t>(16, room / frame_bytes_ + 1));
    }
    size_t end = std::min(msgs.size(), b.encoded + part);
    uint64_t framed_before = out_.framed();
    size_t first = b.encoded;
    Message qualified;
    for (; b.encoded < end; ++b.encoded) {
      const Message& m = msgs[b.encoded];
      // Queues here named through the return link, in a copy: most messages need none.
      const Message* t = &m;
      auto local = [](const std::string& q) {
        return !q.empty() && q.find(':') == std::string::npos;
      };
      if (!link_.return_link.empty() && (local(m.response_queue) || local(m.admin_queue))) {
        qualified = m;
        for (std::string* q : {&qualified.response_queue, &qualified.admin_queue})
          if (local(*q)) *q = link_.return_link + ":" + *q;
        t = &qualified;
      }
      transfer::MessageHeader h;
      h.seq = m.lookup_id;
      h.prev = prev_;
      h.user_msg_seq = ++session_sent_;
      h.recoverable_seq = m.express ? recoverable_sent_ : ++recoverable_sent_;
      h.window = opts_.window;
      payload_.clear();
      transfer::AppendMessage(payload_, h, *t, stream_);
      out_.Put(Type::kMessage, payload_);
      // What the pipe takes now, so that the far side works while this side encodes. A
      // failure shows again at the session's own write.
      if (++encoded_ % 64 == 0) {
        (void)out_.Flush(conn.to());
        auto [plain, compressed] = out_.TakeWritten();
        tuner_.Taken(plain, compressed, MonotonicMs());
        if (out_.blocked()) tuner_.Backlogged(MonotonicMs());
      }
      prev_ = m.lookup_id;
      mid_tx_ = !m.xact_id.empty() && !m.eod_last;
    }
    if (end > first) frame_bytes_ = (out_.framed() - framed_before) / (end - first);
    return true;
  }

  SessionError Session() {
    reader_ = transfer::FrameReader();
    nacks_.clear();
    prev_ = 0;
    mid_tx_ = false;
    session_sent_ = recoverable_sent_ = 0;
    progressed_ = false;
    out_.Reset();
    auto connected = connector_->Connect();
    if (!connected.ok()) return SessionError{connected.status(), true};
    Connection& conn = **connected;
    transfer::Hello h;
    h.source = store_.guid();
    h.stream = stream_;
    h.link = opts_.link;
    h.window = opts_.window;
    if (opts_.compress != Compress::kNever) h.compression = std::string(transfer::kZstd);
    h.reports_errors = true;  // "the far side refused: ...", "the far side reported: ..."
    out_.Put(Type::kHello, transfer::EncodeHello(h));

    // Hello and welcome.
    bool compress_ok = false;
    int64_t until = MonotonicMs() + opts_.timeout_ms;
    std::optional<transfer::Welcome> welcome;
    bool eof = false;
    while (!welcome) {
      if (stop_.Requested()) return Fail(conn, Status());
      pollfd p[2] = {{conn.from(), POLLIN, 0}, {out_.Empty() ? -1 : conn.to(), POLLOUT, 0}};
      int64_t left = until - MonotonicMs();
      if (left <= 0)
        return Fail(conn, LinkError(fmt::format("no answer from the far side within {}",
                                                 FormatDuration(opts_.timeout_ms)),
                                     opts_.link));
      ::poll(p, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (!out_.Empty()) {
        Status w = out_.Flush(conn.to());
        if (!w.ok())
          return Fail(conn, LinkError("the link's command exited before answering", opts_.link));
      }
      char buf[4096];
      ssize_t n = ::read(conn.from(), buf, sizeof buf);
      if (n == 0) eof = true;
      if (n > 0) reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      auto f = reader_.Next();
      if (!f.ok())
        return Fail(conn,
                    Status::LinkProtocol(f.status().text() + " (is the link's command running "
                                                             "mq-admin accept?)"),
                    true);
      if (*f) {
        if ((*f)->type == Type::kError)
          return Fail(conn, Status::LinkProtocol("the far side refused: " + PeerText((*f)->payload)),
                      true);
        if ((*f)->type != Type::kWelcome)
          return Fail(conn,
                      Status::LinkProtocol(
                          "the link's command did not answer as mq-admin accept does "
                          "(is it running mq-admin accept?)"),
                      true);
        transfer::Welcome w;
        Status d = transfer::DecodeWelcome((*f)->payload, w);
        if (!d.ok()) return Fail(conn, Status::LinkProtocol(d.text()), true);
        if (w.version != transfer::kVersion)
          return Fail(conn,
                      Status::LinkProtocol(
                          fmt::format("the far side speaks transfer protocol version {} (this "
                                      "mq-admin forward speaks version {})",
                                      w.version, transfer::kVersion)),
                      true);
        if (w.store == store_.guid())
          return Fail(conn,
                      Status::LinkProtocol(
                          "the link leads back to this same store: a link must reach "
                          "another store"),
                      true);
        if (w.compression == transfer::kZstd && opts_.compress != Compress::kNever) {
          compress_ok = true;
        } else if (!w.compression.empty()) {
          return Fail(conn,
                      Status::LinkProtocol(
                          fmt::format("the far side chose compression '{}', which this "
                                      "mq-admin forward did not offer",
                                      w.compression)),
                      true);
        }
        welcome = w;
      } else if (eof) {
        return Fail(conn, LinkError("the link's command exited before answering", opts_.link));
      }
    }
    (void)store_.NoteLink(opts_.link,
                          LinkEvent{LinkEvent::kConnected, FormatGuid(welcome->store), ""});

    std::unique_ptr<Doorbell> waiter;
    if (opts_.follow) {
      auto w = store_.ArmDoorbell(out_ref_);
      if (!w.ok()) return Fail(conn, w.status(), true);
      waiter = std::move(*w);
    }
    last_ack_time_ = last_write_time_ = MonotonicMs();
    tuner_.Start(compress_ok, opts_.compress == Compress::kAlways, MonotonicMs());
    bool flushed = true;  // a flush follows the last message sent
    bool said_bye = false;
    for (;;) {
      bool stopping = stop_.Requested();
      // One batch per turn, so that writing, acknowledgements and encoding overlap.
      bool sent = false, empty = false;
      // Messages Locked and not yet framed are in the window already, and are sent even
      // when stopping: their batch ends only once all of it is acknowledged.
      bool unencoded = Unencoded();
      bool window_full = inflight_count_ >= opts_.window && !mid_tx_ && !unencoded;
      if (!said_bye && out_.Size() < kOutgoingBytes &&
          (unencoded || (!stopping && !window_full))) {
        out_.SetCompress(tuner_.Compress(MonotonicMs()));
        // The acknowledgement timer (MS-MQQB's Session Ack Wait Timer) starts when a message
        // is sent with none in flight, and each acknowledgement restarts it: an idle session
        // is not a silent far side.
        bool none_in_flight = inflight_.empty();
        auto more = SendBatch(conn, !stopping);
        if (!more.ok()) return Fail(conn, more.status(), true);
        sent = *more;
        if (sent && none_in_flight) last_ack_time_ = MonotonicMs();
        empty = !*more;
        if (empty) tuner_.RanDry(MonotonicMs());
        if (sent) flushed = false;
      }
      if (!sent && !flushed && !said_bye && (window_full || empty || stopping)) {
        // Nothing more to send now (the window is full, or the queue is empty): store what
        // you have. With the queue empty, an unfinished transaction is all there will be.
        // (Only waiting for the pipe is no reason: accept stores every 4000 messages.)
        out_.Put(Type::kFlush, std::string(1, empty ? '\1' : '\0'));
        flushed = true;
      }
      if (inflight_.empty() && out_.Empty() && !said_bye && (stopping || !opts_.follow)) {
        out_.Put(Type::kBye, "");
        said_bye = true;
      }
      if (!out_.Empty()) {
        Status w = out_.Flush(conn.to());
        if (!w.ok())
          return Fail(conn,
                      LinkError("the link's command ended (its stdin is closed)", opts_.link));
        last_write_time_ = MonotonicMs();
        auto [plain, compressed] = out_.TakeWritten();
        tuner_.Taken(plain, compressed, MonotonicMs());
        if (out_.blocked()) tuner_.Backlogged(MonotonicMs());
      }
      if (said_bye && out_.Empty()) {
        conn.CloseTo();
        // Wait for the far side to finish: its stdout closes.
        int64_t bye_until = MonotonicMs() + opts_.timeout_ms;
        while (!eof && MonotonicMs() < bye_until) {
          pollfd p{conn.from(), POLLIN, 0};
          ::poll(&p, 1, 200);
          Status ps = Pump(conn, eof);
          if (!ps.ok()) return Fail(conn, ps);
        }
        std::string how = conn.Reap(opts_.timeout_ms);
        (void)store_.NoteLink(opts_.link, LinkEvent{LinkEvent::kDisconnected, "", ""});
        if (how != "exit status 0")
          return SessionError{LinkError("the link's command ended with " + how, opts_.link), false};
        return SessionError{};
      }
      // Wait: for acknowledgements, room to write, or (idle, --follow) the doorbell.
      bool idle = inflight_.empty() && out_.Empty();
      if (idle && opts_.follow && !said_bye &&
          MonotonicMs() - last_write_time_ >= opts_.keepalive_ms) {
        out_.Put(Type::kFlush, std::string(1, '\0'));  // a keepalive: nothing to store
        continue;
      }
      if (idle && opts_.follow) {
        auto deadline = store_.NextDeadline(out_ref_);
        // The doorbell, the command's output (its end, or an error), a signal.
        pollfd p[2] = {{conn.from(), POLLIN, 0}, {stop_.fd(), POLLIN, 0}};
        if (::poll(p, 2, 0) > 0) {
          Status ps = Pump(conn, eof);
          if (!ps.ok()) return Fail(conn, ps);
          if (eof) return Fail(conn, LinkError("the link's command ended", opts_.link));
          continue;
        }
        auto wake = waiter->Wait(deadline.ok() ? *deadline : 0,
                                 MonotonicMs() + std::min<int64_t>(1000, opts_.keepalive_ms),
                                 conn.from());
        if (!wake.ok()) return Fail(conn, wake.status(), true);
        continue;
      }
      // With room to send more (this turn's batch, or the link took what waited and the
      // window is open), only look: waiting here would leave the far side waiting too, for
      // messages or a flush (until the timeout, a second).
      bool more_room = !said_bye && !empty && out_.Size() < kOutgoingBytes &&
                       (Unencoded() || (!stopping && (inflight_count_ < opts_.window || mid_tx_)));
      pollfd p[3] = {{conn.from(), POLLIN, 0},
                     {out_.Empty() ? -1 : conn.to(), POLLOUT, 0},
                     {stopping ? -1 : stop_.fd(), POLLIN, 0}};
      ::poll(p, 3, sent || more_room ? 0 : 1000);
      Status ps = Pump(conn, eof);
      if (!ps.ok()) return Fail(conn, ps);
      if (eof) return Fail(conn, LinkError("the link's command ended", opts_.link));
      if (!inflight_.empty() && MonotonicMs() - last_ack_time_ > opts_.timeout_ms)
        return Fail(conn, LinkError(fmt::format("no acknowledgement from the far side for {}",
                                                 FormatDuration(opts_.timeout_ms)),
                                     opts_.link));
    }
  }

  Store& store_;
  const ForwardOptions opts_;
  const proc::StopSignal& stop_;
  NoteFn note_;
  Connector* connector_;
  std::unique_ptr<Connector> own_connector_;  // the link's command, when none was given
  LinkInfo link_;
  std::unique_ptr<HeldLock> lock_;
  QueueRef out_ref_;
  std::string stream_;
  transfer::FrameReader reader_;
  Outgoing out_;
  transfer::CompressionTuner tuner_;
  uint64_t encoded_ = 0;
  uint64_t frame_bytes_ = 0;  // bytes framed per message, in the last batch
  std::string payload_;  // one message frame's payload, reused
  std::deque<Batch> inflight_;
  uint64_t inflight_count_ = 0;
  std::map<uint64_t, uint16_t> nacks_;
  uint64_t prev_ = 0;
  bool mid_tx_ = false;
  uint32_t session_sent_ = 0;
  uint32_t recoverable_sent_ = 0;
  int64_t last_ack_time_ = 0;
  int64_t last_write_time_ = 0;  // of the last frames written (keepalive_ms)
  std::string last_noted_;  // the failure last reported as retrying
  bool progressed_ = false;
};

Forwarder::Forwarder(Store& store, ForwardOptions options, const proc::StopSignal& stop,
                     NoteFn note, Connector* connector)
    : impl_(std::make_unique<Impl>(store, std::move(options), stop, std::move(note),
                                   connector)) {}

Forwarder::~Forwarder() = default;

Status Forwarder::Run() { return impl_->Run(); }

}  // namespace mq::link
