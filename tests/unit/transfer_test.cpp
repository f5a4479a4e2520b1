// transfer_test.cpp: the forward/accept protocol (lib/wire/transfer.hpp) and the store's side of a
// transfer: frames and their checksums, the hello, welcome, message and ack payloads, and
// Store::AcceptTransfer recognising replays and remembering refusals.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>

#include "base/units.hpp"
#include "store/store.hpp"
#include "wire/transfer.hpp"

using namespace mq;
using namespace mq::transfer;
namespace fs = std::filesystem;

namespace {

// zlib's CRC-32, the reference ISA-L's (Crc32) must agree with. Only this test links zlib.
uint32_t Crc32Zlib(std::string_view data, uint32_t crc = 0) {
  uLong c = crc;
  while (!data.empty()) {
    auto n = static_cast<uInt>(std::min<size_t>(data.size(), 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mq-unit.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::unique_ptr<Store> OpenStore(const std::string& dir) {
  OpenOptions o;
  o.dir = dir;
  o.create = true;
  auto s = Store::Open(o);
  REQUIRE(s.ok());
  return std::move(*s);
}

// The payload of the 'Z' frame that a new session's Compressor makes of `frames`.
std::string CompressedPayload(const std::string& frames) {
  Compressor c;
  std::string wire;
  c.PutCompressed(wire, frames);
  FrameReader outer;
  outer.Feed(wire);
  auto f = outer.Next();
  REQUIRE(f.ok());
  REQUIRE(*f);
  REQUIRE((*f)->type == Type::kCompressed);
  return (*f)->payload;
}

Message Msg(const std::string& dest, const std::string& body, uint32_t counter) {
  Message m;
  m.id = MakeMessageId(NewGuid(), counter);
  m.destination_queue = dest;
  m.body = body;
  return m;
}

}  // namespace

TEST_CASE("frames round trip, split anywhere") {
  std::string wire;
  PutFrame(wire, Type::kFlush, std::string(1, '\1'));
  PutFrame(wire, Type::kError, "bad things");
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    FrameReader r;
    r.Feed(std::string_view(wire).substr(0, cut));
    std::vector<Frame> got;
    for (;;) {
      auto f = r.Next();
      REQUIRE(f.ok());
      if (!*f) break;
      got.push_back(**f);
    }
    r.Feed(std::string_view(wire).substr(cut));
    for (;;) {
      auto f = r.Next();
      REQUIRE(f.ok());
      if (!*f) break;
      got.push_back(**f);
    }
    REQUIRE(got.size() == 2);
    CHECK(got[0].type == Type::kFlush);
    CHECK(got[0].payload == std::string(1, '\1'));
    CHECK(got[1].type == Type::kError);
    CHECK(got[1].payload == "bad things");
  }
}

TEST_CASE("a damaged frame is refused") {
  std::string wire;
  PutFrame(wire, Type::kError, "some payload");
  for (size_t i = 5; i < wire.size(); ++i) {
    std::string bad = wire;
    bad[i] ^= 0x20;
    FrameReader r;
    r.Feed(bad);
    auto f = r.Next();
    // A damaged type byte is an unknown type or a checksum failure; never a frame.
    CHECK(!f.ok());
  }
  FrameReader r;
  r.Feed(std::string("\x7f\xff\xff\xff" "E", 5));
  CHECK(!r.Next().ok());
  CHECK(Crc32("123456789") == 0xCBF43926u);  // the CRC-32 check value
}

TEST_CASE("ISA-L's CRC-32 agrees with zlib's at every length, alignment and start") {
  std::string data(5000, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 16);
  }
  for (size_t offset : {0, 1, 7, 15}) {
    for (size_t len = 0; len + offset <= data.size(); len += len < 300 ? 1 : 97) {
      std::string_view v = std::string_view(data).substr(offset, len);
      for (uint32_t start : {0u, 0xFFFFFFFFu, 0x12345678u}) {
        INFO("offset " << offset << ", length " << len << ", start " << start);
        REQUIRE(Crc32(v, start) == Crc32Zlib(v, start));
      }
    }
  }
  // Pieces continue one another.
  CHECK(Crc32(std::string_view(data).substr(100), Crc32(std::string_view(data).substr(0, 100))) ==
        Crc32Zlib(data));
  CHECK(Crc32(std::string(100, 'a')) == Crc32Zlib(std::string(100, 'a')));
}

TEST_CASE("hello, welcome, message and ack payloads round trip") {
  Hello h;
  h.source = NewGuid();
  h.stream = "s/link/7";
  h.link = "link";
  h.window = 64;
  Hello h2;
  REQUIRE(DecodeHello(EncodeHello(h), h2).ok());
  CHECK(h2.source == h.source);
  CHECK(h2.stream == h.stream);
  CHECK(h2.window == 64);
  CHECK(!h2.reports_errors);
  h.reports_errors = true;
  REQUIRE(DecodeHello(EncodeHello(h), h2).ok());
  CHECK(h2.reports_errors);
  h.version = 2;
  REQUIRE(DecodeHello(EncodeHello(h), h2).ok());
  CHECK(h2.version == 2);  // the caller reports another version
  CHECK(!DecodeHello("HTTP/1.1 200", h2).ok());

  Welcome w;
  w.store = NewGuid();
  w.last = 12345;
  Welcome w2;
  REQUIRE(DecodeWelcome(EncodeWelcome(w), w2).ok());
  CHECK(w2.store == w.store);
  CHECK(w2.last == 12345);

  Message m = Msg("dest", std::string("\0\1\2bin", 6), 9);
  m.priority = 6;
  m.label = "label";
  m.xact_id = MakeMessageId(NewGuid(), 1);
  m.eod_first = true;
  MessageHeader mh;
  mh.seq = 10;
  mh.prev = 9;
  mh.window = 64;
  std::string stream = "uid:" + FormatGuid(NewGuid()) + "\\7";
  std::string payload;
  AppendMessage(payload, mh, m, stream);
  MessageHeader mh2;
  Message m2;
  REQUIRE(DecodeMessage(payload, mh2, m2).ok());
  CHECK(mh2.seq == 10);
  CHECK(mh2.prev == 9);
  CHECK(m2 == m);
  // Appended in place, after what the buffer holds: the same bytes.
  std::string appended = "prefix";
  AppendMessage(appended, mh, m, stream);
  CHECK(appended == "prefix" + payload);
  mh.prev = 10;  // a predecessor at or after the message itself
  std::string header;
  AppendMessageHeader(header, mh);
  CHECK(!DecodeMessage(header, mh2, m2).ok());

  Ack a;
  a.last = 99;
  a.ack_seq = 5;
  a.nacks = {{97, 0x8000}, {98, 0x8003}};
  Ack a2;
  REQUIRE(DecodeAck(EncodeAck(a), a2).ok());
  CHECK(a2.last == 99);
  CHECK(a2.nacks == a.nacks);
  CHECK(!DecodeAck(EncodeAck(a).substr(0, 25), a2).ok());
}

TEST_CASE("AcceptTransfer stores once, in order, and answers replays as before") {
  TempDir d;
  auto st = OpenStore(d.path + "/s");
  QueueSettings qs;
  REQUIRE(st->CreateQueue(*ParseQueueRef("dest"), qs).ok());
  std::vector<TransferItem> items(3);
  items[0].seq = 1;
  items[0].msg = Msg("dest", "one", 1);
  items[1].seq = 2;
  items[1].msg = Msg("nosuch", "two", 2);
  items[2].seq = 4;
  items[2].msg = Msg("dest", "four", 4);
  auto last = st->AcceptTransfer("stream", items, 0);
  REQUIRE(last.ok());
  CHECK(*last == 4);
  CHECK(items[0].outcome == 0);
  CHECK(items[1].outcome == kClassNackBadDstQ);
  CHECK(!items[0].duplicate);
  // A replay of all three and one new message.
  std::vector<TransferItem> again = items;
  again.push_back(TransferItem{5, Msg("dest", "five", 5)});
  last = st->AcceptTransfer("stream", again, 1);
  REQUIRE(last.ok());
  CHECK(*last == 5);
  CHECK(again[0].duplicate);
  CHECK(again[1].duplicate);
  CHECK(again[1].outcome == kClassNackBadDstQ);  // refused again, not acknowledged as stored
  CHECK(!again[3].duplicate);
  auto stat = st->StatQueue(*ParseQueueRef("dest"));
  REQUIRE(stat.ok());
  CHECK(stat->info.count == 3);
  // Another stream has its own numbering.
  std::vector<TransferItem> other{TransferItem{1, Msg("dest", "x", 6)}};
  REQUIRE(st->AcceptTransfer("other", other, 0).ok());
  CHECK(!other[0].duplicate);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}

TEST_CASE("compressed frames carry the frames in order, across pieces, and shrink XML") {
  Compressor d;
  Decompressor in;
  std::string wire;
  std::vector<std::string> sent;
  size_t plain_bytes = 0;
  for (int piece = 0; piece < 3; ++piece) {
    std::string frames;
    for (int i = 0; i < 50; ++i) {
      std::string payload = "<Msmq><Class>0</Class><Priority>3</Priority></Msmq>" +
                            std::to_string(piece * 100 + i);
      PutFrame(frames, Type::kMessage, payload);
      sent.push_back(payload);
    }
    PutFrame(frames, Type::kFlush, std::string(1, '\0'));
    sent.push_back(std::string(1, '\0'));
    plain_bytes += frames.size();
    d.PutCompressed(wire, frames);
  }
  CHECK(wire.size() * 4 < plain_bytes);
  FrameReader outer;
  outer.Feed(wire);
  std::vector<std::string> got;
  for (;;) {
    auto f = outer.Next();
    REQUIRE(f.ok());
    if (!*f) break;
    REQUIRE((*f)->type == Type::kCompressed);
    REQUIRE(in.Feed((*f)->payload).ok());
    for (;;) {
      auto g = in.Next();
      REQUIRE(g.ok());
      if (!*g) break;
      got.push_back((*g)->payload);
    }
    CHECK(!in.Partial());  // each piece ends at a frame's end
  }
  CHECK(got == sent);
}

TEST_CASE("a damaged compressed stream is refused") {
  std::string frames;
  for (int i = 0; i < 20; ++i) PutFrame(frames, Type::kMessage, "payload " + std::to_string(i));
  std::string payload = CompressedPayload(frames);
  // Garbage where zstd data belongs (the frame's own CRC would catch damage on the way;
  // this is a sender that compresses wrongly).
  Decompressor bad;
  std::string garbage(payload.size(), '\xff');
  CHECK(!bad.Feed(garbage).ok());
  // Each byte flipped: a zstd error, or frames that fail their own CRC; never a frame taken
  // as good that differs from what was sent (a flip in bits zstd ignores changes nothing).
  for (size_t i = 0; i < payload.size(); ++i) {
    std::string p = payload;
    p[i] ^= 0x10;
    Decompressor in;
    if (!in.Feed(p).ok()) continue;
    for (int k = 0;; ++k) {
      auto g = in.Next();
      if (!g.ok() || !*g) break;
      CHECK((*g)->payload == "payload " + std::to_string(k));
    }
  }
}

TEST_CASE("compression is negotiated: zstd when offered, else plain frames") {
  CHECK(ChooseCompression("zstd") == "zstd");
  CHECK(ChooseCompression("lz4,zstd") == "zstd");
  CHECK(ChooseCompression("deflate").empty());
  CHECK(ChooseCompression("").empty());  // an older forward offers nothing
  CHECK(ChooseCompression("zstd2").empty());
  Hello h;
  h.source = NewGuid();
  h.stream = "s";
  h.compression = "zstd";
  Hello h2;
  REQUIRE(DecodeHello(EncodeHello(h), h2).ok());
  CHECK(h2.compression == "zstd");
  h.compression.clear();
  REQUIRE(DecodeHello(EncodeHello(h), h2 = Hello()).ok());
  CHECK(h2.compression.empty());
  Welcome w;
  w.store = NewGuid();
  w.compression = "zstd";
  Welcome w2;
  REQUIRE(DecodeWelcome(EncodeWelcome(w), w2).ok());
  CHECK(w2.compression == "zstd");
  // An older accept's welcome has no field 3: the forward then writes plain frames.
  w.compression.clear();
  REQUIRE(DecodeWelcome(EncodeWelcome(w), w2 = Welcome()).ok());
  CHECK(w2.compression.empty());
}

TEST_CASE("forward compresses when the link limits the transfer, not when the far side does") {
  // A link that carries `bytes_per_ms`, messages of 2650 bytes plain and 860 compressed, a far
  // side that stores `store_per_ms` messages a millisecond; `lag_ms`: how long what was framed
  // before a switch keeps the link busy. What the tuner chooses once the probes are done.
  auto run = [](double bytes_per_ms, double store_per_ms, bool negotiated, int lag_ms) {
    CompressionTuner t;
    int64_t now = 1000;
    t.Start(negotiated, false, now);
    CHECK(!t.Compress(now));  // plain until the link backs up
    t.Backlogged(now);
    double carry = 0;
    bool mode = false, last = false;
    int lag = 0;
    for (int ms = 0; ms < 3000; ++ms, ++now) {
      bool want = t.Compress(now);
      if (want != last) lag = lag_ms;  // the old mode's frames still go first
      last = want;
      if (lag > 0) {
        --lag;
      } else {
        mode = want;
      }
      double per_ms = std::min(bytes_per_ms / (mode ? 860.0 : 2650.0), store_per_ms);
      carry += per_ms;
      auto n = static_cast<uint64_t>(carry);
      carry -= static_cast<double>(n);
      t.Taken(mode ? 0 : n, mode ? n : 0, now);
    }
    return last;
  };
  for (int lag : {0, 50, 400}) {
    CHECK(run(10 * 1048.576, 30, true, lag));    // 10 MiB/s, the far side stores 30,000 a second
    CHECK(run(1048.576, 30, true, lag));         // 1 MiB/s
    CHECK(!run(1e6, 30, true, lag));             // a local pipe: the far side limits
    CHECK(!run(10 * 1048.576, 30, false, lag));  // an accept that cannot decompress
  }
  // No backlog, no probing: plain.
  CompressionTuner t;
  t.Start(true, false, 0);
  t.Taken(1000, 0, 1);
  CHECK(!t.Compress(CompressionTuner::kProbeMs * 3));
  // --compress always.
  t.Start(true, true, 0);
  CHECK(t.Compress(0));
  // A queue that runs dry during a probe: plain.
  t.Start(true, false, 0);
  t.Backlogged(0);
  CHECK(!t.Compress(0));
  t.Taken(10, 0, 1);
  t.Taken(10, 0, CompressionTuner::kProbeMs + 2);
  CHECK(t.Compress(CompressionTuner::kProbeMs + 2));  // the compressed probe
  t.RanDry(CompressionTuner::kProbeMs + 3);
  CHECK(!t.Compress(CompressionTuner::kProbeMs + 4));
  // After the hold, plain again until the link backs up again.
  CompressionTuner h;
  h.Start(true, false, 0);
  h.Backlogged(0);
  int64_t now = 0;
  for (; now < 3 * CompressionTuner::kProbeMs; ++now) {
    bool d = h.Compress(now);
    h.Taken(d ? 0 : 1, d ? 3 : 0, now);
  }
  CHECK(h.Compress(now));
  CHECK(!h.Compress(now + CompressionTuner::kHoldMs + 1));
}

TEST_CASE("a frame longer than the reader's limit is never held") {
  // issue 23, defect 4: a message frame past the limit comes back as its head and its size,
  // read as it came and checksummed; any other frame past it is an error.
  std::string big(100000, 'b');
  std::string wire;
  PutFrame(wire, Type::kMessage, big);
  PutFrame(wire, Type::kFlush, std::string(1, '\1'));
  for (size_t step : {size_t{1000}, size_t{7}, wire.size()}) {
    FrameReader r;
    r.SetLimit(4096);
    std::vector<Frame> got;
    for (size_t at = 0; at < wire.size(); at += step) {
      r.Feed(std::string_view(wire).substr(at, step));
      CHECK(r.Pending() <= 4096 + step + 64);
      for (;;) {
        auto f = r.Next();
        REQUIRE(f.ok());
        if (!*f) break;
        got.push_back(std::move(**f));
      }
    }
    REQUIRE(got.size() == 2);
    CHECK(got[0].type == Type::kMessage);
    CHECK(got[0].oversize == big.size());
    CHECK(got[0].payload == big.substr(0, kOversizeHead));
    CHECK(got[1].type == Type::kFlush);
    CHECK(got[1].oversize == 0);
  }
  // A flipped byte in the part passed over still fails the checksum.
  std::string bad = wire;
  bad[50000] ^= 1;
  FrameReader r;
  r.SetLimit(4096);
  r.Feed(bad);
  CHECK(!r.Next().ok());
  // Only message frames may be passed over.
  std::string err;
  PutFrame(err, Type::kError, big);
  FrameReader e;
  e.SetLimit(4096);
  e.Feed(err);
  CHECK(!e.Next().ok());
}

TEST_CASE("a compressed frame that would inflate beyond the limit is refused early") {
  // issue 23, defect 4: 34 KB of zstd expanded to 1.06 GB. Now the inflated frames held at
  // once are bounded by the limit (plus 1 MiB), and a huge message frame is passed over.
  std::string frames;
  for (int i = 0; i < 300000; ++i) PutFrame(frames, Type::kFlush, std::string(1, '\0'));
  std::string bomb = CompressedPayload(frames);
  CHECK(bomb.size() < 100000);
  Decompressor d;
  d.SetLimit(64 << 10);
  Status s = d.Feed(bomb);
  CHECK(s.code() == Code::kIo);
  CHECK(s.text().find("beyond any frame's size") != std::string::npos);

  // One message frame of 8 MiB of zeros: passed over, not held.
  std::string one;
  PutFrame(one, Type::kMessage, std::string(8 << 20, '\0'));
  std::string big = CompressedPayload(one);
  Decompressor d2;
  d2.SetLimit(64 << 10);
  REQUIRE(d2.Feed(big).ok());
  auto m = d2.Next();
  REQUIRE(m.ok());
  REQUIRE(*m);
  CHECK((*m)->oversize == (8u << 20));
}

TEST_CASE("the refusals kept for a sender that went silent are shown, then forgotten") {
  // issue 23, defect 8: refusal records of abandoned streams were never removed and not
  // shown anywhere.
  TempDir d;
  auto st = OpenStore(d.path + "/s");
  std::vector<TransferItem> items(2);
  items[0].seq = 1;
  items[0].msg = Msg("nosuch", "one", 1);
  items[1].seq = 2;
  items[1].msg = Msg("nosuch", "two", 2);
  REQUIRE(st->AcceptTransfer("gone", items, 0).ok());
  std::vector<TransferItem> live{TransferItem{1, Msg("nosuch", "x", 3)}};
  REQUIRE(st->AcceptTransfer("live", live, 0).ok());
  auto ss = st->AcceptedStreams();
  REQUIRE(ss.ok());
  CHECK(ss->streams == 2);
  CHECK(ss->refusals == 3);
  CHECK(ss->refusal_bytes > 0);
  int64_t now = NowMs();
  // Within 30 days of the last accept nothing is forgotten; after, all of them.
  CHECK(*st->ForgetAbandonedRefusals(now + kForgetStreamRefusalsMs - 60000) == 0);
  auto forgotten = st->ForgetAbandonedRefusals(now + kForgetStreamRefusalsMs + 60000);
  REQUIRE(forgotten.ok());
  CHECK(*forgotten == 3);
  ss = st->AcceptedStreams();
  CHECK(ss->streams == 2);  // positions are kept: a replay is still known as one
  CHECK(ss->refusals == 0);
  std::vector<TransferItem> replay{TransferItem{1, Msg("nosuch", "one", 1)}};
  REQUIRE(st->AcceptTransfer("gone", replay, 0).ok());
  CHECK(replay[0].duplicate);
}

TEST_CASE("AcceptTransfer with <previous>: a gap is neither stored nor recorded, and no stream "
          "keeps nothing") {
  TempDir d;
  auto st = OpenStore(d.path + "/s");
  QueueSettings qs;
  REQUIRE(st->CreateQueue(*ParseQueueRef("dest"), qs).ok());
  auto item = [](uint64_t seq, uint64_t previous, const std::string& body, uint32_t n) {
    TransferItem it;
    it.seq = seq;
    it.previous = previous;
    it.msg = Msg("dest", body, n);
    return it;
  };
  // 1, then 3 after 2 (which never came): 3 is a gap; 2 and 3 later are stored in order.
  std::vector<TransferItem> a{item(1, 0, "one", 1), item(3, 2, "three", 3)};
  auto last = st->AcceptTransfer("s", a, 0);
  REQUIRE(last.ok());
  CHECK(*last == 1);
  CHECK(!a[0].gap);
  CHECK(a[1].gap);
  CHECK(*st->StreamPosition("s") == 1);
  std::vector<TransferItem> b{item(2, 1, "two", 2), item(3, 2, "three", 3)};
  REQUIRE(st->AcceptTransfer("s", b, 0).ok());
  CHECK((!b[0].gap && !b[1].gap && !b[0].duplicate && !b[1].duplicate));
  // <previous> bridging a gap the sender knows of (5 follows 3: 4 was never sent).
  std::vector<TransferItem> c{item(5, 3, "five", 5)};
  REQUIRE(st->AcceptTransfer("s", c, 0).ok());
  CHECK(!c[0].gap);
  CHECK(*st->StreamPosition("s") == 5);
  CHECK(st->StatQueue(*ParseQueueRef("dest"))->info.count == 4);
  // No stream: nothing recorded, a replay of the same id from the same source still known.
  std::vector<TransferItem> e{item(0, 0, "loose", 9)};
  e[0].previous.reset();
  std::vector<TransferItem> e2 = e;
  REQUIRE(st->AcceptTransfer("", e, 0).ok());
  REQUIRE(st->AcceptTransfer("", e2, 0).ok());
  CHECK(!e[0].duplicate);
  CHECK(e2[0].duplicate);
  CHECK(st->AcceptedStreams()->streams == 1);
  // A stream's message whose id another message holds gets a new id instead of a refusal.
  std::vector<TransferItem> f{item(6, 5, "six", 9)};
  f[0].new_id_if_taken = true;
  REQUIRE(st->AcceptTransfer("s", f, 0).ok());
  CHECK(f[0].outcome == 0);
  CHECK(!f[0].duplicate);
  CHECK(st->StatQueue(*ParseQueueRef("dest"))->info.count == 6);
  std::vector<std::string> problems;
  REQUIRE(st->Check(problems).ok());
  CHECK(problems.empty());
}
