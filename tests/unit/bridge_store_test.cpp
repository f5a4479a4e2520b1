// bridge_store_test.cpp: what mq-admin bridge needs of the store: an append with one dedup
// key per message (bridge in) and a lease returned untouched (bridge out).
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "store/store.hpp"
#include "test_support.hpp"

using namespace mq;

namespace {

struct Bodies : MessageSource {
  std::vector<std::string> bodies;
  size_t i = 0;
  Result<bool> Next(Message& m) override {
    if (i >= bodies.size()) return false;
    m = Message();  // Next sets every field (MessageSource)
    m.body = bodies[i++];
    return true;
  }
  Status Rewind() override {
    i = 0;
    return {};
  }
};

struct Count : MessageSink {
  std::vector<std::string> bodies;
  Status Add(const Message& m) override {
    bodies.push_back(m.body);
    return {};
  }
  Status Flush() override { return {}; }
};

}  // namespace

TEST_CASE("an append with a dedup key per message drops each duplicate alone", "[store][dedup]") {
  test::TempStore ts;
  QueueRef q = *ParseQueueRef("in");
  REQUIRE(ts.store->CreateQueue(q, {}).ok());
  Bodies first;
  first.bodies = {"a", "b", "b-again"};
  AppendOptions o;
  o.dedup_keys = {"amqp:1", "amqp:2", "amqp:2"};  // a redelivery within one batch too
  AppendReport report;
  REQUIRE(ts.store->Append(q, o, first, nullptr, &report).ok());
  CHECK(report.dropped == 1);
  Bodies second;
  second.bodies = {"a-again", "c", "no key"};
  o.dedup_keys = {"amqp:1", "amqp:3", ""};
  REQUIRE(ts.store->Append(q, o, second, nullptr, &report).ok());
  CHECK(report.dropped == 1);
  Selection all;
  all.limit = 0;
  Count got;
  REQUIRE(ts.store->Peek(q, all, {}, got).ok());
  CHECK(got.bodies == std::vector<std::string>{"a", "b", "c", "no key"});
  std::vector<std::string> problems;
  REQUIRE(ts.store->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("an append's own dedup window outlives the queue's", "[store][dedup]") {
  // bridge in remembers message ids for --dedup-window (7 days by default), not for the
  // queue's window: a broker redelivers an unacknowledged message whenever a consumer next
  // comes. Here the queue forgets after 1 ms, the append's keys last an hour.
  test::TempStore ts;
  QueueRef q = *ParseQueueRef("in");
  QueueSettings s;
  s.dedup_window = 1;
  REQUIRE(ts.store->CreateQueue(q, s).ok());
  AppendOptions o;
  o.dedup_keys = {"amqp:1"};
  o.dedup_window = 3600 * 1000;
  Bodies first;
  first.bodies = {"a"};
  AppendReport report;
  REQUIRE(ts.store->Append(q, o, first, nullptr, &report).ok());
  Bodies plain;  // a key of the queue's own window, which runs out at once
  plain.bodies = {"p"};
  AppendOptions short_lived;
  short_lived.dedup_keys = {"amqp:2"};
  REQUIRE(ts.store->Append(q, short_lived, plain, nullptr, &report).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Bodies again;
  again.bodies = {"a-again"};
  REQUIRE(ts.store->Append(q, o, again, nullptr, &report).ok());
  CHECK(report.dropped == 1);
  Bodies plain_again;
  plain_again.bodies = {"p-again"};
  REQUIRE(ts.store->Append(q, short_lived, plain_again, nullptr, &report).ok());
  CHECK(report.dropped == 0);
  Selection all;
  all.limit = 0;
  Count got;
  REQUIRE(ts.store->Peek(q, all, {}, got).ok());
  CHECK(got.bodies == std::vector<std::string>{"a", "p", "p-again"});
}

TEST_CASE("a released lease returns its messages untouched", "[store][lease]") {
  test::TempStore ts;
  QueueRef q = *ParseQueueRef("publish");
  QueueSettings s;
  s.max_retries = 1;  // a counted rollback would make the message poison at once
  REQUIRE(ts.store->CreateQueue(q, s).ok());
  Bodies one;
  one.bodies = {"m"};
  REQUIRE(ts.store->Append(q, {}, one, nullptr).ok());
  for (int i = 0; i < 3; ++i) {
    auto lease = ts.store->Lock(q, {}, {}, {}, nullptr);
    REQUIRE(lease.ok());
    REQUIRE((*lease)->messages().size() == 1);
    CHECK((*lease)->messages()[0].abort_count == 0);
    REQUIRE(ts.store->Release(**lease).ok());
  }
  auto st = ts.store->StatQueue(q);
  REQUIRE(st.ok());
  CHECK(st->info.count == 1);
  CHECK(st->info.locked == 0);
}
