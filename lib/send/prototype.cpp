// prototype.cpp: a send's message from its properties as text (prototype.hpp).
#include "send/prototype.hpp"

#include <utility>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/ids.hpp"
#include "base/names.hpp"
#include "base/units.hpp"
#include "send/input.hpp"
#include "store/conversation.hpp"

namespace mq {
namespace {

// The Service Broker part of a message: SEND ON CONVERSATION handle MESSAGE TYPE name.
Status SetConversation(const MessageSpec& a, Message& m) {
  bool conv = !a.conversation.empty();
  if (!conv && (!a.group.empty() || !a.service.empty() || !a.contract.empty()))
    return Status::InvalidArg("--group, --service and --contract go with --conversation");
  if (conv && (!a.delay.empty() || !a.at.empty()))
    return Status::InvalidArg(
        "--delay and --at do not go with --conversation (its sequence is its order)");
  if (!a.message_type.empty()) m.message_type_name = a.message_type;
  if (!conv) return {};
  if (m.message_type_name.empty()) m.message_type_name = std::string(kDefaultMessageType);
  if (a.conversation == "new") {
    m.conversation_handle = NewGuid();
  } else {
    auto h = ParseGuid(a.conversation);
    if (!h || IsNil(*h))
      return Status::InvalidArg(
          fmt::format("invalid conversation handle '{}': expected a UUID or 'new'",
                      a.conversation));
    m.conversation_handle = *h;
  }
  if (!a.group.empty()) {
    auto g = ParseGuid(a.group);
    if (!g || IsNil(*g))
      return Status::InvalidArg(
          fmt::format("invalid conversation group id '{}': expected a UUID", a.group));
    m.conversation_group_id = *g;
  }
  m.service_name = a.service;
  m.service_contract_name = a.contract;
  return {};
}

}  // namespace

Result<Message> BuildPrototype(const MessageSpec& a) {
  Message m;
  m.priority = static_cast<uint8_t>(a.priority);
  m.label = a.label;
  if (!a.correlation.empty()) {
    auto c = ParseCorrelationId(a.correlation);
    if (!c.ok()) return c.status();
    m.correlation_id = *c;
  }
  m.app_specific = a.app;
  if (!a.body_type.empty()) {
    auto bt = ParseBodyType(a.body_type);
    if (!bt.ok()) return bt.status();
    m.body_type = *bt;
  }
  int64_t now = NowMs();
  m.sent_time = now;
  for (auto [text, field] : {std::pair{&a.ttrq, &m.ttrq}, std::pair{&a.ttbr, &m.ttbr}}) {
    if (text->empty()) continue;
    auto d = ParseDuration(*text);
    if (!d.ok()) return d.status();
    *field = *d == kInfinite ? 0 : now + *d;
  }
  m.journal = a.journal;
  m.deadletter = a.deadletter;
  for (auto [text, field] : {std::pair{&a.admin_queue, &m.admin_queue},
                             std::pair{&a.response_queue, &m.response_queue}}) {
    if (text->empty()) continue;
    auto ref = ParseQueueRef(*text);
    if (!ref.ok()) return ref.status();
    if (ref->IsOutgoing())
      return Status::UnsupportedFormatnameOperation(
          "a link's outgoing queue takes no acknowledgements or replies", ref->Full());
    *field = ref->Full();
  }
  if (!a.ack.empty()) {
    auto ack = ParseAckLevel(a.ack);
    if (!ack.ok()) return ack.status();
    if (*ack && a.admin_queue.empty())
      return Status::InvalidArg("--ack needs --admin-queue to send acknowledgements to");
    m.ack = *ack;
  }
  m.express = a.express;
  if (!a.hash_algorithm.empty()) {
    auto h = ParseHashAlgorithm(a.hash_algorithm);
    if (!h.ok()) return h.status();
    m.hash_algorithm = *h;
  }
  if (!a.provider_type.empty()) {
    auto t = ParseProviderType(a.provider_type);
    if (!t.ok()) return t.status();
    m.provider_type = *t;
  }
  if (!IsValidUtf8(a.provider_name))
    return Status::IllegalPropertyValue("--provider-name is not UTF-8");
  m.provider_name = a.provider_name;
  if (!a.extension.empty()) MQ_RETURN_IF_ERROR(ReadExtension(a.extension, m.extension));
  if (!a.delay.empty()) {
    auto d = ParseDuration(a.delay);
    if (!d.ok()) return d.status();
    if (*d == kInfinite) return Status::InvalidArg("--delay cannot be infinite");
    m.visible_time = now + *d;
  }
  if (!a.at.empty()) {
    auto t = ParseTime(a.at);
    if (!t.ok()) return t.status();
    m.visible_time = *t;
  }
  MQ_RETURN_IF_ERROR(SetConversation(a, m));
  return m;
}

}  // namespace mq
