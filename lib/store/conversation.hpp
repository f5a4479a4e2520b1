// conversation.hpp: Service Broker conversations, conversation groups and message types
// (seed 001, REFERENCE.md 3): their records, the keys of their indexes, and body validation.
//
// Databases (schema.hpp lists them with the rest; keys big-endian):
//   convs      handle (16) -> conversation record (ConvRecord, TLV)
//   conv_q     queue id, handle -> "": the conversations of a queue (for listing and deletion)
//   groups     queue id, group id (16) -> group record (GroupRecord, TLV)
//   conv_msgs  queue id, group (16), 7 - priority, conversation rank (u64), handle (16),
//              class (0 Error, 1 other), sequence number (u64) -> lookup id (u64): the
//              *available* messages of each group, in RECEIVE order: all of one conversation
//              before the next, conversations by descending priority (then creation), within
//              a conversation by ascending message_sequence_number (an Error message first).
//   group_sel  queue id, 7 - priority, head lookup id (u64), group (16) -> "": one entry per
//              group that has available messages and is not locked; the best group to
//              receive is the first entry of the queue: one seek.
//   msg_types  name -> message type record (validation)
//
// In `messages`, a conversation message of a queue sits in its own band of the priority byte:
// 8 + (7 - priority) while it is ready, 16 + (7 - priority) once retained (status 0). Peeks,
// cursors and watches see every message; a plain MSMQ receive stops at the band (it never
// takes a conversation message out of sequence or past its group's lock).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/ids.hpp"
#include "base/status.hpp"

namespace mq {

inline constexpr std::string_view kEndDialogType =
    "http://schemas.microsoft.com/SQL/ServiceBroker/EndDialog";
inline constexpr std::string_view kErrorType =
    "http://schemas.microsoft.com/SQL/ServiceBroker/Error";
inline constexpr std::string_view kDefaultMessageType = "DEFAULT";
inline constexpr size_t kMaxMessageTypeName = 128;

enum class ConvState : uint8_t {
  kOpen = 0,
  kEnded = 1,   // END CONVERSATION: EndDialog queued, no more sends
  kError = 2,   // END CONVERSATION WITH ERROR: Error queued, no more sends
};
const char* ConvStateName(ConvState s);

struct ConvRecord {
  uint32_t qid = 0;
  Guid group{};
  ConvState state = ConvState::kOpen;
  uint64_t next_seq = 0;
  uint8_t priority = 3;
  uint64_t rank = 0;     // creation order in the store: ties between equal priorities
  uint64_t count = 0;    // its messages in the queue, in any state
  std::string service;
  std::string contract;
  int64_t created = 0;
};
std::string EncodeConv(const ConvRecord& r);
bool DecodeConv(std::string_view v, ConvRecord& r);

struct GroupRecord {
  uint64_t convs = 0;    // conversations in the group
  uint64_t count = 0;    // messages in the queue, any state
  uint64_t locked = 0;   // messages Locked by an open transactional receive: the group lock
  uint64_t holder = 0;   // the lease that holds them
  std::string sel_key;   // its group_sel entry, empty if none
};
std::string EncodeGroup(const GroupRecord& r);
bool DecodeGroup(std::string_view v, GroupRecord& r);

// Message-type validation: 'N' none, 'E' empty, 'X' well-formed XML.
Result<char> ParseValidation(std::string_view text);
const char* ValidationName(char v);
// What `body` lacks for `validation`: "" if nothing, else the requirement and why it is not
// met ("an empty body (5 bytes given)", "well-formed XML: Opening and ending tag mismatch:
// a line 1 and b (line 1)"). XML is checked by libxml2, with no network and no external
// entities (xml_check.hpp); an error if it could not be asked.
Result<std::string> BodyFault(char validation, std::string_view body);
// Whether `body` satisfies `validation`: MQ_VALIDATION_FAILED (exit 7) with the reason if not.
Status ValidateBody(char validation, std::string_view body, std::string_view type_name);
// ValidateBody over several bodies: the first in their order that fails is the status. The XML
// ones are checked together (XmlWellFormedErrors: one round trip to a static tool's helper).
struct BodyCheck {
  char validation = 'N';
  std::string body;
  std::string type_name;
};
Status ValidateBodies(const std::vector<BodyCheck>& bodies);
// The validation of a built-in type (DEFAULT, the Service Broker system types); 0 if `name` is
// not built in.
char BuiltinValidation(std::string_view name);
// The body of a Service Broker Error message.
std::string ErrorBody(int64_t code, std::string_view description);

// Keys.
std::string ConvQKey(uint32_t qid, const Guid& handle);
std::string GroupKey(uint32_t qid, const Guid& group);
std::string ConvMsgGroupPrefix(uint32_t qid, const Guid& group);
std::string ConvMsgConvPrefix(uint32_t qid, const Guid& group, uint8_t priority, uint64_t rank,
                              const Guid& handle);
std::string ConvMsgKey(uint32_t qid, const Guid& group, uint8_t priority, uint64_t rank,
                       const Guid& handle, bool error_first, uint64_t seq);
inline constexpr size_t kConvMsgKeySize = 4 + 16 + 1 + 8 + 16 + 1 + 8;
std::string GroupSelKey(uint32_t qid, uint8_t priority, uint64_t head_lookup, const Guid& group);
inline constexpr size_t kGroupSelKeySize = 4 + 1 + 8 + 16;
// The band byte of a message's order key (see above).
uint8_t OrderBand(uint8_t priority, bool conversation, bool retained);

}  // namespace mq
