// fuzz_frames.cpp: libFuzzer target for what accept reads from another machine: the transfer
// frames (lib/wire/transfer.hpp), their compressed form, and the hello, welcome, message and
// ack payloads. The input is fed in two pieces (split where its first byte says), as a pipe
// would, through a reader with a small limit, so that oversize frames are exercised too.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wire/transfer.hpp"

using namespace mq;
using namespace mq::transfer;

namespace {

void Take(const Frame& f) {
  switch (f.type) {
    case Type::kHello: {
      Hello h;
      (void)DecodeHello(f.payload, h);
      break;
    }
    case Type::kWelcome: {
      Welcome w;
      (void)DecodeWelcome(f.payload, w);
      break;
    }
    case Type::kAck: {
      Ack a;
      (void)DecodeAck(f.payload, a);
      break;
    }
    case Type::kMessage: {
      MessageHeader h;
      Message m;
      if (f.oversize) (void)DecodeMessageHeader(f.payload, h);
      else (void)DecodeMessage(f.payload, h, m);
      break;
    }
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t cut = std::min<size_t>(data[0] * 16, in.size());
  FrameReader r;
  r.SetLimit(1 << 16);
  Decompressor z;
  z.SetLimit(1 << 16);
  for (std::string_view piece : {in.substr(0, cut), in.substr(cut)}) {
    r.Feed(piece);
    for (;;) {
      auto f = r.Next();
      if (!f.ok() || !*f) break;
      if ((*f)->type != Type::kCompressed) {
        Take(**f);
        continue;
      }
      if (!z.Feed((*f)->payload).ok()) return 0;
      for (;;) {
        auto g = z.Next();
        if (!g.ok() || !*g) break;
        Take(**g);
      }
    }
  }
  return 0;
}
