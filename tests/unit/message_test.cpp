// message_test.cpp: every property of the message record round-trips, and records written by
// earlier versions keep decoding.
#include <catch2/catch.hpp>

#include "base/codec.hpp"
#include "output/format.hpp"
#include "base/message.hpp"

using namespace mq;

namespace {

Message Full() {
  Message m;
  m.id = MakeMessageId(NewGuid(), 77);
  m.lookup_id = 9;
  m.queue = "orders";
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
  m.xact_id = std::string(20, '\x01');
  m.tx_sequence_id = 0x1122334455667788ULL;
  m.tx_sequence_number = 5;
  m.tx_previous_sequence_number = 4;
  m.express = true;
  m.extension = std::string("\x00\x01\x02", 3);
  m.abort_count = 2;
  m.move_count = 3;
  m.last_move_time = 1764466379999;
  m.visible_time = 1764466390000;
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
  m.last_failure = "exited with status 3";
  m.last_exit_status = 3;
  m.last_signal = 0;
  m.last_stderr = "cannot parse line 7\n";
  m.last_failure_time = 1764466379555;
  return m;
}

}  // namespace

TEST_CASE("every property round-trips through the record", "[message]") {
  Message m = Full();
  Message d;
  d.lookup_id = m.lookup_id;
  d.queue = m.queue;
  REQUIRE(DecodeRecord(EncodeRecord(m), d).ok());
  CHECK(d == m);
}

TEST_CASE("a record decoded into a used Message leaves nothing of the one before", "[message]") {
  // Decoding is in place (a drain decodes into the same Messages batch after batch): every
  // property the record does not carry must come back to its default, whatever was there.
  Message d = Full();
  Message want;
  want.lookup_id = d.lookup_id;
  want.queue = d.queue;
  REQUIRE(DecodeRecord(EncodeRecord(Message()), d).ok());
  CHECK(d == want);
  Message reset = Full();
  ResetProperties(reset);
  CHECK(reset == want);
  Message other = Full();
  other.label = "x";
  other.body = "y";
  other.id = MakeMessageId(NewGuid(), 1);
  Message into = Full();
  REQUIRE(DecodeRecord(EncodeRecord(other), into).ok());
  CHECK(into == other);
}

TEST_CASE("default message encodes small and decodes to defaults", "[message]") {
  Message m;
  std::string rec = EncodeRecord(m);
  CHECK(rec.size() == 2);  // version byte and an empty property block
  Message d;
  d.priority = 0;
  REQUIRE(DecodeRecord(rec, d).ok());
  CHECK(d == m);
}

TEST_CASE("a version-1 record written by the first release still decodes", "[message]") {
  // Bytes of a version-1 record as the first release wrote it: id, priority 5, label "hi",
  // correlation id, body "hello". Must keep decoding in every later version.
  std::string props;
  TlvWriter w(props);
  std::string id(20, '\x11');
  w.Bytes(1, id);
  w.Uint(3, 5);
  w.Bytes(4, "hi");
  w.Bytes(6, std::string(20, '\x22'));
  w.Uint(13, 1764466379123);
  std::string rec(1, '\x01');
  PutVarint(rec, props.size());
  rec += props + "hello";
  const std::string golden =
      std::string("\x01\x3b\x01\x14", 4) + std::string(20, '\x11') +
      std::string("\x03\x01\x05\x04\x02hi\x06\x14", 9) + std::string(20, '\x22') +
      std::string("\x0d\x06\xf3\x92\x91\x93\xad\x33", 8) + "hello";
  REQUIRE(rec == golden);
  Message d;
  REQUIRE(DecodeRecord(golden, d).ok());
  CHECK(d.id == id);
  CHECK(d.priority == 5);
  CHECK(d.label == "hi");
  CHECK(d.correlation_id == std::string(20, '\x22'));
  CHECK(d.sent_time == 1764466379123);
  CHECK(d.body == "hello");
  CHECK(d.status == 1);  // absent: default
  CHECK(d.validation == 'N');
}

TEST_CASE("a record with a property from a newer writer decodes, skipping it", "[message]") {
  Message m = Full();
  std::string rec = EncodeRecord(m);
  size_t pos = 1;
  uint64_t plen = *GetVarint(rec, pos);
  std::string props = rec.substr(pos, plen);
  TlvWriter w(props);
  w.Bytes(4000, "unknown future property");
  std::string patched(1, '\x01');
  PutVarint(patched, props.size());
  patched += props + m.body;
  Message d;
  d.lookup_id = m.lookup_id;
  d.queue = m.queue;
  REQUIRE(DecodeRecord(patched, d).ok());
  CHECK(d == m);
}

TEST_CASE("records of a newer version or corrupted are refused", "[message]") {
  Message d;
  std::string rec = EncodeRecord(Full());
  rec[0] = static_cast<char>(kRecordVersion + 1);
  Status s = DecodeRecord(rec, d);
  CHECK(s.code() == Code::kError);
  CHECK(s.text().find("upgrade") != std::string::npos);
  CHECK(DecodeRecord("", d).code() == Code::kCorrupted);
  CHECK(DecodeRecord(std::string("\x01\x7f", 2), d).code() == Code::kCorrupted);
}

TEST_CASE("every property round-trips through JSON", "[message][format]") {
  Message m = Full();
  auto back = MessageFromJson(MessageToJson(m));
  REQUIRE(back.ok());
  Message& b = *back;
  // lookup_id and queue are places, not properties: import gives new ones.
  b.lookup_id = m.lookup_id;
  b.queue = m.queue;
  b.queuing_order = m.queuing_order;
  CHECK(b == m);
  CHECK(MessageToJson(m)["body_encoding"] == "base64");
}

TEST_CASE("JSON shows the extension as the body: text, else base64", "[message][format]") {
  Message m;
  m.extension = "route=eu";
  auto j = MessageToJson(m);
  CHECK(j["extension"] == "route=eu");
  CHECK(j["extension_encoding"] == "utf-8");
  CHECK(j["extension_base64"] == "cm91dGU9ZXU=");
  m.extension = std::string("\x00\xff", 2);
  j = MessageToJson(m);
  CHECK(j["extension"] == "AP8=");
  CHECK(j["extension_encoding"] == "base64");
  CHECK(MessageToJson(Message())["extension"].is_null());
  // A line with only "extension" (written by hand) reads back; extension_base64 wins.
  for (const char* enc : {"utf-8", "base64"}) {
    nlohmann::ordered_json line = {{"extension", std::string(enc) == "utf-8" ? "abc" : "YWJj"},
                                   {"extension_encoding", enc}};
    auto back = MessageFromJson(line);
    REQUIRE(back.ok());
    CHECK(back->extension == "abc");
  }
  auto bad = MessageFromJson({{"extension", "abc"}, {"extension_encoding", "rot13"}});
  CHECK_FALSE(bad.ok());
}

TEST_CASE("hash algorithms and provider types by name or number", "[message]") {
  CHECK(*ParseHashAlgorithm("sha1") == 32772);
  CHECK(*ParseHashAlgorithm("md5") == 0x8003);
  CHECK(*ParseHashAlgorithm("sha512") == 0x800E);
  CHECK(*ParseHashAlgorithm("7") == 7);
  CHECK_FALSE(ParseHashAlgorithm("sha3").ok());
  CHECK_FALSE(ParseHashAlgorithm("").ok());
  CHECK(*ParseProviderType("rsa-full") == 1);
  CHECK(*ParseProviderType("rsa-aes") == 24);
  CHECK(*ParseProviderType("4294967295") == 4294967295u);
  CHECK_FALSE(ParseProviderType("4294967296").ok());
  CHECK_FALSE(ParseProviderType("rsa").ok());
}

TEST_CASE("names of classes, body types and ack levels", "[message]") {
  CHECK(std::string(ClassName(0xC002)) == "nack_receive_timeout");
  CHECK(*ClassFromName("ack_receive") == 0x4000);
  CHECK(*ParseBodyType("json") == kBodyJson);
  CHECK(*ParseBodyType("4113") == kBodyBytes);
  CHECK_FALSE(ParseBodyType("bogus").ok());
  CHECK(*ParseAckLevel("full-reach-queue,full-receive") == 0x0F);
  CHECK(*ParseAckLevel("nack-receive") == 0x0C);
  CHECK(*ParseAckLevel("none") == 0);
  CHECK_FALSE(ParseAckLevel("sometimes").ok());
  for (uint8_t a = 0; a < 16; ++a) CHECK(*ParseAckLevel(AckLevelName(a)) == a);
}

TEST_CASE("templates render fields and escapes", "[format]") {
  Message m;
  m.lookup_id = 7;
  m.label = "lbl";
  m.body = "B";
  auto t = Template::Parse("{lookup_id}\\t{label}:{body}{{x}}\\n");
  REQUIRE(t.ok());
  CHECK(t->Render(m) == "7\tlbl:B{x}\n");
  CHECK(Template::Parse("{nope}").status().code() == Code::kInvalidArg);
  CHECK_FALSE(Template::Parse("{label").ok());
}

TEST_CASE("a failure record: exit status 0 and none, a signal, stderr not UTF-8", "[message]") {
  Message m;
  m.last_failure = "was killed by signal 9 (Killed)";
  m.last_exit_status = 0;  // distinct from none (-1)
  m.last_signal = 9;
  m.last_stderr = "half \xff done";
  Message d;
  REQUIRE(DecodeRecord(EncodeRecord(m), d).ok());
  CHECK(d == m);
  CHECK(Message().last_exit_status == -1);
  auto j = MessageToJson(m);
  CHECK(j["last_exit_status"] == 0);
  CHECK(j["last_signal"] == 9);
  CHECK(j["last_stderr"] == "half \xEF\xBF\xBD done");
  CHECK(MessageToJson(Message())["last_exit_status"].is_null());
}

TEST_CASE("a lean record leaves out what its store says, and says so", "[message][format]") {
  Message m = Full();
  std::string whole = EncodeRecord(m);
  CHECK(static_cast<uint8_t>(whole[0]) == 1);  // a record that leaves out nothing: version 1
  std::string lean;
  uint32_t all = kImpliedNativeId | kImpliedSourceQm | kImpliedEnqueueTime | kImpliedQueuingOrder;
  EncodeRecordInto(m, lean, all);
  CHECK(static_cast<uint8_t>(lean[0]) == 2);
  // Left out: the id (22 bytes with tag and length), the source GUID (18), the enqueue time
  // (8) and the queuing order (3); added: the bit set (3).
  CHECK(whole.size() - lean.size() == 22 + 18 + 8 + 3 - 3);
  // Only a caller that fills in what is left out may decode it.
  Message d;
  Status s = DecodeRecord(lean, d);
  CHECK(s.code() == Code::kCorrupted);
  CHECK(RecordId(lean).empty());
  uint32_t implied = 0;
  d = Message();
  d.lookup_id = m.lookup_id;
  d.queue = m.queue;
  REQUIRE(DecodeRecord(lean, d, &implied).ok());
  CHECK(implied == all);
  CHECK(d.id.empty());
  CHECK(IsNil(d.source_qm_guid));
  CHECK(d.message_enqueue_time == 0);
  CHECK(d.queuing_order == 0);
  d.id = m.id;
  d.source_qm_guid = m.source_qm_guid;
  d.message_enqueue_time = m.message_enqueue_time;
  d.queuing_order = m.queuing_order;
  CHECK(d == m);
  // A whole record decodes the same with or without the caller's help.
  d = Message();
  d.lookup_id = m.lookup_id;
  d.queue = m.queue;
  REQUIRE(DecodeRecord(whole, d, &implied).ok());
  CHECK(implied == 0);
  CHECK(d == m);
  CHECK(RecordId(whole, &implied) == m.id);
}
