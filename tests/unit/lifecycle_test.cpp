// lifecycle_test.cpp: the message lifecycle of lib/ (issue 6): which acknowledgement classes
// a level asks for, when a message expires, and the store's expiry, dead-letter, journal and
// acknowledgement steps with their indexes checked after each.
#include <catch2/catch.hpp>

#include <unistd.h>


#include "store/store.hpp"
#include "test_support.hpp"
#include "base/units.hpp"

using namespace mq;

namespace {

struct Gather : MessageSink {
  std::vector<Message> got;
  Status Add(const Message& m) override {
    got.push_back(m);
    return {};
  }
  Status Flush() override { return {}; }
};

struct Fixture : test::TempStore {
  // Sends `m` to `queue` (made if missing); returns its id.
  std::string Send(const char* queue, Message m) {
    test::OneMessage src(std::move(m));
    AppendOptions o;
    o.create_queue = true;
    std::vector<std::string> ids;
    REQUIRE(store->Append(*ParseQueueRef(queue), o, src, &ids).ok());
    REQUIRE(ids.size() == 1);
    return ids[0];
  }

  std::vector<Message> PeekAll(const char* queue) {
    Gather sink;
    Selection sel;
    sel.limit = 0;
    Status s = store->Peek(*ParseQueueRef(queue), sel, ReadOptions(), sink);
    REQUIRE((s.ok() || s.code() == Code::kMessageNotFound));
    return sink.got;
  }

  std::vector<Message> ReceiveAll(const char* queue) {
    Gather sink;
    Selection sel;
    sel.limit = 0;
    Status s = store->Receive(*ParseQueueRef(queue), sel, ReadOptions(), sink);
    REQUIRE((s.ok() || s.code() == Code::kMessageNotFound));
    return sink.got;
  }

  void RequireConsistent() {
    std::vector<std::string> problems;
    REQUIRE(store->Check(problems).ok());
    INFO((problems.empty() ? std::string() : problems[0]));
    CHECK(problems.empty());
  }
};

}  // namespace

TEST_CASE("an ack level asks for the classes MSMQ sends for it", "[lifecycle]") {
  auto level = [](const char* text) { return *ParseAckLevel(text); };
  CHECK(AckWanted(level("full-reach-queue"), kClassAckReachQueue));
  CHECK_FALSE(AckWanted(level("full-reach-queue"), kClassAckReceive));
  CHECK(AckWanted(level("full-reach-queue"), kClassNackReachQueueTimeout));
  CHECK_FALSE(AckWanted(level("full-reach-queue"), kClassNackReceiveTimeout));
  CHECK(AckWanted(level("full-receive"), kClassAckReceive));
  CHECK_FALSE(AckWanted(level("full-receive"), kClassAckReachQueue));
  CHECK(AckWanted(level("full-receive"), kClassNackReceiveTimeout));
  CHECK(AckWanted(level("full-receive"), kClassNackPurged));
  CHECK(AckWanted(level("nack-receive"), kClassNackQDeleted));
  CHECK_FALSE(AckWanted(level("nack-receive"), kClassAckReceive));
  CHECK(AckWanted(level("nack-reach-queue"), kClassNackBadDstQ));
  CHECK_FALSE(AckWanted(level("nack-reach-queue"), kClassNackQPurged));
  CHECK_FALSE(AckWanted(level("none"), kClassNackQPurged));
  CHECK_FALSE(AckWanted(level("full-receive"), kClassNormal));
}

TEST_CASE("a message expires at its ttrq until it arrives, then at its ttbr", "[lifecycle]") {
  Message m;
  CHECK(ExpiryOf(m) == 0);
  m.ttbr = 5000;
  CHECK(ExpiryOf(m) == 5000);
  CHECK(ExpiryClass(m, false) == kClassNackReceiveTimeout);
  m.ttrq = 3000;
  CHECK(ExpiryOf(m) == 5000);  // arrived: ttrq is spent
  m.awaiting_arrival = true;
  CHECK(ExpiryOf(m) == 3000);
  CHECK(ExpiryClass(m, false) == kClassNackReachQueueTimeout);
  CHECK(ExpiryClass(m, true) == kClassNackReachQueueTimeout);  // in out;LINK too
  m.ttrq = 7000;  // a ttrq after the ttbr: the ttbr comes first
  CHECK(ExpiryOf(m) == 5000);
  CHECK(ExpiryClass(m, false) == kClassNackReceiveTimeout);
  // Its ttbr runs out while it still waits in a link's outgoing queue.
  CHECK(ExpiryClass(m, true) == kClassNackReceiveTimeoutAtSender);
  m.ttbr = 0;
  CHECK(ExpiryOf(m) == 7000);
}

TEST_CASE("an expired message is not peeked, and sweep dead-letters it with a NACK",
          "[lifecycle][store]") {
  Fixture f;
  REQUIRE(f.store->CreateQueue(*ParseQueueRef("adm"), {}).ok());
  Message m;
  m.body = "late";
  m.label = "lbl";
  m.ttbr = NowMs() - 1;
  m.deadletter = true;
  m.admin_queue = "adm";
  m.ack = *ParseAckLevel("nack-receive");
  std::string id = f.Send("q", m);
  Message keep;
  keep.body = "keep";
  keep.ttbr = NowMs() + 3600000;
  f.Send("q", keep);
  auto n = f.store->Sweep();
  REQUIRE(n.ok());
  CHECK(*n == 1);
  auto seen = f.PeekAll("q");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].body == "keep");
  auto dead = f.PeekAll("system;deadletter");
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].id == id);
  CHECK(dead[0].msg_class == kClassNackReceiveTimeout);
  CHECK(dead[0].destination_queue == "q");
  auto acks = f.PeekAll("adm");
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].msg_class == kClassNackReceiveTimeout);
  CHECK(acks[0].correlation_id == id);
  CHECK(acks[0].label == "lbl");
  CHECK(acks[0].body.empty());
  f.RequireConsistent();
  // Nothing more is due: sweep does nothing.
  auto again = f.store->Sweep();
  REQUIRE(again.ok());
  CHECK(*again == 0);
}

TEST_CASE("journal copies keep the id and are indexed apart from the original",
          "[lifecycle][store]") {
  Fixture f;
  QueueSettings s;
  s.journal = true;
  REQUIRE(f.store->CreateQueue(*ParseQueueRef("q"), s).ok());
  Message m;
  m.body = "b";
  m.journal = true;  // and a source journal copy in system;journal
  std::string id = f.Send("q", m);
  REQUIRE(f.PeekAll("system;journal").size() == 1);
  f.RequireConsistent();
  auto got = f.ReceiveAll("q");
  REQUIRE(got.size() == 1);
  auto copies = f.PeekAll("q;journal");
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].id == id);
  f.RequireConsistent();
  auto found = f.store->FindMessage(id);
  REQUIRE(found.ok());
  CHECK(found->body == "b");
}

TEST_CASE("a delayed message past its ttrq never arrives but one in time does",
          "[lifecycle][store]") {
  Fixture f;
  Message late;
  late.body = "late";
  late.visible_time = NowMs() + 50;
  late.ttrq = NowMs() + 10;
  late.deadletter = true;
  f.Send("q", late);
  Message ok;
  ok.body = "ok";
  ok.visible_time = NowMs() + 50;
  ok.ttrq = NowMs() + 3600000;
  ok.journal = true;
  f.Send("q", ok);
  CHECK(f.PeekAll("system;journal").empty());  // not arrived yet
  f.RequireConsistent();
  ::usleep(80 * 1000);
  auto seen = f.PeekAll("q");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].body == "ok");
  CHECK_FALSE(seen[0].awaiting_arrival);
  CHECK(f.PeekAll("system;journal").size() == 1);
  auto dead = f.PeekAll("system;deadletter");
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].msg_class == kClassNackReachQueueTimeout);
  f.RequireConsistent();
}

TEST_CASE("an acknowledgement to an HTTP admin queue waits for the link to that machine",
          "[lifecycle][store]") {
  Fixture f;
  REQUIRE(f.store
              ->AddLink("win", LinkSettings{std::nullopt, std::nullopt,
                                            std::string("http://win.example/msmq"), std::nullopt})
              .ok());
  Message m;
  m.body = "taken";
  m.label = "lbl";
  m.admin_queue = "DIRECT=HTTP://WIN.example/msmq/private$/adm";  // as MSMQ writes it
  m.ack = *ParseAckLevel("full-receive");
  std::string taken = f.Send("q", m);
  m.body = "other machine";
  m.admin_queue = "DIRECT=http://other.example/msmq/private$/adm";
  f.Send("q", m);
  REQUIRE(f.ReceiveAll("q").size() == 2);
  m.body = "late";
  m.admin_queue = "DIRECT=http://win.example/msmq/private$/adm";
  m.ttbr = NowMs() - 1;
  m.ack = *ParseAckLevel("nack-receive,nack-reach-queue");
  std::string late = f.Send("q", m);
  REQUIRE(f.store->Sweep().ok());
  // ACK_RECEIVE for the one received, the NACK of the one that expired; nothing for the
  // machine no link reaches.
  auto out = f.PeekAll("out;win");
  REQUIRE(out.size() == 2);
  CHECK(out[0].msg_class == kClassAckReceive);
  CHECK(out[0].correlation_id == taken);
  CHECK(out[0].destination_queue == "adm");
  CHECK(out[0].body.empty());
  CHECK(out[1].msg_class == kClassNackReceiveTimeout);
  CHECK(out[1].correlation_id == late);
  CHECK(out[1].destination_queue == "adm");
  f.RequireConsistent();
}
