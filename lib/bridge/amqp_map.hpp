// amqp_map.hpp: how an mq message travels as an AMQP 0-9-1 message (mq-admin bridge), in
// both directions; mq(7) "Beyond one machine" has the same table for users.
//
//   mq                         AMQP
//   id                         message_id ("{GUID}\N"); also bridge in's dedup key
//   priority 0-7               priority
//   label                      type (if it fits a shortstr, 255 bytes), else x-mq-label
//   correlation_id             correlation_id (a message id's text form)
//   response_queue             reply_to
//   ttbr                       expiration (ms left when published) and x-mq-ttbr (absolute ms)
//   body_type                  content_type (text/plain, application/json, application/xml,
//                              application/octet-stream) and x-mq-body-type (the number)
//   sent_time                  timestamp (s) and x-mq-sent-time (ms)
//   body                       the body, bytes as they are
//   recoverable or express     delivery_mode is always 2 (persistent); x-mq-express: true
//   every other property       an x-mq-NAME header, left out when it has its default
//   conversation_handle, conversation_group_id, message_sequence_number: x-mq-conversation,
//                              x-mq-group, x-mq-sequence, so that a group's order survives
//
// Not carried: lookup_id and queue (the store's own place for it), visible_time and
// awaiting_arrival (a message in flight is visible).
//
// From a producer that is not mq: a message without x-mq-* headers gets its properties from
// the AMQP ones above; whatever has no place in the message model (other headers, app_id,
// user_id, cluster_id, content_encoding, a correlation_id that is not 20 bytes, an unknown
// content_type, a type too long for a label) is carried in the extension property as JSON,
// {"amqp": {...}}, with an extension the message had already under "extension_hex". Nothing
// is dropped.
//
// Kept apart from rabbitmq-c (amqp_link.hpp converts to its structures) so that the mapping
// is tested without a broker or the library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/message.hpp"

namespace mq::bridge {

// An AMQP message: the basic properties (absent: not set) and the headers table. Header
// values are JSON: strings (bytes allowed), integers, booleans; nested tables and arrays
// from other producers as objects and arrays; a byte array ('x') from another producer as
// {"bytes_hex": "..."}. The headers whose names amqp_link.hpp sends as byte arrays: kBytesHeaders.
struct AmqpMessage {
  std::string body;
  std::optional<std::string> content_type, content_encoding, message_id, correlation_id,
      reply_to, expiration, type, user_id, app_id, cluster_id;
  std::optional<uint8_t> priority;
  std::optional<uint64_t> timestamp;  // seconds
  uint8_t delivery_mode = 0;          // 0: not set
  nlohmann::ordered_json headers = nlohmann::ordered_json::object();
};

// Headers that hold raw bytes: sent as AMQP byte arrays ('x'), not as longstr.
bool IsBytesHeader(const std::string& name);

// The AMQP form of `m`, published at `now_ms` (expiration is the time its ttbr leaves).
AmqpMessage ToAmqp(const Message& m, int64_t now_ms);
// The mq message of an AMQP one received at `now_ms` (an expiration without x-mq-ttbr counts
// from then). Its id is the message_id if that is an mq message id, else empty.
Message FromAmqp(const AmqpMessage& a, int64_t now_ms);

}  // namespace mq::bridge
