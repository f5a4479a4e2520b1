// monitor_test.cpp: mq-admin top's model (lib/monitor): samples of a real store, the rates of
// successive samples, sorting and filtering, the layout, and the store-wide doorbell.
#include <catch2/catch.hpp>

#include <algorithm>

#include "base/units.hpp"
#include "monitor/monitor.hpp"
#include "test_support.hpp"

using namespace mq;

namespace {

QueueRef Q(const char* name) { return *ParseQueueRef(name); }

void Send(Store& st, const char* q, int n) { test::SendN(st, q, n); }

void ReceiveAll(Store& st, const char* q) {
  Selection all;
  all.limit = 0;
  test::Collect c;
  REQUIRE(st.Receive(Q(q), all, {}, c).ok());
}

// A sample as if taken `mono` ms into a run, with the given totals for queue id 1.
monitor::Sample At(int64_t mono, uint64_t sent, uint64_t received, uint32_t id = 1) {
  monitor::Sample s;
  s.mono_ms = mono;
  monitor::QueueRow r;
  r.st.info.id = id;
  r.st.info.name = "q";
  r.st.info.sent_total = sent;
  r.st.info.received_total = received;
  s.queues.push_back(r);
  return s;
}

}  // namespace

TEST_CASE("a sample holds every queue's counts, the links, the leases and the file",
          "[monitor]") {
  test::TempStore t;
  Send(*t.store, "a", 3);
  Send(*t.store, "b", 1);
  REQUIRE(t.store->AddLink("far", {.via = std::string("cat"), .return_link = {}}).ok());
  auto s = monitor::Take(*t.store, {});
  REQUIRE(s.ok());
  monitor::Arrange(*s, monitor::SortKey::kName, "");
  // a, b, the link's out;far and the store's system queues (dead letters...), by name.
  std::vector<std::string> names;
  for (auto& r : s->queues) names.push_back(r.st.info.name);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::count(names.begin(), names.end(), "b") == 1);
  CHECK(std::count(names.begin(), names.end(), "out;far") == 1);
  REQUIRE(names[0] == "a");
  CHECK(s->queues[0].st.info.count == 3);
  CHECK(s->queues[0].st.info.sent_total == 3);
  CHECK(s->queues[0].st.oldest_arrived > 0);
  CHECK(s->links.size() == 1);
  CHECK(s->leases.empty());
  CHECK(s->sizes.file > 0);
  CHECK(s->sizes.used > 0);
  CHECK(s->sizes.used <= s->sizes.file);
  // Named queues only; one deleted since the viewer started is left out, not an error.
  REQUIRE(t.store->DeleteQueue(Q("b")).ok());
  auto some = monitor::Take(*t.store, {Q("a"), Q("b")});
  REQUIRE(some.ok());
  REQUIRE(some->queues.size() == 1);
  CHECK(some->queues[0].st.info.name == "a");
}

TEST_CASE("the free list's pages are counted", "[monitor]") {
  test::TempStore t;
  Send(*t.store, "a", 2000);
  ReceiveAll(*t.store, "a");
  Send(*t.store, "a", 1);  // a later write transaction: what the drain freed is reusable
  auto z = t.store->FileSizes();
  REQUIRE(z.ok());
  CHECK(z->free > 0);
  CHECK(z->free < z->used);
}

TEST_CASE("rates: per interval between ticks, smoothed, and unknown at first", "[monitor]") {
  monitor::Rates r(1000);
  auto s0 = At(0, 100, 50);
  r.Apply(s0, true);
  CHECK(s0.queues[0].in_rate < 0);  // nothing to compare with yet
  CHECK(s0.queues[0].in_avg < 0);
  auto s1 = At(2000, 300, 70);  // 200 in, 20 out over 2 s
  r.Apply(s1, true);
  CHECK(s1.queues[0].in_rate == Approx(100));
  CHECK(s1.queues[0].out_rate == Approx(10));
  CHECK(s1.queues[0].in_avg == Approx(100));  // the first rate starts the average
  // Between ticks (a doorbell): fresh counts, the last tick's rates, the baseline kept.
  auto mid = At(2500, 900, 70);
  r.Apply(mid, false);
  CHECK(mid.queues[0].in_rate == Approx(100));
  auto s2 = At(3000, 300, 70);  // nothing moved in the last second (from the tick at 2 s)
  r.Apply(s2, true);
  CHECK(s2.queues[0].in_rate == Approx(0));
  // One half-life later the average has lost half of the old rate.
  CHECK(s2.queues[0].in_avg == Approx(50));
  // A queue made again under its name (a new id), or totals that went back: unknown again.
  auto s3 = At(4000, 10, 0, 2);
  r.Apply(s3, true);
  CHECK(s3.queues[0].in_rate < 0);
}

TEST_CASE("rows sort by the chosen column and filter by name", "[monitor]") {
  monitor::Sample s;
  auto row = [](const char* name, uint64_t count, double in, int64_t age) {
    monitor::QueueRow r;
    r.st.info.name = name;
    r.st.info.count = count;
    r.in_rate = in;
    r.oldest_age_ms = age;
    return r;
  };
  s.queues = {row("jobs", 5, 1, 10), row("mail", 50, 0, 5), row("jobs;poison", 1, 7, 99)};
  auto names = [](const monitor::Sample& x) {
    std::vector<std::string> v;
    for (auto& r : x.queues) v.push_back(r.st.info.name);
    return v;
  };
  auto a = s;
  monitor::Arrange(a, monitor::SortKey::kName, "");
  CHECK(names(a) == std::vector<std::string>{"jobs", "jobs;poison", "mail"});
  a = s;
  monitor::Arrange(a, monitor::SortKey::kMessages, "");
  CHECK(names(a) == std::vector<std::string>{"mail", "jobs", "jobs;poison"});
  a = s;
  monitor::Arrange(a, monitor::SortKey::kIn, "");
  CHECK(names(a) == std::vector<std::string>{"jobs;poison", "jobs", "mail"});
  a = s;
  monitor::Arrange(a, monitor::SortKey::kOldest, "jobs");
  CHECK(names(a) == std::vector<std::string>{"jobs;poison", "jobs"});
}

TEST_CASE("the layout: a store line, a heading, a row per queue, links and leases",
          "[monitor]") {
  monitor::Sample s;
  s.store_dir = "/srv/mq";
  monitor::QueueRow r;
  r.st.info.name = "a-very-long-queue-name-that-does-not-fit";
  r.st.info.count = 12;
  r.in_rate = 2.5;
  s.queues.push_back(r);
  auto lines = monitor::Format(s, 16);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].text.find(" /srv/mq: data.mdb ") != std::string::npos);
  CHECK(lines[1].heading);
  CHECK(lines[1].text.rfind("QUEUE", 0) == 0);
  CHECK(lines[2].text.rfind("a-very-long-que~ ", 0) == 0);
  CHECK(lines[2].text.find(" 2.5 ") != std::string::npos);
  s.links.push_back(LinkInfo{});
  s.leases.push_back(LeaseInfo{});
  CHECK(monitor::Format(s, 16).size() == 7);
  CHECK(monitor::FormatRate(-1) == "-");
  CHECK(monitor::FormatRate(0) == "0");
  CHECK(monitor::FormatRate(123.4) == "123");
  CHECK(monitor::FormatRate(45678) == "45.7k");
  CHECK(monitor::FormatBytes(512) == "512B");
  CHECK(monitor::FormatBytes(3 << 20) == "3.0M");
  auto j = monitor::ToJson(s);
  CHECK(j["queues"][0]["in_per_s"] == 2.5);
  CHECK(j["queues"][0]["out_per_s"].is_null());
}

TEST_CASE("the store's doorbell rings for a send into any queue", "[monitor]") {
  test::TempStore t;
  Send(*t.store, "a", 1);
  auto bell = t.store->ArmStoreDoorbell();
  REQUIRE(bell.ok());
  // Nothing rang: the wait times out.
  auto w = (*bell)->Wait(0, MonotonicMs() + 50);
  REQUIRE(w.ok());
  CHECK(*w == Doorbell::Wake::kTimeout);
  Send(*t.store, "a", 1);
  w = (*bell)->Wait(0, MonotonicMs() + 5000);
  REQUIRE(w.ok());
  CHECK(*w == Doorbell::Wake::kLook);
}
