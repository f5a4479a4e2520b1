// srmp.hpp: one message as an SRMP document, as MSMQ writes them ([MC-MQSRM] 2.2, seed 002).
//
// Document (what EncodeSrmp writes; CRLF line ends):
//
//   Content-Type: multipart/related; boundary="MSMQ - SOAP boundary, N"; type=text/xml
//   (blank line)
//   --BOUNDARY
//   Content-Type: text/xml; charset=UTF-8        the SOAP 1.1 envelope:
//   Content-Length: L                              <se:Header> holds <path> (action MSMQ:LABEL, to,
//   (blank line)                                   id uuid:COUNTER@GUID, rev/via), <properties>
//   <se:Envelope ...>...</se:Envelope>             (expiresAt, sentAt), <services> (durable,
//   --BOUNDARY                                     receipt requests), <Stream> (streamId, current,
//   Content-Type: application/octet-stream         previous), <Msmq xmlns="msmq.namespace.xml">
//   Content-Length: B                              with seed 002's elements in seed 002's order,
//   Content-Id: body@GUID                          then <Mq xmlns="urn:x-mq:srmp"> with the mq
//   (blank line)                                   properties SRMP has no element for; an empty
//   B bytes of body                                <se:Body>.
//   --BOUNDARY                                   the extension (PROPID_M_EXTENSION), when there
//   Content-Type: application/octet-stream         is one, as a part of its own, as MSMQ's
//   Content-Length: E                              signature references it ("cid:extension@").
//   Content-Id: extension@GUID
//   (blank line)
//   E bytes of extension
//   --BOUNDARY--
//
// Mapping (Message field: element). label: <action>MSMQ:LABEL; id: <id>uuid:COUNTER@GUID;
// sent_time: <sentAt>; ttrq: <TTrq>; ttbr: <expiresAt>. The two deadlines follow [MC-MQSRM]
// 2.2.6.17 (<TTrq> is the time to reach the queue) and MSMQ's own documents, its samples: they
// carry MSMQ's defaults, <TTrq> four days after <sentAt> (LONG_LIVED, the default time to reach
// the queue) and <expiresAt> INFINITE (the default time to be received). Microsoft's pages
// "Properties Mapped to ..." (seed 002) say the reverse, which the samples contradict. Without
// <Msmq>, <expiresAt> is the time to reach the queue ([MC-MQSRM] 3.1.5.1.1). Deadlines of 0
// (none) are written as MSMQ's INFINITE, 20380119T031407, and read back as 0. Times are
// YYYYMMDDTHHMMSS UTC, with ".mmm" when the milliseconds are not 0 (ISO 8601 basic format) so
// that nothing is lost. express: no <durable/>.
// ack: <deliveryReceiptRequest> (pos-arrival), <commitmentReceiptRequest> with <positiveOnly/>
// (pos-receive) and <negativeOnly/> (neg-receive); neg-arrival, which SRMP cannot say, in
// <Mq><Ack>. admin_queue, response_queue, destination_queue: <AdminMqf>, <ResponseMqf>,
// <DestinationMqf> (also <sendTo>, <rev><via>, <to>). correlation_id: <Correlation> in base64
// as MSMQ writes it; read in base64 or as 40 hex digits (seed 002's example). On the wire the
// 20 bytes are in MSMQ's OBJECTID layout (GUID fields and counter little-endian), in mq
// big-endian: the codec swaps them both ways, so that a correlation id that is a message id
// (an acknowledgement's, a reply's) names the same message on both sides.
// A string that XML 1.0 cannot carry as text (control characters, CR, invalid UTF-8) is written
// base64 with the attribute encoding="base64".
//
// Reading (DecodeSrmp) follows [MC-MQSRM] 3.1.5.1.1 and accepts its samples as printed: an HTTP
// request line and headers in front or not, LF or CRLF line ends, a boundary written right after
// the content (MSMQ puts no CRLF before it), part headers without the blank line after them, no
// closing boundary. A part with a Content-Length has exactly that many bytes (fewer is an error:
// a truncated document); a part without one ends at the next boundary. A document without a
// <Msmq> element takes defaults for its properties and no id ([MC-MQSRM] 2.2.4.3). Addresses of
// other machines (http:// URLs in <to>, <via>, <sendTo>) become MSMQ direct format names
// (DIRECT=http://...), used only when the Mqf elements are absent.
//
// Several documents in one stream (mq-admin export --format srmp): each is an HTTP request
// (SrmpHttpRequest) and ends with its closing boundary line; the next begins on the next line.
// SrmpDocumentEnd finds where the first document of a stream ends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/message.hpp"
#include "base/status.hpp"

namespace mq {

// <Stream> of a transactional message (MC-MQSRM): stream id, current ordinal, previous ordinal.
struct SrmpStream {
  std::string stream_id;
  uint64_t current = 0;
  uint64_t previous = 0;
  // Whether <previous> was there (absent, it is current - 1: [MC-MQSRM] <Stream>); when set,
  // it is written even when 0 (an HTTP link's first ordinal after non-transactional ones).
  bool previous_given = false;
  // <start><sendReceiptsTo> (where the receiver posts its stream receipts; a sender writes it
  // on the stream's first message, mq's forward on the first of each session too) and
  // <streamReceiptRequest/>.
  std::string send_receipts_to{};
  bool receipt_request = false;
};

// A receipt in the header of a document ([MC-MQSRM] 2.2.5.4, 2.2.6.2-3): MSMQ's answer to a
// message sent to it, never a message of its own.
struct SrmpReceipt {
  enum class Kind { kNone, kStream, kDelivery, kCommitment };
  Kind kind = Kind::kNone;
  std::string stream_id;  // kStream: the stream, and the last ordinal it received
  uint64_t last_ordinal = 0;
  std::string message_id;  // kDelivery, kCommitment: the <id> of the message receipted
  bool positive = true;    // kCommitment: <decision>positive</decision>
  // Of any document: its <path><id> as written (a receipt to it names the message so).
  std::string path_id;
};

// One message as an SRMP document: MIME multipart/related, first part the SOAP 1.1 envelope
// (<se:Header> with <path>, <properties>, <Stream> when stream != nullptr, <Msmq> in seed 002's
// order and namespace; empty <se:Body>), second part the body (application/octet-stream,
// Content-Id). Without `stream`, a message with a tx_sequence_number gets a <Stream> made of its
// own fields (uid:SOURCE-QM-GUID\TX_SEQUENCE_ID, current, previous). The message's own tx_*
// fields travel in <Mq> too (with a `stream`, even when 0), so a link's stream never replaces
// them when the document is read back.
// Without `local_state`, what belongs to this store's copy of the message and what any store
// sets anew when the message arrives in it is left out of <Mq>: arrived_time,
// message_enqueue_time, queuing_order, status, delivery_count, abort_count, awaiting_arrival
// (a link's documents: accept stores each as a new message of its store).
std::string EncodeSrmp(const Message& m, const SrmpStream* stream = nullptr,
                       bool local_state = true);
// The same document, appended to `out`.
void AppendSrmp(std::string& out, const Message& m, const SrmpStream* stream = nullptr,
                bool local_state = true);

// Parses one document (with or without an HTTP request line and headers in front). On failure
// the Status (E_INVALIDARG) message names the element (and the caller adds which document).
// Fills stream if present and stream != nullptr, and receipt when the header holds one and
// receipt != nullptr. `m` is reset first; lookup_id and queue are left empty.
Status DecodeSrmp(std::string_view doc, Message& m, SrmpStream* stream = nullptr,
                  SrmpReceipt* receipt = nullptr);

// Makes `m`, a commitment receipt as DecodeSrmp read it (its correlation id the id of the
// message receipted), the acknowledgement MSMQ's queue manager stores for it in the admin
// queue: class ACK_RECEIVE when positive, else the NACK its <Msmq><Class> names
// (NACK_RECEIVE_TIMEOUT without one); no body, and no queues or acknowledgement of its own.
// serve and import --format srmp store commitment receipts so.
void AckOfCommitmentReceipt(const SrmpReceipt& receipt, Message& m);

// A receipt a receiver posts, as text/xml with no MIME parts: a stream receipt ([MC-MQSRM]
// 2.2.5.6, 3.1.5.1.5, sample 4.4) to the <sendReceiptsTo> of a stream it stored messages of,
// a delivery receipt (2.2.6.2, sample 4.3: class ACK_REACH_QUEUE) to the <sendTo> of a
// message stored that asked for one, or a commitment receipt (2.2.6.3, sample 4.3:
// ACK_RECEIVE positive, a receive NACK negative) when it was received or failed.
struct SrmpReceiptDoc {
  // A stream receipt (<streamReceipt>), a delivery receipt (<deliveryReceipt>: the message
  // reached its queue) or a commitment receipt (<commitmentReceipt>: it was received, or
  // failed there).
  enum class Kind { kStream, kDelivery, kCommitment };
  Kind kind = Kind::kStream;
  std::string to;         // where it is posted
  std::string via;        // the URL the message(s) were posted to
  std::string stream_id;  // a stream receipt's stream and last ordinal
  uint64_t last_ordinal = 0;
  std::string message_id;       // a delivery or commitment receipt's message (20 bytes, or none)
  std::string message_id_text;  // and its <id> as the sender wrote it
  int64_t received_time = 0;    // <receivedAt>, <decidedAt>
  uint16_t cls = 0;             // a commitment receipt's class: ACK_RECEIVE, or a NACK 0xC0xx
  Guid qm_guid{};               // the receiver's (this store's) GUID
  uint64_t counter = 0;         // of its <id>, uuid:COUNTER@QM-GUID
  std::string id_text{};        // or this <id>, when it is not empty
  int64_t sent_time = 0;        // ms
};
std::string EncodeReceipt(const SrmpReceiptDoc& r);

// A message id as SRMP's <path><id> writes it, uuid:COUNTER@GUID (empty for an id that is not
// 20 bytes); the reader turns it back into the same id.
std::string SrmpIdText(std::string_view id);
// The other way: the 20-byte id of a <path><id> of that form, or empty (any other text).
std::string SrmpIdOfText(std::string_view text);

// The receipt that stands for `ack`, an acknowledgement this store made for a message that
// came over HTTP (HasSrmpReceipt: ACK_REACH_QUEUE a delivery receipt, ACK_RECEIVE or a
// receive NACK a commitment receipt), posted to `url`, the message's admin queue: it cites
// the message by the ack's correlation id, dates the event with the ack's sent time, and has
// the ack's own id, so that a receipt posted twice is the same receipt.
SrmpReceiptDoc ReceiptOfAck(const Message& ack, std::string url);

// The document as an HTTP/1.1 request, as MSMQ posts it: POST /msmq/PATH (PATH: `queue` with
// private$/ in front), Host, SOAPAction "MSMQMessage", Content-Length, then the document's
// own Content-Type and body.
std::string SrmpHttpRequest(std::string_view doc, std::string_view queue);

// Where the first document of `input` ends (an offset into input): after its closing boundary
// line; for a document that has no multipart body, before the next line that starts with
// "POST " or at the end. Leading blank lines belong to the document. 0 if input holds only
// white space. A document that has no closing boundary extends to the end of the input.
size_t SrmpDocumentEnd(std::string_view input);

// The address SRMP's <to>, <via> and <sendTo> hold for a queue's format name: a URL for an HTTP
// format name (DIRECT=HTTP://HOST/msmq/private$/Q: http://HOST/msmq/private$/Q, as MSMQ writes
// it, the scheme in lower case); any other name as it is.
std::string SrmpUrlOf(std::string_view name);

// SRMP date strings (ISO 8601 basic, UTC). FormatSrmpTime writes MSMQ's form,
// YYYYMMDDTHHMMSS ([MC-MQSRM] 2.2.5.1.1: whole seconds; the milliseconds are dropped, or with
// `round_up` a fraction counts as the next second, so that a deadline is never earlier);
// FormatSrmpTimeMs adds .mmm when the milliseconds are not 0 (mq's own <Mq> elements).
// ParseSrmpTime reads both, with any number of fraction digits.
std::string FormatSrmpTime(int64_t ms, bool round_up = false);
std::string FormatSrmpTimeMs(int64_t ms);
Result<int64_t> ParseSrmpTime(std::string_view text);

}  // namespace mq
