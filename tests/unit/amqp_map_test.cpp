// amqp_map_test.cpp: the AMQP mapping of mq-admin bridge (lib/bridge/amqp_map.hpp): every
// property survives mq -> AMQP -> mq, through rabbitmq-c's wire encoding; binary bodies;
// conversation headers; and a message from another producer keeps what has no mq property.
#include <catch2/catch.hpp>

#include "bridge/amqp_link.hpp"
#include "bridge/amqp_map.hpp"
#include "base/ids.hpp"

using namespace mq;
using namespace mq::bridge;

namespace {

constexpr int64_t kNow = 1764466379500;

// Every property set to something other than its default.
Message Full() {
  Message m;
  m.id = MakeMessageId(NewGuid(), 77);
  m.msg_class = 0xC002;
  m.priority = 6;
  m.label = "label \xe2\x82\xac";
  m.body = std::string("body\0with nul \xff", 15);
  m.body_type = kBodyJson;
  m.correlation_id = std::string(20, '\x5a');
  m.app_specific = 0xFFFFFFFF;
  m.journal = true;
  m.deadletter = true;
  m.ack = 0x0E;
  m.admin_queue = "admin";
  m.response_queue = "replies";
  m.destination_queue = "orders";
  m.sent_time = 1764466379123;
  m.arrived_time = 1764466379124;
  m.ttrq = 1764466400000;
  m.ttbr = 1764466500000;
  m.source_qm_guid = NewGuid();
  m.hash_algorithm = 32772;
  m.provider_type = 1;
  m.provider_name = "Microsoft Base Cryptographic Provider";
  m.connector_id = NewGuid();
  m.eod_first = true;
  m.eod_last = true;
  m.xact_id = std::string("\x01\x00\xff", 3) + std::string(17, '\x02');
  m.tx_sequence_id = 0x8122334455667788ULL;  // above INT64_MAX: travels as its bit pattern
  m.tx_sequence_number = 5;
  m.tx_previous_sequence_number = 4;
  m.express = true;
  m.extension = std::string("\x00\x01\x02\xfe", 4);
  m.abort_count = 2;
  m.move_count = 3;
  m.last_move_time = 1764466379999;
  m.conversation_handle = NewGuid();
  m.conversation_group_id = NewGuid();
  m.message_sequence_number = 12;
  m.service_name = "//svc";
  m.service_contract_name = "//contract";
  m.message_type_name = "//type";
  m.validation = 'X';
  m.status = 0;
  m.queuing_order = 9;
  m.message_enqueue_time = 1764466379124;
  m.delivery_count = 4;
  return m;
}

Message RoundTrip(const Message& m) { return FromAmqp(ThroughWire(ToAmqp(m, kNow)), kNow + 5); }

}  // namespace

TEST_CASE("every property round-trips through AMQP", "[amqp]") {
  Message m = Full();
  CHECK(RoundTrip(m) == m);
  SECTION("and a message with every default") {
    Message d;
    d.id = MakeMessageId(NewGuid(), 1);
    CHECK(RoundTrip(d) == d);
  }
}

TEST_CASE("the AMQP properties a plain AMQP consumer sees", "[amqp]") {
  Message m = Full();
  AmqpMessage a = ThroughWire(ToAmqp(m, kNow));
  REQUIRE(a.message_id);
  CHECK(*a.message_id == FormatMessageId(m.id));
  CHECK(a.priority == std::optional<uint8_t>(6));
  CHECK(a.delivery_mode == 2);
  CHECK(a.type == std::optional<std::string>(m.label));
  CHECK(a.correlation_id == std::optional<std::string>(FormatMessageId(m.correlation_id)));
  CHECK(a.reply_to == std::optional<std::string>("replies"));
  CHECK(a.content_type == std::optional<std::string>("application/json"));
  CHECK(a.expiration == std::optional<std::string>(std::to_string(m.ttbr - kNow)));
  CHECK(a.timestamp == std::optional<uint64_t>(1764466379));
  // Conversations keep handle, group and sequence number, so a group's order survives.
  CHECK(a.headers.at("x-mq-conversation") == FormatGuid(m.conversation_handle));
  CHECK(a.headers.at("x-mq-group") == FormatGuid(m.conversation_group_id));
  CHECK(a.headers.at("x-mq-sequence") == 12);
  CHECK(a.headers.at("x-mq-app-specific") == 0xFFFFFFFFLL);
  CHECK(a.headers.at("x-mq-delivery-count") == 4);
  SECTION("a label too long for a shortstr goes in a header") {
    Message big = m;
    big.label.clear();
    for (int i = 0; i < 250; ++i) big.label += "\xe2\x82\xac";  // 250 characters, 750 bytes
    AmqpMessage b = ThroughWire(ToAmqp(big, kNow));
    CHECK_FALSE(b.type);
    CHECK(b.headers.at("x-mq-label") == big.label);
    CHECK(FromAmqp(b, kNow).label == big.label);
  }
}

TEST_CASE("binary bodies travel unchanged", "[amqp]") {
  Message m;
  m.id = MakeMessageId(NewGuid(), 2);
  for (int i = 0; i < (1 << 20); ++i) m.body.push_back(static_cast<char>(i * 7 % 256));
  m.body_type = kBodyBytes;
  Message back = RoundTrip(m);
  CHECK(back.body == m.body);
  CHECK(back.body_type == kBodyBytes);
}

TEST_CASE("a message from another AMQP producer", "[amqp]") {
  AmqpMessage a;
  a.body = "{\"order\": 1}";
  a.content_type = "application/json; charset=utf-8";
  a.message_id = "order-1";
  a.correlation_id = "not twenty bytes";
  a.type = "order.created";
  a.priority = 9;
  a.expiration = "60000";
  a.app_id = "shop";
  a.delivery_mode = 1;
  a.headers["tenant"] = "acme";
  a.headers["attempt"] = 3;
  Message m = FromAmqp(ThroughWire(a), kNow);
  CHECK(m.id.empty());  // not an mq id: the store gives one
  CHECK(m.label == "order.created");
  CHECK(m.body_type == kBodyJson);
  CHECK(m.priority == 7);
  CHECK(m.ttbr == kNow + 60000);
  CHECK(m.express);
  CHECK(m.correlation_id.empty());
  // What has no mq property is carried in the extension, never dropped.
  auto ext = nlohmann::json::parse(m.extension);
  CHECK(ext["amqp"]["message_id"] == "order-1");
  CHECK(ext["amqp"]["correlation_id"] == "not twenty bytes");
  CHECK(ext["amqp"]["priority"] == 9);
  CHECK(ext["amqp"]["app_id"] == "shop");
  CHECK(ext["amqp"]["headers"]["tenant"] == "acme");
  CHECK(ext["amqp"]["headers"]["attempt"] == 3);
}

TEST_CASE("a correlation id given as 40 hex digits is taken", "[amqp]") {
  AmqpMessage a;
  a.correlation_id = std::string(40, 'a');
  Message m = FromAmqp(a, kNow);
  CHECK(m.correlation_id == std::string(20, '\xaa'));
  CHECK(m.extension.empty());
}
