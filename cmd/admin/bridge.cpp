// mq-admin bridge out QUEUE --amqp URL --exchange X [--routing-key K] [--once|--follow]
// mq-admin bridge in QUEUE --amqp URL --from AMQP-QUEUE [--prefetch N] [--once|--follow]
//   Move messages between an mq queue and RabbitMQ, exactly once in both directions.
//
// Protocol (mq(7) "Beyond one machine" says the same for users):
//  out: 1. Lock a batch (up to --batch messages) under a process lease: while this process
//          lives nobody else gets them; if it dies, the next reader returns them.
//       2. Publish each, persistent and mandatory, on a channel in confirm mode, with the mq
//          message id as AMQP message_id (amqp_map.hpp has the mapping).
//       3. Wait for the broker's confirms. All acked and none returned: Finish (commit)
//          removes the batch in one synced transaction. A nack, a return (no queue bound) or
//          a lost connection: Release returns the batch untouched (no abort count).
//       Two batches are in flight at once (a confirm window): the next is locked and
//       published while the confirms of the one before come in, and batches are removed in
//       the order they were published. A failure returns every batch in flight.
//       A crash between 3's confirm and the removal publishes the batch again: the copies
//       carry the same message_id, which bridge in (or any consumer) drops.
//  in:  1. Consume with manual acknowledgements and a prefetch window.
//       2. Append the deliveries at hand (up to --batch) in one LMDB transaction, each with a
//          dedup key "amqp:MESSAGE_ID" recorded in that same transaction (the queue's
//          --dedup-window); a key seen before in the window drops its message.
//       3. Only after that commit, ack them (multiple) to the broker. A crash before the ack
//          makes the broker redeliver; the dedup keys store each message once. A delivery
//          without message_id is stored at least once.
// --once stops when the source is empty; --follow waits (the doorbell on the mq side, the
// consumer on the AMQP side). A lost connection is retried with backoff (doubling from
// 100 ms to 10 s) for --retry (default: forever with --follow, 30 s with --once); with
// --once the first connection is not retried, so a wrong URL fails at once. SIGTERM or
// SIGINT: the batch in flight is finished (confirmed and removed, or stored and acked),
// then exit 0.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <span>

#include <fmt/format.h>

#include "admin.hpp"
#include "bridge/amqp_link.hpp"
#include "base/units.hpp"
#include "store/waiter.hpp"

namespace mq::admin {

namespace {

constexpr int64_t kBackoffFirstMs = 100;
constexpr int64_t kBackoffMaxMs = 10000;
constexpr int64_t kIdleCheckMs = 10000;  // an idle bridge out looks at its connection this often
// bridge out: batches published and awaiting their confirms at once. Two keep the broker
// busy with one batch while the bridge removes the one before from the store.
constexpr size_t kWindow = 2;
const std::string kDedupPrefix = "amqp:";

struct BridgeArgs {
  std::string queue;
  std::string amqp;
  std::string credentials;
  std::string cacert, cert, key;
  bool once = false, follow = false, declare = false;
  uint32_t batch = 0;  // 0: the direction's default
  std::string retry;
  std::string timeout = "30s";
  // out
  std::string exchange;
  std::string routing_key;
  // in
  std::string from;
  uint32_t prefetch = 1000;
  std::string dedup_window = "7d";
};

void AddCommonOptions(CLI::App& sub, BridgeArgs& a) {
  sub.add_option("QUEUE", a.queue, "The mq queue")->required();
  sub.add_option("--amqp", a.amqp,
                 "Broker URL: amqp://[USER[:PASSWORD]@]HOST[:PORT][/VHOST] or amqps://... "
                 "(default $MQ_AMQP_URL)")
      ->type_name("URL");
  sub.add_option("--credentials", a.credentials,
                 "File whose first line is USER:PASSWORD (overrides the URL's)")
      ->type_name("FILE");
  sub.add_option("--cacert", a.cacert, "amqps: CA certificates (PEM) to verify the broker")
      ->type_name("FILE");
  sub.add_option("--cert", a.cert, "amqps: client certificate (PEM)")->type_name("FILE");
  sub.add_option("--key", a.key, "amqps: client private key (PEM)")->type_name("FILE");
  auto* once = sub.add_flag("--once", a.once, "Stop when the source is empty (default)");
  sub.add_flag("--follow", a.follow, "Keep moving messages until SIGTERM or SIGINT")
      ->excludes(once);
  sub.add_flag("--declare", a.declare,
               "Declare what the bridge uses: a durable quorum queue (and, for out, a direct "
               "exchange and the binding)");
  sub.add_option("--batch", a.batch,
                 "Messages per store transaction (out: per lease and confirm round, default "
                 "500; in: default 500)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 100000));
  sub.add_option("--retry", a.retry,
                 "How long to keep reconnecting after a lost connection (default: infinite "
                 "with --follow, 30s with --once)")
      ->type_name("DURATION");
  sub.add_option("--timeout", a.timeout,
                 "Connecting, and waiting for the broker's replies (default 30s)")
      ->type_name("DURATION");
}

// What both directions share: the endpoint, the signal pipe, reconnection with backoff.
class Bridge {
 public:
  Bridge(Store& store, QueueRef ref, const BridgeArgs& a)
      : store_(store), ref_(std::move(ref)), a_(a) {}

  Status Init() {
    // rabbitmq-c is loaded now, not at start-up (amqp_link.hpp).
    MQ_RETURN_IF_ERROR(bridge::LoadRabbitmq());
    std::string url = a_.amqp;
    if (url.empty())
      if (const char* env = std::getenv("MQ_AMQP_URL")) url = env;
    if (url.empty())
      return Status(Code::kInvalidArg, "no broker: pass --amqp URL or set MQ_AMQP_URL");
    auto ep = bridge::ParseEndpoint(url, a_.credentials);
    if (!ep.ok()) return ep.status();
    ep_ = std::move(*ep);
    ep_.cacert = a_.cacert;
    ep_.cert = a_.cert;
    ep_.key = a_.key.empty() ? a_.cert : a_.key;
    auto t = ParseDuration(a_.timeout);
    if (!t.ok()) return t.status();
    if (*t <= 0 || *t > INT32_MAX)
      return Status(Code::kInvalidArg, "--timeout must be a positive duration");
    timeout_ms_ = static_cast<int>(*t);
    auto w = ParseDuration(a_.dedup_window);
    if (!w.ok()) return w.status();
    if (*w <= 0) return Status(Code::kInvalidArg, "--dedup-window must be a positive duration");
    dedup_window_ms_ = *w;
    retry_ms_ = a_.follow ? -1 : 30000;
    if (!a_.retry.empty()) {
      auto r = ParseDuration(a_.retry);
      if (!r.ok()) return r.status();
      retry_ms_ = *r;
    }
    stop_fd_ = cli::StopOnSignals();
    if (stop_fd_ < 0) return ErrnoStatus(errno, "pipe", "cannot set up signal handling");
    auto st = store_.StatQueue(ref_);
    if (!st.ok()) return st.status().WithSubject(ref_.Full());
    queue_ = st->info;
    return {};
  }

  // Connects (again), with backoff on transient failures. `setup` runs on each new link
  // (confirm mode, declarations, consume). Returns a Status that ends the bridge; ok with no
  // link if a stop signal came while waiting.
  template <typename Setup>
  Status Connect(Setup setup) {
    int64_t backoff = kBackoffFirstMs;
    int64_t since = MonotonicMs();
    for (;;) {
      link_.reset();
      auto l = bridge::Link::Connect(ep_, timeout_ms_);
      Status s = l.ok() ? Status() : l.status();
      if (s.ok()) {
        link_ = std::move(*l);
        s = setup(*link_);
        if (s.ok()) {
          if (reconnecting_) cli::Note(ep_.url_shown, "connected again");
          reconnecting_ = true;
          return {};
        }
        link_.reset();
      }
      // A first connection with --once is not retried: a wrong URL fails at once.
      bool first = !reconnecting_;
      if (!bridge::Transient(s) || (first && !a_.follow)) return s;
      if (retry_ms_ >= 0 && MonotonicMs() - since >= retry_ms_)
        return Status(s.code(), fmt::format("{} (gave up after {})", s.text(),
                                            FormatDuration(retry_ms_)),
                      s.subject());
      cli::Note(s.subject(), fmt::format("{}; retrying in {}", s.text(), FormatDuration(backoff)));
      reconnecting_ = true;
      if (Sleep(backoff)) return {};
      backoff = std::min(backoff * 2, kBackoffMaxMs);
    }
  }

  // Sleeps `ms`, or less if a stop signal comes: returns whether one came.
  bool Sleep(int64_t ms) { return cli::SleepUnlessStopped(stop_fd_, ms); }

  // After a failure: a transient one is reconnected (true), anything else ends the bridge.
  bool Recoverable(const Status& s) {
    if (!bridge::Transient(s)) return false;
    cli::Note(s.subject(), s.text() + "; reconnecting");
    link_.reset();
    return true;
  }

 protected:
  Store& store_;
  QueueRef ref_;
  const BridgeArgs& a_;
  QueueInfo queue_;
  bridge::Endpoint ep_;
  std::unique_ptr<bridge::Link> link_;
  int timeout_ms_ = 30000;
  int64_t retry_ms_ = -1;
  int64_t dedup_window_ms_ = 0;
  int stop_fd_ = -1;
  bool reconnecting_ = false;
};

class BridgeOut : public Bridge {
 public:
  using Bridge::Bridge;

  int Run() {
    routing_key_ = a_.routing_key.empty() ? ref_.Full() : a_.routing_key;
    auto setup = [&](bridge::Link& l) -> Status {
      MQ_RETURN_IF_ERROR(l.EnableConfirms());
      if (a_.declare) {
        MQ_RETURN_IF_ERROR(l.DeclareExchange(a_.exchange));
        MQ_RETURN_IF_ERROR(l.DeclareQueue(routing_key_));
        return l.Bind(routing_key_, a_.exchange, routing_key_);
      }
      return l.CheckExchange(a_.exchange);
    };
    std::optional<Waiter> waiter;
    if (a_.follow) {
      auto w = store_.ArmDoorbell(ref_);
      if (!w.ok()) return cli::Fail(w.status().WithSubject(ref_.Full()));
      waiter = std::move(*w);
    }
    Selection sel;
    sel.limit = a_.batch ? a_.batch : 500;
    for (;;) {
      bool stopping = cli::Stopping();
      if (stopping && flight_.empty()) break;
      if (!link_) {
        Status s = Connect(setup);
        if (!s.ok()) return cli::Fail(s);
        if (!link_) break;  // stopped while waiting to reconnect
      }
      // Fill the window: the next batch is published while the confirms of the one before
      // are on their way.
      bool empty = false;
      if (!stopping && flight_.size() < kWindow) {
        auto lease = store_.Lock(ref_, sel, ReadOptions{}, LockOptions{}, nullptr);
        if (lease.ok()) {
          InFlight f{std::move(*lease), link_->Published() + 1, 0};
          Status s = Publish(*f.lease);
          f.last = link_->Published();
          flight_.push_back(std::move(f));
          if (!s.ok()) {
            ReleaseAll();
            if (!Recoverable(s)) return cli::Fail(s);
          }
          continue;
        }
        if (lease.status().code() != Code::kMessageNotFound) {
          ReleaseAll();
          return cli::Fail(lease.status().WithSubject(ref_.Full()));
        }
        empty = true;
      }
      if (!flight_.empty()) {
        // The oldest batch: removed from mq once the broker has confirmed all of it.
        InFlight& f = flight_.front();
        Status s = link_->WaitConfirmed(f.last, timeout_ms_);
        if (s.ok()) s = link_->Refused(f.first, f.last);
        if (!s.ok()) {
          ReleaseAll();
          if (!Recoverable(s)) return cli::Fail(s);
          continue;
        }
        FinishReport report;
        Status done = store_.Finish(*f.lease, true, 0, &report);
        flight_.pop_front();
        if (!done.ok()) {
          ReleaseAll();
          return cli::Fail(done.WithSubject(ref_.Full()));
        }
        continue;
      }
      if (!empty || !a_.follow) break;
      // Idle: wait for the doorbell, and look at the connection now and then (heartbeats,
      // a broker that went away).
      Status p = link_->Poll();
      if (!p.ok() && !Recoverable(p)) return cli::Fail(p);
      auto deadline = store_.NextDeadline(ref_);
      auto wake = waiter->Wait(deadline.ok() ? *deadline : 0, MonotonicMs() + kIdleCheckMs,
                               stop_fd_);
      if (!wake.ok()) return cli::Fail(wake.status());
    }
    return 0;
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
      MQ_RETURN_IF_ERROR(link_->Publish(a_.exchange, routing_key_, bridge::ToAmqp(out, now)));
    }
    return {};
  }

  // After a nack, a return, a lost connection or a failed removal: every batch in flight
  // goes back to the queue untouched (no abort count). Those the broker took are published
  // again; their message_id lets the consumer drop the copies.
  void ReleaseAll() {
    for (InFlight& f : flight_) {
      Status back = store_.Release(*f.lease);
      if (!back.ok()) cli::Note(ref_.Full(), "could not return a batch: " + back.text());
    }
    flight_.clear();
  }

  std::string routing_key_;
  std::deque<InFlight> flight_;
};

class BridgeIn : public Bridge {
 public:
  using Bridge::Bridge;

  int Run() {
    auto setup = [&](bridge::Link& l) -> Status {
      if (a_.declare) MQ_RETURN_IF_ERROR(l.DeclareQueue(a_.from));
      return l.Consume(a_.from, static_cast<uint16_t>(std::min<uint32_t>(a_.prefetch, 65535)));
    };
    size_t batch_max = a_.batch ? a_.batch : 500;
    std::vector<bridge::Delivery> batch;
    while (!cli::Stopping()) {
      if (!link_) {
        Status s = Connect(setup);
        if (!s.ok()) return cli::Fail(s);
        if (!link_) break;
      }
      batch.clear();
      auto d = link_->Next(a_.follow ? 1000 : 200);
      if (!d.ok()) {
        if (Recoverable(d.status())) continue;
        return cli::Fail(d.status());
      }
      if (!*d) {
        if (a_.follow) continue;
        // --once: done when nothing is ready at the broker (what is unacked elsewhere comes
        // back only when its consumer goes).
        auto ready = link_->ReadyCount(a_.from);
        if (!ready.ok()) {
          if (Recoverable(ready.status())) continue;
          return cli::Fail(ready.status());
        }
        if (*ready == 0) break;
        continue;
      }
      batch.push_back(std::move(**d));
      Status broke;
      while (batch.size() < batch_max) {
        auto more = link_->Next(0);
        if (!more.ok()) {
          broke = more.status();
          break;
        }
        if (!*more) break;
        batch.push_back(std::move(**more));
      }
      // What arrived before a break is stored: its acks are lost with the connection, so the
      // broker delivers it again, and the dedup keys drop it then.
      Status s = Store(batch);
      if (s.ok()) {
        if (broke.ok()) broke = link_->Ack(batch.back().tag, true);
      } else if (Refusal(s)) {
        // The store refused a message of the batch: each delivery alone, so that one
        // refused message neither blocks nor loops the bridge.
        s = StoreEach(batch, broke);
      }
      if (!s.ok()) {
        if (broke.ok()) (void)link_->Nack(batch.back().tag, true, true);
        return cli::Fail(s);
      }
      if (!broke.ok() && !Recoverable(broke)) return cli::Fail(broke);
    }
    return 0;
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
  Status StoreEach(const std::vector<bridge::Delivery>& batch, Status& broke) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const bridge::Delivery& d = batch[i];
      Status s = Store(std::span(batch).subspan(i, 1));
      if (!s.ok() && !Refusal(s)) return s;
      if (!broke.ok()) continue;  // stored; its broker will deliver it again (dropped then)
      if (s.ok()) {
        broke = link_->Ack(d.tag, false);
        continue;
      }
      cli::Note(ref_.Full(),
                fmt::format("refused a message from {} (message_id {}): {}; rejected to the "
                            "broker",
                            a_.from, d.message.message_id.value_or("none"), s.text()));
      broke = link_->Nack(d.tag, false, false);
    }
    return {};
  }

  Status Store(std::span<const bridge::Delivery> batch) {
    int64_t now = NowMs();
    std::vector<Message> msgs;
    AppendOptions o;
    o.keep_identity = true;  // sent time, origin and conversation sequence as they travelled
    o.transactional = queue_.transactional;
    o.dedup_window = dedup_window_ms_;
    msgs.reserve(batch.size());
    o.dedup_keys.reserve(batch.size());
    for (const auto& d : batch) {
      Message m = bridge::FromAmqp(d.message, now);
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

Command SetupBridge(CLI::App& app, Context&) {
  auto out_args = std::make_shared<BridgeArgs>();
  auto in_args = std::make_shared<BridgeArgs>();
  auto* sub = app.add_subcommand("bridge", "Move messages to and from RabbitMQ, exactly once");
  sub->require_subcommand(1);
  auto* out = sub->add_subcommand("out", "Publish the messages of QUEUE to an AMQP exchange");
  AddCommonOptions(*out, *out_args);
  out->add_option("--exchange", out_args->exchange,
                  "AMQP exchange to publish to ('' is the default exchange, which routes by "
                  "queue name)")
      ->type_name("X")
      ->required();
  out->add_option("--routing-key", out_args->routing_key,
                  "Routing key (default: the queue's name); with --declare, also the name of "
                  "the quorum queue")
      ->type_name("K");
  auto* in = sub->add_subcommand("in", "Consume an AMQP queue into QUEUE");
  AddCommonOptions(*in, *in_args);
  in->add_option("--from", in_args->from, "AMQP queue to consume from")
      ->type_name("AMQP-QUEUE")
      ->required();
  in->add_option("--prefetch", in_args->prefetch,
                 "Deliveries the broker may send ahead of acknowledgements (default 1000)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 65535));
  in->add_option("--dedup-window", in_args->dedup_window,
                 "How long each delivery's message_id is remembered, so that a redelivery "
                 "is stored once (default 7d)")
      ->type_name("DURATION");
  return {sub, [out, out_args, in_args](Context& ctx) {
            bool is_out = out->parsed();
            const BridgeArgs& a = is_out ? *out_args : *in_args;
            auto ref = cli::ParseQueueArg(a.queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            if (ref->IsSub() || ref->IsSystem())
              return cli::Fail(Status(Code::kUnsupportedFormatnameOperation,
                                      "a bridge moves messages of a queue, not of a journal, "
                                      "subqueue or system queue",
                                      ref->Full()));
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            if (is_out) {
              BridgeOut b(**store, *ref, a);
              Status s = b.Init();
              return s.ok() ? b.Run() : cli::Fail(s);
            }
            BridgeIn b(**store, *ref, a);
            Status s = b.Init();
            return s.ok() ? b.Run() : cli::Fail(s);
          }};
}

}  // namespace mq::admin
