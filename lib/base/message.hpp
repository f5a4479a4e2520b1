// message.hpp: the message model (CLI.md "Message model") and its on-disk record.
//
// Record format (the value in the `messages` database), version 1:
//
//   byte     version (1)
//   varint   length P of the property block
//   P bytes  properties, TLV (codec.hpp): varint tag, varint length, value;
//            integers as varints, strings and ids as raw bytes; a property equal to its
//            default is left out
//   rest     the body, raw
//
// Readers skip tags they do not know and give absent tags their defaults, so records from an
// older writer decode and new properties never force a rewrite. A version byte above
// kRecordVersion is refused with a remedy (upgrade mq). Tags are never reused.
//
// Version 2 (a store of format 3) may leave out what the store knows already: the record's
// "implied" field (a bit set of Implied below) says which, and only the message table, which
// knows the store, decodes such a record (message_table.hpp). A record that leaves out
// nothing is of version 1, as before.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/ids.hpp"
#include "base/status.hpp"

namespace mq {

inline constexpr uint8_t kRecordVersion = 2;

// What a store record (version 2) may leave out, as the store can say it again.
enum Implied : uint32_t {
  kImpliedNativeId = 1,      // the id is the store's id prefix, the queue id and the lookup id
  kImpliedSourceQm = 2,      // source_qm_guid is the store's GUID
  kImpliedEnqueueTime = 4,   // message_enqueue_time is arrived_time
  kImpliedQueuingOrder = 8,  // queuing_order is the lookup id
};
inline constexpr uint8_t kDefaultPriority = 3;
inline constexpr size_t kMaxLabel = 250;
inline constexpr uint64_t kDefaultMaxMessageSize = 4 * 1024 * 1024;
// A transaction sent over a link is held whole in the far side's memory until its last
// message comes (accept stores transactions whole): at most this many messages and bytes of
// bodies. mq-send refuses a larger one into a link's outgoing queue; accept refuses one that
// goes beyond (mq(7) "Limits").
inline constexpr uint64_t kMaxLinkTransactionMessages = 10'000;
inline constexpr uint64_t kMaxLinkTransactionBytes = 256ull << 20;

// MQMSG_CLASS_* (REFERENCE.md 2.3).
inline constexpr uint16_t kClassNormal = 0x0000;
inline constexpr uint16_t kClassAckReachQueue = 0x0002;
inline constexpr uint16_t kClassAckReceive = 0x4000;
inline constexpr uint16_t kClassNackBadDstQ = 0x8000;
inline constexpr uint16_t kClassNackPurged = 0x8001;
inline constexpr uint16_t kClassNackReachQueueTimeout = 0x8002;
inline constexpr uint16_t kClassNackQExceedQuota = 0x8003;
inline constexpr uint16_t kClassNackAccessDenied = 0x8004;
inline constexpr uint16_t kClassNackBadSignature = 0x8006;
inline constexpr uint16_t kClassNackNotTransactionalQ = 0x8009;
inline constexpr uint16_t kClassNackNotTransactionalMsg = 0x800A;
inline constexpr uint16_t kClassNackMessageTooLarge = 0x800D;
inline constexpr uint16_t kClassNackQDeleted = 0xC000;
inline constexpr uint16_t kClassNackQPurged = 0xC001;
inline constexpr uint16_t kClassNackReceiveTimeout = 0xC002;
inline constexpr uint16_t kClassNackReceiveTimeoutAtSender = 0xC003;
inline constexpr uint16_t kClassNackReceiveRejected = 0xC004;

// MQMSG_ACKNOWLEDGMENT_* bits (REFERENCE.md 2.4).
inline constexpr uint8_t kAckPosArrival = 0x01;
inline constexpr uint8_t kAckPosReceive = 0x02;
inline constexpr uint8_t kAckNegArrival = 0x04;
inline constexpr uint8_t kAckNegReceive = 0x08;

// Whether a message sent with acknowledgement level `level` asks for an acknowledgement of
// class `cls`: ACK_REACH_QUEUE needs POS_ARRIVAL, ACK_RECEIVE POS_RECEIVE, a NACK with the
// receive bit (0xC000) NEG_RECEIVE, any other NACK NEG_ARRIVAL.
bool AckWanted(uint8_t level, uint16_t cls);
// Whether MSMQ's HTTP transport has a receipt for an acknowledgement of class `cls`
// ([MC-MQSRM] 2.2.6): ACK_REACH_QUEUE a <deliveryReceipt>, ACK_RECEIVE and the receive NACKs
// (0xC0xx) a <commitmentReceipt>; the other NACKs have none.
inline bool HasSrmpReceipt(uint16_t cls) {
  return cls == kClassAckReachQueue || cls == kClassAckReceive || (cls & 0xC000) == 0xC000;
}

// VARTYPE-style body types. json and xml have no VARTYPE; they use values above 0xFFFF.
inline constexpr uint32_t kBodyEmpty = 0;        // VT_EMPTY: the sender did not say
inline constexpr uint32_t kBodyText = 8;         // VT_BSTR
inline constexpr uint32_t kBodyLpwstr = 31;      // VT_LPWSTR (.NET's string), read as text
inline constexpr uint32_t kBodyBytes = 0x1011;   // VT_VECTOR | VT_UI1
inline constexpr uint32_t kBodyJson = 0x10001;
inline constexpr uint32_t kBodyXml = 0x10002;

// A new property goes into the record (EncodeRecordInto, DecodeRecord), into ResetProperties,
// and into Full() of message_test.cpp, whose tests then check all three.
struct Message {
  // Identity and place. lookup_id comes from the key; queue from the catalog.
  std::string id;  // 20 bytes (ids.hpp)
  uint64_t lookup_id = 0;
  std::string queue;

  // MSMQ properties (seed 002, REFERENCE.md 2.1).
  uint16_t msg_class = kClassNormal;
  uint8_t priority = kDefaultPriority;
  std::string label;
  std::string body;
  uint32_t body_type = kBodyEmpty;
  std::string correlation_id;  // 20 bytes, or empty for none
  uint32_t app_specific = 0;
  bool journal = false;        // MQMSG_JOURNAL: source journaling
  bool deadletter = false;     // MQMSG_DEADLETTER
  uint8_t ack = 0;             // MQMSG_ACKNOWLEDGMENT_* bits
  std::string admin_queue;
  std::string response_queue;
  std::string destination_queue;
  int64_t sent_time = 0;       // ms since the epoch
  int64_t arrived_time = 0;
  int64_t ttrq = 0;            // absolute deadline in ms; 0: none
  int64_t ttbr = 0;
  Guid source_qm_guid{};
  uint32_t hash_algorithm = 0;
  uint32_t provider_type = 0;
  std::string provider_name;
  Guid connector_id{};
  bool eod_first = false;
  bool eod_last = false;
  std::string xact_id;         // PROPID_M_XACTID, 20 bytes or empty
  uint64_t tx_sequence_id = 0;
  uint32_t tx_sequence_number = 0;
  uint32_t tx_previous_sequence_number = 0;
  bool express = false;        // MQMSG_DELIVERY_EXPRESS; false: recoverable
  std::string extension;
  uint32_t abort_count = 0;    // PROPID_M_ABORT_COUNT
  uint32_t move_count = 0;     // PROPID_M_MOVE_COUNT
  int64_t last_move_time = 0;  // PROPID_M_LAST_MOVE_TIME
  int64_t visible_time = 0;    // not deliverable before (delayed delivery); 0: at once
  bool awaiting_arrival = false;  // sent with a delay and not visible yet: ttrq still applies

  // Service Broker columns (seed 001, REFERENCE.md 3.1).
  Guid conversation_handle{};
  Guid conversation_group_id{};
  uint64_t message_sequence_number = 0;
  std::string service_name;
  std::string service_contract_name;
  std::string message_type_name;
  char validation = 'N';       // N, E, X
  uint8_t status = 1;          // 1 ready, 0 retained after receive
  uint64_t queuing_order = 0;
  int64_t message_enqueue_time = 0;
  uint32_t delivery_count = 0;

  // The last rollback of the message and why (mq's own; kept when it moves on): what
  // happened ("exited with status 3", "killed by signal 9 (Killed)", "nack", "lease
  // expired", "receiver died"), the command's exit status or signal (-1, 0: none), the last
  // 2 KiB of its standard error, and when.
  std::string last_failure;
  int32_t last_exit_status = -1;
  int32_t last_signal = 0;
  std::string last_stderr;
  int64_t last_failure_time = 0;

  bool operator==(const Message&) const = default;
};

// When a message expires (0: never): its ttrq while it has not reached its queue (sent with a
// delay and not visible yet, or waiting in a link's outgoing queue), else its ttbr; and the
// class that reports the expiry: NACK_REACH_QUEUE_TIMEOUT for the ttrq, NACK_RECEIVE_TIMEOUT
// for the ttbr, or NACK_RECEIVE_TIMEOUT_AT_SENDER when it runs out in an outgoing queue
// (`outgoing`: the message never left this machine).
int64_t ExpiryOf(const Message& m);
uint16_t ExpiryClass(const Message& m, bool outgoing);

// The record value for `m` (everything but lookup_id and queue, which live in the key and the
// catalog).
std::string EncodeRecord(const Message& m);
// The same into `out`, replacing what it held: a caller that encodes many records reuses
// its buffers (no allocation once they are large enough).
// With `implied` (Implied bits) those properties are left out, and the record says so.
void EncodeRecordInto(const Message& m, std::string& out, uint32_t implied = 0);
// Sets every property of `m` to a default Message's, but for lookup_id and queue, and keeps
// the storage of its strings (for decoding into a Message again and again).
void ResetProperties(Message& m);
// Decodes a record into `m` (in place: its strings keep their storage); lookup_id and queue
// are left as they are in `m`, and on an error the other properties are unspecified. What the
// record leaves out is in `*implied` (the caller fills it in); without `implied`, such a record is
// refused.
Status DecodeRecord(std::string_view record, Message& m, uint32_t* implied = nullptr);
// The message id in an encoded record, without decoding the rest; empty if the record has
// none or is damaged (DecodeRecord says what is wrong). `*implied` as for DecodeRecord.
std::string_view RecordId(std::string_view record, uint32_t* implied = nullptr);
// The size a message is charged against quotas: its whole record.
inline uint64_t RecordSize(std::string_view record) { return record.size(); }

// Names of message classes (MQMSG_CLASS_*), without the prefix: "normal", "ack_reach_queue".
const char* ClassName(uint16_t cls);
std::optional<uint16_t> ClassFromName(std::string_view name);

// Body types: "empty", "text", "bytes", "json", "xml", or a number.
std::string BodyTypeName(uint32_t vt);
Result<uint32_t> ParseBodyType(std::string_view text);

// Hash algorithms (ALG_ID, wincrypt.h; PROPID_M_HASH_ALG): md2, md4, md5, sha1 (MSMQ's
// default, 32772), mac, sha256, sha384, sha512, or a number.
Result<uint32_t> ParseHashAlgorithm(std::string_view text);
// Cryptographic provider types (PROV_*, wincrypt.h; PROPID_M_PROV_TYPE): rsa-full (1), rsa-sig,
// dss, fortezza, ms-exchange, ssl, rsa-schannel, dss-dh, dh-schannel, rsa-aes, or a number.
Result<uint32_t> ParseProviderType(std::string_view text);

// Ack levels: names (none, full-reach-queue, full-receive, nack-reach-queue, nack-receive,
// pos-arrival, pos-receive, neg-arrival, neg-receive) joined by ',' or '|', or a number.
Result<uint8_t> ParseAckLevel(std::string_view text);
std::string AckLevelName(uint8_t ack);

}  // namespace mq
