// store_test.cpp: the store through its public surface, in a temporary directory: creation
// and the meta record, the delivery order index, selections, receive, counters and check.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "base/codec.hpp"
#include "store/lmdb.hpp"
#include "store/queue.hpp"
#include "store/store.hpp"
#include "base/units.hpp"
#include "test_support.hpp"

using namespace mq;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mq-unit.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

using test::Collect;

class FailingSink : public MessageSink {
 public:
  Status Add(const Message&) override { return {}; }
  Status Flush() override { return Status::BrokenPipe("Broken pipe", "stdout"); }
};

using test::Vec;

std::unique_ptr<Store> OpenNew(const std::string& dir) {
  OpenOptions o;
  o.dir = dir + "/s";
  o.create = true;
  auto s = Store::Open(o);
  REQUIRE(s.ok());
  return std::move(*s);
}

QueueRef Q(const char* name) { return *ParseQueueRef(name); }

void Send(Store& st, const char* q, std::vector<std::pair<int, std::string>> msgs,
          std::string corr = {}) {
  Vec src;
  for (auto& [prio, body] : msgs) {
    Message m;
    m.priority = static_cast<uint8_t>(prio);
    m.body = body;
    m.correlation_id = corr;
    src.v.push_back(m);
  }
  AppendOptions o;
  o.create_queue = true;
  REQUIRE(st.Append(Q(q), o, src, nullptr).ok());
}

std::vector<std::string> Bodies(const std::vector<Message>& v) {
  std::vector<std::string> out;
  for (auto& m : v) out.push_back(m.body);
  return out;
}

Selection All() {
  Selection s;
  s.limit = 0;
  return s;
}

}  // namespace

TEST_CASE("a named store is created only when asked", "[store]") {
  TempDir t;
  OpenOptions o;
  o.dir = t.path + "/missing";
  auto s = Store::Open(o);
  CHECK(s.status().code() == Code::kServiceNotAvailable);
  CHECK_FALSE(fs::exists(o.dir));
  o.create = true;
  auto made = Store::Open(o);
  REQUIRE(made.ok());
  struct stat st;
  REQUIRE(stat(o.dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(stat((o.dir + "/data.mdb").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
}

TEST_CASE("one environment per directory per process", "[store]") {
  TempDir t;
  auto a = OpenNew(t.path);
  OpenOptions o;
  o.dir = t.path + "/s";
  CHECK_FALSE(Store::Open(o).ok());
  a.reset();
  CHECK(Store::Open(o).ok());
}

TEST_CASE("the store GUID persists and a newer format is refused", "[store]") {
  TempDir t;
  Guid g;
  {
    auto st = OpenNew(t.path);
    g = st->guid();
    CHECK_FALSE(IsNil(g));
  }
  OpenOptions o;
  o.dir = t.path + "/s";
  {
    auto again = Store::Open(o);
    REQUIRE(again.ok());
    CHECK((*again)->guid() == g);
  }
  {
    lmdb::Env env;
    REQUIRE(env.Open(o.dir, 0600, 1 << 20, 16).ok());
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    auto meta = txn->OpenDb("meta", false);
    REQUIRE(meta.ok());
    std::string v;
    PutU32BE(v, kFormatVersion + 1);
    REQUIRE(txn->Put(*meta, "format", v).ok());
    REQUIRE(txn->Commit().ok());
  }
  auto newer = Store::Open(o);
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.status().text().find("upgrade") != std::string::npos);
  CHECK(ExitCode(newer.status()) == 10);
}

TEST_CASE("delivery order is priority first, then arrival", "[store][order]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a3"}, {7, "b7"}, {0, "c0"}, {3, "d3"}, {7, "e7"}, {5, "f5"}});
  Collect c;
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  CHECK(Bodies(c.got) == std::vector<std::string>{"b7", "e7", "f5", "a3", "d3", "c0"});
  // Lookup ids increase with arrival.
  CHECK(c.got[3].lookup_id < c.got[4].lookup_id);
}

TEST_CASE("selections by lookup id, id and correlation", "[store][order]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {3, "b"}, {3, "c"}, {3, "d"}});
  std::string corr(20, '\x07');
  Send(*st, "q", {{1, "x1"}, {6, "x6"}}, corr);
  Collect all;
  REQUIRE(st->Peek(Q("q"), All(), {}, all).ok());
  REQUIRE(Bodies(all.got) == std::vector<std::string>{"x6", "a", "b", "c", "d", "x1"});
  uint64_t b = all.got[2].lookup_id;

  auto peek = [&](Selection s) {
    Collect c;
    Status status = st->Peek(Q("q"), s, {}, c);
    return std::make_pair(status, Bodies(c.got));
  };
  Selection s;
  s.anchor = Anchor::kAt;
  s.lookup_id = b;
  s.limit = 2;
  CHECK(peek(s).second == std::vector<std::string>{"b", "c"});
  s.anchor = Anchor::kAfter;
  CHECK(peek(s).second == std::vector<std::string>{"c", "d"});
  s.anchor = Anchor::kBefore;
  CHECK(peek(s).second == std::vector<std::string>{"a", "x6"});
  s.anchor = Anchor::kLast;
  s.limit = 1;
  CHECK(peek(s).second == std::vector<std::string>{"x1"});
  s.anchor = Anchor::kAt;
  s.lookup_id = 9999;
  CHECK(peek(s).first.code() == Code::kMessageNotFound);

  Selection byid;
  byid.anchor = Anchor::kId;
  byid.id = all.got[4].id;
  CHECK(peek(byid).second == std::vector<std::string>{"d"});

  Selection bycorr;
  bycorr.anchor = Anchor::kCorrelation;
  bycorr.correlation = corr;
  bycorr.limit = 0;
  CHECK(peek(bycorr).second == std::vector<std::string>{"x6", "x1"});
}

TEST_CASE("receive removes messages and keeps counters and indexes right", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {4, "b"}, {3, "c"}}, std::string(20, '\x01'));
  Collect c;
  Selection two;
  two.limit = 2;
  REQUIRE(st->Receive(Q("q"), two, {}, c).ok());
  CHECK(Bodies(c.got) == std::vector<std::string>{"b", "a"});
  auto stat = st->StatQueue(Q("q"));
  REQUIRE(stat.ok());
  CHECK(stat->info.count == 1);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
  Collect rest;
  REQUIRE(st->Receive(Q("q"), All(), {}, rest).ok());
  CHECK(Bodies(rest.got) == std::vector<std::string>{"c"});
  Collect none;
  CHECK(st->Receive(Q("q"), All(), {}, none).code() == Code::kMessageNotFound);
  CHECK(st->StatQueue(Q("q"))->info.bytes == 0);
}

TEST_CASE("a receive whose output fails changes nothing", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {3, "b"}});
  FailingSink sink;
  CHECK(st->Receive(Q("q"), All(), {}, sink).code() == Code::kBrokenPipe);
  Collect c;
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  CHECK(Bodies(c.got) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("create with exist_ok compares only the settings given", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  QueueSettings qs;
  qs.max_retries = 3;
  qs.retry_delay = 1500;
  REQUIRE(st->CreateQueue(Q("q"), qs, true).ok());
  CHECK(st->CreateQueue(Q("q"), qs).code() == Code::kQueueExists);
  CHECK(st->CreateQueue(Q("q"), qs, true).ok());
  CHECK(st->CreateQueue(Q("q"), QueueSettings{}, true).ok());
  int64_t modified = st->StatQueue(Q("q"))->info.modified_time;
  QueueSettings other;
  other.max_retries = 9;
  other.quota = 0;  // the queue's own: not named in the error
  Status s = st->CreateQueue(Q("q"), other, true);
  CHECK(s.code() == Code::kQueueExists);
  CHECK(s.text() == "queue exists with other settings: max-retries 3, not 9");
  QueueInfo info = st->StatQueue(Q("q"))->info;
  CHECK(info.max_retries == 3);
  CHECK(info.modified_time == modified);
  CHECK(st->CreateQueue(Q("q;poison"), qs, true).code() ==
        Code::kUnsupportedFormatnameOperation);
}

TEST_CASE("quota and maximum message size refuse a send whole", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  QueueSettings qs;
  qs.max_message_size = 4;
  REQUIRE(st->CreateQueue(Q("q"), qs).ok());
  Vec src;
  Message m;
  m.body = "1234";
  src.v.push_back(m);
  m.body = "12345";
  src.v.push_back(m);
  Status s = st->Append(Q("q"), {}, src, nullptr);
  CHECK(s.code() == Code::kInsufficientResources);
  CHECK(st->StatQueue(Q("q"))->info.count == 0);
}

TEST_CASE("an append to several queues puts a copy in each, or nothing", "[store][send]") {
  TempDir t;
  auto st = OpenNew(t.path);
  QueueSettings qs;
  REQUIRE(st->CreateQueue(Q("a"), qs).ok());
  qs.max_message_size = 4;
  REQUIRE(st->CreateQueue(Q("b"), qs).ok());
  std::vector<Destination> dests = {{Q("a"), ""}, {Q("b"), ""}};
  Vec src;
  Message m;
  m.body = "1";
  src.v.push_back(m);
  m.body = "22";
  src.v.push_back(m);
  std::vector<std::string> ids;
  REQUIRE(st->Append(dests, {}, src, &ids).ok());
  REQUIRE(ids.size() == 4);
  // Message by message, each message's copies in the order of the destinations.
  auto a = st->StatQueue(Q("a"));
  CHECK(a->info.count == 2);
  CHECK(st->StatQueue(Q("b"))->info.count == 2);
  std::set<std::string> distinct(ids.begin(), ids.end());
  CHECK(distinct.size() == 4);
  auto by_id = [&](const char* q, const std::string& id) {
    Selection sel;
    sel.anchor = Anchor::kId;
    sel.id = id;
    Collect c;
    (void)st->Peek(Q(q), sel, {}, c);
    return Bodies(c.got);
  };
  CHECK(by_id("a", ids[2]) == std::vector<std::string>{"22"});
  CHECK(by_id("b", ids[1]) == std::vector<std::string>{"1"});
  CHECK(by_id("b", ids[0]).empty());
  // b refuses the third message (too big): neither queue takes any of this append.
  m.body = "55555";
  src.v.push_back(m);
  CHECK(st->Append(dests, {}, src, nullptr).code() == Code::kInsufficientResources);
  CHECK(st->StatQueue(Q("a"))->info.count == 2);
  CHECK(st->StatQueue(Q("b"))->info.count == 2);
  // One queue's dedup key or a conversation names one queue.
  src.v.pop_back();
  AppendOptions o;
  o.dedup_key = "k";
  CHECK(st->Append(dests, o, src, nullptr).code() == Code::kInvalidArg);
}

TEST_CASE("the map grows by itself when full", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  // 300 MiB of bodies: more than the initial 256 MiB map.
  Vec src;
  Message m;
  m.body = std::string(1 << 20, 'x');
  for (int i = 0; i < 300; ++i) src.v.push_back(m);
  AppendOptions o;
  o.create_queue = true;
  REQUIRE(st->Append(Q("big"), o, src, nullptr).ok());
  CHECK(st->StatQueue(Q("big"))->info.count == 300);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("check finds an index that disagrees with the messages", "[store][check]") {
  TempDir t;
  {
    auto st = OpenNew(t.path);
    Send(*st, "q", {{3, "a"}, {3, "b"}});
  }
  {
    lmdb::Env env;
    REQUIRE(env.Open(t.path + "/s", 0600, 256 << 20, 16).ok());
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    // The last record moved to the band of another priority.
    auto messages = txn->OpenDb("messages", false);
    REQUIRE(messages.ok());
    lmdb::Cursor c(*txn, *messages);
    REQUIRE(c.Last());
    std::string key(c.key()), rec(c.value());
    REQUIRE(c.Del().ok());
    key[4] = 0;
    REQUIRE(txn->Put(*messages, key, rec).ok());
    REQUIRE(txn->Commit().ok());
  }
  OpenOptions o;
  o.dir = t.path + "/s";
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  std::vector<std::string> problems;
  REQUIRE((*st)->Check(problems).ok());
  REQUIRE_FALSE(problems.empty());
  CHECK(problems.front().find("in band 0, but its properties place it in band 4") !=
        std::string::npos);
}

TEST_CASE("delete removes a queue with its subqueues and purge empties one", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}});
  Send(*st, "r", {{3, "a"}, {3, "b"}});
  REQUIRE(*st->Purge(Q("r")) == 2);
  REQUIRE(st->DeleteQueue(Q("q")).ok());
  CHECK(st->StatQueue(Q("q")).status().code() == Code::kQueueNotFound);
  CHECK(st->DeleteQueue(Q("q")).code() == Code::kQueueNotFound);
  // A journal of an existing queue reads as empty; of a missing one, as not found.
  Collect c;
  CHECK(st->Peek(Q("r;journal"), All(), {}, c).code() == Code::kMessageNotFound);
  CHECK(st->Peek(Q("q;journal"), All(), {}, c).code() == Code::kQueueNotFound);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("backup is a store that opens and passes check", "[store]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {5, "b"}});
  REQUIRE(st->Backup(t.path + "/copy").ok());
  CHECK_FALSE(st->Backup(t.path + "/copy").ok());  // not empty any more
  OpenOptions o;
  o.dir = t.path + "/copy";
  auto copy = Store::Open(o);
  REQUIRE(copy.ok());
  std::vector<std::string> problems;
  REQUIRE((*copy)->Check(problems).ok());
  CHECK(problems.empty());
  CHECK((*copy)->StatQueue(Q("q"))->info.count == 2);
  CHECK((*copy)->guid() == st->guid());
}

TEST_CASE("a store whose creation was cut short is finished on open", "[store]") {
  TempDir t;
  std::string dir = t.path + "/s";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  {
    lmdb::Env env;  // data.mdb and lock.mdb exist, nothing was written
    REQUIRE(env.Open(dir, 0600, 1 << 20, 16).ok());
  }
  OpenOptions o;
  o.dir = dir;
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  CHECK_FALSE(IsNil((*st)->guid()));
  CHECK((*st)->ListQueues()->size() == 3);  // the system queues
}

TEST_CASE("a store lacking databases added later gets them on open", "[store]") {
  TempDir t;
  std::string dir = t.path + "/s";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  {
    lmdb::Env env;
    REQUIRE(env.Open(dir, 0600, 1 << 20, 16).ok());
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    auto meta = txn->OpenDb("meta", true);
    REQUIRE(meta.ok());
    std::string v;
    PutU32BE(v, kFormatVersion);  // with the meta records alone
    REQUIRE(txn->Put(*meta, "format", v).ok());
    REQUIRE(txn->Put(*meta, "guid", GuidBytes(NewGuid())).ok());
    REQUIRE(txn->Put(*meta, "id_guid", GuidBytes(NewGuid())).ok());
    REQUIRE(txn->Put(*meta, "id_prefix", GuidBytes(NewGuid()).substr(0, 12)).ok());
    REQUIRE(txn->Commit().ok());
  }
  OpenOptions o;
  o.dir = dir;
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  CHECK((*st)->format() == kFormatVersion);
  Send(**st, "q", {{3, "a"}});
  std::vector<std::string> problems;
  REQUIRE((*st)->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("a foreign LMDB environment is refused and left alone", "[store]") {
  TempDir t;
  std::string dir = t.path + "/s";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  {
    lmdb::Env env;
    REQUIRE(env.Open(dir, 0600, 1 << 20, 16).ok());
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    auto other = txn->OpenDb("something-else", true);
    REQUIRE(other.ok());
    REQUIRE(txn->Put(*other, "k", "v").ok());
    REQUIRE(txn->Commit().ok());
  }
  OpenOptions o;
  o.dir = dir;
  o.create = true;
  auto st = Store::Open(o);
  CHECK(st.status().code() == Code::kCorrupted);
  CHECK_FALSE(fs::exists(dir + "/notify"));
}

TEST_CASE("delayed messages stay invisible until due, then arrive with new lookup ids",
          "[store][delay]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Vec src;
  Message m;
  m.body = "later";
  // 600 ms: the append (a durable commit), the peek and the stat below must fall inside it,
  // even under the sanitizers on a loaded machine; checked.
  int64_t sent = NowMs();
  m.visible_time = sent + 600;
  src.v.push_back(m);
  m.body = "now";
  m.visible_time = 0;
  src.v.push_back(m);
  AppendOptions o;
  o.create_queue = true;
  REQUIRE(st->Append(Q("q"), o, src, nullptr).ok());
  Collect c;
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  CHECK(Bodies(c.got) == std::vector<std::string>{"now"});
  CHECK(st->StatQueue(Q("q"))->info.delayed == 1);
  CHECK(NowMs() - sent < 600);
  ReadOptions wait;
  wait.wait_ms = 2000;
  Collect r1, r2;
  REQUIRE(st->Receive(Q("q"), Selection(), wait, r1).ok());
  int64_t before = NowMs();
  REQUIRE(st->Receive(Q("q"), Selection(), wait, r2).ok());
  CHECK(Bodies(r2.got) == std::vector<std::string>{"later"});
  CHECK(r2.got[0].lookup_id > r1.got[0].lookup_id);
  CHECK(NowMs() - before < 1450);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("FinishForwarded ends several leases of a link's outgoing queue in one transaction",
          "[store][link]") {
  TempDir t;
  auto st = OpenNew(t.path);
  LinkSettings ls;
  ls.via = "true";
  REQUIRE(st->AddLink("b", ls).ok());
  Vec src;
  for (int i = 0; i < 30; ++i) {
    Message m;
    m.body = "m" + std::to_string(i);
    src.v.push_back(m);
  }
  AppendOptions o;
  o.remote_queue = "dest";  // what mq-send b:dest does: into out;b
  REQUIRE(st->Append(QueueRef{"out", "b"}, o, src, nullptr).ok());
  Selection ten;
  ten.limit = 10;
  LockOptions lo;
  lo.count_delivery = false;
  auto a = st->Lock(Q("out;b"), ten, {}, lo, nullptr);
  auto b = st->Lock(Q("out;b"), ten, {}, lo, nullptr);
  auto c = st->Lock(Q("out;b"), ten, {}, lo, nullptr);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  std::vector<uint16_t> stored(10, 0), one_refused(10, 0);
  one_refused[4] = kClassNackBadDstQ;
  REQUIRE(st->FinishForwarded({a->get(), b->get()}, {stored, one_refused}, "b").ok());
  auto q = st->StatQueue(Q("out;b"));
  REQUIRE(q.ok());
  CHECK(q->info.count == 10);  // c's, still Locked
  CHECK(q->info.locked == 10);
  auto link = st->GetLink("b");
  REQUIRE(link.ok());
  CHECK(link->acked == 20);
  CHECK(link->refused == 1);
  // Ended: neither can end again; c ends alone.
  CHECK(!st->FinishForwarded({a->get()}, {stored}, "b").ok());
  REQUIRE(st->FinishForwarded({c->get()}, {stored}, "b").ok());
  CHECK(st->StatQueue(Q("out;b"))->info.count == 0);
  CHECK(st->GetLink("b")->acked == 30);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("committing one of several leases leaves the others Locked", "[store][lease]") {
  // A lone drain's commit empties `locked` in one drop; with other leases (of this queue or
  // another) it must remove only its own keys.
  TempDir t;
  auto st = OpenNew(t.path);
  std::vector<std::pair<int, std::string>> msgs;
  for (int i = 0; i < 300; ++i) msgs.emplace_back(3, "m" + std::to_string(i));
  Send(*st, "q", msgs);
  Send(*st, "other", msgs);
  Selection hundred;
  hundred.limit = 100;
  auto a = st->Lock(Q("q"), hundred, {}, {}, nullptr);
  auto b = st->Lock(Q("q"), hundred, {}, {}, nullptr);
  auto c = st->Lock(Q("other"), hundred, {}, {}, nullptr);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  REQUIRE((*a)->messages().size() == 100);
  REQUIRE(st->Finish(**a, true, 0, nullptr).ok());
  CHECK(st->StatQueue(Q("q"))->info.count == 200);
  CHECK(st->StatQueue(Q("q"))->info.locked == 100);
  CHECK(st->StatQueue(Q("other"))->info.locked == 100);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
  REQUIRE(st->Release(**c).ok());  // now b holds every Locked message: its commit drops
  REQUIRE(st->Finish(**b, true, 0, nullptr).ok());
  CHECK(st->StatQueue(Q("q"))->info.count == 100);
  CHECK(st->StatQueue(Q("q"))->info.locked == 0);
  CHECK(st->StatQueue(Q("other"))->info.count == 300);
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
  Collect rest;
  REQUIRE(st->Receive(Q("q"), All(), {}, rest).ok());
  REQUIRE(rest.got.size() == 100);
  CHECK(rest.got.front().body == "m200");
}

TEST_CASE("each lease's messages are its own, batch after batch", "[store][lease]") {
  // A thread's leases reuse the Messages of the last one ended (a drain decodes into them
  // again): nothing of an earlier batch may show through, whether the next batch is smaller,
  // larger, or taken while another lease is still open.
  TempDir t;
  auto st = OpenNew(t.path);
  std::vector<std::pair<int, std::string>> big, small;
  for (int i = 0; i < 50; ++i) big.emplace_back(3, std::string(100, 'a') + std::to_string(i));
  for (int i = 0; i < 7; ++i) small.emplace_back(3, "s" + std::to_string(i));
  Send(*st, "q", big, std::string(20, '\x5a'));
  Send(*st, "q", small);
  Send(*st, "q", big);
  Selection fifty;
  fifty.limit = 50;
  auto first = st->Lock(Q("q"), fifty, {}, {}, nullptr);
  REQUIRE(first.ok());
  REQUIRE((*first)->messages().size() == 50);
  CHECK((*first)->messages()[49].correlation_id == std::string(20, '\x5a'));
  REQUIRE(st->Finish(**first, true, 0, nullptr).ok());
  first->reset();
  Selection seven;
  seven.limit = 7;
  auto second = st->Lock(Q("q"), seven, {}, {}, nullptr);
  REQUIRE(second.ok());
  std::vector<std::string> bodies;
  for (const Message& m : (*second)->messages()) {
    bodies.push_back(m.body);
    CHECK(m.correlation_id.empty());
  }
  CHECK(bodies == std::vector<std::string>{"s0", "s1", "s2", "s3", "s4", "s5", "s6"});
  auto third = st->Lock(Q("q"), fifty, {}, {}, nullptr);  // while the second is open
  REQUIRE(third.ok());
  REQUIRE((*third)->messages().size() == 50);
  CHECK((*third)->messages().front().body == std::string(100, 'a') + "0");
  CHECK((*third)->messages().back().body == std::string(100, 'a') + "49");
  CHECK((*second)->messages().back().body == "s6");
  REQUIRE(st->Finish(**second, true, 0, nullptr).ok());
  REQUIRE(st->Finish(**third, true, 0, nullptr).ok());
  CHECK(st->StatQueue(Q("q"))->info.count == 0);
}

TEST_CASE("a lease id whose lock file a dying writer still holds is skipped", "[store][lease]") {
  // A writer killed in its transaction after it locked locks/lease.Q.N: the kernel ends its
  // hold on the LMDB writer mutex (robust futexes, in exit_mm) before it closes its files, so
  // the next writer can be given id N again while the dying process still holds the file.
  // That id was never committed: the lock must take the next free one, not fail.
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {3, "b"}});
  auto first = st->Lock(Q("q"), Selection(), {}, {}, nullptr);
  REQUIRE(first.ok());
  REQUIRE(st->Finish(**first, true, 0, nullptr).ok());  // lease 1 ends; the next is 2
  uint32_t qid = st->StatQueue(Q("q"))->info.id;
  std::string path = t.path + "/s/locks/lease." + std::to_string(qid) + ".2";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);  // the dying writer's hold
  auto second = st->Lock(Q("q"), Selection(), {}, {}, nullptr);
  REQUIRE(second.ok());
  REQUIRE(*second);
  CHECK((*second)->messages().at(0).body == "b");
  auto leases = st->ListLeases();
  REQUIRE(leases.ok());
  REQUIRE(leases->size() == 1);
  CHECK(leases->at(0).lease_id != 2);
  CHECK(leases->at(0).alive);
  REQUIRE(st->Finish(**second, true, 0, nullptr).ok());
  ::close(fd);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
  CHECK(st->StatQueue(Q("q"))->info.count == 0);
}

namespace {

std::vector<std::string> SendIds(Store& st, const char* q, int n, bool create = true) {
  return test::SendN(st, q, n, create);
}

// Rewrites queue `name`'s record in the closed store at `dir` with `edit`.
template <typename F>
void EditQueueRecord(const std::string& dir, const std::string& name, F edit) {
  lmdb::Env env;
  REQUIRE(env.Open(dir, 0600, 256 << 20, 32).ok());
  auto txn = lmdb::Txn::Begin(env, true);
  REQUIRE(txn.ok());
  auto queues = txn->OpenDb("queues", false);
  REQUIRE(queues.ok());
  auto rec = txn->Get(*queues, name);
  REQUIRE(rec);
  QueueInfo q;
  q.name = name;
  REQUIRE(DecodeQueue(*rec, q).ok());
  edit(q);
  REQUIRE(txn->Put(*queues, name, EncodeQueue(q)).ok());
  REQUIRE(txn->Commit().ok());
}

std::vector<std::string> CheckProblems(const std::string& dir) {
  OpenOptions o;
  o.dir = dir;
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  std::vector<std::string> problems;
  REQUIRE((*st)->Check(problems).ok());
  return problems;
}

}  // namespace

TEST_CASE("message ids come from each queue's own source, without a shared counter",
          "[store][ids]") {
  TempDir t;
  std::string dir = t.path + "/s";
  std::vector<std::string> q1, r1, q2;
  {
    auto st = OpenNew(t.path);
    q1 = SendIds(*st, "q", 3);
    r1 = SendIds(*st, "r", 2);
    q2 = SendIds(*st, "q", 2);
  }
  auto guid = [](const std::string& id) { return id.substr(0, 16); };
  auto counter = [](const std::string& id) { return GetU32BE(id, 16); };
  REQUIRE(q1.size() == 3);
  REQUIRE(q2.size() == 2);
  REQUIRE(r1.size() == 2);
  // One GUID per queue, counters from 1 without gaps across invocations.
  CHECK(guid(q1[0]) == guid(q1[2]));
  CHECK(guid(q2[0]) == guid(q1[0]));
  CHECK(guid(r1[0]) != guid(q1[0]));
  CHECK(counter(q1[0]) == 1);
  CHECK(counter(q1[2]) == 3);
  CHECK(counter(q2[0]) == 4);
  CHECK(counter(r1[1]) == 2);
  // No send wrote meta's old shared counter.
  {
    lmdb::Env env;
    REQUIRE(env.Open(dir, 0600, 256 << 20, 32).ok());
    auto txn = lmdb::Txn::Begin(env, false);
    REQUIRE(txn.ok());
    auto meta = txn->OpenDb("meta", false);
    REQUIRE(meta.ok());
    CHECK_FALSE(txn->Get(*meta, "id_counter"));
  }
  CHECK(CheckProblems(dir).empty());
}

TEST_CASE("a spent id counter goes on under a fresh GUID", "[store][ids]") {
  TempDir t;
  std::string dir = t.path + "/s";
  std::string old_guid;
  {
    auto st = OpenNew(t.path);
    old_guid = SendIds(*st, "q", 1)[0].substr(0, 16);
  }
  EditQueueRecord(dir, "q", [](QueueInfo& q) { q.id_counter = UINT32_MAX - 1; });
  OpenOptions o;
  o.dir = dir;
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  auto ids = SendIds(**st, "q", 3);
  CHECK(ids[0].substr(0, 16) == old_guid);
  CHECK(GetU32BE(ids[0], 16) == UINT32_MAX);
  CHECK(ids[1].substr(0, 16) != old_guid);
  CHECK(GetU32BE(ids[1], 16) == 1);
  CHECK(GetU32BE(ids[2], 16) == 2);
  std::vector<std::string> problems;
  REQUIRE((*st)->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("a send that fails part way gives out no id twice", "[store][ids]") {
  TempDir t;
  std::string dir = t.path + "/s";
  auto st = OpenNew(t.path);
  QueueSettings qs;
  qs.max_message_size = 4;
  REQUIRE(st->CreateQueue(Q("q"), qs).ok());
  auto before = SendIds(*st, "q", 2, false);
  // The third message is too large: the whole batch is refused after two ids were made.
  Vec src;
  for (const char* b : {"1", "2", "12345"}) {
    Message m;
    m.body = b;
    src.v.push_back(m);
  }
  std::vector<std::string> ids;
  CHECK(st->Append(Q("q"), {}, src, &ids).code() == Code::kInsufficientResources);
  auto after = SendIds(*st, "q", 2, false);
  CHECK(GetU32BE(after[0], 16) == 3);
  std::set<std::string> all(before.begin(), before.end());
  all.insert(after.begin(), after.end());
  CHECK(all.size() == 4);
  CHECK(st->StatQueue(Q("q"))->info.count == 4);
}

TEST_CASE("check finds a message id beyond its queue's id counter", "[store][ids][check]") {
  TempDir t;
  std::string dir = t.path + "/s";
  {
    auto st = OpenNew(t.path);
    SendIds(*st, "q", 3);
  }
  // As if the queue record had been rolled back under its messages: the next send would make
  // the id of a stored message again.
  EditQueueRecord(dir, "q", [](QueueInfo& q) { q.id_counter = 1; });
  auto problems = CheckProblems(dir);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].find("beyond queue q's id counter 1") != std::string::npos);
}

TEST_CASE("no queue named out can be made, but one made before links stays usable",
          "[store][names]") {
  TempDir t;
  std::string dir = t.path + "/s";
  {
    auto st = OpenNew(t.path);
    CHECK(st->CreateQueue(Q("out"), {}).code() == Code::kIllegalQueuePathname);
    Vec src;
    Message m;
    m.body = "x";
    src.v.push_back(m);
    AppendOptions o;
    o.create_queue = true;
    CHECK(st->Append(Q("out"), o, src, nullptr).code() == Code::kIllegalQueuePathname);
    Send(*st, "legacy", {{3, "kept"}});
  }
  // As a store made before links: its queue "legacy" renamed "out" in the catalog.
  {
    lmdb::Env env;
    REQUIRE(env.Open(dir, 0600, 256 << 20, 32).ok());
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    auto queues = txn->OpenDb("queues", false);
    auto queue_ids = txn->OpenDb("queue_ids", false);
    REQUIRE(queues.ok());
    REQUIRE(queue_ids.ok());
    auto rec = txn->Get(*queues, "legacy");
    REQUIRE(rec);
    std::string copy(*rec);
    QueueInfo q;
    REQUIRE(DecodeQueue(copy, q).ok());
    REQUIRE(txn->Put(*queues, "out", copy).ok());
    REQUIRE(txn->Del(*queues, "legacy").ok());
    std::string qid_key;
    PutU32BE(qid_key, q.id);
    REQUIRE(txn->Put(*queue_ids, qid_key, "out").ok());
    REQUIRE(txn->Commit().ok());
  }
  OpenOptions o;
  o.dir = dir;
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  Send(**st, "out", {{3, "more"}});
  Collect got;
  REQUIRE((*st)->Receive(Q("out"), All(), {}, got).ok());
  CHECK(Bodies(got.got) == std::vector<std::string>{"kept", "more"});
  REQUIRE((*st)->DeleteQueue(Q("out")).ok());
  std::vector<std::string> problems;
  REQUIRE((*st)->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("a touched token lease lives on, and touch of a lease that is over is refused",
          "[store][lease]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {3, "b"}});
  LockOptions lo;
  lo.lease_ms = 300;
  Selection two;
  two.limit = 2;
  auto lease = st->Lock(Q("q"), two, {}, lo, nullptr);
  REQUIRE(lease.ok());
  REQUIRE(*lease);
  std::string token = (*lease)->token();
  int64_t first_end = (*lease)->expires();
  // By its own length (300 ms) from now, never earlier than it was.
  auto end = st->TouchToken(token, 0, nullptr);
  REQUIRE(end.ok());
  CHECK(*end >= first_end);
  CHECK(*end <= NowMs() + 300);
  // By a length asked for: shorter too; the record keeps both messages.
  end = st->TouchToken(token, 60'000, nullptr);
  REQUIRE(end.ok());
  CHECK(*end > NowMs() + 50'000);
  auto leases = st->ListLeases();
  REQUIRE(leases.ok());
  REQUIRE(leases->size() == 1);
  CHECK((*leases)[0].expires == *end);
  CHECK((*leases)[0].lookup_ids.size() == 2);
  end = st->TouchToken(token, 50, nullptr);
  REQUIRE(end.ok());
  ::usleep(120'000);
  // Over: refused as ack and nack are, and the messages are back.
  auto over = st->TouchToken(token, 0, nullptr);
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().code() == Code::kTransactionUsage);
  CHECK(st->StatQueue(Q("q"))->info.locked == 0);
  CHECK_FALSE(st->TouchToken(token, 0, nullptr).ok());
  CHECK(st->TouchToken("1.2.xyz", 0, nullptr).status().code() == Code::kInvalidArg);
}

TEST_CASE("WaitEmpty returns when the last message goes, and only then", "[store][wait]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {});
  ReadOptions now;
  now.wait_ms = 0;
  CHECK(st->WaitEmpty(Q("q"), now).ok());  // empty: at once
  Send(*st, "q", {{3, "a"}, {3, "b"}});
  CHECK(st->WaitEmpty(Q("q"), now).code() == Code::kIoTimeout);
  // Another process receives one message, then purges the last: only the purge ends the
  // wait, when it commits; not a re-look after the receive's lock file closed (25 ms, 250 ms,
  // 1 s later: waiter.hpp). The child writes when its purge began and ended. (A child of
  // fork() opens a Store of its own and never touches this one: LMDB's caveat.)
  int times[2];
  REQUIRE(::pipe(times) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    OpenOptions o;
    o.dir = t.path + "/s";
    auto other = Store::Open(o);
    if (!other.ok()) ::_exit(1);
    Selection one;
    one.limit = 1;
    test::Collect c;
    ::usleep(100'000);
    if (!(*other)->Receive(Q("q"), one, {}, c).ok()) ::_exit(1);
    ::usleep(300'000);
    int64_t span[2] = {NowMs(), 0};
    if (!(*other)->Purge(Q("q")).ok()) ::_exit(1);
    span[1] = NowMs();
    if (::write(times[1], span, sizeof span) != sizeof span) ::_exit(1);
    ::usleep(1'500'000);  // its lock files stay open: only the doorbell can wake the wait
    ::_exit(0);
  }
  ::close(times[1]);
  ReadOptions wait;
  wait.wait_ms = 10'000;
  Status s = st->WaitEmpty(Q("q"), wait);
  int64_t woke = NowMs();
  int64_t purge[2] = {0, 0};
  CHECK(::read(times[0], purge, sizeof purge) == sizeof purge);
  ::close(times[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(s.ok());
  CHECK(woke >= purge[0]);
  CHECK(woke - purge[1] < 500);
  CHECK(st->StatQueue(Q("q"))->info.count == 0);
}

TEST_CASE("receiving paused: sends and peeks go on, receives and locks find nothing",
          "[store][pause]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}});
  QueueSettings off;
  off.receive = false;
  REQUIRE(st->UpdateQueue(Q("q"), off).ok());
  Send(*st, "q", {{3, "b"}});
  test::Collect seen, got;
  REQUIRE(st->Peek(Q("q"), All(), {}, seen).ok());
  CHECK(Bodies(seen.got) == std::vector<std::string>{"a", "b"});
  Status r = st->Receive(Q("q"), All(), {}, got);
  CHECK(r.code() == Code::kMessageNotFound);
  CHECK(r.text().find("receiving is paused") != std::string::npos);
  CHECK(got.got.empty());
  auto lease = st->Lock(Q("q"), All(), {}, LockOptions(), nullptr);
  CHECK(lease.status().code() == Code::kMessageNotFound);
  ReadOptions briefly;
  briefly.wait_ms = 50;
  r = st->Receive(Q("q"), All(), briefly, got);
  CHECK(r.code() == Code::kIoTimeout);
  CHECK(r.text().find("receiving is paused") != std::string::npos);
  CHECK(st->StatQueue(Q("q"))->info.receive_paused);
  QueueSettings on;
  on.receive = true;
  REQUIRE(st->UpdateQueue(Q("q"), on).ok());
  REQUIRE(st->Receive(Q("q"), All(), {}, got).ok());
  CHECK(Bodies(got.got) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("retry delays grow by the backoff factor, stop at the cap, and jitter shortens them",
          "[store][backoff]") {
  QueueInfo q;
  CHECK(RetryDelayFor(q, 0, 3, 0.5) == 0);  // no delay: none
  CHECK(RetryDelayFor(q, 500, 1, 0) == 500);
  CHECK(RetryDelayFor(q, 500, 7, 0) == 500);  // factor 1: the same each time
  q.retry_backoff = 2;
  CHECK(RetryDelayFor(q, 100, 1, 0) == 100);
  CHECK(RetryDelayFor(q, 100, 2, 0) == 200);
  CHECK(RetryDelayFor(q, 100, 4, 0) == 800);
  CHECK(RetryDelayFor(q, 100, 10'000, 0) == 366LL * 24 * 3600 * 1000);  // no overflow
  q.retry_delay_max = 500;
  CHECK(RetryDelayFor(q, 100, 3, 0) == 400);
  CHECK(RetryDelayFor(q, 100, 4, 0) == 500);
  q.retry_jitter = 0.5;
  CHECK(RetryDelayFor(q, 100, 4, 0) == 500);
  CHECK(RetryDelayFor(q, 100, 4, 0.5) == 375);
  CHECK(RetryDelayFor(q, 100, 4, 0.999) == 250);
  // The settings survive the record.
  q.name = "q";
  QueueInfo back;
  back.name = "q";
  REQUIRE(DecodeQueue(EncodeQueue(q), back).ok());
  CHECK(back.retry_backoff == 2);
  CHECK(back.retry_delay_max == 500);
  CHECK(back.retry_jitter == 0.5);
  CHECK(back == q);
}

TEST_CASE("the rate limit's bucket: burst, refill, spending and a clock set back",
          "[store][rate]") {
  QueueInfo q;
  const int64_t t = 1'800'000'000'000'000'000;  // ns
  CHECK(RateTokens(q, t) == UINT64_MAX);        // no limit
  q.rate = Rate{4, 1000};                       // 4/s: a token every 250 ms
  CHECK(RateBurst(q) == 1);
  CHECK(RateTokens(q, t) == 1);  // a new limit starts full
  RateTake(q, t, 1);
  CHECK(RateTokens(q, t) == 0);
  CHECK(RateTokens(q, t + 249'999'999) == 0);
  CHECK(RateTokens(q, t + 250'000'000) == 1);
  CHECK(RateNextMs(q, t) == (t + 250'000'000) / 1'000'000);
  CHECK(RateTokens(q, t + 10'000'000'000) == 1);  // idle: never above the burst
  q.rate_burst = 3;
  CHECK(RateTokens(q, t + 10'000'000'000) == 3);
  RateTake(q, t + 10'000'000'000, 3);
  CHECK(RateTokens(q, t + 10'000'000'000) == 0);
  CHECK(RateTokensExact(q, t + 10'125'000'000) == Approx(0.5));
  CHECK(RateTokens(q, t + 10'500'000'000) == 2);
  // Spent in two takes as in one: the bucket is one timestamp.
  QueueInfo a = q, b = q;
  RateTake(a, t + 10'500'000'000, 2);
  RateTake(b, t + 10'500'000'000, 1);
  RateTake(b, t + 10'500'000'000, 1);
  CHECK(a.rate_empty_ns == b.rate_empty_ns);
  // A clock set back an hour: empty from the new time, a token 250 ms later, not in an hour.
  int64_t back = t + 10'500'000'000 - 3'600'000'000'000;
  CHECK(RateTokens(a, back) == 0);
  CHECK(RateNextMs(a, back) == (back + 250'000'000) / 1'000'000);
  // The limit survives the record.
  q.name = "q";
  QueueInfo d;
  d.name = "q";
  REQUIRE(DecodeQueue(EncodeQueue(q), d).ok());
  CHECK(d == q);
}

TEST_CASE("the wait for the next token reads in whole units, rounded up from the nanosecond",
          "[store][rate]") {
  QueueInfo q;
  q.rate = Rate{1, 3'600'000};                      // 1/h
  const int64_t spent = 1'800'000'000'000'500'000;  // half way into a millisecond
  RateTake(q, spent, 1);
  CHECK(RateWaitText(q, spent) == "1h");
  // A receive 0.2 ms later: still an hour, never "3601s" (a millisecond rounded up at the
  // end and down at the start).
  CHECK(RateWaitText(q, spent + 200'000) == "1h");
  CHECK(RateWaitText(q, spent + 1'500'000'000) == "3599s");
  CHECK(RateWaitText(q, spent + 3'599'999'600'000) == "1ms");
  CHECK(RateWaitText(q, spent + 3'600'000'000'000) == "0ms");
}

TEST_CASE("a receive takes no more than the rate's tokens, and says when the next comes",
          "[store][rate]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {3, "b"}, {3, "c"}, {3, "d"}});
  QueueSettings s;
  s.rate = Rate{1, 3'600'000};  // 1/h
  s.rate_burst = 2;
  REQUIRE(st->UpdateQueue(Q("q"), s).ok());
  Collect got;
  REQUIRE(st->Receive(Q("q"), All(), {}, got).ok());
  CHECK(Bodies(got.got) == std::vector<std::string>{"a", "b"});
  Collect none;
  Status r = st->Receive(Q("q"), All(), {}, none);
  CHECK(r.code() == Code::kMessageNotFound);
  CHECK(r.text() == "rate limit 1/h reached: the next message may leave in 1h");
  // A transactional lock is limited the same way; peeks are not.
  auto lease = st->Lock(Q("q"), All(), {}, LockOptions(), nullptr);
  CHECK(lease.status().code() == Code::kMessageNotFound);
  Collect seen;
  REQUIRE(st->Peek(Q("q"), All(), {}, seen).ok());
  CHECK(seen.got.size() == 2);
  // An empty queue without tokens is just empty.
  REQUIRE(st->Purge(Q("q")).ok());
  CHECK(st->Receive(Q("q"), All(), {}, none).text() == "no message");
  // Lifting the limit: the burst goes with it, and a burst alone is refused.
  s.rate = Rate{};
  s.rate_burst.reset();
  REQUIRE(st->UpdateQueue(Q("q"), s).ok());
  CHECK(st->StatQueue(Q("q"))->info.rate_burst == 0);
  QueueSettings burst;
  burst.rate_burst = 3;
  CHECK(st->UpdateQueue(Q("q"), burst).code() == Code::kInvalidArg);
}

TEST_CASE("FinishEach commits some of a lease and rolls the others back", "[store][lease]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}, {3, "b"}, {3, "c"}, {3, "d"}});
  auto lease = st->Lock(Q("q"), All(), {}, LockOptions(), nullptr);
  REQUIRE(lease.ok());
  REQUIRE((*lease)->messages().size() == 4);
  Failure f = Failure::Because("POST failed");
  REQUIRE(st->FinishEach(**lease, {true, false, true, false}, RetryDelay(), nullptr, &f).ok());
  // The lease is over: b and d are back, in their places, with the failure; a and c are gone.
  CHECK(st->Finish(**lease, true, 0, nullptr).code() == Code::kTransactionUsage);
  test::Collect c;
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  REQUIRE(c.got.size() == 2);
  CHECK(c.got[0].body == "b");
  CHECK(c.got[1].body == "d");
  for (const Message& m : c.got) {
    CHECK(m.abort_count == 1);
    CHECK(m.last_failure == "POST failed");
  }
  CHECK(st->StatQueue(Q("q"))->info.locked == 0);
  // All committed, and none: as Finish.
  lease = st->Lock(Q("q"), All(), {}, LockOptions(), nullptr);
  REQUIRE(lease.ok());
  REQUIRE(st->FinishEach(**lease, {false, false}, RetryDelay(), nullptr).ok());
  lease = st->Lock(Q("q"), All(), {}, LockOptions(), nullptr);
  REQUIRE(lease.ok());
  REQUIRE(st->FinishEach(**lease, {true, true}, RetryDelay(), nullptr).ok());
  CHECK(st->StatQueue(Q("q"))->info.count == 0);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("a rollback keeps its failure in the message, and nack and expiry say so",
          "[store][failure]") {
  TempDir t;
  auto st = OpenNew(t.path);
  Send(*st, "q", {{3, "a"}});
  auto lease = st->Lock(Q("q"), All(), {}, LockOptions(), nullptr);
  REQUIRE(lease.ok());
  REQUIRE(*lease);
  Failure f;
  f.what = "exited with status 3";
  f.exit_status = 3;
  f.stderr_tail = std::string(5000, 'x') + "end";
  REQUIRE(st->Finish(**lease, false, RetryDelay(), nullptr, &f).ok());
  test::Collect c;
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  REQUIRE(c.got.size() == 1);
  const Message& m = c.got[0];
  CHECK(m.last_failure == "exited with status 3");
  CHECK(m.last_exit_status == 3);
  CHECK(m.last_signal == 0);
  CHECK(m.last_stderr.size() == kMaxFailureStderr);  // its end
  CHECK(m.last_stderr.substr(m.last_stderr.size() - 4) == "xend");
  CHECK(m.last_failure_time > 0);
  // A token lease: nack, then one that runs out.
  LockOptions lo;
  lo.lease_ms = 60'000;
  auto tok = st->Lock(Q("q"), All(), {}, lo, nullptr);
  REQUIRE(tok.ok());
  REQUIRE(st->FinishToken((*tok)->token(), false, 0, nullptr).ok());
  c.got.clear();
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  CHECK(c.got.at(0).last_failure == "nack");
  CHECK(c.got.at(0).last_exit_status == -1);
  CHECK(c.got.at(0).last_stderr.empty());
  lo.lease_ms = 30;
  tok = st->Lock(Q("q"), All(), {}, lo, nullptr);
  REQUIRE(tok.ok());
  ::usleep(80'000);
  c.got.clear();
  REQUIRE(st->Peek(Q("q"), All(), {}, c).ok());
  CHECK(c.got.at(0).last_failure == "lease expired");
  CHECK(c.got.at(0).abort_count == 3);
}

TEST_CASE("store: HTTP links, their urls, and stream receipts for their streams", "[store][link]") {
  TempDir t;
  auto st = OpenNew(t.path);
  LinkSettings http;
  http.url = "HTTP://Win:80/msmq";
  http.receipts_url = "http://me:8080/msmq/private$/order_queue$";
  REQUIRE(st->AddLink("w", http).ok());
  CHECK(st->AddLink("w2", http).code() == Code::kQueueExists);  // one link per machine
  LinkSettings both = http;
  both.via = "cat";
  CHECK(st->AddLink("w3", both).code() == Code::kInvalidArg);
  LinkSettings orphan;
  orphan.via = "cat";
  orphan.receipts_url = "http://me/msmq/private$/order_queue$";
  CHECK(st->AddLink("w4", orphan).code() == Code::kInvalidArg);
  CHECK(st->GetLink("w")->url == "http://win/msmq");

  // mq-send DIRECT=HTTP://win/msmq/private$/q: through w; an unknown machine says how.
  auto d = ParseDestinations("DIRECT=http://WIN/msmq/private$/q");
  REQUIRE(d.ok());
  REQUIRE(st->ResolveLinkUrls(*d).ok());
  CHECK((*d)[0].ref.Full() == "out;w");
  auto none = ParseDestinations("DIRECT=http://other/msmq/private$/q");
  Status s = st->ResolveLinkUrls(*none);
  CHECK(s.code() == Code::kQueueNotFound);
  CHECK(s.text().find("mq-admin link add NAME --url http://other/msmq") != std::string::npos);

  // A stream receipt for w's stream (uid:STORE\QUEUE-ID of out;w) is recorded, the highest
  // kept; one for a stream of another store is no link's.
  auto out = st->StatQueue(Q("out;w"));
  REQUIRE(out.ok());
  std::string stream = "uid:" + FormatGuid(st->guid()) + "\\" + std::to_string(out->info.id);
  CHECK(*st->NoteStreamReceipt(stream, 7) == "w");
  CHECK(*st->NoteStreamReceipt(stream, 5) == "w");
  CHECK(st->GetLink("w")->receipted == 7);
  CHECK(st->GetLink("w")->receipted_stream == stream);
  CHECK(st->NoteStreamReceipt("uid:2744e4e1-2b48-43e8-b441-42745f280d53\\1", 9)->empty());
  CHECK(st->NoteStreamReceipt(stream + "0", 9)->empty());
}

namespace {

// The number of by_id entries of the closed store at `dir`.
uint64_t ByIdEntries(const std::string& dir) {
  lmdb::Env env;
  REQUIRE(env.Open(dir, 0600, 256 << 20, 32).ok());
  auto txn = lmdb::Txn::Begin(env, false);
  REQUIRE(txn.ok());
  auto by_id = txn->OpenDb("by_id", false);
  REQUIRE(by_id.ok());
  return txn->Count(*by_id);
}

// Makes `dir` the store of `format` that an older mq made (tests/fixtures/store/README),
// with LMDB's own mdb_load.
void LoadOldStore(const std::string& dir, int format) {
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  std::string cmd = fmt::format("mdb_load -f '{}/store/format{}.dump' '{}' 2>/dev/null",
                                MQ_FIXTURES, format, dir);
  REQUIRE(std::system(cmd.c_str()) == 0);
  // The older mq that made it left its marker too (which mq-admin upgrade's lone open needs):
  // the first open writes it, even as it refuses the store.
  OpenOptions o;
  o.dir = dir;
  CHECK_FALSE(Store::Open(o).ok());
}

void RequireFound(Store& st, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    auto m = st.FindMessage(id);
    INFO(FormatMessageId(id));
    REQUIRE(m.ok());
    CHECK(m->id == id);
  }
}

// Opens the store at `dir` alone (as mq-admin upgrade does) and upgrades it.
Store::UpgradeReport UpgradeAlone(const std::string& dir) {
  OpenOptions alone;
  alone.dir = dir;
  alone.exclusive_wait_ms = 0;
  alone.older_format_ok = true;
  auto st = Store::Open(alone);
  REQUIRE(st.ok());
  auto r = (*st)->Upgrade();
  REQUIRE(r.ok());
  return *r;
}

void RequireChecked(Store& st) {
  std::vector<std::string> problems;
  REQUIRE(st.Check(problems).ok());
  for (const auto& p : problems) UNSCOPED_INFO(p);
  REQUIRE(problems.empty());
}

}  // namespace

TEST_CASE("a message sent in a format 2 store is found by its id alone", "[store][format]") {
  TempDir t;
  std::string dir = t.path + "/s";
  std::vector<std::string> ids;
  {
    auto st = OpenNew(t.path);
    CHECK(st->format() == kFormatVersion);
    ids = SendIds(*st, "q", 5);
    // A delayed message is promoted with a new lookup id: its id then needs an entry.
    Vec late;
    Message m;
    m.body = "late";
    m.visible_time = NowMs() + 20;
    late.v.push_back(m);
    std::vector<std::string> late_id;
    REQUIRE(st->Append(Q("q"), {}, late, &late_id).ok());
    ids.push_back(late_id.at(0));
    usleep(40 * 1000);
    REQUIRE(st->Sweep().ok());
    RequireFound(*st, ids);
    RequireChecked(*st);
    // Moved to a subqueue, it keeps its id and gets an entry there; moved back (requeue),
    // its id says where it is again.
    for (size_t i : {0, 1}) {
      auto first = st->FindMessage(ids[i]);
      REQUIRE(first.ok());
      REQUIRE(st->MoveToSubqueue(Q("q"), first->lookup_id, Q("q;poison")).ok());
      RequireFound(*st, ids);
      RequireChecked(*st);
    }
    auto back = st->Requeue(Q("q;poison"), ids[1]);
    REQUIRE(back.ok());
    CHECK(*back == 1);
    RequireFound(*st, ids);
    RequireChecked(*st);
    // A received message is no longer found.
    Collect c;
    Selection one;
    one.limit = 1;
    REQUIRE(st->Receive(Q("q"), one, {}, c).ok());
    REQUIRE(c.got.size() == 1);
    CHECK(st->FindMessage(c.got[0].id).status().code() == Code::kMessageNotFound);
    std::erase(ids, c.got[0].id);
    RequireFound(*st, ids);
    RequireChecked(*st);
  }
  // Five messages were left: the promoted one, the one in q;poison, and three native ones
  // (one of them moved back).
  CHECK(ByIdEntries(dir) == 2);
}

TEST_CASE("mq-admin upgrade brings a format 1 store to this mq's format and keeps its messages",
          "[store][format]") {
  TempDir t;
  std::string dir = t.path + "/s";
  std::vector<std::string> old_ids, new_ids;
  LoadOldStore(dir, 1);  // q with a, b, c and d, each id with its by_id entry
  OpenOptions o;
  o.dir = dir;
  {
    // Refused, saying what to do.
    auto st = Store::Open(o);
    REQUIRE_FALSE(st.ok());
    CHECK(st.status().text().find("store format 1 is older than this mq's") != std::string::npos);
    CHECK(st.status().text().find("mq-admin upgrade") != std::string::npos);
    // Only a store opened alone can be upgraded.
    OpenOptions older = o;
    older.older_format_ok = true;
    st = Store::Open(older);
    REQUIRE(st.ok());
    CHECK((*st)->format() == 1);
    auto r = (*st)->Upgrade();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().text().find("alone") != std::string::npos);
  }
  CHECK(ByIdEntries(dir) == 4);  // every id has its entry in format 1
  auto r = UpgradeAlone(dir);
  CHECK(r.before == 1);
  CHECK(r.after == kFormatVersion);
  CHECK(r.queues == 4);    // q and the three system queues
  CHECK(r.messages == 4);  // each record to its order key
  {
    auto st = Store::Open(o);
    REQUIRE(st.ok());
    CHECK((*st)->format() == kFormatVersion);
    RequireChecked(**st);
    Collect before;
    REQUIRE((*st)->Peek(Q("q"), All(), {}, before).ok());
    REQUIRE(before.got.size() == 4);
    for (const auto& m : before.got) old_ids.push_back(m.id);
    CHECK(before.got[0].body == "a");
    CHECK(before.got[3].body == "d");
    RequireFound(**st, old_ids);
    new_ids = SendIds(**st, "q", 3, false);
    for (const auto& id : new_ids)
      for (const auto& old : old_ids) CHECK(id != old);
    RequireFound(**st, old_ids);
    RequireFound(**st, new_ids);
    RequireChecked(**st);
  }
  CHECK(ByIdEntries(dir) == 4);  // the new messages' ids need none
  r = UpgradeAlone(dir);
  CHECK(r.before == kFormatVersion);
  CHECK(r.after == kFormatVersion);
  {
    // Everything received, old and new, and the store still checks.
    auto st = Store::Open(o);
    REQUIRE(st.ok());
    Collect all;
    REQUIRE((*st)->Receive(Q("q"), All(), {}, all).ok());
    CHECK(all.got.size() == 7);
    RequireChecked(**st);
  }
  CHECK(ByIdEntries(dir) == 0);
}

namespace {

// How many records of the closed store at `dir` are of each record version.
std::map<int, uint64_t> RecordVersions(const std::string& dir) {
  lmdb::Env env;
  REQUIRE(env.Open(dir, 0600, 256 << 20, 32).ok());
  auto txn = lmdb::Txn::Begin(env, false);
  REQUIRE(txn.ok());
  auto messages = txn->OpenDb("messages", false);
  REQUIRE(messages.ok());
  std::map<int, uint64_t> n;
  lmdb::Cursor c(*txn, *messages);
  for (bool on = c.First(); on; on = c.Next()) n[static_cast<uint8_t>(c.value()[0])]++;
  return n;
}

// The properties a lean record leaves out, as a reader sees them.
void RequireWhole(Store& st, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    auto m = st.FindMessage(id);
    INFO(FormatMessageId(id));
    REQUIRE(m.ok());
    CHECK(m->id == id);
    CHECK(m->source_qm_guid == st.guid());
    CHECK(m->message_enqueue_time == m->arrived_time);
    CHECK(m->message_enqueue_time != 0);
    CHECK(m->queuing_order == m->lookup_id);
  }
}

}  // namespace

TEST_CASE("records leave out what the store says, and a format 2 store's whole ones stay whole",
          "[store][format]") {
  TempDir t;
  {
    auto st = OpenNew(t.path);
    CHECK(st->format() == kFormatVersion);
    auto ids = SendIds(*st, "q", 3);
    RequireWhole(*st, ids);
    RequireChecked(*st);
  }
  CHECK(RecordVersions(t.path + "/s") == std::map<int, uint64_t>{{2, 3}});
  // A store of format 2 (q with a and b, whole records, as an older mq reads them).
  std::string dir = t.path + "/f2";
  LoadOldStore(dir, 2);
  CHECK(RecordVersions(dir) == std::map<int, uint64_t>{{1, 2}});
  auto r = UpgradeAlone(dir);
  CHECK(r.before == 2);
  CHECK(r.after == kFormatVersion);
  CHECK(r.queues == 0);
  CHECK(r.messages == 2);
  // Moved, not rewritten.
  CHECK(RecordVersions(dir) == std::map<int, uint64_t>{{1, 2}});
  OpenOptions o;
  o.dir = dir;
  std::vector<std::string> ids;
  {
    auto st = Store::Open(o);
    REQUIRE(st.ok());
    RequireChecked(**st);
    Collect before;
    REQUIRE((*st)->Peek(Q("q"), All(), {}, before).ok());
    for (const auto& m : before.got) ids.push_back(m.id);
    REQUIRE(ids.size() == 2);
    auto more = SendIds(**st, "q", 2, false);
    ids.insert(ids.end(), more.begin(), more.end());
    RequireWhole(**st, ids);
    // Moved to a subqueue, a message's id is no longer where it is: its record keeps it.
    auto first = (*st)->FindMessage(ids[0]);
    REQUIRE(first.ok());
    REQUIRE((*st)->MoveToSubqueue(Q("q"), first->lookup_id, Q("q;poison")).ok());
    RequireWhole(**st, ids);
    RequireChecked(**st);
    // Every message received as it was sent.
    Collect all;
    REQUIRE((*st)->Receive(Q("q"), All(), {}, all).ok());
    REQUIRE(all.got.size() == ids.size() - 1);
    for (size_t i = 0; i < all.got.size(); ++i) {
      CHECK(all.got[i].id == ids[i + 1]);
      CHECK(all.got[i].source_qm_guid == (*st)->guid());
      CHECK(all.got[i].queuing_order == all.got[i].lookup_id);
    }
    RequireChecked(**st);
  }
}

namespace {

std::string Bodies(const Collect& c) {
  std::string out;
  for (const auto& m : c.got) out += m.body + " ";
  return out;
}

std::string FixtureLine(const char* name) {
  std::ifstream f(std::string(MQ_FIXTURES) + "/store/" + name);
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace

TEST_CASE("upgrade from format 3 keeps each message in its state and place", "[store][format]") {
  // tests/fixtures/store/README: q holds p7, p3-a (both Locked by a lease), p3-b, corr, ttl
  // (priority 3), p0 and a delayed message; conv three retained conversation messages.
  TempDir t;
  std::string dir = t.path + "/s";
  LoadOldStore(dir, 3);
  auto r = UpgradeAlone(dir);
  CHECK(r.before == 3);
  CHECK(r.after == kFormatVersion);
  CHECK(r.messages == 10);
  OpenOptions o;
  o.dir = dir;
  auto st = Store::Open(o);
  REQUIRE(st.ok());
  RequireChecked(**st);
  auto stats = (*st)->StatQueue(Q("q"));
  REQUIRE(stats.ok());
  CHECK(stats->info.count == 7);
  CHECK(stats->info.locked == 2);
  CHECK(stats->info.delayed == 1);
  CHECK(stats->oldest_arrived != 0);
  Collect head, with_locked, corr;
  REQUIRE((*st)->Peek(Q("q"), All(), {}, head).ok());
  CHECK(Bodies(head) == "p3-b corr ttl p0 ");
  Selection locked = All();
  locked.include_locked = true;
  REQUIRE((*st)->Peek(Q("q"), locked, {}, with_locked).ok());
  CHECK(Bodies(with_locked) == "p7 p3-a p3-b corr ttl p0 ");
  Selection by_corr = All();
  by_corr.anchor = Anchor::kCorrelation;
  by_corr.correlation = HexDecode("0123456789abcdef0123456789abcdef01234567").value();
  REQUIRE((*st)->Peek(Q("q"), by_corr, {}, corr).ok());
  CHECK(Bodies(corr) == "corr ");
  // The lease rolls back: its messages are ready again, in their places.
  FinishReport report;
  REQUIRE((*st)->FinishToken(FixtureLine("format3.lease"), false, 0, &report).ok());
  Collect after;
  REQUIRE((*st)->Receive(Q("q"), All(), {}, after).ok());
  CHECK(Bodies(after) == "p7 p3-a p3-b corr ttl p0 ");
  RequireChecked(**st);
  // The conversation's three retained messages stay, in order; one sent now is received.
  Collect kept;
  REQUIRE((*st)->Peek(Q("conv"), All(), {}, kept).ok());
  CHECK(Bodies(kept) == "c1 c2 c3 ");
  for (const auto& m : kept.got) CHECK(m.status == 0);
  auto handle = ParseGuid(FixtureLine("format3.handle"));
  REQUIRE(handle.has_value());
  Vec more;
  Message m;
  m.body = "c4";
  m.conversation_handle = *handle;
  more.v.push_back(m);
  REQUIRE((*st)->Append(Q("conv"), {}, more, nullptr).ok());
  Selection conv = All();
  conv.conversation = *handle;
  Collect got;
  REQUIRE((*st)->Receive(Q("conv"), conv, {}, got).ok());
  CHECK(Bodies(got) == "c4 ");
  RequireChecked(**st);
}

TEST_CASE("check finds a Locked message whose lease record is gone", "[store][lease]") {
  // A Locked range whose lease is gone would keep its messages out of the queue for good: the
  // store check finds it.
  TempDir t;
  {
    auto st = OpenNew(t.path);
    Send(*st, "q", {{3, "a"}, {3, "b"}});
    LockOptions lo;
    lo.lease_ms = 60'000;  // a token lease: its record stays when this process ends
    auto l = st->Lock(Q("q"), All(), {}, lo, nullptr);
    REQUIRE(l.ok());
    REQUIRE((*l)->messages().size() == 2);
    std::vector<std::string> problems;
    REQUIRE(st->Check(problems).ok());
    CHECK(problems.empty());
  }
  {
    // The lease record deleted behind the store's back (a damaged store).
    lmdb::Env env;
    REQUIRE(env.Open(t.path + "/s", 0600, 256ULL << 20, 32).ok());
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    auto leases = txn->OpenDb("leases", false);
    REQUIRE(leases.ok());
    REQUIRE(txn->Count(*leases) == 1);
    REQUIRE(txn->Clear(*leases).ok());
    REQUIRE(txn->Commit().ok());
  }
  auto st = OpenNew(t.path);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  // One range holds both.
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("locked: messages from 1 of queue id") != std::string::npos);
  CHECK(problems[0].find("which does not exist") != std::string::npos);
}
