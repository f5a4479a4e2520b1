// message.cpp: the versioned TLV record of a message, and the names of its enumerations.
#include "base/message.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <utility>

#include "base/codec.hpp"

namespace mq {

namespace {

// Record tags. Never renumber or reuse one: records on disk depend on them.
enum Tag : uint32_t {
  kTagId = 1,
  kTagClass = 2,
  kTagPriority = 3,
  kTagLabel = 4,
  kTagBodyType = 5,
  kTagCorrelation = 6,
  kTagAppSpecific = 7,
  kTagJournalFlags = 8,  // bit 0 deadletter, bit 1 journal (MQMSG_DEADLETTER, MQMSG_JOURNAL)
  kTagAck = 9,
  kTagAdminQueue = 10,
  kTagResponseQueue = 11,
  kTagDestinationQueue = 12,
  kTagSentTime = 13,
  kTagArrivedTime = 14,
  kTagTtrq = 15,
  kTagTtbr = 16,
  kTagSourceQm = 17,
  kTagHashAlg = 18,
  kTagProviderType = 19,
  kTagProviderName = 20,
  kTagConnectorId = 21,
  kTagEod = 22,  // bit 0 first, bit 1 last
  kTagXactId = 23,
  kTagTxSequenceId = 24,
  kTagTxSequenceNumber = 25,
  kTagTxPreviousSequenceNumber = 26,
  kTagExpress = 27,
  kTagExtension = 28,
  kTagAbortCount = 29,
  kTagMoveCount = 30,
  kTagLastMoveTime = 31,
  kTagVisibleTime = 32,
  kTagAwaitingArrival = 33,
  kTagConversationHandle = 40,
  kTagConversationGroup = 41,
  kTagMessageSequenceNumber = 42,
  kTagServiceName = 43,
  kTagContractName = 44,
  kTagMessageTypeName = 45,
  kTagValidation = 46,
  kTagStatus = 47,
  kTagQueuingOrder = 48,
  kTagEnqueueTime = 49,
  kTagDeliveryCount = 50,
  kTagLastFailure = 60,
  kTagLastExitStatus = 61,  // + 1: 0 is none
  kTagLastSignal = 62,
  kTagLastStderr = 63,
  kTagLastFailureTime = 64,
  kTagImplied = 70,  // Implied bits: what a version 2 record leaves out
};

uint64_t Signed(int64_t v) { return static_cast<uint64_t>(v); }

}  // namespace

std::string EncodeRecord(const Message& m) {
  std::string out;
  EncodeRecordInto(m, out);
  return out;
}

void EncodeRecordInto(const Message& m, std::string& out, uint32_t implied) {
  // The properties are encoded first (the record gives their length before them), into a
  // buffer each thread keeps.
  thread_local std::string props;
  props.clear();
  props.reserve(96 + m.label.size());
  TlvWriter w(props);
  if (!(implied & kImpliedNativeId)) w.BytesIfNotEmpty(kTagId, m.id);
  w.UintIfNot(kTagClass, m.msg_class, kClassNormal);
  w.UintIfNot(kTagPriority, m.priority, kDefaultPriority);
  w.BytesIfNotEmpty(kTagLabel, m.label);
  w.UintIfNot(kTagBodyType, m.body_type, kBodyEmpty);
  w.BytesIfNotEmpty(kTagCorrelation, m.correlation_id);
  w.UintIfNot(kTagAppSpecific, m.app_specific, 0);
  w.UintIfNot(kTagJournalFlags, (m.deadletter ? 1u : 0u) | (m.journal ? 2u : 0u), 0);
  w.UintIfNot(kTagAck, m.ack, 0);
  w.BytesIfNotEmpty(kTagAdminQueue, m.admin_queue);
  w.BytesIfNotEmpty(kTagResponseQueue, m.response_queue);
  w.BytesIfNotEmpty(kTagDestinationQueue, m.destination_queue);
  w.UintIfNot(kTagSentTime, Signed(m.sent_time), 0);
  w.UintIfNot(kTagArrivedTime, Signed(m.arrived_time), 0);
  w.UintIfNot(kTagTtrq, Signed(m.ttrq), 0);
  w.UintIfNot(kTagTtbr, Signed(m.ttbr), 0);
  if (!IsNil(m.source_qm_guid) && !(implied & kImpliedSourceQm))
    w.Bytes(kTagSourceQm, GuidBytes(m.source_qm_guid));
  w.UintIfNot(kTagHashAlg, m.hash_algorithm, 0);
  w.UintIfNot(kTagProviderType, m.provider_type, 0);
  w.BytesIfNotEmpty(kTagProviderName, m.provider_name);
  if (!IsNil(m.connector_id)) w.Bytes(kTagConnectorId, GuidBytes(m.connector_id));
  w.UintIfNot(kTagEod, (m.eod_first ? 1u : 0u) | (m.eod_last ? 2u : 0u), 0);
  w.BytesIfNotEmpty(kTagXactId, m.xact_id);
  w.UintIfNot(kTagTxSequenceId, m.tx_sequence_id, 0);
  w.UintIfNot(kTagTxSequenceNumber, m.tx_sequence_number, 0);
  w.UintIfNot(kTagTxPreviousSequenceNumber, m.tx_previous_sequence_number, 0);
  w.UintIfNot(kTagExpress, m.express ? 1 : 0, 0);
  w.BytesIfNotEmpty(kTagExtension, m.extension);
  w.UintIfNot(kTagAbortCount, m.abort_count, 0);
  w.UintIfNot(kTagMoveCount, m.move_count, 0);
  w.UintIfNot(kTagLastMoveTime, Signed(m.last_move_time), 0);
  w.UintIfNot(kTagVisibleTime, Signed(m.visible_time), 0);
  w.UintIfNot(kTagAwaitingArrival, m.awaiting_arrival ? 1 : 0, 0);
  if (!IsNil(m.conversation_handle))
    w.Bytes(kTagConversationHandle, GuidBytes(m.conversation_handle));
  if (!IsNil(m.conversation_group_id))
    w.Bytes(kTagConversationGroup, GuidBytes(m.conversation_group_id));
  w.UintIfNot(kTagMessageSequenceNumber, m.message_sequence_number, 0);
  w.BytesIfNotEmpty(kTagServiceName, m.service_name);
  w.BytesIfNotEmpty(kTagContractName, m.service_contract_name);
  w.BytesIfNotEmpty(kTagMessageTypeName, m.message_type_name);
  w.UintIfNot(kTagValidation, static_cast<uint8_t>(m.validation), 'N');
  w.UintIfNot(kTagStatus, m.status, 1);
  if (!(implied & kImpliedQueuingOrder)) w.UintIfNot(kTagQueuingOrder, m.queuing_order, 0);
  if (!(implied & kImpliedEnqueueTime))
    w.UintIfNot(kTagEnqueueTime, Signed(m.message_enqueue_time), 0);
  w.UintIfNot(kTagDeliveryCount, m.delivery_count, 0);
  w.BytesIfNotEmpty(kTagLastFailure, m.last_failure);
  w.UintIfNot(kTagLastExitStatus, m.last_exit_status < 0 ? 0 : uint64_t(m.last_exit_status) + 1, 0);
  w.UintIfNot(kTagLastSignal, m.last_signal < 0 ? 0 : uint64_t(m.last_signal), 0);
  w.BytesIfNotEmpty(kTagLastStderr, m.last_stderr);
  w.UintIfNot(kTagLastFailureTime, Signed(m.last_failure_time), 0);
  w.UintIfNot(kTagImplied, implied, 0);

  out.clear();
  out.reserve(1 + 5 + props.size() + m.body.size());
  out.push_back(static_cast<char>(implied ? 2 : 1));
  PutVarint(out, props.size());
  out += props;
  out += m.body;
}

std::string_view RecordId(std::string_view record, uint32_t* implied) {
  if (implied) *implied = 0;
  if (record.empty() || record[0] == 0 || static_cast<uint8_t>(record[0]) > kRecordVersion)
    return {};
  size_t pos = 1;
  auto plen = GetVarint(record, pos);
  if (!plen || *plen > record.size() - pos) return {};
  TlvReader r(record.substr(pos, *plen));
  std::string_view id;
  uint32_t left_out = 0;
  while (r.Next()) {
    if (r.tag() == kTagId) id = r.bytes();
    if (r.tag() == kTagImplied) left_out = static_cast<uint32_t>(r.uint());
  }
  if (left_out && !implied) return {};
  if (implied) *implied = left_out;
  return id;
}

void ResetProperties(Message& m) {
  // Property by property (as EncodeRecordInto and DecodeRecord list them): assigning a
  // default Message would free every string's storage, and costs a drain a tenth of its time.
  // message_test.cpp checks that a Message with every property set comes back to the default.
  static const Message kDefault;
  m.id.clear();
  m.msg_class = kDefault.msg_class;
  m.priority = kDefault.priority;
  m.label.clear();
  m.body.clear();
  m.body_type = kDefault.body_type;
  m.correlation_id.clear();
  m.app_specific = kDefault.app_specific;
  m.journal = kDefault.journal;
  m.deadletter = kDefault.deadletter;
  m.ack = kDefault.ack;
  m.admin_queue.clear();
  m.response_queue.clear();
  m.destination_queue.clear();
  m.sent_time = kDefault.sent_time;
  m.arrived_time = kDefault.arrived_time;
  m.ttrq = kDefault.ttrq;
  m.ttbr = kDefault.ttbr;
  m.source_qm_guid = kDefault.source_qm_guid;
  m.hash_algorithm = kDefault.hash_algorithm;
  m.provider_type = kDefault.provider_type;
  m.provider_name.clear();
  m.connector_id = kDefault.connector_id;
  m.eod_first = kDefault.eod_first;
  m.eod_last = kDefault.eod_last;
  m.xact_id.clear();
  m.tx_sequence_id = kDefault.tx_sequence_id;
  m.tx_sequence_number = kDefault.tx_sequence_number;
  m.tx_previous_sequence_number = kDefault.tx_previous_sequence_number;
  m.express = kDefault.express;
  m.extension.clear();
  m.abort_count = kDefault.abort_count;
  m.move_count = kDefault.move_count;
  m.last_move_time = kDefault.last_move_time;
  m.visible_time = kDefault.visible_time;
  m.awaiting_arrival = kDefault.awaiting_arrival;
  m.conversation_handle = kDefault.conversation_handle;
  m.conversation_group_id = kDefault.conversation_group_id;
  m.message_sequence_number = kDefault.message_sequence_number;
  m.service_name.clear();
  m.service_contract_name.clear();
  m.message_type_name.clear();
  m.validation = kDefault.validation;
  m.status = kDefault.status;
  m.queuing_order = kDefault.queuing_order;
  m.message_enqueue_time = kDefault.message_enqueue_time;
  m.delivery_count = kDefault.delivery_count;
  m.last_failure.clear();
  m.last_exit_status = kDefault.last_exit_status;
  m.last_signal = kDefault.last_signal;
  m.last_stderr.clear();
  m.last_failure_time = kDefault.last_failure_time;
}

Status DecodeRecord(std::string_view record, Message& m, uint32_t* implied) {
  if (record.empty()) return Status::Corrupted("empty message record");
  auto version = static_cast<uint8_t>(record[0]);
  if (version > kRecordVersion)
    return Status::Error(
        fmt::format("message record version {} is newer than this mq understands ({}); "
                    "upgrade mq",
                    version, kRecordVersion));
  if (version == 0) return Status::Corrupted("message record version 0");
  size_t pos = 1;
  auto plen = GetVarint(record, pos);
  if (!plen || *plen > record.size() - pos) return Status::Corrupted("truncated message record");
  TlvReader r(record.substr(pos, *plen));
  std::string_view body = record.substr(pos + *plen);
  uint32_t left_out = 0;
  // Decoded in place: defaults for every absent tag, in the strings' own storage (a drain
  // decodes a million records into the same few thousand Messages).
  Message& d = m;
  ResetProperties(d);
  auto guid = [&](Guid& g) {
    if (r.bytes().size() == 16) g = GuidFromBytes(r.bytes());
  };
  while (r.Next()) {
    switch (r.tag()) {
      case kTagId: d.id = r.bytes(); break;
      case kTagClass: d.msg_class = static_cast<uint16_t>(r.uint()); break;
      case kTagPriority: d.priority = static_cast<uint8_t>(r.uint()); break;
      case kTagLabel: d.label = r.bytes(); break;
      case kTagBodyType: d.body_type = static_cast<uint32_t>(r.uint()); break;
      case kTagCorrelation: d.correlation_id = r.bytes(); break;
      case kTagAppSpecific: d.app_specific = static_cast<uint32_t>(r.uint()); break;
      case kTagJournalFlags: {
        uint64_t f = r.uint();
        d.deadletter = f & 1;
        d.journal = f & 2;
        break;
      }
      case kTagAck: d.ack = static_cast<uint8_t>(r.uint()); break;
      case kTagAdminQueue: d.admin_queue = r.bytes(); break;
      case kTagResponseQueue: d.response_queue = r.bytes(); break;
      case kTagDestinationQueue: d.destination_queue = r.bytes(); break;
      case kTagSentTime: d.sent_time = static_cast<int64_t>(r.uint()); break;
      case kTagArrivedTime: d.arrived_time = static_cast<int64_t>(r.uint()); break;
      case kTagTtrq: d.ttrq = static_cast<int64_t>(r.uint()); break;
      case kTagTtbr: d.ttbr = static_cast<int64_t>(r.uint()); break;
      case kTagSourceQm: guid(d.source_qm_guid); break;
      case kTagHashAlg: d.hash_algorithm = static_cast<uint32_t>(r.uint()); break;
      case kTagProviderType: d.provider_type = static_cast<uint32_t>(r.uint()); break;
      case kTagProviderName: d.provider_name = r.bytes(); break;
      case kTagConnectorId: guid(d.connector_id); break;
      case kTagEod: {
        uint64_t f = r.uint();
        d.eod_first = f & 1;
        d.eod_last = f & 2;
        break;
      }
      case kTagXactId: d.xact_id = r.bytes(); break;
      case kTagTxSequenceId: d.tx_sequence_id = r.uint(); break;
      case kTagTxSequenceNumber: d.tx_sequence_number = static_cast<uint32_t>(r.uint()); break;
      case kTagTxPreviousSequenceNumber:
        d.tx_previous_sequence_number = static_cast<uint32_t>(r.uint());
        break;
      case kTagExpress: d.express = r.uint() != 0; break;
      case kTagExtension: d.extension = r.bytes(); break;
      case kTagAbortCount: d.abort_count = static_cast<uint32_t>(r.uint()); break;
      case kTagMoveCount: d.move_count = static_cast<uint32_t>(r.uint()); break;
      case kTagLastMoveTime: d.last_move_time = static_cast<int64_t>(r.uint()); break;
      case kTagVisibleTime: d.visible_time = static_cast<int64_t>(r.uint()); break;
      case kTagAwaitingArrival: d.awaiting_arrival = r.uint() != 0; break;
      case kTagConversationHandle: guid(d.conversation_handle); break;
      case kTagConversationGroup: guid(d.conversation_group_id); break;
      case kTagMessageSequenceNumber: d.message_sequence_number = r.uint(); break;
      case kTagServiceName: d.service_name = r.bytes(); break;
      case kTagContractName: d.service_contract_name = r.bytes(); break;
      case kTagMessageTypeName: d.message_type_name = r.bytes(); break;
      case kTagValidation: d.validation = static_cast<char>(r.uint()); break;
      case kTagStatus: d.status = static_cast<uint8_t>(r.uint()); break;
      case kTagQueuingOrder: d.queuing_order = r.uint(); break;
      case kTagEnqueueTime: d.message_enqueue_time = static_cast<int64_t>(r.uint()); break;
      case kTagDeliveryCount: d.delivery_count = static_cast<uint32_t>(r.uint()); break;
      case kTagLastFailure: d.last_failure = r.bytes(); break;
      case kTagLastExitStatus:
        d.last_exit_status = static_cast<int32_t>(std::min<uint64_t>(r.uint(), 256)) - 1;
        break;
      case kTagLastSignal:
        d.last_signal = static_cast<int32_t>(std::min<uint64_t>(r.uint(), 255));
        break;
      case kTagLastStderr: d.last_stderr = r.bytes(); break;
      case kTagLastFailureTime: d.last_failure_time = static_cast<int64_t>(r.uint()); break;
      case kTagImplied: left_out = static_cast<uint32_t>(r.uint()); break;
      default: break;  // a newer writer's property: skip it
    }
  }
  if (r.error()) return Status::Corrupted("malformed message record");
  if (left_out && !implied)
    return Status::Corrupted("message record leaves out what only its store can say");
  if (implied) *implied = left_out;
  d.body = body;
  return {};
}

namespace {

struct ClassEntry {
  uint16_t value;
  const char* name;
};

constexpr ClassEntry kClasses[] = {
    {0x0000, "normal"},
    {0x0001, "report"},
    {0x0002, "ack_reach_queue"},
    {0x4000, "ack_receive"},
    {0x8000, "nack_bad_dst_q"},
    {0x8001, "nack_purged"},
    {0x8002, "nack_reach_queue_timeout"},
    {0x8003, "nack_q_exceed_quota"},
    {0x8004, "nack_access_denied"},
    {0x8005, "nack_hop_count_exceeded"},
    {0x8006, "nack_bad_signature"},
    {0x8007, "nack_bad_encryption"},
    {0x8008, "nack_could_not_encrypt"},
    {0x8009, "nack_not_transactional_q"},
    {0x800A, "nack_not_transactional_msg"},
    {0x800B, "nack_unsupported_crypto_provider"},
    {0x800C, "nack_source_computer_guid_changed"},
    {0x800D, "nack_message_too_large"},
    {0xC000, "nack_q_deleted"},
    {0xC001, "nack_q_purged"},
    {0xC002, "nack_receive_timeout"},
    {0xC003, "nack_receive_timeout_at_sender"},
    {0xC004, "nack_receive_rejected"},
};

struct AckEntry {
  uint8_t value;
  const char* name;
};

constexpr AckEntry kAcks[] = {
    {0x00, "none"},         {0x05, "full-reach-queue"}, {0x0E, "full-receive"},
    {0x04, "nack-reach-queue"}, {0x0C, "nack-receive"}, {0x01, "pos-arrival"},
    {0x02, "pos-receive"},  {0x04, "neg-arrival"},      {0x08, "neg-receive"},
};

}  // namespace

bool AckWanted(uint8_t level, uint16_t cls) {
  if (cls == kClassAckReachQueue) return level & kAckPosArrival;
  if (cls == kClassAckReceive) return level & kAckPosReceive;
  if (!(cls & 0x8000)) return false;
  return level & ((cls & 0x4000) ? kAckNegReceive : kAckNegArrival);
}

int64_t ExpiryOf(const Message& m) {
  if (m.awaiting_arrival && m.ttrq && (m.ttbr == 0 || m.ttrq < m.ttbr)) return m.ttrq;
  return m.ttbr;
}

uint16_t ExpiryClass(const Message& m, bool outgoing) {
  if (m.awaiting_arrival && m.ttrq && (m.ttbr == 0 || m.ttrq < m.ttbr))
    return kClassNackReachQueueTimeout;
  return outgoing ? kClassNackReceiveTimeoutAtSender : kClassNackReceiveTimeout;
}

const char* ClassName(uint16_t cls) {
  for (const auto& e : kClasses)
    if (e.value == cls) return e.name;
  return "user";
}

std::optional<uint16_t> ClassFromName(std::string_view name) {
  for (const auto& e : kClasses)
    if (name == e.name) return e.value;
  return std::nullopt;
}

std::string BodyTypeName(uint32_t vt) {
  switch (vt) {
    case kBodyEmpty: return "empty";
    case kBodyText: return "text";
    case kBodyBytes: return "bytes";
    case kBodyJson: return "json";
    case kBodyXml: return "xml";
    default: return std::to_string(vt);
  }
}

namespace {

Result<uint32_t> ParseNamed(std::string_view text,
                            std::initializer_list<std::pair<std::string_view, uint32_t>> names,
                            std::string_view what, std::string_view choices) {
  for (const auto& [name, value] : names)
    if (text == name) return value;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!text.empty() && ec == std::errc() && p == text.data() + text.size()) return v;
  return Status::IllegalPropertyValue(
      fmt::format("invalid {} '{}': use {} or a number", what, text, choices));
}

}  // namespace

Result<uint32_t> ParseHashAlgorithm(std::string_view text) {
  return ParseNamed(text,
                    {{"md2", 0x8001}, {"md4", 0x8002}, {"md5", 0x8003}, {"sha1", 0x8004},
                     {"mac", 0x8005}, {"sha256", 0x800C}, {"sha384", 0x800D},
                     {"sha512", 0x800E}},
                    "hash algorithm", "md2, md4, md5, sha1, mac, sha256, sha384, sha512");
}

Result<uint32_t> ParseProviderType(std::string_view text) {
  return ParseNamed(text,
                    {{"rsa-full", 1}, {"rsa-sig", 2}, {"dss", 3}, {"fortezza", 4},
                     {"ms-exchange", 5}, {"ssl", 6}, {"rsa-schannel", 12}, {"dss-dh", 13},
                     {"dh-schannel", 18}, {"rsa-aes", 24}},
                    "provider type",
                    "rsa-full, rsa-sig, dss, fortezza, ms-exchange, ssl, rsa-schannel, dss-dh, "
                    "dh-schannel, rsa-aes");
}

Result<uint32_t> ParseBodyType(std::string_view text) {
  if (text == "empty") return kBodyEmpty;
  if (text == "text") return kBodyText;
  if (text == "bytes") return kBodyBytes;
  if (text == "json") return kBodyJson;
  if (text == "xml") return kBodyXml;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!text.empty() && ec == std::errc() && p == text.data() + text.size()) return v;
  return Status::IllegalPropertyValue(
      fmt::format("invalid body type '{}': use bytes, text, json, xml or a VT number", text));
}

Result<uint8_t> ParseAckLevel(std::string_view text) {
  uint8_t ack = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",|", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    bool found = false;
    for (const auto& e : kAcks) {
      if (part == e.name) {
        ack |= e.value;
        found = true;
      }
    }
    unsigned v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (!found && !part.empty() && ec == std::errc() && p == part.data() + part.size() &&
        v <= 0x0F) {
      ack |= static_cast<uint8_t>(v);
      found = true;
    }
    if (!found)
      return Status::IllegalPropertyValue(
          fmt::format("invalid ack level '{}': use none, full-reach-queue, "
                      "full-receive, nack-reach-queue, nack-receive, joined by ','",
                      part));
    start = end + 1;
  }
  return ack;
}

std::string AckLevelName(uint8_t ack) {
  for (const auto& e : kAcks)
    if (e.value == ack) return e.name;  // the composites come first in kAcks
  std::string out;
  for (const auto& e : kAcks) {
    bool single = e.value && !(e.value & (e.value - 1));
    if (single && (ack & e.value) && std::string_view(e.name) != "nack-reach-queue") {
      if (!out.empty()) out += ',';
      out += e.name;
    }
  }
  return out;
}

}  // namespace mq
