// accept.hpp: the accept engine, the far end of a link (mq-admin accept): reads a forward's
// stream, stores its messages, answers. The session it takes part in (hello, messages,
// flushes, acknowledgements, replays, refusals) is described in link/forward.hpp; the frames
// byte by byte in wire/transfer.hpp.
//
// Rules:
//  - It stores through the store's public transfer operations only (Store::StreamPosition,
//    Store::AcceptTransfer): each commit one LMDB transaction that also records the stream's
//    last sequence number, so that a replay is answered again and never stored twice.
//  - No LMDB transaction is open while it reads or writes the stream.
//  - It never prints and never exits. An error ends the session: it is sent to the forward as
//    an error frame ('E'), and the result says whether the forward reports it to its own user
//    (its hello asked for that and the frame went out): then the tool keeps quiet, so that the
//    error is shown once, by forward, with the link's name.
//  - Writes to `out` may meet a closed pipe: the caller ignores SIGPIPE.
#pragma once

#include <memory>
#include <string>

#include "base/status.hpp"
#include "store/store.hpp"

namespace mq::link {

struct AcceptResult {
  Status status;  // ok: the forward said bye and everything it sent is answered
  // With an error: the forward was told, and shows the error itself.
  bool reported_by_sender = false;
};

class Acceptor {
 public:
  // Reads the stream from `in` (blocking; today stdin) and answers on `out` (blocking;
  // today stdout); `in_name` and `out_name` name them in error texts. The descriptors stay
  // the caller's.
  Acceptor(Store& store, int in, int out, std::string in_name = "stdin",
           std::string out_name = "stdout");
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Serves one session, to its end.
  AcceptResult Run();

  // accept stores and acknowledges what it holds at each flush, once it holds this many
  // messages or bytes, or once the first of them has waited kAckTimerMs with neither (a slow
  // link would otherwise hear of nothing for 4000 messages, and resend them all after a
  // crash).
  static constexpr size_t kBatchCount = 4000;
  static constexpr size_t kBatchBytes = 8 << 20;
  // The room a message frame may take beyond its body (envelope, properties, extension):
  // a frame longer than the largest body a queue here accepts plus this is refused as too
  // large without being held.
  static constexpr uint64_t kEnvelopeRoom = 1 << 20;
  static constexpr int64_t kAckTimerMs = 200;
  // A sender silent this long ends the session (a stalled peer would otherwise hold the store
  // open for good, and keep compact waiting): forward writes a keepalive every 30 s while
  // idle. 0 or less: never.
  static constexpr int64_t kIdleTimeoutMs = 5 * 60 * 1000;
  void SetIdleTimeout(int64_t ms);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mq::link
