// mq-admin forward LINK [--once|--follow] [--window N] [--retry DURATION] [--timeout DURATION]
//   Moves the messages of the link's outgoing queue out;LINK to the store at its far end,
//   exactly once and in order.
// mq-admin accept
//   The far end: reads a forward's stream on stdin, stores its messages, answers on stdout.
//
// How (lib/wire/transfer.hpp has the frames; mq(7) "Transfer between machines" says it for users):
//  - forward takes the link's lock (one forward per link), runs the link's command with
//    /bin/sh -c (its stdin and stdout are the stream; its stderr is forward's), and sends a
//    hello naming this store, the link and its stream: "uid:SOURCE-GUID\\QUEUE-ID" of
//    out;LINK (the form of SRMP's <streamId>). accept answers with its store's GUID and the
//    last sequence number it accepted from that stream.
//  - out;LINK is FIFO and its lookup ids only grow, so a message's lookup id is its
//    TxSequenceNumber in the stream, and the head of the queue is always the oldest message
//    not yet acknowledged. forward Locks batches from the head under a process lease (as a
//    receive does), sends each as an SRMP document (lib/wire/srmp.hpp; <Stream> carries the stream
//    and the numbers too) with PreviousTxSequenceNumber the message sent before it in this
//    session, and keeps at most --window messages unacknowledged (a transaction is never
//    cut: the window stretches to its last message).
//  - accept stores what it has read whenever a flush comes (forward sends one when its
//    window is full or the queue empty), what it holds is large (4000 messages) or the
//    first of it has waited 200 ms (the ack timer), in one
//    LMDB transaction that also records the stream's last sequence number (a transaction's
//    messages always in the same one). A message at or below that number is a
//    replay: answered again as before, never stored twice. A refused message (no such queue,
//    disabled, quota, size...) is remembered with its NACK class. Then it acknowledges: the
//    last sequence number, and the refusals it covers.
//  - Frames are compressed ('Z' frames, zstd) when both sides can and it is faster: see
//    transfer::CompressionTuner.
//  - forward ends the lease of each batch the acknowledgements cover, in one transaction:
//    ACK_REACH_QUEUE and source journaling for the stored messages, the NACK and the dead-
//    letter queue for the refused. A crash anywhere leaves the unacknowledged messages in
//    out;LINK (the dead forward's lease returns them), and the next session sends them again.
// No LMDB transaction is open while either side reads or writes the stream.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "wire/transfer.hpp"
#include "admin.hpp"
#include "base/units.hpp"
#include "store/waiter.hpp"

extern char** environ;

namespace mq::admin {

namespace {

using transfer::Frame;
using transfer::Type;

constexpr int64_t kBackoffFirstMs = 100;
constexpr int64_t kBackoffMaxMs = 10000;
constexpr uint32_t kDefaultWindow = 10000;
constexpr size_t kAcceptBatchCount = 4000;
constexpr size_t kAcceptBatchBytes = 8 << 20;
// accept stores and acknowledges what it holds once the first of it has waited this long
// with no flush and no full batch (a slow link would otherwise hear of nothing for 4000
// messages, and resend them all after a crash).
constexpr int64_t kAckTimerMs = 200;
// forward encodes more only while less than this waits to be written: enough to keep the
// pipe full, little enough that acknowledgements are read between batches.
constexpr size_t kOutgoingBytes = 1 << 20;

Status LinkError(std::string text, const std::string& link) {
  return Status(Code::kLinkFailed, std::move(text), link);
}

// Writes all of `data` to a blocking descriptor.
Status WriteAll(int fd, std::string_view data, const char* what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, what, "write failed");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// ---------------------------------------------------------------------------------------
// accept

class Acceptor {
 public:
  explicit Acceptor(Store& store) : store_(store) {}

  int Run() {
    ::signal(SIGPIPE, SIG_IGN);
    Status s = Serve();
    if (!s.ok()) {
      // Tell the forward, then the operator, unless the forward tells its own (its hello
      // says so): then the error is shown once, by forward, with the link's name.
      std::string out;
      transfer::PutFrame(out, Type::kError, s.text());
      Status told = WriteAll(1, out, "stdout");
      if (told.ok() && sender_reports_) return ExitCode(s);
      return cli::Fail(s);
    }
    return 0;
  }

 private:
  // Reads more input; false at the end of the stream. While messages wait to be stored,
  // it waits for input at most until kAckTimerMs after the first of them came, then stores
  // and acknowledges them (Commit) and waits again.
  Result<bool> Fill() {
    char buf[1 << 16];
    for (;;) {
      if (!pending_.empty()) {
        int64_t left = pending_since_ + kAckTimerMs - MonotonicMs();
        if (left <= 0) {
          MQ_RETURN_IF_ERROR(Commit(false));
          pending_since_ = MonotonicMs();  // what is left: an unfinished transaction
          continue;
        }
        pollfd p{0, POLLIN, 0};
        int r = ::poll(&p, 1, static_cast<int>(left));
        if (r < 0 && errno != EINTR) return ErrnoStatus(errno, "stdin", "poll failed");
        if (r <= 0) continue;
      }
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(errno, "stdin", "read failed");
      if (n == 0) return false;
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      return true;
    }
  }

  Result<Frame> NextFrame() {
    for (;;) {
      if (decompressor_) {
        // The frames of the last 'Z' frame come before the frame after it.
        auto z = decompressor_->Next();
        if (!z.ok()) return z.status();
        if (*z) return std::move(**z);
      }
      auto f = reader_.Next();
      if (!f.ok()) return f.status();
      if (*f && (*f)->type == Type::kCompressed) {
        if (!decompressor_)
          return Status(Code::kLinkFailed, "a compressed frame, but the hello asked for no "
                                           "compression: the stream is corrupted");
        MQ_RETURN_IF_ERROR(decompressor_->Feed((*f)->payload));
        continue;
      }
      if (*f && decompressor_ && decompressor_->Partial())
        return Status(Code::kLinkFailed, "a compressed frame ends in the middle of a frame: the "
                                         "stream is corrupted");
      if (*f) return std::move(**f);
      auto more = Fill();
      if (!more.ok()) return more.status();
      if (!*more) {
        eof_ = true;
        return Status(Code::kLinkFailed, reader_.Empty()
                                             ? "the stream ended before the sender said bye"
                                             : "the stream ends in the middle of a frame");
      }
    }
  }

  Status Serve() {
    auto hf = NextFrame();
    if (!hf.ok()) return hf.status();
    if (hf->type != Type::kHello)
      return Status(Code::kLinkFailed, "the stream does not start with a hello (is the other "
                                       "side mq-admin forward?)");
    transfer::Hello hello;
    MQ_RETURN_IF_ERROR(transfer::DecodeHello(hf->payload, hello));
    sender_reports_ = hello.reports_errors;
    if (hello.version != transfer::kVersion)
      return Status(Code::kLinkProtocol,
                    fmt::format("unsupported transfer protocol version {} (this mq-admin accept "
                                "speaks version {})",
                                hello.version, transfer::kVersion));
    if (hello.source == store_.guid())
      return Status(Code::kLinkProtocol,
                    fmt::format("the link leads back to the same store ({}): a link must reach "
                                "another store",
                                FormatGuid(store_.guid())));
    stream_ = hello.stream;
    auto pos = store_.StreamPosition(stream_);
    if (!pos.ok()) return pos.status();
    last_ = *pos;
    transfer::Welcome w;
    w.store = store_.guid();
    w.last = last_;
    w.compression = transfer::ChooseCompression(hello.compression);
    if (!w.compression.empty()) decompressor_ = std::make_unique<transfer::Decompressor>();
    std::string out;
    transfer::PutFrame(out, Type::kWelcome, transfer::EncodeWelcome(w));
    MQ_RETURN_IF_ERROR(WriteAll(1, out, "stdout"));

    for (;;) {
      auto f = NextFrame();
      if (!f.ok()) {
        // What is whole is stored; an unfinished transaction is sent again.
        if (eof_) (void)Commit(false);
        return f.status();
      }
      bool commit_all = false;
      switch (f->type) {
        case Type::kMessage: {
          TransferItem it;
          transfer::MessageHeader h;
          MQ_RETURN_IF_ERROR(transfer::DecodeMessage(f->payload, h, it.msg));
          uint64_t known = pending_.empty() ? last_ : std::max(last_, pending_.back().seq);
          if (!pending_.empty() && h.seq <= pending_.back().seq)
            return Status(Code::kLinkFailed,
                          fmt::format("message {} comes after message {}: the stream is out of "
                                      "order",
                                      h.seq, pending_.back().seq));
          if (h.prev && h.prev > known)
            return Status(Code::kLinkFailed,
                          fmt::format("message {} follows message {}, which never arrived (the "
                                      "last here is {}): the stream has a gap",
                                      h.seq, h.prev, known));
          if (!forget_below_) forget_below_ = h.seq;
          if (pending_.empty()) pending_since_ = MonotonicMs();
          pending_bytes_ += it.msg.body.size();
          it.seq = h.seq;
          pending_.push_back(std::move(it));
          break;
        }
        case Type::kFlush:
          commit_all = !f->payload.empty() && f->payload[0] == 1;
          MQ_RETURN_IF_ERROR(Commit(commit_all));
          continue;
        case Type::kBye:
          MQ_RETURN_IF_ERROR(Commit(true));
          return {};
        case Type::kError:
          return Status(Code::kLinkFailed, "the sender reported: " + f->payload);
        default:
          return Status(Code::kLinkFailed,
                        fmt::format("unexpected frame '{}' from the sender",
                                    static_cast<char>(f->type)));
      }
      // Store at each flush, or when the batch is large.
      if (pending_.size() >= kAcceptBatchCount || pending_bytes_ >= kAcceptBatchBytes)
        MQ_RETURN_IF_ERROR(Commit(false));
    }
  }

  // Stores the pending messages up to the end of the last whole transaction (all of them with
  // `all`) and acknowledges.
  Status Commit(bool all) {
    size_t n = pending_.size();
    if (!all) {
      while (n > 0) {
        const Message& m = pending_[n - 1].msg;
        bool ends_unit = m.xact_id.empty() || m.eod_last;
        if (ends_unit) break;
        --n;
      }
    }
    if (n == 0) return {};
    std::vector<TransferItem> batch(std::make_move_iterator(pending_.begin()),
                                    std::make_move_iterator(pending_.begin() + static_cast<long>(n)));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(n));
    pending_bytes_ = 0;
    for (const auto& it : pending_) pending_bytes_ += it.msg.body.size();
    auto last = store_.AcceptTransfer(stream_, batch, forget_below_);
    if (!last.ok()) return last.status();
    last_ = *last;
    processed_ += static_cast<uint32_t>(batch.size());
    transfer::Ack a;
    a.last = last_;
    a.ack_seq = processed_;
    a.recoverable_ack_seq = processed_;
    for (const auto& it : batch)
      if (it.outcome) a.nacks.emplace_back(it.seq, it.outcome);
    std::string out;
    transfer::PutFrame(out, Type::kAck, transfer::EncodeAck(a));
    return WriteAll(1, out, "stdout");
  }

  Store& store_;
  transfer::FrameReader reader_;
  std::unique_ptr<transfer::Decompressor> decompressor_;  // with compression
  std::string stream_;
  uint64_t last_ = 0;
  uint64_t forget_below_ = 0;
  uint32_t processed_ = 0;
  std::vector<TransferItem> pending_;
  size_t pending_bytes_ = 0;
  int64_t pending_since_ = 0;  // when the first of pending_ came
  bool sender_reports_ = false;  // the hello's field 6
  bool eof_ = false;
};

// ---------------------------------------------------------------------------------------
// forward

struct ForwardArgs {
  std::string link;
  bool once = false, follow = false;
  uint32_t window = kDefaultWindow;
  std::string retry;
  std::string timeout = "30s";
  std::string compress = "auto";  // auto, always, never
};

// The link's command, running.
class Child {
 public:
  ~Child() { Stop(); }

  Status Start(const std::string& via) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe", "cannot make a pipe");
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      return ErrnoStatus(errno, "pipe", "cannot make a pipe");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    posix_spawnattr_setsigdefault(&attr, &def);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    const char* argv[] = {"sh", "-c", via.c_str(), nullptr};
    int rc = ::posix_spawn(&pid_, "/bin/sh", &fa, &attr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      ::close(in[1]);
      ::close(out[0]);
      pid_ = -1;
      return ErrnoStatus(rc, "/bin/sh", "cannot start the link's command");
    }
    to_ = in[1];
    from_ = out[0];
    ::fcntl(to_, F_SETFL, ::fcntl(to_, F_GETFL) | O_NONBLOCK);
    // A larger pipe to the command (Linux; up to fs.pipe-max-size, 1 MiB by default): the far
    // side has work queued while this side encodes or commits. Where it cannot grow, the
    // default 64 KiB does.
    (void)::fcntl(to_, F_SETPIPE_SZ, 1 << 20);
    ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
    return {};
  }

  int to() const { return to_; }
  int from() const { return from_; }
  void CloseTo() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }

  // Waits for the command to end (after its stdin was closed); how it ended, for messages.
  std::string Reap(int64_t wait_ms) {
    if (pid_ < 0) return status_;
    int64_t until = MonotonicMs() + wait_ms;
    int st = 0;
    for (;;) {
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) break;
      if (r < 0) {
        pid_ = -1;
        return status_;
      }
      if (MonotonicMs() >= until) {
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, &st, 0);
        break;
      }
      ::usleep(10000);
    }
    pid_ = -1;
    if (WIFEXITED(st))
      status_ = fmt::format("exit status {}", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
      status_ = fmt::format("killed by signal {}", WTERMSIG(st));
    return status_;
  }

  void Stop() {
    CloseTo();
    if (from_ >= 0) ::close(from_);
    from_ = -1;
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string status_ = "ended";
};

// What forward has to write to the link, in order: frames, compressed into 'Z' frames once the
// far side chose compression. Written from an offset, so that a partial write moves no bytes.
class Outgoing {
 public:
  void Reset() {
    buf_.clear();
    pos_ = 0;
    base_ = 0;
    plain_.clear();
    compressor_.reset();
    compressing_ = false;
    unmarked_ = 0;
    marks_.clear();
    written_[0] = written_[1] = 0;
    framed_ = 0;
  }
  // Whether the next frames are compressed (only once the welcome chose zstd). One zstd
  // stream runs through the session, whatever is written plain between its pieces.
  void SetCompress(bool on) {
    if (on == compressing_) return;
    if (on && !compressor_) compressor_ = std::make_unique<transfer::Compressor>();
    Seal();
    Mark();  // what was framed so far was framed in the other mode
    compressing_ = on;
  }
  bool compressing() const { return compressing_; }
  void Put(Type type, std::string_view payload) {
    transfer::PutFrame(compressing_ ? plain_ : buf_, type, payload);
    if (type == Type::kMessage) ++unmarked_;
    framed_ += payload.size() + 9;
    if (plain_.size() >= kSealBytes) Seal();
  }
  // Bytes framed in this session (before compression).
  uint64_t framed() const { return framed_; }
  // Messages whose frames the link has taken whole since the last call: framed plain, and
  // framed compressed.
  std::pair<uint64_t, uint64_t> TakeWritten() {
    return {std::exchange(written_[0], 0), std::exchange(written_[1], 0)};
  }
  bool Empty() const { return pos_ == buf_.size() && plain_.empty(); }
  size_t Size() const { return buf_.size() - pos_ + plain_.size(); }

  // Writes what the (non-blocking) descriptor takes now.
  Status Flush(int fd) {
    Seal();
    Mark();
    blocked_ = false;
    while (pos_ < buf_.size()) {
      ssize_t n = ::write(fd, buf_.data() + pos_, buf_.size() - pos_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        blocked_ = true;
        break;
      }
      if (n < 0) return ErrnoStatus(errno, "link", "write failed");
      pos_ += static_cast<size_t>(n);
    }
    while (!marks_.empty() && marks_.front().end <= base_ + pos_) {
      written_[marks_.front().compressed] += marks_.front().messages;
      marks_.pop_front();
    }
    if (pos_ == buf_.size()) {
      base_ += pos_;
      buf_.clear();
      pos_ = 0;
    } else if (pos_ >= (1u << 20) && pos_ * 2 >= buf_.size()) {
      base_ += pos_;
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    return {};
  }
  // Whether the last Flush left bytes the link would not take.
  bool blocked() const { return blocked_; }

 private:
  // Frames are compressed in pieces of about this much.
  static constexpr size_t kSealBytes = 256 << 10;
  // Everything framed so far (sealed) ends where the buffer ends now.
  void Mark() {
    if (!unmarked_) return;
    marks_.push_back(Marker{base_ + buf_.size(), unmarked_, compressing_});
    unmarked_ = 0;
  }
  void Seal() {
    if (plain_.empty()) return;
    compressor_->PutCompressed(buf_, plain_);
    plain_.clear();
  }
  std::string buf_;
  size_t pos_ = 0;
  std::string plain_;
  std::unique_ptr<transfer::Compressor> compressor_;
  bool compressing_ = false;
  bool blocked_ = false;
  uint64_t base_ = 0;      // the offset in the session's stream of buf_[0]
  uint64_t unmarked_ = 0;  // messages framed since the last mark
  // Where in the stream the frames of so many messages end: popped as the link takes them.
  struct Marker {
    uint64_t end;
    uint64_t messages;
    bool compressed;
  };
  std::deque<Marker> marks_;
  uint64_t written_[2] = {0, 0};  // plain, compressed
  uint64_t framed_ = 0;
};

// A session failed: permanent failures (wrong peer, same store, wrong version) are not worth
// retrying with --once.
struct SessionError {
  Status status;
  bool permanent = false;
};

class Forwarder {
 public:
  Forwarder(Store& store, const ForwardArgs& a) : store_(store), a_(a) {}

  int Run() {
    ::signal(SIGPIPE, SIG_IGN);
    auto link = store_.GetLink(a_.link);
    if (!link.ok()) return cli::Fail(link.status());
    link_ = std::move(*link);
    auto lock = store_.LockLink(a_.link);
    if (!lock.ok()) return cli::Fail(lock.status());
    lock_ = std::move(*lock);
    auto t = ParseDuration(a_.timeout);
    if (!t.ok()) return cli::Fail(t.status());
    if (*t <= 0 || *t > INT32_MAX)
      return cli::Fail(Status(Code::kInvalidArg, "--timeout must be a positive duration"));
    timeout_ms_ = *t;
    retry_ms_ = a_.follow ? -1 : 30000;
    if (!a_.retry.empty()) {
      auto r = ParseDuration(a_.retry);
      if (!r.ok()) return cli::Fail(r.status());
      retry_ms_ = *r == kInfinite ? -1 : *r;
    }
    stop_fd_ = cli::StopOnSignals();
    if (stop_fd_ < 0) return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
    out_ref_.base = "out";
    out_ref_.sub = a_.link;

    int64_t backoff = kBackoffFirstMs;
    int64_t failing_since = 0;
    for (;;) {
      if (cli::Stopping()) return 0;
      auto st = store_.StatQueue(out_ref_);
      if (!st.ok()) {
        if (st.status().code() != Code::kQueueNotFound) return cli::Fail(st.status());
        if (!a_.follow) return 0;  // nothing was ever sent through the link
      } else {
        stream_ = fmt::format("uid:{}\\{}", FormatGuid(store_.guid()), st->info.id);
        if (!a_.follow && st->info.count == 0) return 0;
      }
      if (!st.ok()) {
        if (SleepOrStop(1000)) return 0;
        continue;
      }
      SessionError e = Session();
      if (e.status.ok()) return 0;  // done (--once) or stopped
      Status shown = e.status.WithSubject(a_.link);
      (void)store_.NoteLink(a_.link, LinkEvent{LinkEvent::kError, "", shown.text()});
      if (progressed_) {
        backoff = kBackoffFirstMs;
        failing_since = 0;
      }
      if (!failing_since) failing_since = MonotonicMs();
      if (!a_.follow && (e.permanent ||
                         (retry_ms_ >= 0 && MonotonicMs() - failing_since >= retry_ms_))) {
        if (!e.permanent && retry_ms_ > 0)
          return cli::Fail(Status(shown.code(),
                                  fmt::format("{} (gave up after {})", shown.text(),
                                              FormatDuration(retry_ms_)),
                                  shown.subject()));
        return cli::Fail(shown);
      }
      cli::Note(a_.link, fmt::format("{}; retrying in {}", shown.text(), FormatDuration(backoff)));
      if (SleepOrStop(backoff)) return 0;
      backoff = std::min(backoff * 2, kBackoffMaxMs);
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

  bool SleepOrStop(int64_t ms) { return cli::SleepUnlessStopped(stop_fd_, ms); }

  // Returns every unacknowledged batch to the queue, newest first (each to its place).
  void ReleaseAll() {
    while (!inflight_.empty()) {
      Status s = store_.Release(*inflight_.back().lease);
      if (!s.ok()) cli::Note(a_.link, "could not return a batch: " + s.text() +
                                          " (the next forward takes it back)");
      inflight_.pop_back();
    }
    inflight_count_ = 0;
  }

  SessionError Fail(Child& child, Status s, bool permanent = false) {
    ReleaseAll();
    child.CloseTo();
    std::string how = child.Reap(2000);
    if (s.code() == Code::kLinkFailed && s.text().find("the link's command") != std::string::npos)
      s = Status(s.code(), fmt::format("{} ({})", s.text(), how), s.subject());
    child.Stop();
    return SessionError{s, permanent};
  }

  // Reads what the command wrote; handles its acknowledgements. `eof` when it closed.
  Status Pump(Child& child, bool& eof) {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(child.from(), buf, sizeof buf);
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
        return Status(Code::kLinkFailed, "the far side reported: " + fr.payload);
      if (fr.type != Type::kAck)
        return Status(Code::kLinkFailed, fmt::format("unexpected frame '{}' from the far side",
                                                     static_cast<char>(fr.type)));
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
        Status s = store_.FinishForwarded(done, outcomes, a_.link);
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
  Result<bool> SendBatch(Child& child, bool lock_more) {
    if (!Unencoded()) {
      if (!lock_more) return false;
      Selection sel;
      uint64_t room = a_.window > inflight_count_ ? a_.window - inflight_count_ : 0;
      // Batches of up to a quarter of the window (each a Lock and a removal here; accept
      // commits at each flush or when it holds 4000 messages), so that acknowledgements of
      // one come back while the next are on their way; of 1000 at most.
      uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(a_.window / 4, 1000));
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
    const std::vector<Message>& msgs = b.lease->messages();
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
      h.window = a_.window;
      payload_.clear();
      transfer::AppendMessage(payload_, h, *t, stream_);
      out_.Put(Type::kMessage, payload_);
      // What the pipe takes now, so that the far side works while this side encodes. A
      // failure shows again at the session's own write.
      if (++encoded_ % 64 == 0) {
        (void)out_.Flush(child.to());
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
    Child child;
    reader_ = transfer::FrameReader();
    nacks_.clear();
    prev_ = 0;
    mid_tx_ = false;
    session_sent_ = recoverable_sent_ = 0;
    progressed_ = false;
    out_.Reset();
    Status s = child.Start(link_.via);
    if (!s.ok()) return SessionError{s, true};
    transfer::Hello h;
    h.source = store_.guid();
    h.stream = stream_;
    h.link = a_.link;
    h.window = a_.window;
    if (a_.compress != "never") h.compression = std::string(transfer::kZstd);
    h.reports_errors = true;  // "the far side refused: ...", "the far side reported: ..."
    out_.Put(Type::kHello, transfer::EncodeHello(h));

    // Hello and welcome.
    bool compress_ok = false;
    int64_t until = MonotonicMs() + timeout_ms_;
    std::optional<transfer::Welcome> welcome;
    bool eof = false;
    while (!welcome) {
      if (cli::Stopping()) return Fail(child, Status());
      pollfd p[2] = {{child.from(), POLLIN, 0}, {out_.Empty() ? -1 : child.to(), POLLOUT, 0}};
      int64_t left = until - MonotonicMs();
      if (left <= 0)
        return Fail(child, LinkError(fmt::format("no answer from the far side within {}",
                                                 FormatDuration(timeout_ms_)),
                                     a_.link));
      ::poll(p, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (!out_.Empty()) {
        Status w = out_.Flush(child.to());
        if (!w.ok()) return Fail(child, LinkError("the link's command exited before answering", a_.link));
      }
      char buf[4096];
      ssize_t n = ::read(child.from(), buf, sizeof buf);
      if (n == 0) eof = true;
      if (n > 0) reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      auto f = reader_.Next();
      if (!f.ok())
        return Fail(child, Status(Code::kLinkProtocol,
                                  f.status().text() + " (is the link's command running "
                                                      "mq-admin accept?)"),
                    true);
      if (*f) {
        if ((*f)->type == Type::kError)
          return Fail(child, Status(Code::kLinkProtocol, "the far side refused: " + (*f)->payload),
                      true);
        if ((*f)->type != Type::kWelcome)
          return Fail(child, Status(Code::kLinkProtocol,
                                    "the link's command did not answer as mq-admin accept does "
                                    "(is it running mq-admin accept?)"),
                      true);
        transfer::Welcome w;
        Status d = transfer::DecodeWelcome((*f)->payload, w);
        if (!d.ok()) return Fail(child, Status(Code::kLinkProtocol, d.text()), true);
        if (w.version != transfer::kVersion)
          return Fail(child,
                      Status(Code::kLinkProtocol,
                             fmt::format("the far side speaks transfer protocol version {} (this "
                                         "mq-admin forward speaks version {})",
                                         w.version, transfer::kVersion)),
                      true);
        if (w.store == store_.guid())
          return Fail(child, Status(Code::kLinkProtocol,
                                    "the link leads back to this same store: a link must reach "
                                    "another store"),
                      true);
        if (w.compression == transfer::kZstd && a_.compress != "never") {
          compress_ok = true;
        } else if (!w.compression.empty()) {
          return Fail(child,
                      Status(Code::kLinkProtocol,
                             fmt::format("the far side chose compression '{}', which this "
                                         "mq-admin forward did not offer",
                                         w.compression)),
                      true);
        }
        welcome = w;
      } else if (eof) {
        return Fail(child, LinkError("the link's command exited before answering", a_.link));
      }
    }
    (void)store_.NoteLink(a_.link, LinkEvent{LinkEvent::kConnected, FormatGuid(welcome->store), ""});

    std::optional<Waiter> waiter;
    if (a_.follow) {
      auto w = store_.ArmDoorbell(out_ref_);
      if (!w.ok()) return Fail(child, w.status(), true);
      waiter = std::move(*w);
    }
    last_ack_time_ = MonotonicMs();
    tuner_.Start(compress_ok, a_.compress == "always", MonotonicMs());
    bool flushed = true;  // a flush follows the last message sent
    bool said_bye = false;
    for (;;) {
      bool stopping = cli::Stopping();
      // One batch per turn, so that writing, acknowledgements and encoding overlap.
      bool sent = false, empty = false;
      // Messages Locked and not yet framed are in the window already, and are sent even
      // when stopping: their batch ends only once all of it is acknowledged.
      bool unencoded = Unencoded();
      bool window_full = inflight_count_ >= a_.window && !mid_tx_ && !unencoded;
      if (!said_bye && out_.Size() < kOutgoingBytes &&
          (unencoded || (!stopping && !window_full))) {
        out_.SetCompress(tuner_.Compress(MonotonicMs()));
        auto more = SendBatch(child, !stopping);
        if (!more.ok()) return Fail(child, more.status(), true);
        sent = *more;
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
      if (inflight_.empty() && out_.Empty() && !said_bye && (stopping || !a_.follow)) {
        out_.Put(Type::kBye, "");
        said_bye = true;
      }
      if (!out_.Empty()) {
        Status w = out_.Flush(child.to());
        if (!w.ok()) return Fail(child, LinkError("the link's command ended (its stdin is closed)", a_.link));
        auto [plain, compressed] = out_.TakeWritten();
        tuner_.Taken(plain, compressed, MonotonicMs());
        if (out_.blocked()) tuner_.Backlogged(MonotonicMs());
      }
      if (said_bye && out_.Empty()) {
        child.CloseTo();
        // Wait for the far side to finish: its stdout closes.
        int64_t bye_until = MonotonicMs() + timeout_ms_;
        while (!eof && MonotonicMs() < bye_until) {
          pollfd p{child.from(), POLLIN, 0};
          ::poll(&p, 1, 200);
          Status ps = Pump(child, eof);
          if (!ps.ok()) return Fail(child, ps);
        }
        std::string how = child.Reap(timeout_ms_);
        (void)store_.NoteLink(a_.link, LinkEvent{LinkEvent::kDisconnected, "", ""});
        if (how != "exit status 0")
          return SessionError{LinkError("the link's command ended with " + how, a_.link), false};
        return SessionError{};
      }
      // Wait: for acknowledgements, room to write, or (idle, --follow) the doorbell.
      bool idle = inflight_.empty() && out_.Empty();
      if (idle && a_.follow) {
        auto deadline = store_.NextDeadline(out_ref_);
        // The doorbell, the command's output (its end, or an error), a signal.
        pollfd p[2] = {{child.from(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (::poll(p, 2, 0) > 0) {
          Status ps = Pump(child, eof);
          if (!ps.ok()) return Fail(child, ps);
          if (eof) return Fail(child, LinkError("the link's command ended", a_.link));
          continue;
        }
        auto wake = waiter->Wait(deadline.ok() ? *deadline : 0, MonotonicMs() + 1000,
                                 child.from());
        if (!wake.ok()) return Fail(child, wake.status(), true);
        continue;
      }
      // With room to send more (this turn's batch, or the link took what waited and the
      // window is open), only look: waiting here would leave the far side waiting too, for
      // messages or a flush (until the timeout, a second).
      bool more_room = !said_bye && !empty && out_.Size() < kOutgoingBytes &&
                       (Unencoded() || (!stopping && (inflight_count_ < a_.window || mid_tx_)));
      pollfd p[3] = {{child.from(), POLLIN, 0},
                     {out_.Empty() ? -1 : child.to(), POLLOUT, 0},
                     {stopping ? -1 : stop_fd_, POLLIN, 0}};
      ::poll(p, 3, sent || more_room ? 0 : 1000);
      Status ps = Pump(child, eof);
      if (!ps.ok()) return Fail(child, ps);
      if (eof) return Fail(child, LinkError("the link's command ended", a_.link));
      if (!inflight_.empty() && MonotonicMs() - last_ack_time_ > timeout_ms_)
        return Fail(child, LinkError(fmt::format("no acknowledgement from the far side for {}",
                                                 FormatDuration(timeout_ms_)),
                                     a_.link));
    }
  }

  Store& store_;
  const ForwardArgs& a_;
  LinkInfo link_;
  FileLock lock_;
  QueueRef out_ref_;
  std::string stream_;
  int64_t timeout_ms_ = 30000;
  int64_t retry_ms_ = -1;
  int stop_fd_ = -1;
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
  bool progressed_ = false;
};

}  // namespace

Command SetupForward(CLI::App& app, Context&) {
  auto a = std::make_shared<ForwardArgs>();
  auto* sub = app.add_subcommand(
      "forward", "Move the messages waiting for LINK to the store at its far end, exactly once "
                 "and in order");
  sub->add_option("LINK", a->link, "The link (mq-admin link add)")->required();
  auto* once = sub->add_flag("--once", a->once, "Stop when out;LINK is empty (default)");
  sub->add_flag("--follow", a->follow,
                "Keep forwarding (woken by new messages) until SIGTERM or SIGINT; reconnect "
                "with backoff when the link's command ends")
      ->excludes(once);
  sub->add_option("--window", a->window,
                  "Messages sent and not yet acknowledged, at most (default 10000)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 1000000));
  sub->add_option("--compress", a->compress,
                  "Compress the messages (zstd) when the far side can decompress them: auto "
                  "(while that is faster, the default), always, or never")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_option("--retry", a->retry,
                  "With --once: how long to keep retrying a failing link (default 30s); "
                  "--follow retries forever")
      ->type_name("DURATION");
  sub->add_option("--timeout", a->timeout,
                  "Waiting for the far side's answers (default 30s)")
      ->type_name("DURATION");
  return {sub, [a](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Forwarder f(**store, *a);
            return f.Run();
          }};
}

Command SetupAccept(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand(
      "accept",
      "The far end of a link: read a forward's stream on stdin, store its messages, answer on "
      "stdout (run by the link's command, e.g. over ssh)");
  return {sub, [](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Acceptor acc(**store);
            return acc.Run();
          }};
}

}  // namespace mq::admin
