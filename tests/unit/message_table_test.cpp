// message_table_test.cpp: the message table (lib/store/message_table.hpp) under random
// sequences of operations through the public store: sends (priorities, correlation ids,
// delays, deadlines, conversations), plain and transactional receives, commits and
// rollbacks (with a retry delay), moves to a subqueue, purges and expiry. After every step
// the store's check (mq-admin check: every record against its indexes, every index entry
// against its record, the queue's counters) must find nothing, and the queue's count must
// be what the operations left.
#include <random>
#include <string>
#include <vector>

#include "base/ids.hpp"
#include "base/units.hpp"
#include "test_support.hpp"

using namespace mq;

namespace {

QueueRef Ref(const std::string& text) {
  auto r = ParseQueueRef(text);
  REQUIRE(r.ok());
  return *r;
}

using Sink = test::Collect;
using Many = test::Vec;

void RequireClean(Store& st, const std::string& step) {
  std::vector<std::string> problems;
  REQUIRE(st.Check(problems).ok());
  INFO("after " << step);
  for (const auto& p : problems) UNSCOPED_INFO(p);
  REQUIRE(problems.empty());
}

void RunRandom(uint32_t seed, int steps) {
  test::TempStore t;
  Store& st = *t.store;
  QueueSettings s;
  s.max_retries = 3;
  s.poison = PoisonAction::kSubqueue;
  REQUIRE(st.CreateQueue(Ref("q"), s).ok());
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::vector<std::string> corrs;
  for (int i = 0; i < 3; ++i) corrs.push_back(std::string(19, 'a') + static_cast<char>('0' + i));
  std::vector<std::unique_ptr<Lease>> leases;
  std::vector<Guid> convs;

  for (int step = 0; step < steps; ++step) {
    int op = pick(100);
    std::string what;
    int64_t now = NowMs();
    if (op < 40) {
      Many src;
      int n = 1 + pick(5);
      for (int i = 0; i < n; ++i) {
        Message m;
        m.body = "m" + std::to_string(step) + "." + std::to_string(i);
        m.priority = static_cast<uint8_t>(pick(8));
        if (pick(3) == 0) m.correlation_id = corrs[static_cast<size_t>(pick(3))];
        if (pick(5) == 0) m.visible_time = now + (pick(2) ? 1 : 60000);  // due soon or later
        if (pick(6) == 0) m.ttbr = now + (pick(2) ? 2 : 600000);         // dies soon or not
        src.v.push_back(std::move(m));
      }
      what = "send of " + std::to_string(n);
      REQUIRE(st.Append(Ref("q"), {}, src, nullptr).ok());
    } else if (op < 48) {
      // A conversation message: a new conversation, or one begun before.
      Message m;
      m.body = "c" + std::to_string(step);
      AppendOptions ao;
      if (convs.empty() || pick(2) == 0) {
        m.conversation_handle = NewGuid();
        ao.new_conversation = true;
        convs.push_back(m.conversation_handle);
      } else {
        m.conversation_handle = convs[static_cast<size_t>(pick(static_cast<int>(convs.size())))];
      }
      test::OneMessage one(m);
      Status r = st.Append(Ref("q"), ao, one, nullptr);
      what = "conversation send";
      // A conversation created by the first send is found by the next; none is refused.
      REQUIRE(r.ok());
    } else if (op < 62) {
      Selection sel;
      sel.limit = static_cast<uint64_t>(1 + pick(4));
      sel.plain_only = pick(2) == 0;
      if (pick(4) == 0) {
        sel.anchor = Anchor::kCorrelation;
        sel.correlation = corrs[static_cast<size_t>(pick(3))];
        sel.plain_only = true;
      }
      Sink sink;
      Status r = st.Receive(Ref("q"), sel, {}, sink);
      REQUIRE((r.ok() || r.code() == Code::kMessageNotFound));
      what = "receive";
    } else if (op < 74) {
      Selection sel;
      sel.limit = static_cast<uint64_t>(1 + pick(3));
      auto l = st.Lock(Ref("q"), sel, {}, {}, nullptr);
      REQUIRE((l.ok() || l.status().code() == Code::kMessageNotFound));
      if (l.ok()) leases.push_back(std::move(*l));
      what = "lock";
    } else if (op < 86 && !leases.empty()) {
      size_t i = static_cast<size_t>(pick(static_cast<int>(leases.size())));
      bool commit = pick(2) == 0;
      int64_t delay = pick(3) == 0 ? 1 : 0;
      REQUIRE(st.Finish(*leases[i], commit, delay, nullptr).ok());
      leases.erase(leases.begin() + static_cast<long>(i));
      what = commit ? "commit" : "rollback";
    } else if (op < 92) {
      Sink sink;
      Selection sel;
      sel.limit = 0;
      REQUIRE((st.Peek(Ref("q"), sel, {}, sink).ok() || sink.got.empty()));
      what = "move";
      for (const Message& m : sink.got) {
        if (pick(3) != 0 || !IsNil(m.conversation_handle)) continue;
        Status r = st.MoveToSubqueue(Ref("q"), m.lookup_id, Ref("q;side"));
        // Locked or delayed messages are refused, and nothing changes.
        REQUIRE((r.ok() || r.code() == Code::kMessageLockedUnderTransaction ||
                 r.code() == Code::kMessageNotFound));
        break;
      }
    } else if (op < 95) {
      for (auto& l : leases) REQUIRE(st.Finish(*l, false, 0, nullptr).ok());
      leases.clear();
      REQUIRE(st.Purge(Ref("q")).ok());
      what = "purge";
    } else {
      std::vector<std::string> problems;
      REQUIRE(st.Sweep().ok());
      what = "sweep";
    }
    RequireClean(st, what + " (step " + std::to_string(step) + ")");
  }
  for (auto& l : leases) REQUIRE(st.Finish(*l, pick(2) == 0, 0, nullptr).ok());
  leases.clear();
  RequireClean(st, "the last finish");
  // Drain: everything still there comes out, and the indexes are empty with the table.
  for (int guard = 0; guard < 10000; ++guard) {
    Sink sink;
    Selection sel;
    sel.limit = 0;
    Status r = st.Receive(Ref("q"), sel, {}, sink);
    if (r.code() == Code::kMessageNotFound) break;
    REQUIRE(r.ok());
  }
  auto stat = st.StatQueue(Ref("q"));
  REQUIRE(stat.ok());
  // Only delayed messages (not due yet) may be left.
  CHECK(stat->info.count == stat->info.delayed);
  CHECK(stat->info.locked == 0);
  RequireClean(st, "the drain");
}

}  // namespace

TEST_CASE("message table: random operations keep every index right (seed 1)") {
  RunRandom(1, 400);
}

TEST_CASE("message table: random operations keep every index right (seed 2)") {
  RunRandom(2, 400);
}

TEST_CASE("message table: random operations keep every index right (seed 3)") {
  RunRandom(3, 400);
}
