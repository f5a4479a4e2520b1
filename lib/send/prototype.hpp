// prototype.hpp: the message a send is made of, built from its properties as a sender gives
// them in text (mq-send's options): every message of the send is this prototype with its own
// body.
#pragma once

#include <cstdint>
#include <string>

#include "base/message.hpp"
#include "base/status.hpp"

namespace mq {

// A message's properties as text, each empty (or false, or 0) when not given.
struct MessageSpec {
  int priority = kDefaultPriority;
  std::string label;
  std::string correlation;  // 40 hex digits or a message id
  uint32_t app = 0;
  std::string body_type;
  std::string ttrq, ttbr;  // durations from now
  bool journal = false, deadletter = false;
  std::string admin_queue, response_queue, ack;
  bool express = false;
  std::string delay, at;  // a duration from now, or a time
  // Service Broker: SEND ON CONVERSATION.
  std::string conversation;  // a UUID, or "new"
  std::string group;
  std::string message_type;
  std::string service, contract;
  // Authentication properties MSMQ lets a sender set (seed 002: read/write).
  std::string hash_algorithm, provider_type, provider_name;
  std::string extension;  // hex digits, or @FILE
};

// The prototype: sent_time now, deadlines (--ttrq, --ttbr, --delay) from now. A property that
// does not parse, or options that do not go together, are refused with the reason (the
// caller adds the queue as subject); --extension @FILE is read here.
Result<Message> BuildPrototype(const MessageSpec& spec);

}  // namespace mq
