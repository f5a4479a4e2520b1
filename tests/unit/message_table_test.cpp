// message_table_test.cpp: the message table (lib/store/message_table.hpp) under random
// sequences of operations through the public store: sends (priorities, correlation ids,
// delays, deadlines, conversations), plain and transactional receives, commits and
// rollbacks (with a retry delay, whole or message by message), moves to a subqueue, purges
// and expiry; and the Locked ranges a lease makes, split and passed. After every step
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
      if (pick(3) == 0) {
        // Some committed, the others rolled back: the lease's ranges split.
        std::vector<bool> each;
        for (size_t k = 0; k < leases[i]->messages().size(); ++k) each.push_back(pick(2) == 0);
        REQUIRE(st.FinishEach(*leases[i], each, delay, nullptr).ok());
        what = "commit of some";
      } else {
        REQUIRE(st.Finish(*leases[i], commit, delay, nullptr).ok());
        what = commit ? "commit" : "rollback";
      }
      leases.erase(leases.begin() + static_cast<long>(i));
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

namespace {

std::string Bodies(const test::Collect& c) {
  std::string out;
  for (const auto& m : c.got) out += m.body + " ";
  return out;
}

std::string PeekAll(Store& st, bool locked = false) {
  test::Collect c;
  Selection sel;
  sel.limit = 0;
  sel.include_locked = locked;
  Status s = st.Peek(Ref("q"), sel, {}, c);
  REQUIRE((s.ok() || s.code() == Code::kMessageNotFound));
  return Bodies(c);
}

std::unique_ptr<Lease> LockN(Store& st, uint64_t n) {
  Selection sel;
  sel.limit = n;
  auto l = st.Lock(Ref("q"), sel, {}, {}, nullptr);
  REQUIRE(l.ok());
  return std::move(*l);
}

}  // namespace

TEST_CASE("message table: a lease's run of messages is one Locked range that readers pass") {
  test::TempStore t;
  Store& st = *t.store;
  REQUIRE(st.CreateQueue(Ref("q"), {}).ok());
  Many src;
  for (int i = 1; i <= 10; ++i) {
    Message m;
    m.body = "m" + std::to_string(i);
    src.v.push_back(std::move(m));
  }
  REQUIRE(st.Append(Ref("q"), {}, src, nullptr).ok());
  auto a = LockN(st, 4);
  auto b = LockN(st, 3);
  // Two ranges (m1-m4, m5-m7): the head is past both.
  CHECK(PeekAll(st) == "m8 m9 m10 ");
  CHECK(PeekAll(st, true) == "m1 m2 m3 m4 m5 m6 m7 m8 m9 m10 ");
  RequireClean(st, "two leases");
  // Part of a range committed, part rolled back: the range splits around each.
  REQUIRE(st.FinishEach(*a, {true, false, true, false}, 0, nullptr).ok());
  CHECK(PeekAll(st) == "m2 m4 m8 m9 m10 ");
  RequireClean(st, "FinishEach");
  auto c = LockN(st, 2);  // m2 and m4: m3 was removed between them, so they are one range
  CHECK(PeekAll(st) == "m8 m9 m10 ");
  RequireClean(st, "a range over a gap");
  REQUIRE(st.Finish(*b, false, 0, nullptr).ok());
  CHECK(PeekAll(st) == "m5 m6 m7 m8 m9 m10 ");
  REQUIRE(st.Finish(*c, true, 0, nullptr).ok());
  CHECK(PeekAll(st, true) == "m5 m6 m7 m8 m9 m10 ");
  RequireClean(st, "the last finish");
}

TEST_CASE("message table: a message moved back into a Locked range's gap is ready") {
  test::TempStore t;
  Store& st = *t.store;
  QueueSettings s;
  REQUIRE(st.CreateQueue(Ref("q"), s).ok());
  Many src;
  for (int i = 1; i <= 5; ++i) {
    Message m;
    m.body = "m" + std::to_string(i);
    src.v.push_back(std::move(m));
  }
  std::vector<std::string> ids;
  REQUIRE(st.Append(Ref("q"), {}, src, &ids).ok());
  // m2 to the poison subqueue (its lookup id kept): m1 and m3 then follow each other.
  REQUIRE(st.MoveToSubqueue(Ref("q"), 2, Ref("q;poison")).ok());
  auto l = LockN(st, 3);  // m1, m3, m4: one range over lookup ids 1 to 4
  CHECK(PeekAll(st) == "m5 ");
  // Back with its lookup id, between m1 and m3: the range splits around it.
  auto back = st.Requeue(Ref("q;poison"), ids[1]);
  REQUIRE(back.ok());
  CHECK(*back == 1);
  test::Collect head;
  Selection sel;
  sel.limit = 0;
  REQUIRE(st.Peek(Ref("q"), sel, {}, head).ok());
  REQUIRE(head.got.size() == 2);
  CHECK(head.got[0].body == "m2");
  CHECK(head.got[0].lookup_id == 2);
  RequireClean(st, "a move into a range");
  REQUIRE(st.Finish(*l, false, 0, nullptr).ok());
  CHECK(PeekAll(st) == "m1 m2 m3 m4 m5 ");
  RequireClean(st, "the rollback");
}
