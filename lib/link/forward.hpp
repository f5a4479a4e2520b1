// forward.hpp: the forward engine (mq-admin forward): moves the messages of a link's outgoing
// queue out;LINK to the store at its far end, exactly once and in order, through an
// mq-admin accept (link/accept.hpp) at the other end of a Connection (link/connection.hpp).
// wire/transfer.hpp has the frames byte by byte; mq(7) "Transfer between machines" says it
// for users.
//
// The session:
//  - forward takes the link's lock (one forward per link), connects (by default it runs the
//    link's command with /bin/sh -c: its stdin and stdout are the stream, its stderr is
//    forward's), and sends a hello naming this store, the link and its stream:
//    "uid:SOURCE-GUID\\QUEUE-ID" of out;LINK (the form of SRMP's <streamId>). accept answers
//    with its store's GUID and the last sequence number it accepted from that stream.
//  - out;LINK is FIFO and its lookup ids only grow, so a message's lookup id is its
//    TxSequenceNumber in the stream, and the head of the queue is always the oldest message
//    not yet acknowledged. forward Locks batches from the head under a process lease (as a
//    receive does), sends each as an SRMP document (wire/srmp.hpp; <Stream> carries the
//    stream and the numbers too) with PreviousTxSequenceNumber the message sent before it in
//    this session, and keeps at most `window` messages unacknowledged (a transaction is never
//    cut: the window stretches to its last message).
//  - accept stores what it has read whenever a flush comes (forward sends one when its
//    window is full or the queue empty), what it holds is large (4000 messages) or the
//    first of it has waited 200 ms (the ack timer), in one LMDB transaction that also
//    records the stream's last sequence number (a transaction's messages always in the same
//    one). A message at or below that number is a replay: answered again as before, never
//    stored twice. A message whose PreviousTxSequenceNumber never arrived is a gap: the
//    session ends. A refused message (no such queue, disabled, quota, size...) is remembered
//    with its NACK class. Then it acknowledges: the last sequence number, and the refusals it
//    covers.
//  - Frames are compressed ('Z' frames, zstd) when both sides can and it is faster: see
//    transfer::CompressionTuner.
//  - forward ends the lease of each batch the acknowledgements cover, in one transaction:
//    ACK_REACH_QUEUE and source journaling for the stored messages, the NACK and the dead-
//    letter queue for the refused. A crash anywhere leaves the unacknowledged messages in
//    out;LINK (the dead forward's lease returns them), and the next session sends them again.
//  - No LMDB transaction is open while either side reads or writes the stream.
//
// The engine's rules: it calls the store's public operations only; it never prints and never
// exits: what a tool would tell its user on the way (a retry, a batch it could not return) goes
// to the note callback, and the end is the Status Run() returns. It sleeps and polls on the
// StopSignal (proc/stop.hpp) and installs no signal handler; writes to a closed pipe must be
// EPIPE, not SIGPIPE: the caller ignores SIGPIPE.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.hpp"
#include "link/connection.hpp"
#include "proc/stop.hpp"
#include "store/store.hpp"

namespace mq::link {

enum class Compress { kAuto, kAlways, kNever };

struct ForwardOptions {
  std::string link;
  uint32_t window = 10000;  // messages sent and not yet acknowledged, at most
  Compress compress = Compress::kAuto;
  // Without `follow`: how long failing sessions are retried before giving up (-1: forever;
  // 0: one attempt). With `follow` it never gives up.
  int64_t retry_ms = 30000;
  int64_t timeout_ms = 30000;  // waiting for the far side's answers
  // Keep forwarding (woken by new messages) until a stop is requested, reconnecting with
  // backoff (proc/backoff.hpp) whenever a session ends; without it, stop once out;LINK is empty.
  bool follow = false;
  // An idle session (--follow, nothing to send) writes an empty flush this often, so that
  // the far side's accept, which ends a session silent for its --idle-timeout (5 minutes by
  // default), knows the link is alive.
  int64_t keepalive_ms = 30000;
  // An HTTP link's (link/http_forward.hpp): POSTs in flight at once, and the CA certificates
  // (PEM file) an https:// far side's certificate is checked against (empty: the system's).
  unsigned connections = 16;
  std::string ca_file{};
};

// Something the tool may tell its user; Run() goes on.
struct ForwardNote {
  enum Kind {
    kRetrying,       // a session failed and another follows: "TEXT; retrying in 200ms"
    kReleaseFailed,  // an unacknowledged batch could not be returned to out;LINK now
  } kind;
  std::string text;
};
using NoteFn = std::function<void(const ForwardNote&)>;

class Forwarder {
 public:
  // `connector` null: each session runs the link's command (CommandConnector). `stop` and
  // `connector` must outlive the Forwarder.
  Forwarder(Store& store, ForwardOptions options, const proc::StopSignal& stop, NoteFn note,
            Connector* connector = nullptr);
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Runs sessions until out;LINK is empty (or, with `follow`, until a stop is requested):
  // ok then, and ok on a stop. Errors: no such link, or another forward holds it (at once);
  // without `follow`, the last session's, with the link as its subject, once the retry
  // budget is spent ("... (gave up after DURATION)") or at once if no retry can mend it (the
  // link's command cannot start, the far side is not a compatible accept or is this store).
  Status Run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mq::link
