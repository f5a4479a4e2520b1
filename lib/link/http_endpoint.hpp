// http_endpoint.hpp: the SRMP-over-HTTP endpoint (mq-admin serve --http): takes the POSTs of
// MSMQ's HTTP transport ([MC-MQSRM] 2.1) and stores their messages, as a Windows machine's
// MSMQ sends them to http://HOST/msmq/private$/QUEUE. The documents are read by the SRMP codec
// (wire/srmp.hpp) and stored through the store's transfer operation (Store::AcceptTransfer),
// the one `accept` uses.
//
// Rules:
//  - Paths: POST /msmq/private$/QUEUE and /msmq/QUEUE ("msmq" and "private$" in any case,
//    percent-encoded or not). QUEUE is a queue of this store (no subqueue, no system queue),
//    and one of `queues` when that is not empty. Anything else is answered with an error
//    status and a one-line reason, and nothing is stored.
//  - Answers ([MC-MQSRM] 3.1.1.4.1, 3.1.5.1.2-3, 3.1.5.1.12, 3.1.7.2.5: MSMQ's sender
//    dead-letters a message answered 400 and retries one answered 5xx): 200 with no body when
//    the message is stored (its time to reach the queue is not checked on arrival:
//    3.1.5.1.4), a replay, or ignored (a stream's gap); 400 for
//    a malformed document, a queue that is missing, not served or refuses it (disabled,
//    transactional or not, too large); 500 for a full queue; 503 when the store fails; 404 for
//    a path that is no MSMQ queue's, 405 for a method other than POST, 413 for a body larger
//    than the queue takes, 408 for a request too slow.
//  - A message of a <Stream> (MSMQ's transactional, exactly-once, in-order transfer) is stored
//    once ([MC-MQSRM] 3.1.5.1.6.3): when its ordinal is above the last one stored from its
//    stream and its <previous> (the ordinal before it when absent) at or below it. A replay
//    is answered 200 and not stored again; an ordinal after a gap waits, its request
//    suspended, up to 2 s for the ordinals before it (a sender posts several at once, on
//    several connections), then is ignored (200) and stored when it comes again in order. The
//    stream's position is recorded in the transaction that stores the message, so it holds across
//    restarts, with the stream's <sendReceiptsTo>.
//  - Stream receipts (<streamReceipt>, "MSMQ:QM Ordering Ack", class 255) are posted with
//    libcurl to the stream's <sendReceiptsTo>, 500 ms after the last message of the stream
//    stored or replayed (coalesced, at most 10 s late, at once when 1000 ordinals wait for
//    one; a failed one again 30 s later), while
//    requests go on being served.
//  - Delivery and commitment receipts of messages that came over HTTP, to a machine that no
//    link of this store reaches, wait in system;receipts (Store::EmitAck makes them in the
//    transaction that stores or receives the message): serve Locks them, posts each to its
//    admin queue's URL and removes it once answered 2xx or 4xx (refused: no retry can
//    succeed); one that fails rolls back, to be tried after the queue's retry delay (1 s,
//    doubling up to 5 minutes), so that a machine that is down holds up no other's.
//    Those of a serve that stopped or died are posted by the next one, with the same <id>.
//    A message without <Msmq> is stored with its <path><id> when that is uuid:N@GUID, so
//    that its receipts cite it.
//  - A message without a <Stream> is stored as it comes (express or recoverable, not
//    transactional); one whose id is in the store already, from the same source machine, is a
//    replay (its POST was answered but the answer lost) and is not stored twice.
//  - Receipts posted here (<streamReceipt>, <deliveryReceipt>, <commitmentReceipt>) are
//    understood as receipts and never stored as messages; as text/xml they are taken at any
//    /msmq/ path, one that names no queue too (MSMQ posts them to the sender's order queue,
//    /msmq/private$/order_queue$). A stream receipt for the stream of one of this store's HTTP
//    links is recorded (Store::NoteStreamReceipt): the link's forward ends the messages it
//    covers (link/http_forward.hpp). A delivery receipt is dropped (the POST's answer made the
//    ACK_REACH_QUEUE); a commitment receipt to a queue of this store is stored there as the
//    acknowledgement (ACK_RECEIVE or its NACK), once per receipt id, else dropped.
//  - Requests are read whole before anything is stored; those that complete in one turn of
//    the event loop are stored together, one LMDB transaction per stream, and each answered
//    after its commit. No LMDB transaction is open while a socket is read or written.
//  - Limits: a body larger than the queue's largest message plus kEnvelopeRoom is refused
//    (413) without being read; a request that takes longer than `request_timeout_ms` from its
//    first byte is answered 408 and closed; at most `max_connections` at once (more wait in
//    the listen backlog).
//  - It never prints and never exits: `note` hears one line per refused request; the end
//    (a stop request, or an error of the store or the sockets) is the Status returned.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "proc/stop.hpp"
#include "store/store.hpp"

namespace mq::link {

struct HttpServeOptions {
  std::vector<int> listen_fds;      // listening TCP sockets; they stay the caller's
  std::vector<std::string> queues;  // take only these queues (empty: every queue)
  unsigned max_connections = 64;
  int64_t request_timeout_ms = 60'000;
  int64_t idle_timeout_ms = 120'000;  // a kept-alive connection silent this long is closed
  // HTTPS: the server's certificate (chain) and key, PEM; with `client_ca_pem`, a client must
  // present a certificate that CA signed, or is answered 403 ([MC-MQSRM] 2.1.1: HTTPS is how
  // MSMQ secures the transport).
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string client_ca_pem;
  const proc::StopSignal* stop = nullptr;
  std::function<void(const std::string&)> note;  // a refused request, in one line
};

struct HttpServeStats {
  uint64_t requests = 0;
  uint64_t stored = 0;
  uint64_t duplicates = 0;
  uint64_t receipts = 0;       // received
  uint64_t receipts_sent = 0;  // receipts posted (stream, and system;receipts) and answered 2xx
  uint64_t gaps = 0;     // stream messages ignored: an ordinal after a gap
  uint64_t refused = 0;  // answered with an error status
};

// The room an SRMP document may take beyond its message's body (envelope, MIME framing, an
// extension part).
inline constexpr uint64_t kEnvelopeRoom = 1 << 20;

// Serves until `options.stop` is requested (ok) or an error (the store's, the sockets').
Status ServeHttp(Store& store, const HttpServeOptions& options, HttpServeStats* stats);

// Listening sockets for ADDR:PORT (127.0.0.1:8080, [::1]:8080, localhost:8080, :8080 for
// every address; port 0 picks a free one): one per address the name resolves to, close-on-exec.
Result<std::vector<int>> ListenTcp(const std::string& address);
// The sockets systemd passes (LISTEN_PID is this process, LISTEN_FDS of them from fd 3, each a
// listening stream socket); none when not socket-activated. Unsets the variables, as
// sd_listen_fds(1) does, so that children do not take them for theirs.
Result<std::vector<int>> SystemdListenFds();
// "127.0.0.1:8080": the address a socket is bound to.
std::string SocketName(int fd);

// What a request's path names: the queue of /msmq/private$/QUEUE or /msmq/QUEUE (already
// percent-decoded), or an error saying why not. Exposed for the unit tests.
Result<std::string> QueueOfSrmpPath(std::string_view path);

}  // namespace mq::link
