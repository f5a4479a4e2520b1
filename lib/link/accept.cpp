// accept.cpp: the accept engine (accept.hpp); the session: forward.hpp.
#include "link/accept.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/fd.hpp"
#include "base/units.hpp"
#include "wire/transfer.hpp"

namespace mq::link {

using transfer::Frame;
using transfer::Type;

class Acceptor::Impl {
 public:
  Impl(Store& store, int in, int out, std::string in_name, std::string out_name)
      : store_(store), in_(in), out_(out), in_name_(std::move(in_name)),
        out_name_(std::move(out_name)) {}

  AcceptResult Run() {
    Status s = Serve();
    if (s.ok()) return {};
    // Tell the forward; the operator too, unless the forward tells its own (its hello says
    // so): then the error is shown once, by forward, with the link's name.
    std::string out;
    transfer::PutFrame(out, Type::kError, s.text());
    Status told = WriteAll(out_, out, out_name_);
    return AcceptResult{s, told.ok() && sender_reports_};
  }

 private:
  // Reads more input; false at the end of the stream. While messages wait to be stored,
  // it waits for input at most until kAckTimerMs after the first of them came, then
  // stores and acknowledges them (Commit) and waits again.
  // A sender silent for the idle timeout ends the session (Acceptor::kIdleTimeoutMs).
  Result<bool> Fill() {
    char buf[1 << 16];
    for (;;) {
      int64_t now = MonotonicMs();
      int64_t wait = -1;
      if (!pending_.empty()) {
        int64_t left = pending_since_ + Acceptor::kAckTimerMs - now;
        if (left <= 0) {
          MQ_RETURN_IF_ERROR(Commit(false));
          pending_since_ = MonotonicMs();  // what is left: an unfinished transaction
          continue;
        }
        wait = left;
      }
      if (idle_timeout_ms_ > 0) {
        int64_t left = last_input_ + idle_timeout_ms_ - now;
        if (left <= 0)
          return Status::LinkFailed(fmt::format(
              "nothing from the sender for {}: a stalled peer (accept --idle-timeout)",
              FormatDuration(idle_timeout_ms_)));
        wait = wait < 0 ? left : std::min(wait, left);
      }
      if (wait >= 0) {
        pollfd p{in_, POLLIN, 0};
        int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(wait, INT32_MAX)));
        if (r < 0 && errno != EINTR) return ErrnoStatus(errno, in_name_, "poll failed");
        if (r <= 0) continue;
      }
      ssize_t n = ::read(in_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(errno, in_name_, "read failed");
      if (n == 0) return false;
      last_input_ = MonotonicMs();
      reader_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      return true;
    }
  }

 public:
  int64_t idle_timeout_ms_ = Acceptor::kIdleTimeoutMs;

 private:
  int64_t last_input_ = MonotonicMs();

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
          return Status::LinkFailed("a compressed frame, but the hello asked for no "
                                    "compression: the stream is corrupted");
        MQ_RETURN_IF_ERROR(decompressor_->Feed((*f)->payload));
        continue;
      }
      if (*f && decompressor_ && decompressor_->Partial())
        return Status::LinkFailed("a compressed frame ends in the middle of a frame: the "
                                  "stream is corrupted");
      if (*f) return std::move(**f);
      auto more = Fill();
      if (!more.ok()) return more.status();
      if (!*more) {
        eof_ = true;
        return Status::LinkFailed(reader_.Empty() ? "the stream ended before the sender said bye"
                                                  : "the stream ends in the middle of a frame");
      }
    }
  }

  Status Serve() {
    auto hf = NextFrame();
    if (!hf.ok()) return hf.status();
    if (hf->type != Type::kHello)
      return Status::LinkFailed("the stream does not start with a hello (is the other "
                                "side mq-admin forward?)");
    transfer::Hello hello;
    MQ_RETURN_IF_ERROR(transfer::DecodeHello(hf->payload, hello));
    sender_reports_ = hello.reports_errors;
    if (hello.version != transfer::kVersion)
      return Status::LinkProtocol(
          fmt::format("unsupported transfer protocol version {} (this mq-admin accept "
                      "speaks version {})",
                      hello.version, transfer::kVersion));
    if (hello.source == store_.guid())
      return Status::LinkProtocol(
          fmt::format("the link leads back to the same store ({}): a link must reach "
                      "another store",
                      FormatGuid(store_.guid())));
    // The stream is the sender's own ("uid:SOURCE\\QUEUE", forward.cpp): another store's
    // stream, or a key too long for the store, is refused before it is looked up.
    const std::string own = "uid:" + FormatGuid(hello.source) + "\\";
    std::string_view number = std::string_view(hello.stream).substr(
        std::min(own.size(), hello.stream.size()));
    if (hello.stream.compare(0, own.size(), own) != 0 || number.empty() || number.size() > 10 ||
        !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Status::LinkProtocol(
          fmt::format("the hello's stream id '{}' is not one of its sender's ({}N)",
                      PeerText(hello.stream, 100), own));
    stream_ = hello.stream;
    // Nothing held in memory is larger than what the store would take: a frame longer than
    // the largest body any queue here accepts (plus room for its envelope) is a message
    // refused as too large, passed over as it comes, never held.
    auto queues = store_.ListQueues();
    if (!queues.ok()) return queues.status();
    uint64_t largest = 0;
    for (const QueueInfo& q : *queues) largest = std::max(largest, q.max_message_size);
    frame_limit_ = static_cast<uint32_t>(
        std::min<uint64_t>(transfer::kMaxFrame, largest + Acceptor::kEnvelopeRoom));
    reader_.SetLimit(frame_limit_);
    auto pos = store_.StreamPosition(stream_);
    if (!pos.ok()) return pos.status();
    last_ = *pos;
    transfer::Welcome w;
    w.store = store_.guid();
    w.last = last_;
    w.compression = transfer::ChooseCompression(hello.compression);
    if (!w.compression.empty()) {
      decompressor_ = std::make_unique<transfer::Decompressor>();
      decompressor_->SetLimit(frame_limit_);
    }
    std::string out;
    transfer::PutFrame(out, Type::kWelcome, transfer::EncodeWelcome(w));
    MQ_RETURN_IF_ERROR(WriteAll(out_, out, out_name_));

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
          if (f->oversize) {
            // Too large for any queue here: refused by its header alone, never decoded.
            MQ_RETURN_IF_ERROR(transfer::DecodeMessageHeader(f->payload, h));
            it.refuse = kClassNackMessageTooLarge;
          } else {
            MQ_RETURN_IF_ERROR(transfer::DecodeMessage(f->payload, h, it.msg));
          }
          uint64_t known = pending_.empty() ? last_ : std::max(last_, pending_.back().seq);
          if (!pending_.empty() && h.seq <= pending_.back().seq)
            return Status::LinkFailed(
                fmt::format("message {} comes after message {}: the stream is out of "
                            "order",
                            h.seq, pending_.back().seq));
          if (h.prev && h.prev > known)
            return Status::LinkFailed(
                fmt::format("message {} follows message {}, which never arrived (the "
                            "last here is {}): the stream has a gap",
                            h.seq, h.prev, known));
          if (!forget_below_) forget_below_ = h.seq;
          if (pending_.empty()) pending_since_ = MonotonicMs();
          pending_bytes_ += Cost(it);
          it.seq = h.seq;
          bool ends_unit = it.msg.xact_id.empty() || it.msg.eod_last;
          size_t body = it.msg.body.size();
          pending_.push_back(std::move(it));
          if (ends_unit) {
            whole_ = pending_.size();
            whole_bytes_ = pending_bytes_;
            open_bodies_ = 0;
          } else {
            open_bodies_ += body;
          }
          // A transaction that has not ended is held whole, up to the limit.
          if (pending_.size() - whole_ > kMaxLinkTransactionMessages ||
              open_bodies_ > kMaxLinkTransactionBytes)
            return Status::LinkFailed(fmt::format(
                "a transaction of more than {} messages or 256 MiB of bodies, the most this "
                "side holds until a transaction ends (mq(7) Quotas and limits): refused",
                kMaxLinkTransactionMessages));
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
          return Status::LinkFailed("the sender reported: " + PeerText(f->payload));
        default:
          return Status::LinkFailed(
              fmt::format("unexpected frame '{}' from the sender", static_cast<char>(f->type)));
      }
      // Store at each flush, or when what can be stored (whole units) makes a large batch.
      if (whole_ >= Acceptor::kBatchCount || whole_bytes_ >= Acceptor::kBatchBytes)
        MQ_RETURN_IF_ERROR(Commit(false));
    }
  }

  // Stores the pending messages up to the end of the last whole transaction (all of them with
  // `all`) and acknowledges.
  Status Commit(bool all) {
    size_t n = all ? pending_.size() : whole_;
    if (n == 0) return {};
    auto cut = pending_.begin() + static_cast<long>(n);
    std::vector<TransferItem> batch(std::make_move_iterator(pending_.begin()),
                                    std::make_move_iterator(cut));
    pending_.erase(pending_.begin(), cut);
    pending_bytes_ = all ? 0 : pending_bytes_ - whole_bytes_;
    if (all) open_bodies_ = 0;
    whole_ = whole_bytes_ = 0;
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
    return WriteAll(out_, out, out_name_);
  }

  // What a message held in pending_ costs in memory, roughly: its strings and the item.
  static size_t Cost(const TransferItem& it) {
    const Message& m = it.msg;
    return sizeof(TransferItem) + m.body.size() + m.label.size() + m.extension.size() +
           m.admin_queue.size() + m.response_queue.size() + m.destination_queue.size() +
           m.provider_name.size() + m.service_name.size() + m.service_contract_name.size() +
           m.message_type_name.size();
  }

  Store& store_;
  uint32_t frame_limit_ = transfer::kMaxFrame;
  int in_, out_;
  std::string in_name_, out_name_;
  transfer::FrameReader reader_;
  std::unique_ptr<transfer::Decompressor> decompressor_;  // with compression
  std::string stream_;
  uint64_t last_ = 0;
  uint64_t forget_below_ = 0;
  uint32_t processed_ = 0;
  std::vector<TransferItem> pending_;
  size_t pending_bytes_ = 0;  // Cost() of pending_
  // pending_[0, whole_) ends where a unit ends (a message outside a transaction, or a
  // transaction's last): what Commit(false) stores; whole_bytes_ its Cost(). The rest is one
  // transaction still coming, of open_bodies_ bytes of bodies.
  size_t whole_ = 0;
  size_t whole_bytes_ = 0;
  uint64_t open_bodies_ = 0;
  int64_t pending_since_ = 0;  // when the first of pending_ came
  bool sender_reports_ = false;  // the hello's field 6
  bool eof_ = false;
};

Acceptor::Acceptor(Store& store, int in, int out, std::string in_name, std::string out_name)
    : impl_(std::make_unique<Impl>(store, in, out, std::move(in_name), std::move(out_name))) {}

Acceptor::~Acceptor() = default;

AcceptResult Acceptor::Run() { return impl_->Run(); }

void Acceptor::SetIdleTimeout(int64_t ms) { impl_->idle_timeout_ms_ = ms; }

}  // namespace mq::link
