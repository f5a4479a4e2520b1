// activator_test.cpp: the activator's loop (lib/activate/activator.hpp) with stand-in
// receivers (sh -c 'exit N'), in-process: a receiver that processes nothing holds the pool off
// with a growing backoff and no hot loop; one that found nothing makes it idle until the
// doorbell rings; a ring during a hold starts one probe; a deleted queue ends it.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "activate/activator.hpp"
#include "test_support.hpp"

using namespace mq;
using namespace std::chrono_literals;

namespace {

proc::StopSignal* g_stop = nullptr;
void OnChild(int) {
  if (g_stop) g_stop->Wake();
}

struct Pool {
  test::TempStore t;
  proc::StopSignal stop;
  std::mutex mu;
  std::vector<activate::ActivatorEvent> events;
  Status result;
  std::thread runner;
  QueueRef q{"jobs", ""};

  Pool() {
    REQUIRE(t.store->CreateQueue(q, QueueSettings{}).ok());
    g_stop = &stop;
    struct sigaction sa {};
    sa.sa_handler = OnChild;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, nullptr);
  }
  ~Pool() {
    Stop();
    signal(SIGCHLD, SIG_DFL);
    g_stop = nullptr;
  }
  void Send() {
    Message m;
    m.body = "x";
    test::OneMessage src(m);
    REQUIRE(t.store->Append(q, AppendOptions{}, src, nullptr).ok());
  }
  void Start(const std::string& receiver_script, int max_readers = 1) {
    activate::ActivatorOptions o;
    o.queue = q;
    o.max_readers = max_readers;
    o.receiver = {"/bin/sh", "-c", receiver_script};
    runner = std::thread([this, o] {
      result = activate::RunActivator(*t.store, o, stop, [this](const activate::ActivatorEvent& e) {
        std::lock_guard<std::mutex> l(mu);
        events.push_back(e);
      });
    });
  }
  void Stop() {
    stop.Request();
    if (runner.joinable()) runner.join();
  }
  int Count(activate::ActivatorEvent::Kind k) {
    std::lock_guard<std::mutex> l(mu);
    int n = 0;
    for (const auto& e : events) n += e.kind == k;
    return n;
  }
  std::vector<int64_t> Holds() {
    std::lock_guard<std::mutex> l(mu);
    std::vector<int64_t> h;
    for (const auto& e : events)
      if (e.kind == activate::ActivatorEvent::Kind::kHold) h.push_back(e.hold_ms);
    return h;
  }
};

using Kind = activate::ActivatorEvent::Kind;

}  // namespace

TEST_CASE("a receiver whose command cannot start holds the pool off, with a growing backoff",
          "[activator]") {
  Pool p;
  p.Send();
  p.Start("exit 127", 3);
  std::this_thread::sleep_for(1600ms);
  p.Stop();
  CHECK(p.result.ok());
  // 200, 400, 800 ms: about four receivers in 1.6 s, never a hot loop (and never three at once:
  // one message available).
  int started = p.Count(Kind::kStarted);
  CHECK(started >= 2);
  CHECK(started <= 5);
  auto holds = p.Holds();
  REQUIRE(holds.size() >= 2);
  for (size_t i = 1; i < holds.size(); ++i) CHECK(holds[i] == 2 * holds[i - 1]);
}

TEST_CASE("an exit 8 that moved nothing in the queue is a hold too", "[activator]") {
  Pool p;
  p.Send();
  p.Start("exit 8");
  std::this_thread::sleep_for(1000ms);
  p.Stop();
  CHECK(p.Count(Kind::kStarted) <= 4);
  CHECK(!p.Holds().empty());
}

TEST_CASE("a receiver that found nothing makes the pool idle until the doorbell rings",
          "[activator]") {
  Pool p;
  p.Send();
  p.Start("exit 1");
  std::this_thread::sleep_for(600ms);
  CHECK(p.Count(Kind::kStarted) == 1);
  CHECK(p.Holds().empty());
  p.Send();  // a ring
  std::this_thread::sleep_for(600ms);
  p.Stop();
  // One more receiver; two if the send's doorbell came as two wake-ups (the second after the
  // new receiver started, which may be the ring that freed its work). Never a loop.
  int started = p.Count(Kind::kStarted);
  CHECK(started >= 2);
  CHECK(started <= 3);
}

TEST_CASE("a ring during a hold starts one probe receiver at once", "[activator]") {
  Pool p;
  p.Send();
  p.Start("exit 127");
  // Wait for the fourth hold (1.6 s) to begin: the 350 ms below then lie inside it, and a
  // receiver started in them is the probe, not the end of a hold.
  for (int i = 0; i < 1000 && p.Holds().size() < 4; ++i) std::this_thread::sleep_for(10ms);
  int before = p.Count(Kind::kStarted);
  auto holds = p.Holds();
  REQUIRE(holds.size() >= 4);
  REQUIRE(holds.back() >= 1600);
  p.Send();  // new work: one probe within the probe interval, not at the end of the hold
  std::this_thread::sleep_for(350ms);
  int after = p.Count(Kind::kStarted);
  p.Stop();
  CHECK(after == before + 1);
}

TEST_CASE("a deleted queue ends the activator with MQ_ERROR_QUEUE_DELETED", "[activator]") {
  Pool p;
  p.Start("exit 1");
  std::this_thread::sleep_for(200ms);
  REQUIRE(p.t.store->DeleteQueue(p.q).ok());
  p.runner.join();
  CHECK(p.result.code() == Code::kQueueDeleted);
}
