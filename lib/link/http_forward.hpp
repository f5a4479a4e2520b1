// http_forward.hpp: the forward engine of an HTTP link (mq-admin link add NAME --url URL):
// posts the messages of out;LINK to the far machine's MSMQ HTTP endpoint as MSMQ's own HTTP
// transport does ([MC-MQSRM]), to an MSMQ or to an mq-admin serve (link/http_endpoint.hpp).
//
// The rules:
//  - Each message is one POST of its SRMP document (wire/srmp.hpp) to
//    URL/private$/QUEUE (QUEUE the remote queue mq-send named), with SOAPAction "MSMQMessage"
//    and the document's multipart Content-Type; <to> is that full URL. Queues of this store
//    that the message names (its response and admin queues) travel as HTTP format names of
//    the link's --receipts-url machine (DIRECT=http://THIS-HOST/msmq/private$/QUEUE).
//  - Up to `connections` POSTs are in flight at once, on kept-alive connections (libcurl's
//    multi interface, loaded by link/http_api.hpp); Locked batches from the head of
//    out;LINK, at most `window` messages, as the pipe forward does. A batch ends as a whole,
//    so each holds one kind (transactional or not): a plain message never waits for the
//    receipt of a transactional one.
//  - A message that is not transactional ends (ACK_REACH_QUEUE, journal) when its POST is
//    answered 2xx. A transactional one travels in the link's <Stream>, "uid:STORE-GUID\QUEUE-ID"
//    of out;LINK: its ordinal is its lookup id in out;LINK (1-based; consecutive while only
//    transactional messages go through the link), <previous> the ordinal posted before it
//    (the one a stream receipt covered last, at the start of a session), <start>
//    <sendReceiptsTo> (the link's --receipts-url) on a session's first message, and
//    <streamReceiptRequest/>. It ends only when a stream receipt covers it: the far side
//    posts one to --receipts-url, where this store's serve records it (Store::
//    NoteStreamReceipt) and this engine, polling the link's record, ends what it covers.
//    One not covered `timeout_ms` after its POST is posted again, with the same ordinal and
//    previous ([MC-MQSRM] 3.1.7.2: the receiver answers a replay as before, stores it once).
//  - An answer 400 (the far side refuses the message: no such queue, malformed...) ends it
//    with NACK_BAD_DST_Q, dead-lettered if it asked ([MC-MQSRM] 3.1.7.2.5); a transactional
//    message after a refused one is posted again with the one before that as <previous>.
//    Other statuses (5xx, 3xx, 404...) and connection failures are retried with backoff
//    (proc/backoff.hpp) without ending the session; without `follow` they give up once
//    `retry_ms` has passed with no progress.
//  - A crash anywhere leaves the messages not ended in out;LINK (the dead forward's lease
//    returns them); the next session posts them again and the far side answers the replays.
//  - No LMDB transaction is open while a POST is made or answered. It never prints and never
//    exits: notes go to the callback, the end is the Status returned.
#pragma once

#include "base/status.hpp"
#include "link/forward.hpp"
#include "proc/stop.hpp"
#include "store/store.hpp"

namespace mq::link {

// Forwards `link` (an HTTP link, Store::LockLink held by the caller) until out;LINK is empty
// and every message ended (with `follow`: until a stop is requested).
Status ForwardHttp(Store& store, const LinkInfo& link, const ForwardOptions& options,
                   const proc::StopSignal& stop, const NoteFn& note);

}  // namespace mq::link
