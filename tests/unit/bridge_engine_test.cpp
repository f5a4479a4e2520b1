// bridge_engine_test.cpp: the engines of mq-admin bridge (lib/bridge/bridge.hpp) against a
// broker in memory (a fake bridge::Channel and Connector): what bridge out publishes and when
// it removes it, its confirm window, bridge in's dedup and refusals, reconnection with
// backoff, and stopping. tests/cli/test_bridge_*.sh run them against RabbitMQ.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/ids.hpp"
#include "base/units.hpp"
#include "bridge/bridge.hpp"
#include "test_support.hpp"

using namespace mq;
using namespace mq::bridge;

namespace {

const std::string kWhere = "fake://broker";

Status Lost() { return Status::BrokerUnavailable("connection lost", kWhere); }

// The broker: what it took from publishers, what it holds for consumers, and the faults a
// test asks for. Channels share it, as the connections of one broker do.
struct FakeBroker {
  struct Published {
    std::string exchange, routing_key;
    AmqpMessage message;
  };
  struct Queued {
    AmqpMessage message;
    bool redelivered = false;
  };
  // Publishers.
  std::vector<Published> taken;      // every publish the broker took, copies included
  std::set<std::string> nack_bodies;  // publishes of these bodies are nacked
  uint64_t max_unconfirmed = 0;       // the most publishes of one channel awaiting confirms
  int publishes = 0;                  // across channels
  int lose_at_publish = 0;            // this publish (1-based, across channels) breaks: 0 none
  std::function<void()> on_confirm;   // called when a publisher waits for its confirms
  // Consumers.
  std::deque<Queued> ready;
  std::vector<AmqpMessage> dead;  // rejected without requeue (the dead-letter exchange's)
  int acks = 0;                   // across channels
  int lose_at_ack = 0;            // this ack (1-based) breaks the connection: 0 none
  // Connections.
  int connects = 0;
  std::map<int, Status> connect_fails;  // by connection attempt, 1-based
  Status fail_from;                     // every attempt from `fail_from_attempt` on fails
  int fail_from_attempt = 0;
  std::function<void()> on_connect;
  std::function<void()> on_idle;  // a consumer found nothing, or a publisher polled

  void Deliver(std::string body, std::optional<std::string> message_id) {
    AmqpMessage m;
    m.body = std::move(body);
    m.message_id = std::move(message_id);
    ready.push_back({m, false});
  }
};

class FakeChannel : public Channel {
 public:
  explicit FakeChannel(FakeBroker& b) : b_(b) {}
  // The connection closes: what was delivered and not acknowledged goes back, redelivered.
  ~FakeChannel() override {
    for (auto it = unacked_.rbegin(); it != unacked_.rend(); ++it)
      b_.ready.push_front({it->second, true});
  }

  Status DeclareExchange(const std::string&) override { return Check(); }
  Status DeclareQueue(const std::string&) override { return Check(); }
  Status Bind(const std::string&, const std::string&, const std::string&) override {
    return Check();
  }
  Status CheckExchange(const std::string&) override { return Check(); }
  Status EnableConfirms() override { return Check(); }

  Status Publish(const std::string& exchange, const std::string& routing_key,
                 const AmqpMessage& m) override {
    MQ_RETURN_IF_ERROR(Check());
    if (++b_.publishes == b_.lose_at_publish) return Break();
    ++published_;
    b_.taken.push_back({exchange, routing_key, m});
    if (b_.nack_bodies.count(m.body)) nacked_.insert(published_);
    b_.max_unconfirmed = std::max(b_.max_unconfirmed, published_ - confirmed_);
    return {};
  }
  uint64_t Published() const override { return published_; }
  Status WaitConfirmed(uint64_t tag, int) override {
    MQ_RETURN_IF_ERROR(Check());
    if (b_.on_confirm) b_.on_confirm();
    confirmed_ = std::max(confirmed_, tag);
    return {};
  }
  Status Refused(uint64_t first, uint64_t last) const override {
    auto it = nacked_.lower_bound(first);
    if (it != nacked_.end() && *it <= last)
      return Status::BrokerRefused("the broker refused a message (basic.nack)", kWhere);
    return {};
  }
  Status Poll() override {
    if (b_.on_idle) b_.on_idle();
    return Check();
  }

  Status Consume(const std::string&, uint16_t) override { return Check(); }
  Result<std::optional<Delivery>> Next(int) override {
    MQ_RETURN_IF_ERROR(Check());
    if (b_.ready.empty()) {
      if (b_.on_idle) b_.on_idle();
      return std::optional<Delivery>();
    }
    FakeBroker::Queued q = b_.ready.front();
    b_.ready.pop_front();
    uint64_t tag = ++tags_;
    unacked_[tag] = q.message;
    return std::optional<Delivery>(Delivery{tag, q.redelivered, q.message});
  }
  Status Ack(uint64_t tag, bool multiple) override {
    MQ_RETURN_IF_ERROR(Check());
    if (++b_.acks == b_.lose_at_ack) return Break();
    Settle(tag, multiple, nullptr);
    return {};
  }
  Status Nack(uint64_t tag, bool multiple, bool requeue) override {
    MQ_RETURN_IF_ERROR(Check());
    std::vector<AmqpMessage> settled;
    Settle(tag, multiple, &settled);
    for (auto& m : settled) {
      if (requeue)
        b_.ready.push_back({m, true});
      else
        b_.dead.push_back(m);
    }
    return {};
  }
  Result<uint32_t> ReadyCount(const std::string&) override {
    MQ_RETURN_IF_ERROR(Check());
    return static_cast<uint32_t>(b_.ready.size());
  }

 private:
  Status Check() const { return broken_ ? Lost() : Status(); }
  Status Break() {
    broken_ = true;
    return Lost();
  }
  void Settle(uint64_t tag, bool multiple, std::vector<AmqpMessage>* out) {
    for (auto it = unacked_.begin(); it != unacked_.end();) {
      if (it->first == tag || (multiple && it->first < tag)) {
        if (out) out->push_back(it->second);
        it = unacked_.erase(it);
      } else {
        ++it;
      }
    }
  }

  FakeBroker& b_;
  uint64_t published_ = 0, confirmed_ = 0, tags_ = 0;
  std::set<uint64_t> nacked_;
  std::map<uint64_t, AmqpMessage> unacked_;
  bool broken_ = false;
};

class FakeConnector : public Connector {
 public:
  explicit FakeConnector(FakeBroker& b) : b_(b) {}
  Result<std::unique_ptr<Channel>> Connect() override {
    int attempt = ++b_.connects;
    if (b_.on_connect) b_.on_connect();
    if (auto it = b_.connect_fails.find(attempt); it != b_.connect_fails.end())
      return it->second;
    if (b_.fail_from_attempt && attempt >= b_.fail_from_attempt) return b_.fail_from;
    return std::unique_ptr<Channel>(std::make_unique<FakeChannel>(b_));
  }

 private:
  FakeBroker& b_;
};

Status CannotConnect() { return Status::BrokerUnavailable("cannot connect", kWhere); }

// A store with the queue `name`, and what a test's engine needs beside it.
struct Fixture {
  test::TempStore ts;
  QueueRef q;
  FakeBroker broker;
  FakeConnector connector{broker};
  proc::StopSignal stop;
  std::vector<BridgeNote> notes;
  BridgeOptions o;

  explicit Fixture(const std::string& name, QueueSettings settings = {}) {
    q = *ParseQueueRef(name);
    REQUIRE(ts.store->CreateQueue(q, settings).ok());
    REQUIRE(stop.valid());
    o.queue = q;
    o.broker = "amqp://fake";
    o.exchange = "x";
    o.from = "aq";
    o.retry_ms = 30000;
  }

  std::string Send(const Message& m) {
    test::OneMessage one(m);
    std::vector<std::string> ids;
    REQUIRE(ts.store->Append(q, {}, one, &ids).ok());
    REQUIRE(ids.size() == 1);
    return ids[0];
  }
  void SendBodies(int n) {
    for (int i = 0; i < n; ++i) {
      Message m;
      m.body = "m" + std::to_string(i);
      Send(m);
    }
  }
  Status Out() {
    return RunBridgeOut(*ts.store, o, connector, stop,
                        [this](const BridgeNote& n) { notes.push_back(n); });
  }
  Status In() {
    return RunBridgeIn(*ts.store, o, connector, stop,
                       [this](const BridgeNote& n) { notes.push_back(n); });
  }
  QueueInfo Info() {
    auto st = ts.store->StatQueue(q);
    REQUIRE(st.ok());
    return st->info;
  }
  std::vector<Message> Messages() {
    struct All : MessageSink {
      std::vector<Message> got;
      Status Add(const Message& m) override {
        got.push_back(m);
        return {};
      }
      Status Flush() override { return {}; }
    } all;
    Selection sel;
    sel.limit = 0;
    Status s = ts.store->Peek(q, sel, {}, all);
    if (!s.ok()) REQUIRE(s.code() == Code::kMessageNotFound);
    return all.got;
  }
  std::vector<std::string> Bodies() {
    std::vector<std::string> b;
    for (const Message& m : Messages()) b.push_back(m.body);
    return b;
  }
};

}  // namespace

TEST_CASE("bridge out publishes a message with its properties and removes it only once "
          "confirmed", "[bridge]") {
  Fixture f("src");
  Message m;
  m.body = "b1";
  m.label = "hello";
  m.priority = 6;
  m.app_specific = 7;
  std::string id = f.Send(m);

  SECTION("a confirmed publish is removed after its confirm") {
    uint64_t held_at_confirm = 0;
    f.broker.on_confirm = [&] { held_at_confirm = f.Info().count; };
    Status s = f.Out();
    REQUIRE(s.ok());
    CHECK(held_at_confirm == 1);
    REQUIRE(f.broker.taken.size() == 1);
    const auto& p = f.broker.taken[0];
    CHECK(p.exchange == "x");
    CHECK(p.routing_key == "src");  // the default routing key: the queue's name
    CHECK(p.message.body == "b1");
    CHECK(p.message.message_id == FormatMessageId(id));
    CHECK(p.message.priority == 6);
    CHECK(p.message.type == "hello");
    CHECK(p.message.delivery_mode == 2);
    CHECK(p.message.headers.value("x-mq-app-specific", 0) == 7);
    // The lock that handed the message to the bridge is no delivery.
    CHECK_FALSE(p.message.headers.contains("x-mq-delivery-count"));
    CHECK(f.Info().count == 0);
  }
  SECTION("a nacked publish leaves the message in the queue, untouched") {
    f.broker.nack_bodies = {"b1"};
    Status s = f.Out();
    CHECK(s.code() == Code::kBrokerRefused);
    CHECK(f.broker.taken.size() == 1);
    auto left = f.Messages();
    REQUIRE(left.size() == 1);
    CHECK(left[0].body == "b1");
    CHECK(left[0].abort_count == 0);
    CHECK(f.Info().locked == 0);
  }
  SECTION("a connection lost before the confirm leaves the message in the queue") {
    f.o.retry_ms = 0;  // the reconnection fails, and is not retried
    f.broker.connect_fails[2] = CannotConnect();
    f.broker.lose_at_publish = 1;
    Status s = f.Out();
    CHECK(s.code() == Code::kBrokerUnavailable);
    CHECK(s.text() == "cannot connect (gave up after 0ms)");
    CHECK(f.Bodies() == std::vector<std::string>{"b1"});
    CHECK(f.Info().locked == 0);
  }
}

TEST_CASE("bridge out keeps at most its confirm window of batches unconfirmed", "[bridge]") {
  Fixture f("src");
  f.SendBodies(20);
  f.o.batch = 3;
  REQUIRE(f.Out().ok());
  // The window filled (a second batch went out before the first was confirmed), never more.
  CHECK(f.broker.max_unconfirmed == kConfirmWindow * 3);
  REQUIRE(f.broker.taken.size() == 20);
  for (int i = 0; i < 20; ++i) CHECK(f.broker.taken[i].message.body == "m" + std::to_string(i));
  CHECK(f.Info().count == 0);
}

TEST_CASE("bridge in stores a redelivered message once", "[bridge]") {
  Fixture f("dst");
  SECTION("a copy with the same message_id in the same batch") {
    f.broker.Deliver("a", "id-a");
    f.broker.Deliver("a", "id-a");
    f.broker.Deliver("b", "id-b");
    REQUIRE(f.In().ok());
    CHECK(f.Bodies() == std::vector<std::string>{"a", "b"});
    CHECK(f.broker.ready.empty());
  }
  SECTION("a redelivery after the acknowledgement was lost") {
    f.broker.Deliver("a", "id-a");
    f.broker.Deliver("b", "id-b");
    f.broker.lose_at_ack = 1;
    REQUIRE(f.In().ok());
    CHECK(f.broker.connects == 2);
    CHECK(f.Bodies() == std::vector<std::string>{"a", "b"});
    CHECK(f.broker.ready.empty());
    CHECK(f.broker.acks == 2);
  }
  SECTION("in a later run, within the dedup window") {
    f.broker.Deliver("a", "id-a");
    REQUIRE(f.In().ok());
    f.broker.Deliver("a", "id-a");
    f.broker.ready.back().redelivered = true;
    f.broker.Deliver("c", std::nullopt);  // no message_id: no dedup
    f.broker.Deliver("c", std::nullopt);
    REQUIRE(f.In().ok());
    CHECK(f.Bodies() == std::vector<std::string>{"a", "c", "c"});
  }
}

TEST_CASE("bridge in rejects a delivery the queue refuses and stores the ones after it",
          "[bridge]") {
  QueueSettings s;
  s.max_message_size = 100;
  Fixture f("dst", s);
  f.broker.Deliver("first", "id-1");
  f.broker.Deliver(std::string(200, 'B'), std::nullopt);
  f.broker.Deliver("middle", "id-3");
  f.broker.Deliver("last", "id-4");
  REQUIRE(f.In().ok());
  CHECK(f.Bodies() == std::vector<std::string>{"first", "middle", "last"});
  REQUIRE(f.broker.dead.size() == 1);
  CHECK(f.broker.dead[0].body == std::string(200, 'B'));
  CHECK(f.broker.ready.empty());
  REQUIRE(f.notes.size() == 1);
  CHECK(f.notes[0].subject == "dst");
  CHECK_THAT(f.notes[0].text,
             Catch::StartsWith("refused a message from aq (message_id none): body of 200 "
                               "bytes exceeds") &&
                 Catch::EndsWith("; rejected to the broker"));
}

TEST_CASE("a lost connection is reconnected through the connector with backoff", "[bridge]") {
  Fixture f("src");
  f.SendBodies(6);
  f.o.batch = 2;

  SECTION("bridge out reconnects, doubling its delay, and goes on") {
    f.broker.lose_at_publish = 3;  // the second batch
    f.broker.connect_fails[2] = CannotConnect();
    f.broker.connect_fails[3] = CannotConnect();
    int64_t start = MonotonicMs();
    REQUIRE(f.Out().ok());
    CHECK(MonotonicMs() - start >= 300);
    CHECK(f.broker.connects == 4);
    REQUIRE(f.notes.size() == 4);
    CHECK(f.notes[0].subject == kWhere);
    CHECK(f.notes[0].text == "connection lost; reconnecting");
    CHECK(f.notes[1].text == "cannot connect; retrying in 100ms");
    CHECK(f.notes[2].text == "cannot connect; retrying in 200ms");
    CHECK(f.notes[3].subject == "amqp://fake");
    CHECK(f.notes[3].text == "connected again");
    // Every message reached the broker (the first batch's perhaps twice: same message_id).
    std::set<std::string> bodies;
    for (const auto& p : f.broker.taken) bodies.insert(p.message.body);
    CHECK(bodies == std::set<std::string>{"m0", "m1", "m2", "m3", "m4", "m5"});
    CHECK(f.Info().count == 0);
  }
  SECTION("the retry budget runs out: the error, and the messages stay") {
    f.o.retry_ms = 250;
    f.broker.lose_at_publish = 1;
    f.broker.fail_from = CannotConnect();
    f.broker.fail_from_attempt = 2;
    Status s = f.Out();
    CHECK(s.code() == Code::kBrokerUnavailable);
    CHECK(s.text() == "cannot connect (gave up after 250ms)");
    CHECK(f.broker.connects >= 3);
    CHECK(f.Info().count == 6);
    CHECK(f.Info().locked == 0);
  }
  SECTION("without follow, the first connection is not retried") {
    f.broker.connect_fails[1] = CannotConnect();
    Status s = f.Out();
    CHECK(s.code() == Code::kBrokerUnavailable);
    CHECK(s.text() == "cannot connect");
    CHECK(f.broker.connects == 1);
    CHECK(f.notes.empty());
  }
  SECTION("an error no reconnection cures is not retried") {
    f.broker.connect_fails[1] = Status::AccessDenied("ACCESS_REFUSED", kWhere);
    f.o.follow = true;
    CHECK(f.Out().code() == Code::kAccessDenied);
    CHECK(f.broker.connects == 1);
  }
}

TEST_CASE("a stop request ends the engine with an ok status", "[bridge]") {
  SECTION("bridge out with follow, idle") {
    Fixture f("src");
    f.SendBodies(2);
    f.o.follow = true;
    f.broker.on_idle = [&] { f.stop.Request(); };
    REQUIRE(f.Out().ok());
    CHECK(f.broker.taken.size() == 2);
    CHECK(f.Info().count == 0);
  }
  SECTION("bridge out finishes the batches in flight, then stops") {
    Fixture f("src");
    f.SendBodies(6);
    f.o.batch = 2;
    f.o.follow = true;
    f.broker.on_confirm = [&] { f.stop.Request(); };
    REQUIRE(f.Out().ok());
    CHECK(f.broker.taken.size() == 4);  // the window's two batches
    CHECK(f.Bodies() == std::vector<std::string>{"m4", "m5"});
    CHECK(f.Info().locked == 0);
  }
  SECTION("bridge in with follow, after storing and acknowledging its batch") {
    Fixture f("dst");
    f.broker.Deliver("a", "id-a");
    f.broker.Deliver("b", "id-b");
    f.o.follow = true;
    f.broker.on_idle = [&] { f.stop.Request(); };
    REQUIRE(f.In().ok());
    CHECK(f.Bodies() == std::vector<std::string>{"a", "b"});
    CHECK(f.broker.acks == 1);  // one ack, multiple, for the batch
    CHECK(f.broker.ready.empty());
  }
  SECTION("while waiting to reconnect") {
    Fixture f("dst");
    f.o.follow = true;
    f.o.retry_ms = proc::Backoff::kNever;
    f.broker.fail_from = CannotConnect();
    f.broker.fail_from_attempt = 1;
    f.broker.on_connect = [&] {
      if (f.broker.connects == 2) f.stop.Request();
    };
    int64_t start = MonotonicMs();
    REQUIRE(f.In().ok());
    CHECK(f.broker.connects == 2);
    CHECK(MonotonicMs() - start < 5000);  // the 200 ms sleep was cut short
    REQUIRE(f.notes.size() == 2);
    CHECK(f.notes[1].text == "cannot connect; retrying in 200ms");
  }
}
