// bridge.cpp: the bridge engines (bridge.hpp has their protocol): a base that connects with
// backoff, and one class per direction.
#include "bridge/bridge.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/units.hpp"
#include "base/units.hpp"

namespace mq::bridge {

namespace {

constexpr int64_t kIdleCheckMs = 10000;  // an idle bridge out looks at its connection this often
constexpr int kFollowNextMs = 1000;      // bridge in: a wait for a delivery, with follow
constexpr int kOnceNextMs = 200;         // and without: then it asks whether the queue is empty

// What both directions share: the store, the stop signal, the channel and its reconnection.
class Engine {
 public:
  Engine(Store& store, const BridgeOptions& o, Connector& connector,
         const proc::StopSignal& stop, const NoteFn& note)
      : store_(store), o_(o), ref_(o.queue), connector_(connector), stop_(stop), note_(note),
        backoff_(o.retry_ms) {}

  // Looks the queue up (its settings decide how messages are appended).
  Status Init() {
    auto st = store_.StatQueue(ref_);
    if (!st.ok()) return st.status().WithSubject(ref_.Full());
    queue_ = st->info;
    return {};
  }

 protected:
  void Note(const std::string& subject, const std::string& text) const {
    if (note_) note_({subject, text});
  }

  // Connects (again), with backoff on transient failures. `setup` runs on each new channel
  // (confirm mode, declarations, consume). Returns a Status that ends the bridge; ok with no
  // channel if a stop was requested while waiting.
  template <typename Setup>
  Status Connect(Setup setup) {
    for (;;) {
      ch_.reset();
      auto c = connector_.Connect();
      Status s = c.ok() ? Status() : c.status();
      if (s.ok()) {
        ch_ = std::move(*c);
        s = setup(*ch_);
        if (s.ok()) {
          if (reconnecting_) Note(o_.broker, "connected again");
          reconnecting_ = true;
          backoff_.Progress();
          return {};
        }
        ch_.reset();
      }
      // A first connection without follow is not retried: a wrong URL fails at once.
      bool first = !reconnecting_;
      if (!Transient(s) || (first && !o_.follow)) return s;
      if (backoff_.Failed(MonotonicMs()))
        return Status(s.code(), fmt::format("{} (gave up after {})", s.text(),
                                            FormatDuration(backoff_.budget())),
                      s.subject());
      int64_t delay = backoff_.Next();
      Note(s.subject(), fmt::format("{}; retrying in {}", s.text(), FormatDuration(delay)));
      reconnecting_ = true;
      if (stop_.SleepFor(delay)) return {};
    }
  }

  // After a failure: a transient one is reconnected (true), anything else ends the bridge.
  bool Recoverable(const Status& s) {
    if (!Transient(s)) return false;
    Note(s.subject(), s.text() + "; reconnecting");
    ch_.reset();
    return true;
  }

  Store& store_;
  const BridgeOptions& o_;
  const QueueRef& ref_;
  Connector& connector_;
  const proc::StopSignal& stop_;
  const NoteFn& note_;
  QueueInfo queue_;
  std::unique_ptr<Channel> ch_;
  proc::Backoff backoff_;
  bool reconnecting_ = false;
};

class Out : public Engine {
 public:
  using Engine::Engine;

  Status Run() {
    routing_key_ = o_.routing_key.empty() ? ref_.Full() : o_.routing_key;
    auto setup = [&](Channel& c) -> Status {
      MQ_RETURN_IF_ERROR(c.EnableConfirms());
      if (o_.declare) {
        MQ_RETURN_IF_ERROR(c.DeclareExchange(o_.exchange));
        MQ_RETURN_IF_ERROR(c.DeclareQueue(routing_key_));
        return c.Bind(routing_key_, o_.exchange, routing_key_);
      }
      return c.CheckExchange(o_.exchange);
    };
    std::unique_ptr<Doorbell> waiter;
    if (o_.follow) {
      auto w = store_.ArmDoorbell(ref_);
      if (!w.ok()) return w.status().WithSubject(ref_.Full());
      waiter = std::move(*w);
    }
    Selection sel;
    sel.limit = o_.batch;
    for (;;) {
      bool stopping = stop_.Requested();
      if (stopping && flight_.empty()) break;
      if (!ch_) {
        MQ_RETURN_IF_ERROR(Connect(setup));
        if (!ch_) break;  // stopped while waiting to reconnect
      }
      // Fill the window: the next batch is published while the confirms of the one before
      // are on their way.
      bool empty = false;
      if (!stopping && flight_.size() < kConfirmWindow) {
        auto lease = store_.Lock(ref_, sel, ReadOptions{}, LockOptions{}, nullptr);
        if (lease.ok()) {
          InFlight f{std::move(*lease), ch_->Published() + 1, 0};
          Status s = Publish(*f.lease);
          f.last = ch_->Published();
          flight_.push_back(std::move(f));
          if (!s.ok()) {
            ReleaseAll();
            if (!Recoverable(s)) return s;
          }
          continue;
        }
        if (lease.status().code() != Code::kMessageNotFound) {
          ReleaseAll();
          return lease.status().WithSubject(ref_.Full());
        }
        empty = true;
      }
      if (!flight_.empty()) {
        // The oldest batch: removed from mq once the broker has confirmed all of it.
        InFlight& f = flight_.front();
        Status s = ch_->WaitConfirmed(f.last, o_.timeout_ms);
        if (s.ok()) s = ch_->Refused(f.first, f.last);
        if (!s.ok()) {
          ReleaseAll();
          if (!Recoverable(s)) return s;
          continue;
        }
        FinishReport report;
        Status done = store_.Finish(*f.lease, true, 0, &report);
        flight_.pop_front();
        if (!done.ok()) {
          ReleaseAll();
          return done.WithSubject(ref_.Full());
        }
        continue;
      }
      if (!empty || !o_.follow) break;
      // Idle: wait for the doorbell, and look at the connection now and then (heartbeats,
      // a broker that went away).
      Status p = ch_->Poll();
      if (!p.ok() && !Recoverable(p)) return p;
      auto deadline = store_.NextDeadline(ref_);
      auto wake = waiter->Wait(deadline.ok() ? *deadline : 0, MonotonicMs() + kIdleCheckMs,
                               stop_.fd());
      if (!wake.ok()) return wake.status();
    }
    return {};
  }

 private:
  // Batches published and not yet removed: a lease, and the delivery tags of its messages.
  struct InFlight {
    std::unique_ptr<Lease> lease;
    uint64_t first = 0, last = 0;
  };

  // Publishes a lease's messages (their confirms come later).
  Status Publish(const Lease& lease) {
    int64_t now = NowMs();
    for (const Message& m : lease.messages()) {
      // The lock that gave the message to the bridge counted as a delivery; a mover is not a
      // reader, so the count travels as it was before.
      Message out = m;
      if (out.delivery_count) out.delivery_count--;
      MQ_RETURN_IF_ERROR(ch_->Publish(o_.exchange, routing_key_, ToAmqp(out, now)));
    }
    return {};
  }

  // After a nack, a return, a lost connection or a failed removal: every batch in flight
  // goes back to the queue untouched (no abort count). Those the broker took are published
  // again; their message_id lets the consumer drop the copies.
  void ReleaseAll() {
    for (InFlight& f : flight_) {
      Status back = store_.Release(*f.lease);
      if (!back.ok()) Note(ref_.Full(), "could not return a batch: " + back.text());
    }
    flight_.clear();
  }

  std::string routing_key_;
  std::deque<InFlight> flight_;
};

class In : public Engine {
 public:
  using Engine::Engine;

  Status Run() {
    auto setup = [&](Channel& c) -> Status {
      if (o_.declare) MQ_RETURN_IF_ERROR(c.DeclareQueue(o_.from));
      return c.Consume(o_.from, o_.prefetch);
    };
    size_t batch_max = o_.batch;
    std::vector<Delivery> batch;
    while (!stop_.Requested()) {
      if (!ch_) {
        MQ_RETURN_IF_ERROR(Connect(setup));
        if (!ch_) break;
      }
      batch.clear();
      auto d = ch_->Next(o_.follow ? kFollowNextMs : kOnceNextMs);
      if (!d.ok()) {
        if (Recoverable(d.status())) continue;
        return d.status();
      }
      if (!*d) {
        if (o_.follow) continue;
        // Without follow: done when nothing is ready at the broker (what is unacked
        // elsewhere comes back only when its consumer goes).
        auto ready = ch_->ReadyCount(o_.from);
        if (!ready.ok()) {
          if (Recoverable(ready.status())) continue;
          return ready.status();
        }
        if (*ready == 0) break;
        continue;
      }
      batch.push_back(std::move(**d));
      Status broke;
      while (batch.size() < batch_max) {
        auto more = ch_->Next(0);
        if (!more.ok()) {
          broke = more.status();
          break;
        }
        if (!*more) break;
        batch.push_back(std::move(**more));
      }
      // What arrived before a break is stored: its acks are lost with the connection, so the
      // broker delivers it again, and the dedup keys drop it then.
      Status s = Append(batch);
      if (s.ok()) {
        if (broke.ok()) broke = ch_->Ack(batch.back().tag, true);
      } else if (Refusal(s)) {
        // The store refused a message of the batch: each delivery alone, so that one
        // refused message neither blocks nor loops the bridge.
        s = AppendEach(batch, broke);
      }
      if (!s.ok()) {
        if (broke.ok()) (void)ch_->Nack(batch.back().tag, true, true);
        return s;
      }
      if (!broke.ok() && !Recoverable(broke)) return broke;
    }
    return {};
  }

 private:
  // Whether the store refused a message for what it is (its size, the queue's quota, a
  // property), not for the store's state: another message may be stored.
  bool Refusal(const Status& s) const {
    if (s.subject() != ref_.Full()) return false;  // the store's own errors name the store
    switch (s.code()) {
      case Code::kInsufficientResources:  // larger than the queue's limit; its quota
      case Code::kIllegalPropertyValue:
      case Code::kLabelTooLong:
      case Code::kValidationFailed:
      case Code::kConversationNotFound:
      case Code::kConversationClosed:
      case Code::kMessageTypeNotFound:
        return true;
      default:
        return false;
    }
  }

  // Stores the deliveries of `batch` one by one, acking each after its commit. One the store
  // refuses (Refusal) is rejected to the broker without requeue, so that the AMQP queue's
  // dead-letter exchange takes it (mq(7) "Beyond one machine"); the others go on. Any other
  // error ends it (the unacked deliveries come again). A lost connection is left in `broke`.
  Status AppendEach(const std::vector<Delivery>& batch, Status& broke) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const Delivery& d = batch[i];
      Status s = Append(std::span(batch).subspan(i, 1));
      if (!s.ok() && !Refusal(s)) return s;
      if (!broke.ok()) continue;  // stored; its broker will deliver it again (dropped then)
      if (s.ok()) {
        broke = ch_->Ack(d.tag, false);
        continue;
      }
      Note(ref_.Full(),
           fmt::format("refused a message from {} (message_id {}): {}; rejected to the broker",
                       o_.from, d.message.message_id.value_or("none"), s.text()));
      broke = ch_->Nack(d.tag, false, false);
    }
    return {};
  }

  // Appends deliveries to the queue in one transaction, each with its dedup key.
  Status Append(std::span<const Delivery> batch) {
    int64_t now = NowMs();
    std::vector<Message> msgs;
    AppendOptions o;
    o.keep_identity = true;  // sent time, origin and conversation sequence as they travelled
    o.transactional = queue_.transactional;
    o.dedup_window = o_.dedup_window_ms;
    msgs.reserve(batch.size());
    o.dedup_keys.reserve(batch.size());
    for (const auto& d : batch) {
      Message m = FromAmqp(d.message, now);
      // A new message in this store: its own id, arrival and place.
      m.id.clear();
      m.arrived_time = 0;
      m.message_enqueue_time = 0;
      m.queuing_order = 0;
      m.status = 1;
      m.destination_queue.clear();
      msgs.push_back(std::move(m));
      o.dedup_keys.push_back(d.message.message_id && !d.message.message_id->empty()
                                 ? kDedupPrefix + *d.message.message_id
                                 : std::string());
    }
    VectorSource src(msgs);
    AppendReport report;
    Status s = store_.Append(ref_, o, src, nullptr, &report);
    return s.WithSubject(ref_.Full());
  }
};

}  // namespace

Status RunBridgeOut(Store& store, const BridgeOptions& options, Connector& connector,
                    const proc::StopSignal& stop, const NoteFn& note) {
  Out out(store, options, connector, stop, note);
  MQ_RETURN_IF_ERROR(out.Init());
  return out.Run();
}

Status RunBridgeIn(Store& store, const BridgeOptions& options, Connector& connector,
                   const proc::StopSignal& stop, const NoteFn& note) {
  In in(store, options, connector, stop, note);
  MQ_RETURN_IF_ERROR(in.Init());
  return in.Run();
}

}  // namespace mq::bridge
