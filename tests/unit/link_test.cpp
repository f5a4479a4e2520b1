// link_test.cpp: the forward and accept engines (lib/link/), in process: forward runs against
// an accept in a thread of its own, with its own store, behind a test Connector whose relays
// watch (and may cut) the frames going each way; accept alone is fed streams built by hand.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.hpp"
#include "base/ids.hpp"
#include "base/units.hpp"
#include "link/accept.hpp"
#include "link/connection.hpp"
#include "link/forward.hpp"
#include "link/http_endpoint.hpp"
#include "proc/stop.hpp"
#include "test_support.hpp"
#include "wire/transfer.hpp"

using namespace mq;
using mq::test::OneMessage;
using mq::test::TempStore;
using transfer::Frame;
using transfer::Type;

namespace {

// Writes to a closed pipe are errors here, as in the tools.
struct IgnoreSigpipe {
  IgnoreSigpipe() { ::signal(SIGPIPE, SIG_IGN); }
};

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    r = fds[0];
    w = fds[1];
  }
};

void Close(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// What a relay does with a frame: pass it on, or end the stream there (the frame is lost).
enum class Tap { kPass, kCut };
// Called from the relay threads with the session (1, 2...) and each whole frame.
using TapFn = std::function<Tap(int session, const Frame& f)>;

// Copies frames from `in` to `out` (blocking), showing each to `tap`. At the end of `in`, or
// at a cut, `out` is closed; what still comes is read and dropped, so that the writer never
// blocks.
void Relay(int in, int out, int session, const TapFn& tap) {
  transfer::FrameReader reader;
  bool cut = false;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (cut) continue;
    reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
    for (;;) {
      auto f = reader.Next();
      if (!f.ok() || !*f) break;
      if (tap && tap(session, **f) == Tap::kCut) {
        cut = true;
        break;
      }
      std::string bytes;
      transfer::PutFrame(bytes, (*f)->type, (*f)->payload);
      if (!WriteAll(out, bytes, "relay").ok()) {
        cut = true;
        break;
      }
    }
    if (cut) Close(out);
  }
  Close(out);
  ::close(in);
}

// An accept in a thread, over pipes, with relays both ways.
class LocalConnection : public link::Connection {
 public:
  LocalConnection(Store& far, int session, const TapFn& up, const TapFn& down,
                  int64_t idle_ms = link::Acceptor::kIdleTimeoutMs) {
    Pipe to, acc_in, acc_out, from;
    to_ = to.w;
    from_ = from.r;
    ::fcntl(to_, F_SETFL, O_NONBLOCK);
    ::fcntl(from_, F_SETFL, O_NONBLOCK);
    up_ = std::thread(Relay, to.r, acc_in.w, session, up);
    down_ = std::thread(Relay, acc_out.r, from.w, session, down);
    accept_ = std::thread([this, &far, in = acc_in.r, out = acc_out.w, idle_ms] {
      link::Acceptor a(far, in, out);
      a.SetIdleTimeout(idle_ms);
      result_ = a.Run();
      ::close(in);
      ::close(out);
    });
  }
  ~LocalConnection() override { Stop(); }
  int to() const override { return to_; }
  int from() const override { return from_; }
  void CloseTo() override { Close(to_); }
  std::string Reap(int64_t) override {
    Join();
    return result_.status.ok() ? "exit status 0" : "exit status 10";
  }
  void Stop() override {
    Close(to_);
    Close(from_);
    Join();
  }
  const link::AcceptResult& result() const { return result_; }

 private:
  void Join() {
    for (std::thread* t : {&up_, &accept_, &down_})
      if (t->joinable()) t->join();
  }
  int to_ = -1, from_ = -1;
  std::thread up_, down_, accept_;
  link::AcceptResult result_;
};

class LocalConnector : public link::Connector {
 public:
  explicit LocalConnector(Store& far) : far_(far) {}
  TapFn up, down;  // forward -> accept, accept -> forward
  int sessions = 0;
  int64_t idle_ms = link::Acceptor::kIdleTimeoutMs;  // the accept's --idle-timeout
  Result<std::unique_ptr<link::Connection>> Connect() override {
    return std::unique_ptr<link::Connection>(
        std::make_unique<LocalConnection>(far_, ++sessions, up, down, idle_ms));
  }

 private:
  Store& far_;
};

uint64_t Be64(std::string_view p) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

// Two stores and a link "b" from the first to the second, whose queue "dest" exists.
struct Pair : IgnoreSigpipe {
  TempStore here, far;
  LocalConnector connector{*far.store};
  proc::StopSignal stop;
  std::vector<link::ForwardNote> notes;
  Pair() {
    REQUIRE(here.store->AddLink("b", LinkSettings{std::string("not run"), std::nullopt}).ok());
    REQUIRE(far.store->CreateQueue(QueueRef{"dest", ""}, QueueSettings{}).ok());
  }
  // Sends to b:QUEUE.
  void Send(const std::string& queue, Message m) {
    AppendOptions o;
    o.remote_queue = queue;
    OneMessage src(std::move(m));
    REQUIRE(here.store->Append(QueueRef{"out", "b"}, o, src, nullptr).ok());
  }
  Status Forward(link::ForwardOptions o = {}) {
    o.link = "b";
    link::Forwarder f(*here.store, o, stop,
                      [this](const link::ForwardNote& n) { notes.push_back(n); }, &connector);
    return f.Run();
  }
};

std::vector<Message> All(Store& s, const std::string& queue) {
  struct Sink : MessageSink {
    std::vector<Message> got;
    Status Add(const Message& m) override {
      got.push_back(m);
      return {};
    }
    Status Flush() override { return {}; }
  } sink;
  auto ref = ParseQueueRef(queue);
  REQUIRE(ref.ok());
  Selection sel;
  sel.limit = 0;
  Status st = s.Peek(*ref, sel, ReadOptions{}, sink);
  if (!st.ok()) REQUIRE(st.code() == Code::kMessageNotFound);
  return sink.got;
}

Message Body(const std::string& body) {
  Message m;
  m.body = body;
  return m;
}

// --- accept alone, fed a stream built by hand -------------------------------------------------

struct AcceptRun {
  link::AcceptResult result;
  std::vector<Frame> out;
};

// Runs accept over `input` (whole frames), with its answers collected.
AcceptRun RunAccept(Store& store, const std::string& input) {
  Pipe in, out;
  // Written and read by threads of their own: the input and the answers may be larger than a
  // pipe holds (accept may stop reading early: the rest of the input is then dropped).
  std::thread writer([&] {
    (void)WriteAll(in.w, input, "input");
    ::close(in.w);
  });
  std::string bytes;
  std::thread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = ::read(out.r, buf, sizeof buf)) > 0;) bytes.append(buf, n);
    ::close(out.r);
  });
  AcceptRun run;
  {
    link::Acceptor a(store, in.r, out.w);
    run.result = a.Run();
  }
  ::close(in.r);
  ::close(out.w);
  writer.join();
  reader.join();
  transfer::FrameReader r;
  r.Feed(bytes);
  for (;;) {
    auto f = r.Next();
    REQUIRE(f.ok());
    if (!*f) break;
    run.out.push_back(std::move(**f));
  }
  return run;
}

// A forward's stream from `source`, as bytes: hello, messages, bye.
struct StreamBuilder {
  Guid source;
  std::string stream;
  std::string bytes;
  uint32_t counter = 0;  // of the message ids
  // The stream of queue `queue` of store `src`, or, given `stream_id`, any stream id.
  explicit StreamBuilder(bool reports_errors = true, Guid src = NewGuid(), int queue = 7,
                         const std::string& stream_id = "")
      : source(src),
        stream(stream_id.empty() ? "uid:" + FormatGuid(src) + "\\" + std::to_string(queue)
                                 : stream_id) {
    transfer::Hello h;
    h.source = source;
    h.stream = stream;
    h.link = "b";
    h.window = 100;
    h.reports_errors = reports_errors;
    transfer::PutFrame(bytes, Type::kHello, transfer::EncodeHello(h));
  }
  // A message of the sender's own (its id one of its ids), or, given `id`, any id.
  StreamBuilder& Msg(uint64_t seq, uint64_t prev, const std::string& body,
                     const std::string& queue = "dest", const std::string& id = "",
                     const std::string& xact_id = "") {
    Message m;
    m.id = id.empty() ? MakeMessageId(source, ++counter) : id;
    m.xact_id = xact_id;
    m.source_qm_guid = source;
    m.destination_queue = queue;
    m.body = body;
    transfer::MessageHeader h;
    h.seq = seq;
    h.prev = prev;
    std::string payload;
    transfer::AppendMessage(payload, h, m, stream);
    transfer::PutFrame(bytes, Type::kMessage, payload);
    return *this;
  }
  // A message frame whose document is `doc` as given (not necessarily SRMP).
  StreamBuilder& Raw(uint64_t seq, uint64_t prev, const std::string& doc) {
    transfer::MessageHeader h;
    h.seq = seq;
    h.prev = prev;
    std::string payload;
    transfer::AppendMessageHeader(payload, h);
    payload += doc;
    transfer::PutFrame(bytes, Type::kMessage, payload);
    return *this;
  }
  std::string Bye() {
    transfer::PutFrame(bytes, Type::kBye, "");
    return bytes;
  }
};

// For the relays' taps, which run in threads of their own, where Catch2's assertions may not.
uint64_t AckLast(const Frame& f) {
  transfer::Ack a;
  return transfer::DecodeAck(f.payload, a).ok() ? a.last : 0;
}

transfer::Ack AckOf(const Frame& f) {
  REQUIRE(f.type == Type::kAck);
  transfer::Ack a;
  REQUIRE(transfer::DecodeAck(f.payload, a).ok());
  return a;
}

}  // namespace

TEST_CASE("link: messages arrive exactly once, in order, with their properties", "[link]") {
  Pair p;
  for (int i = 0; i < 30; ++i) {
    Message m = Body("m" + std::to_string(i));
    m.label = "label " + std::to_string(i);
    m.priority = static_cast<uint8_t>(i % 8);
    m.app_specific = static_cast<uint32_t>(1000 + i);
    p.Send("dest", m);
  }
  REQUIRE(p.Forward().ok());
  CHECK(p.notes.empty());
  CHECK(p.connector.sessions == 1);
  // The far queue orders by priority first: compare in send order.
  std::vector<Message> got = All(*p.far.store, "dest");
  REQUIRE(got.size() == 30);
  std::sort(got.begin(), got.end(),
            [](const Message& a, const Message& b) { return a.app_specific < b.app_specific; });
  std::set<std::string> ids;
  for (int i = 0; i < 30; ++i) {
    const Message& m = got[static_cast<size_t>(i)];
    CHECK(m.body == "m" + std::to_string(i));
    CHECK(m.label == "label " + std::to_string(i));
    CHECK(m.priority == i % 8);
    CHECK(m.app_specific == static_cast<uint32_t>(1000 + i));
    CHECK(m.source_qm_guid == p.here.store->guid());
    ids.insert(m.id);
  }
  CHECK(ids.size() == 30);
  // Stored in the order sent (arrival order within a priority).
  std::vector<Message> prio0;
  for (const Message& m : All(*p.far.store, "dest"))
    if (m.priority == 0) prio0.push_back(m);
  REQUIRE(prio0.size() == 4);
  for (size_t i = 0; i + 1 < prio0.size(); ++i)
    CHECK(prio0[i].app_specific < prio0[i + 1].app_specific);
  CHECK(All(*p.here.store, "out;b").empty());
  // A second forward finds nothing to send, and the far side nothing new.
  REQUIRE(p.Forward().ok());
  CHECK(All(*p.far.store, "dest").size() == 30);
}

TEST_CASE("link: accept answers a replay of an acknowledged message again, storing it once",
          "[link]") {
  IgnoreSigpipe ignore;
  TempStore far;
  REQUIRE(far.store->CreateQueue(QueueRef{"dest", ""}, QueueSettings{}).ok());
  StreamBuilder first;
  AcceptRun one = RunAccept(*far.store, first.Msg(1, 0, "a").Msg(2, 1, "b").Bye());
  REQUIRE(one.result.status.ok());
  REQUIRE(one.out.size() == 2);
  CHECK(one.out[0].type == Type::kWelcome);
  CHECK(AckOf(one.out[1]).last == 2);

  // The same stream again (a forward that never read that acknowledgement): message 2 anew.
  StreamBuilder again(true, first.source);
  again.counter = 1;  // message 2 has the same id as before
  AcceptRun two = RunAccept(*far.store, again.Msg(2, 0, "b").Bye());
  REQUIRE(two.result.status.ok());
  REQUIRE(two.out.size() == 2);
  transfer::Welcome w;
  REQUIRE(transfer::DecodeWelcome(two.out[0].payload, w).ok());
  CHECK(w.last == 2);
  transfer::Ack a = AckOf(two.out[1]);
  CHECK(a.last == 2);
  CHECK(a.ack_seq == 1);
  CHECK(a.nacks.empty());
  std::vector<Message> got = All(*far.store, "dest");
  REQUIRE(got.size() == 2);
  CHECK(got[0].body == "a");
  CHECK(got[1].body == "b");
}

TEST_CASE("link: accept refuses a sequence gap", "[link]") {
  IgnoreSigpipe ignore;
  TempStore far;
  REQUIRE(far.store->CreateQueue(QueueRef{"dest", ""}, QueueSettings{}).ok());
  SECTION("the forward reports it") {
    StreamBuilder s;
    AcceptRun run = RunAccept(*far.store, s.Msg(5, 3, "x").Bye());
    CHECK(run.result.status.code() == Code::kLinkFailed);
    CHECK(run.result.status.text().find("the stream has a gap") != std::string::npos);
    CHECK(run.result.reported_by_sender);
    REQUIRE(run.out.size() == 2);
    CHECK(run.out[0].type == Type::kWelcome);
    CHECK(run.out[1].type == Type::kError);
    CHECK(run.out[1].payload == run.result.status.text());
  }
  SECTION("a sender that does not report errors: accept's tool shows it") {
    StreamBuilder s(false);
    AcceptRun run = RunAccept(*far.store, s.Msg(5, 3, "x").Bye());
    CHECK(run.result.status.code() == Code::kLinkFailed);
    CHECK_FALSE(run.result.reported_by_sender);
  }
  CHECK(All(*far.store, "dest").empty());
}

TEST_CASE("link: a message for a queue missing at the far side is dead-lettered here", "[link]") {
  Pair p;
  Message m = Body("lost");
  m.deadletter = true;
  p.Send("nosuch", m);
  p.Send("dest", Body("kept"));
  REQUIRE(p.Forward().ok());
  CHECK(All(*p.here.store, "out;b").empty());
  std::vector<Message> dead = All(*p.here.store, "system;deadletter");
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].body == "lost");
  CHECK(dead[0].msg_class == kClassNackBadDstQ);
  CHECK(dead[0].destination_queue == "b:nosuch");
  std::vector<Message> far = All(*p.far.store, "dest");
  REQUIRE(far.size() == 1);
  CHECK(far[0].body == "kept");
}

TEST_CASE("link: a cut between the far commit and the acknowledgement stores nothing twice",
          "[link]") {
  Pair p;
  for (int i = 0; i < 10; ++i) p.Send("dest", Body("m" + std::to_string(i)));
  std::mutex mu;
  uint64_t acked_at_cut = 0;
  int resent = 0;
  uint64_t welcome_last = 0;
  p.connector.down = [&](int session, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (session == 1 && f.type == Type::kAck) {
      // accept has committed what this acknowledges (it acknowledges after its commit): the
      // forward never hears of it.
      acked_at_cut = AckLast(f);
      return Tap::kCut;
    }
    if (session == 2 && f.type == Type::kWelcome) {
      transfer::Welcome w;
      if (transfer::DecodeWelcome(f.payload, w).ok()) welcome_last = w.last;
    }
    return Tap::kPass;
  };
  p.connector.up = [&](int session, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (session == 2 && f.type == Type::kMessage) ++resent;
    return Tap::kPass;
  };
  link::ForwardOptions o;
  o.compress = link::Compress::kNever;
  o.retry_ms = 20000;
  REQUIRE(p.Forward(o).ok());
  CHECK(p.connector.sessions == 2);
  CHECK(acked_at_cut > 0);
  REQUIRE(p.notes.size() == 1);
  CHECK(p.notes[0].kind == link::ForwardNote::kRetrying);
  CHECK(p.notes[0].text.find("the link's command ended") != std::string::npos);
  CHECK(p.notes[0].text.find("retrying in 100ms") != std::string::npos);
  CHECK(welcome_last == acked_at_cut);  // the far side kept what it had committed
  CHECK(resent == 10);  // the unacknowledged messages came back to out;b and went again
  std::vector<Message> got = All(*p.far.store, "dest");
  REQUIRE(got.size() == 10);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].body == "m" + std::to_string(i));
  CHECK(All(*p.here.store, "out;b").empty());
}

TEST_CASE("link: never more than the window sent and unacknowledged", "[link]") {
  Pair p;
  for (int i = 0; i < 60; ++i) p.Send("dest", Body("w" + std::to_string(i)));
  std::mutex mu;
  std::set<uint64_t> unacked;
  size_t most = 0;
  p.connector.up = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kMessage) {
      unacked.insert(Be64(f.payload));
      most = std::max(most, unacked.size());
    }
    return Tap::kPass;
  };
  p.connector.down = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kAck) {
      uint64_t last = AckLast(f);
      unacked.erase(unacked.begin(), unacked.upper_bound(last));
    }
    return Tap::kPass;
  };
  link::ForwardOptions o;
  o.window = 5;
  o.compress = link::Compress::kNever;
  REQUIRE(p.Forward(o).ok());
  CHECK(most <= 5);
  CHECK(most >= 1);
  CHECK(unacked.empty());
  CHECK(All(*p.far.store, "dest").size() == 60);
}

TEST_CASE("link: compression is used when both sides can and it is asked for", "[link]") {
  Pair p;
  for (int i = 0; i < 50; ++i) p.Send("dest", Body(std::string(200, 'a' + i % 26)));
  std::mutex mu;
  int compressed = 0, plain = 0;
  std::string offered = "unset", chosen = "unset";
  p.connector.up = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kHello) {
      transfer::Hello h;
      if (transfer::DecodeHello(f.payload, h).ok()) offered = h.compression;
    }
    if (f.type == Type::kCompressed) ++compressed;
    if (f.type == Type::kMessage) ++plain;
    return Tap::kPass;
  };
  p.connector.down = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kWelcome) {
      transfer::Welcome w;
      if (transfer::DecodeWelcome(f.payload, w).ok()) chosen = w.compression;
    }
    return Tap::kPass;
  };
  link::ForwardOptions o;
  SECTION("always: 'Z' frames") {
    o.compress = link::Compress::kAlways;
    REQUIRE(p.Forward(o).ok());
    CHECK(offered == "zstd");
    CHECK(chosen == "zstd");
    CHECK(compressed > 0);
    CHECK(plain == 0);
  }
  SECTION("never: none offered, plain frames") {
    o.compress = link::Compress::kNever;
    REQUIRE(p.Forward(o).ok());
    CHECK(offered.empty());
    CHECK(chosen.empty());
    CHECK(compressed == 0);
    CHECK(plain == 50);
  }
  CHECK(All(*p.far.store, "dest").size() == 50);
}

TEST_CASE("link: with follow, forward runs until a stop is requested, then ends cleanly",
          "[link]") {
  Pair p;
  for (int i = 0; i < 20; ++i) p.Send("dest", Body("f" + std::to_string(i)));
  std::mutex mu;
  uint64_t highest = 0, acked = 0;
  bool bye = false;
  p.connector.up = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kMessage) highest = std::max(highest, Be64(f.payload));
    if (f.type == Type::kBye) bye = true;
    return Tap::kPass;
  };
  p.connector.down = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kAck) {
      acked = AckLast(f);
      // Everything is across, and forward waits for more: as a SIGTERM would.
      if (acked == highest) p.stop.Request();
    }
    return Tap::kPass;
  };
  link::ForwardOptions o;
  o.follow = true;
  REQUIRE(p.Forward(o).ok());
  CHECK(p.stop.Requested());
  CHECK(bye);  // the session ended with a bye, not a cut
  CHECK(p.connector.sessions == 1);
  CHECK(p.notes.empty());
  CHECK(All(*p.far.store, "dest").size() == 20);
  CHECK(All(*p.here.store, "out;b").empty());
}

TEST_CASE("link: accept refuses a hello whose stream id is not its sender's", "[link]") {
  IgnoreSigpipe ignore;
  TempStore far;
  Guid source = NewGuid();
  for (const std::string& stream :
       {std::string(1000, 'x'), "uid:" + FormatGuid(NewGuid()) + "\\7",
        "uid:" + FormatGuid(source) + "\\", "uid:" + FormatGuid(source) + "\\7x",
        "uid:" + FormatGuid(source) + "\\12345678901"}) {
    StreamBuilder s(true, source, 7, stream);
    AcceptRun run = RunAccept(*far.store, s.Bye());
    INFO(stream.substr(0, 60));
    CHECK(run.result.status.code() == Code::kLinkProtocol);
    CHECK(run.result.status.text().find("is not one of its sender's") != std::string::npos);
    CHECK(run.result.status.text().size() < 400);
  }
}

TEST_CASE("link: a message id already here is a replay only from its own source", "[link]") {
  IgnoreSigpipe ignore;
  TempStore far;
  REQUIRE(far.store->CreateQueue(QueueRef{"dest", ""}, QueueSettings{}).ok());
  REQUIRE(far.store->CreateQueue(QueueRef{"dest2", ""}, QueueSettings{}).ok());
  Guid a = NewGuid();
  StreamBuilder first(true, a, 7);
  REQUIRE(RunAccept(*far.store, first.Msg(1, 0, "original").Bye()).result.status.ok());
  std::string id = MakeMessageId(a, 1);
  SECTION("another store's stream with that id: refused with a NACK, nothing dropped silently") {
    StreamBuilder other(true, NewGuid(), 7);
    AcceptRun run = RunAccept(*far.store, other.Msg(1, 0, "impostor", "dest2", id).Bye());
    REQUIRE(run.result.status.ok());
    bool nacked = false;
    for (const Frame& f : run.out)
      if (f.type == Type::kAck)
        for (auto [seq, cls] : AckOf(f).nacks) nacked |= seq == 1 && cls == kClassNackReceiveRejected;
    CHECK(nacked);
    CHECK(All(*far.store, "dest2").empty());
  }
  SECTION("the same source on a new stream (the link made again): a replay, stored once") {
    StreamBuilder again(true, a, 8);
    AcceptRun run = RunAccept(*far.store, again.Msg(1, 0, "original").Bye());
    REQUIRE(run.result.status.ok());
    for (const Frame& f : run.out)
      if (f.type == Type::kAck) CHECK(AckOf(f).nacks.empty());
  }
  std::vector<Message> kept = All(*far.store, "dest");
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].body == "original");
}

TEST_CASE("link: a message too large for every queue here is refused unread", "[link]") {
  // issue 23, defect 4: a frame is held in memory only up to the largest body a queue here
  // accepts (plus room for its envelope); a longer message frame is passed over as it comes
  // and refused with NACK_MESSAGE_TOO_LARGE, and the stream goes on.
  IgnoreSigpipe ignore;
  TempStore far;
  REQUIRE(far.store->CreateQueue(QueueRef{"dest", ""}, QueueSettings{}).ok());
  StreamBuilder s(true, NewGuid(), 7);
  // Not even a document: it is never parsed (it would be a corrupted stream if it were).
  std::string big(kDefaultMaxMessageSize + link::Acceptor::kEnvelopeRoom + 100, 'x');
  AcceptRun run =
      RunAccept(*far.store, s.Msg(1, 0, "before").Raw(2, 1, big).Msg(3, 2, "after").Bye());
  REQUIRE(run.result.status.ok());
  std::vector<std::pair<uint64_t, uint16_t>> nacks;
  for (const Frame& f : run.out)
    if (f.type == Type::kAck)
      for (auto n : AckOf(f).nacks) nacks.push_back(n);
  REQUIRE(nacks.size() == 1);
  CHECK(nacks[0].first == 2);
  CHECK(nacks[0].second == kClassNackMessageTooLarge);
  std::vector<Message> kept = All(*far.store, "dest");
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].body == "before");
  CHECK(kept[1].body == "after");
}

TEST_CASE("link: a transaction that never ends is held only up to the stated limit", "[link]") {
  // issue 23, defect 4: 80,000 messages of a transaction with no last-message marker took
  // 449 MB. Now accept refuses it past kMaxLinkTransactionMessages, storing none of it.
  IgnoreSigpipe ignore;
  TempStore far;
  QueueSettings tx;
  tx.transactional = true;
  REQUIRE(far.store->CreateQueue(QueueRef{"dest", ""}, tx).ok());
  StreamBuilder s(true, NewGuid(), 7);
  std::string xact = MakeMessageId(NewGuid(), 1);
  for (uint64_t i = 1; i <= kMaxLinkTransactionMessages + link::Acceptor::kBatchCount; ++i)
    s.Msg(i, i - 1, "m", "dest", "", xact);
  AcceptRun run = RunAccept(*far.store, s.Bye());
  CHECK(run.result.status.code() == Code::kLinkFailed);
  CHECK(run.result.status.text().find("mq(7) Quotas and limits") != std::string::npos);
  CHECK(All(*far.store, "dest").empty());
}

TEST_CASE("link: accept ends a session whose sender went silent", "[link]") {
  // issue 23, defect 8: accept never timed out on a stalled peer, holding the store open
  // (and compact waiting) for good.
  IgnoreSigpipe ignore;
  TempStore far;
  Pipe in, out;
  StreamBuilder s(true, NewGuid(), 7);
  REQUIRE(WriteAll(in.w, s.bytes, "input").ok());  // a hello, then nothing; stdin stays open
  link::Acceptor a(*far.store, in.r, out.w);
  a.SetIdleTimeout(300);
  int64_t t0 = MonotonicMs();
  link::AcceptResult r = a.Run();
  CHECK(r.status.code() == Code::kLinkFailed);
  CHECK(r.status.text().find("a stalled peer") != std::string::npos);
  CHECK(MonotonicMs() - t0 < 10000);
  for (int fd : {in.r, in.w, out.r, out.w}) ::close(fd);
}

TEST_CASE("link: an idle --follow session stays up: forward writes keepalives", "[link]") {
  Pair p;
  p.connector.idle_ms = 400;
  p.Send("dest", Body("one"));
  int flushes_after_ack = 0;
  std::mutex mu;
  bool acked = false;
  p.connector.down = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (f.type == Type::kAck) acked = true;
    return Tap::kPass;
  };
  p.connector.up = [&](int, const Frame& f) {
    std::lock_guard<std::mutex> l(mu);
    if (acked && f.type == Type::kFlush && ++flushes_after_ack >= 12) p.stop.Request();
    return Tap::kPass;
  };
  link::ForwardOptions o;
  o.follow = true;
  o.keepalive_ms = 100;
  // Without keepalives nothing would stop it: stopped after 5 s, and the checks fail.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 250 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p.stop.Request();
  });
  Status fs = p.Forward(o);
  done = true;
  watchdog.join();
  REQUIRE(fs.ok());
  // Twelve keepalives: 1.2 s idle, three times the far side's idle timeout, in one session.
  CHECK(flushes_after_ack >= 12);
  CHECK(p.connector.sessions == 1);
  CHECK(p.notes.empty());
  CHECK(All(*p.far.store, "dest").size() == 1);
}

TEST_CASE("link: the HTTP endpoint's paths name a queue of this store, or say why not", "[link]") {
  CHECK(*link::QueueOfSrmpPath("/msmq/private$/orders") == "orders");
  CHECK(*link::QueueOfSrmpPath("/MSMQ/Private$/orders") == "orders");
  CHECK(*link::QueueOfSrmpPath("/msmq/orders") == "orders");
  for (const char* bad : {"/", "/msmq", "/msmq/", "/other/private$/q", "/msmq/private$/",
                          "/msmq/private$/a/b", "/msmqx/q"}) {
    INFO(bad);
    auto r = link::QueueOfSrmpPath(bad);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == Code::kInvalidArg);
  }
  // A path of the right shape that names no queue taking messages: the caller answers 400.
  for (const char* bad : {"/msmq/private$/q;poison", "/msmq/private$/system", "/msmq/a b"}) {
    INFO(bad);
    auto r = link::QueueOfSrmpPath(bad);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == Code::kIllegalFormatname);
  }
}

TEST_CASE("link: ListenTcp binds ADDR:PORT and refuses what is no address", "[link]") {
  auto fds = link::ListenTcp("127.0.0.1:0");
  REQUIRE(fds.ok());
  REQUIRE(fds->size() == 1);
  std::string name = link::SocketName(fds->front());
  CHECK(name.rfind("127.0.0.1:", 0) == 0);
  CHECK(name != "127.0.0.1:0");
  // The port is taken: a second listener on it fails with the reason.
  auto again = link::ListenTcp(name);
  CHECK(!again.ok());
  for (int fd : *fds) ::close(fd);
  for (const char* bad : {"8080", "127.0.0.1:x", "127.0.0.1:70000", "no.such.host.invalid:80"})
    CHECK(!link::ListenTcp(bad).ok());
  // Not socket-activated: no descriptors.
  ::unsetenv("LISTEN_PID");
  CHECK(link::SystemdListenFds()->empty());
}
