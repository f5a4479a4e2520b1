// srmp_test.cpp: SRMP documents (srmp.hpp): every property and any body round-trip, the sample
// messages of [MC-MQSRM] section 4 (tests/fixtures/srmp) read as printed, and each malformed
// element is named in the error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/ids.hpp"
#include "wire/srmp.hpp"

using namespace mq;
using namespace std::string_literals;

namespace {

Message Full() {
  Message m;
  m.id = MakeMessageId(NewGuid(), 77);
  m.msg_class = 0xC002;
  m.priority = 6;
  m.label = "label \xe2\x82\xac <&> \"q\"";
  // NULs, CRLF, a line that looks like a boundary, the closing delimiter form.
  m.body = "body\0with nul \xff\r\n--MSMQ - SOAP boundary, 1\r\n"
           "--MSMQ - SOAP boundary, 1--\r\n\r\n--"s;
  m.body_type = kBodyJson;
  m.correlation_id = "\x00\x5a\xff\r\n"s + std::string(15, '\x5a');
  m.app_specific = 0xFFFFFFFF;
  m.journal = true;
  m.deadletter = true;
  m.ack = 0x0F;
  m.admin_queue = "admin";
  m.response_queue = "replies";
  m.destination_queue = "orders";
  m.sent_time = 1764466379123;
  m.arrived_time = 1764466379124;
  m.ttrq = 1764466400000;
  m.ttbr = 1764466500001;
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
  m.extension = "\x00\x01\x02\r\n--MSMQ - SOAP boundary, 2"s;
  m.abort_count = 2;
  m.move_count = 3;
  m.last_move_time = 1764466379999;
  m.visible_time = 1764466390000;
  m.awaiting_arrival = true;
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

std::string Fixture(const std::string& name) {
  std::ifstream f(std::string(MQ_FIXTURES) + "/srmp/" + name, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Message Decoded(std::string_view doc, SrmpStream* stream = nullptr) {
  Message m;
  Status s = DecodeSrmp(doc, m, stream);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return m;
}

std::string Replace(std::string doc, std::string_view from, std::string_view to) {
  size_t at = doc.find(from);
  INFO(from);
  REQUIRE(at != std::string::npos);
  doc.replace(at, from.size(), to);
  return doc;
}

int64_t Ms(const char* srmp_time) {
  auto t = ParseSrmpTime(srmp_time);
  REQUIRE(t.ok());
  return *t;
}

}  // namespace

TEST_CASE("srmp: every property round-trips", "[srmp]") {
  Message m = Full();
  std::string doc = EncodeSrmp(m);
  REQUIRE(Decoded(doc) == m);

  SECTION("the default message") {
    Message d;
    REQUIRE(Decoded(EncodeSrmp(d)) == d);
  }
  SECTION("recoverable, each ack bit alone, no correlation, empty body") {
    for (uint8_t ack : {0, 1, 2, 4, 8}) {
      Message r = Full();
      r.express = false;
      r.ack = ack;
      r.correlation_id.clear();
      r.body.clear();
      r.extension.clear();
      r.tx_sequence_number = 0;
      INFO(int(ack));
      REQUIRE(Decoded(EncodeSrmp(r)) == r);
    }
  }
  SECTION("strings XML cannot carry travel in base64") {
    Message r = Full();
    r.label = "tab\there\rcr \x01 ctl \xff\xfe"s;
    r.provider_name = "line\r\nbreak";
    r.service_name = "nul\0inside"s;
    std::string d = EncodeSrmp(r);
    REQUIRE(d.find("encoding=\"base64\"") != std::string::npos);
    REQUIRE(Decoded(d) == r);
  }
  SECTION("a 1 MiB body of every byte value") {
    Message r = Full();
    r.body.resize(1 << 20);
    for (size_t i = 0; i < r.body.size(); ++i) r.body[i] = static_cast<char>(i * 7 + i / 256);
    REQUIRE(Decoded(EncodeSrmp(r)) == r);
  }
}

TEST_CASE("srmp: the document is MSMQ's shape", "[srmp]") {
  Message m = Full();
  m.express = false;
  std::string doc = EncodeSrmp(m);
  // <Correlation> in MSMQ's OBJECTID layout: GUID Data1, Data2, Data3 and the counter
  // little-endian.
  std::string corr_msmq = m.correlation_id;
  std::reverse(corr_msmq.begin(), corr_msmq.begin() + 4);
  std::reverse(corr_msmq.begin() + 4, corr_msmq.begin() + 6);
  std::reverse(corr_msmq.begin() + 6, corr_msmq.begin() + 8);
  std::reverse(corr_msmq.begin() + 16, corr_msmq.end());
  // The boundary is one that occurs in no part: the body holds "..., 1" and the extension
  // "..., 2".
  REQUIRE(doc.rfind("Content-Type: multipart/related; boundary=\"MSMQ - SOAP boundary, 3\"; "
                    "type=text/xml\r\n\r\n--MSMQ - SOAP boundary, 3\r\n"
                    "Content-Type: text/xml; charset=UTF-8\r\n",
                    0) == 0);
  REQUIRE(doc.find("Content-Type: application/octet-stream\r\nContent-Length: " +
                   std::to_string(m.body.size()) + "\r\nContent-Id: body@" +
                   FormatGuid(m.source_qm_guid) + "\r\n\r\n") != std::string::npos);
  REQUIRE(doc.find("Content-Id: extension@") != std::string::npos);
  const std::string close = "\r\n--MSMQ - SOAP boundary, 3--\r\n";
  REQUIRE(doc.size() >= close.size());
  REQUIRE(doc.substr(doc.size() - close.size()) == close);
  // Header entries in [MC-MQSRM]'s order, <Msmq> children in seed 002's.
  std::vector<std::string> order = {
      "<se:Envelope xmlns:se=\"http://schemas.xmlsoap.org/soap/envelope/\" "
      "xmlns=\"http://schemas.xmlsoap.org/srmp/\"><se:Header>",
      "<path xmlns=\"http://schemas.xmlsoap.org/rp/\" se:mustUnderstand=\"1\">",
      "<action>MSMQ:", "<to>orders</to>",
      "<id>uuid:77@" + FormatGuid(GuidFromBytes(m.id.substr(0, 16))) + "</id>",
      "<rev><via>replies</via></rev></path>",
      // Whole seconds, as MSMQ writes them (the deadline rounded up); the exact times in
      // <Mq>, below.
      "<properties se:mustUnderstand=\"1\"><expiresAt>20251130T013501</expiresAt>"
      "<sentAt>20251130T013259</sentAt></properties>",
      "<services se:mustUnderstand=\"1\"><durable/><deliveryReceiptRequest><sendTo>admin"
      "</sendTo></deliveryReceiptRequest><commitmentReceiptRequest><sendTo>admin</sendTo>"
      "<positiveOnly/><negativeOnly/></commitmentReceiptRequest></services>",
      "<Stream se:mustUnderstand=\"1\"><streamId>uid:" + FormatGuid(m.source_qm_guid) +
          "\\1234605616436508552</streamId><current>5</current><previous>4</previous></Stream>",
      "<Msmq xmlns=\"msmq.namespace.xml\"><Class>49154</Class><Priority>6</Priority><Journal/>"
      "<DeadLetter/><Correlation>" +
          Base64Encode(corr_msmq) +
          "</Correlation><App>4294967295</App>"
          "<BodyType>4113</BodyType><HashAlgorithm>32772</HashAlgorithm><ConnectorId>",
      "<Eod><First/><Last/></Eod><Provider><Type>1</Type><Name>Microsoft Base Cryptographic "
      "Provider</Name></Provider><SourceQmGuid>",
      "<DestinationMqf>orders</DestinationMqf><AdminMqf>admin</AdminMqf><ResponseMqf>replies"
      "</ResponseMqf><TTrq>20251130T013320</TTrq></Msmq>",
      "<Mq xmlns=\"urn:x-mq:srmp\"><Ack>15</Ack><BodyType>65537</BodyType>",
      "<SentTime>20251130T013259.123</SentTime><Ttbr>20251130T013500.001</Ttbr>"
      "</Mq></se:Header><se:Body></se:Body></se:Envelope>"};
  // No SRMP or MSMQ date has a fraction.
  for (const char* tag : {"<expiresAt>", "<sentAt>", "<TTrq>"}) {
    size_t t = doc.find(tag);
    REQUIRE(t != std::string::npos);
    REQUIRE(doc.substr(t + std::string(tag).size(), 16).find('.') == std::string::npos);
  }
  size_t at = 0;
  for (const auto& piece : order) {
    INFO(piece);
    size_t found = doc.find(piece, at);
    REQUIRE(found != std::string::npos);
    at = found + piece.size();
  }
}

TEST_CASE("srmp: a link's stream travels in <Stream> and leaves the message's own fields",
          "[srmp]") {
  Message m = Full();
  SrmpStream link{"uid:" + FormatGuid(NewGuid()) + "\\42", 1ULL << 40, (1ULL << 40) - 3};
  std::string doc = EncodeSrmp(m, &link);
  SrmpStream got;
  REQUIRE(Decoded(doc, &got) == m);
  REQUIRE(got.stream_id == link.stream_id);
  REQUIRE(got.current == link.current);
  REQUIRE(got.previous == link.previous);

  SECTION("a message outside any sequence sent on a link keeps its zero sequence fields") {
    Message plain;
    plain.body = "x";
    SrmpStream got2;
    REQUIRE(Decoded(EncodeSrmp(plain, &link), &got2) == plain);
    REQUIRE(got2.current == link.current);
  }
  SECTION("no <Stream> for a message outside any") {
    Message plain;
    SrmpStream none;
    REQUIRE(Decoded(EncodeSrmp(plain), &none) == plain);
    REQUIRE(none.stream_id.empty());
    REQUIRE(EncodeSrmp(plain).find("<Stream") == std::string::npos);
  }
}

TEST_CASE("srmp: text is escaped as libxml2 escapes it, whichever way it is written", "[srmp]") {
  Message m;
  m.body = "x";
  m.label = "a<b>c&d\"e'f";
  m.destination_queue = "plain";
  m.service_name = "//svc&more";
  std::string doc = EncodeSrmp(m);
  CHECK(doc.find("<action>MSMQ:a&lt;b&gt;c&amp;d&quot;e'f</action>") != std::string::npos);
  CHECK(doc.find("<to>plain</to>") != std::string::npos);
  CHECK(doc.find("<ServiceName>//svc&amp;more</ServiceName>") != std::string::npos);
  REQUIRE(Decoded(doc) == m);
  // Two documents in a row on one thread: the writer is reused, nothing carries over.
  Message n;
  n.body = "y";
  REQUIRE(Decoded(EncodeSrmp(n)) == n);
  REQUIRE(EncodeSrmp(m) == doc);
}

TEST_CASE("srmp: without local state, what the receiving store sets anew is left out",
          "[srmp]") {
  Message m = Full();
  SrmpStream link{"uid:" + FormatGuid(NewGuid()) + "\\42", 7, 6};
  std::string doc = EncodeSrmp(m, &link, false);
  for (const char* gone : {"<ArrivedTime>", "<AwaitingArrival", "<AbortCount>", "<Status>",
                           "<QueuingOrder>", "<MessageEnqueueTime>", "<DeliveryCount>"}) {
    INFO(gone);
    CHECK(doc.find(gone) == std::string::npos);
  }
  Message want = m;
  want.arrived_time = 0;
  want.awaiting_arrival = false;
  want.abort_count = 0;
  want.status = 1;
  want.queuing_order = 0;
  want.message_enqueue_time = 0;
  want.delivery_count = 0;
  SrmpStream got;
  REQUIRE(Decoded(doc, &got) == want);
  REQUIRE(got.current == 7);
  // The rest of <Mq> stays.
  CHECK(doc.find("<MoveCount>") != std::string::npos);
  CHECK(doc.find("<VisibleTime>") != std::string::npos);
}

TEST_CASE("srmp: dates", "[srmp]") {
  REQUIRE(FormatSrmpTime(0) == "19700101T000000");
  REQUIRE(FormatSrmpTime(2147483647000) == "20380119T031407");
  // MSMQ's form is whole seconds ([MC-MQSRM] 2.2.5.1.1); a deadline rounds up.
  REQUIRE(FormatSrmpTime(1182351599001) == "20070620T145959");
  REQUIRE(FormatSrmpTime(1182351599001, true) == "20070620T150000");
  REQUIRE(FormatSrmpTime(1182351599000, true) == "20070620T145959");
  REQUIRE(FormatSrmpTimeMs(1182351599001) == "20070620T145959.001");
  REQUIRE(FormatSrmpTimeMs(1182351599000) == "20070620T145959");
  REQUIRE(Ms("20070620T145959.001") == 1182351599001);
  REQUIRE(Ms("20070620T145959,5") == 1182351599500);
  for (const char* bad : {"", "2007062T145959", "20070620 145959", "20070231T000000",
                          "20071320T000000", "20070620T246000", "20070620T145959.",
                          "20070620T145959x", "2007-06-20T14:59:59"}) {
    INFO(bad);
    REQUIRE(!ParseSrmpTime(bad).ok());
  }
}

TEST_CASE("srmp: the samples of [MC-MQSRM] section 4 read as printed", "[srmp]") {
  SECTION("4.1: no <Msmq>, no id, defaults, express") {
    Message m = Decoded(Fixture("4.1-simple.txt"));
    REQUIRE(m.label == "mqsender label");
    REQUIRE(m.body == "First Message");
    REQUIRE(m.id.empty());  // [MC-MQSRM] 2.2.4.3: ignored without <Msmq>
    REQUIRE(m.destination_queue == "DIRECT=http://machine2/msmq/private$/simpleq");
    REQUIRE(m.sent_time == Ms("20070608T164419"));
    // Without <Msmq>, <expiresAt> is the time to reach the queue ([MC-MQSRM] 3.1.5.1.4),
    // not a lifetime in the queue.
    REQUIRE(m.ttrq == Ms("20070609T164419"));
    REQUIRE(m.ttbr == 0);
    REQUIRE(m.express);
    REQUIRE(m.priority == kDefaultPriority);
  }
  SECTION("4.2: the <Msmq> element and an XML body of 223 bytes") {
    Message m = Decoded(Fixture("4.2-msmq-element.txt"));
    REQUIRE(m.label.empty());
    REQUIRE(m.id == MakeMessageId(*ParseGuid("caf195ea-615c-4264-ae08-11a4e60194c0"), 20503));
    REQUIRE(m.correlation_id == std::string(20, '\0'));
    REQUIRE(m.hash_algorithm == 32772);
    REQUIRE(m.priority == 3);
    REQUIRE(m.source_qm_guid == *ParseGuid("caf195ea-615c-4264-ae08-11a4e60194c0"));
    // MSMQ's defaults: time to reach the queue four days, time to be received INFINITE.
    REQUIRE(m.ttrq == Ms("20070723T031140"));
    REQUIRE(m.ttbr == 0);  // 20380119T031407
    REQUIRE(m.body.size() == 223);
    REQUIRE(m.body.rfind("<?xml version=\"1.0\"?>\r\n<Order ", 0) == 0);
    REQUIRE(m.body.substr(m.body.size() - 8) == "</Order>");
  }
  SECTION("4.2 without the HTTP request line and headers, and with LF line ends") {
    std::string doc = Fixture("4.2-msmq-element.txt");
    Message full = Decoded(doc);
    std::string bare = doc.substr(doc.find("\r\n\r\n") + 4);
    REQUIRE(bare.rfind("--MSMQ", 0) == 0);
    REQUIRE(Decoded(bare) == full);
    std::string lf = Fixture("4.1-simple.txt");
    for (size_t p; (p = lf.find("\r\n")) != std::string::npos;) lf.erase(p, 1);
    REQUIRE(Decoded(lf).body == "First Message");
  }
  SECTION("4.3: receipt requests, rp: prefixes, a response queue") {
    Message m = Decoded(Fixture("4.3-receipt-requests.txt"));
    REQUIRE(m.label.empty());  // "Generic label" has no MSMQ: prefix
    REQUIRE(m.ack == (kAckPosArrival | kAckPosReceive | kAckNegReceive));
    REQUIRE(m.admin_queue == "DIRECT=http://machine1/MSMQ/private$/receipts");
    REQUIRE(m.response_queue == "DIRECT=http://machine1/MSMQ/private$/Q1");
    REQUIRE(m.body == "Both delivery and commitment receipt requests");
  }
  SECTION("4.3 and 4.4: receipts are envelopes without a body part") {
    Message d = Decoded(Fixture("4.3-delivery-receipt.txt"));
    REQUIRE(d.msg_class == kClassAckReachQueue);
    REQUIRE(d.body.empty());
    REQUIRE(d.correlation_id == MakeMessageId(Guid{}, 1));
    REQUIRE(Decoded(Fixture("4.3-commitment-receipt.txt")).msg_class == kClassAckReceive);
    for (const char* f :
         {"4.4-stream-receipt-1.txt", "4.4-stream-receipt-2.txt", "4.4-stream-receipt-3.txt"}) {
      INFO(f);
      REQUIRE(Decoded(Fixture(f)).msg_class == 255);
    }
  }
  SECTION("4.4: a stream of three messages") {
    const char* files[] = {"4.4-stream-1.txt", "4.4-stream-2.txt", "4.4-stream-3.txt"};
    const char* bodies[] = {"First Message", "Message 0", "Last Message"};
    for (uint64_t i = 0; i < 3; ++i) {
      SrmpStream s;
      Message m = Decoded(Fixture(files[i]), &s);
      REQUIRE(s.stream_id == "uid:2744e4e1-2b48-43e8-b441-42745f280d53\\4839986701558349830");
      REQUIRE(s.current == i + 1);
      REQUIRE(s.previous == 0);
      REQUIRE(m.tx_sequence_id == 4839986701558349830ULL);
      REQUIRE(m.tx_sequence_number == i + 1);
      REQUIRE(m.body == bodies[i]);
      REQUIRE(m.priority == 0);
      REQUIRE(m.label == "mqsender label");
      REQUIRE(m.ttbr == m.sent_time + 86400000);  // <expiresAt> a day after <sentAt>
      REQUIRE(m.ttrq == m.ttbr);
    }
  }
  SECTION("4.5: PGM, a multicast address, no blank line after the part headers") {
    // Its VT_BSTR body is UTF-16LE, printed with a dot for each NUL: sent as MSMQ sends it,
    // it is stored as mq's text, UTF-8.
    std::string doc = Fixture("4.5-pgm.txt");
    size_t at = doc.find("a.r.d.e.n.w.h.i.t.e.");
    REQUIRE(at != std::string::npos);
    for (size_t i = at + 1; i < at + 20; i += 2) doc[i] = '\0';
    Message m = Decoded(doc);
    REQUIRE(m.destination_queue == "MULTICAST=234.1.1.1:8001");
    REQUIRE(m.body == "ardenwhite");
    REQUIRE(m.body_type == kBodyText);
  }
  SECTION("1.3.12 prints no body after its part headers: refused as truncated") {
    Message m;
    Status s = DecodeSrmp(Fixture("1.3.12-example.txt"), m);
    REQUIRE(!s.ok());
    REQUIRE(s.text() ==
            "MIME part 2: Content-Length 223 but only 0 bytes follow (truncated document)");
  }
}

TEST_CASE("srmp: correlation ids in base64 (MSMQ) or hex (seed 002)", "[srmp]") {
  std::string doc = Fixture("4.2-msmq-element.txt");
  // Seed 002's example, in MSMQ's OBJECTID layout: in mq's, the GUID's first three fields and
  // the counter are byte-swapped.
  std::string hex(40, 'A');
  for (size_t i = 0; i < 40; i += 4) hex.replace(i, 4, "ABCD");
  Message m = Decoded(Replace(doc, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", hex));
  REQUIRE(HexEncode(m.correlation_id) == "cdabcdabcdabcdababcdabcdabcdabcdcdabcdab");
  // The message id uuid:1@{0...0} as MSMQ writes it in a receipt's <Correlation> (4.3): the
  // same message id in mq.
  m = Decoded(Replace(doc, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAAEAAAA="));
  REQUIRE(m.correlation_id == MakeMessageId(Guid{}, 1));
  // A GUID's fields as Windows stores them.
  auto g = ParseGuid("00112233-4455-6677-8899-aabbccddeeff");
  std::string msmq = *HexDecode("33221100554477668899aabbccddeeff07000000");
  m = Decoded(Replace(doc, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", Base64Encode(msmq)));
  REQUIRE(m.correlation_id == MakeMessageId(*g, 7));
  REQUIRE(EncodeSrmp(m).find("<Correlation>" + Base64Encode(msmq) + "</Correlation>") !=
          std::string::npos);
  // An mq message id in its text form is taken as it is.
  m = Decoded(Replace(doc, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", FormatMessageId(MakeMessageId(*g, 7))));
  REQUIRE(m.correlation_id == MakeMessageId(*g, 7));
}

TEST_CASE("srmp: each malformed element is named", "[srmp]") {
  Message full = Full();
  full.express = false;
  const std::string doc = EncodeSrmp(full);
  const std::string guid = FormatGuid(full.source_qm_guid);
  const std::string body_cl = "Content-Length: " + std::to_string(full.body.size()) + "\r\n";
  struct Case {
    std::string from, to, error, from2 = {}, to2 = {};
  };
  std::vector<Case> cases = {
      {"</se:Header>", "</se:Headr>", "<se:Envelope>: not well-formed XML"},
      {"<se:Header>", "<se:Body/><se:Header>", "<se:Header>: missing"},
      {"<se:Body></se:Body>", "", "<se:Body>: missing"},
      {"xmlns:se=\"http://schemas.xmlsoap.org/soap/envelope/\"", "xmlns:se=\"urn:other\"",
       "<se:Envelope>: the root element is <Envelope>, not a SOAP 1.1 envelope"},
      {"<path ", "<pathx ", "<se:Header>/<path>: missing", "</path>", "</pathx>"},
      {"</path>", "</pathx>", "not well-formed"},
      {"<action>", "<actio>", "<path>/<action>: missing", "</action>", "</actio>"},
      {"<to>orders</to>", "", "<path>/<to>: missing"},
      {"<id>uuid:77@", "<id>uuid:x@", "<path>/<id>: 'uuid:x@"},
      {"<id>uuid:77@", "<id>uuid:4294967296@", "<path>/<id>: index 4294967296 does not fit"},
      {"<id>uuid:77@", "<id>77@", "<path>/<id>: '77@"},
      {"<properties se:mustUnderstand=\"1\">", "<propertie se:mustUnderstand=\"1\">",
       "<se:Header>/<properties>: missing", "</properties>", "</propertie>"},
      {"<expiresAt>20251130T013501</expiresAt>", "", "<properties>/<expiresAt>: missing"},
      {"<expiresAt>20251130T013501", "<expiresAt>2025-11-30",
       "<properties>/<expiresAt>: '2025-11-30' is not a date YYYYMMDDTHHMMSS"},
      {"<sentAt>20251130T013259<", "<sentAt>20251131T013259<",
       "<properties>/<sentAt>: '20251131T013259' is not a date"},
      {"<deliveryReceiptRequest><sendTo>admin</sendTo>", "<deliveryReceiptRequest>",
       "<services>/<deliveryReceiptRequest>/<sendTo>: missing"},
      {"<commitmentReceiptRequest><sendTo>admin</sendTo>", "<commitmentReceiptRequest>",
       "<services>/<commitmentReceiptRequest>/<sendTo>: missing"},
      {"<streamId>uid:", "<streamId>uuid:", "<Stream>/<streamId>: 'uuid:"},
      {"<streamId>uid:" + guid + "\\", "<streamId>uid:" + guid + "/", "<Stream>/<streamId>: 'uid:"},
      {"<current>5</current>", "", "<Stream>/<current>: missing"},
      {"<current>5</current>", "<current>five</current>",
       "<Stream>/<current>: 'five' is not a number"},
      {"<previous>4</previous>", "<previous>-4</previous>",
       "<Stream>/<previous>: '-4' is not a number"},
      {"<Class>49154</Class>", "", "<Msmq>/<Class>: missing"},
      {"<Class>49154</Class>", "<Class>65536</Class>",
       "<Msmq>/<Class>: 65536 is out of range 0..65535"},
      {"<Priority>6</Priority>", "", "<Msmq>/<Priority>: missing"},
      {"<Priority>6</Priority>", "<Priority>8</Priority>",
       "<Msmq>/<Priority>: 8 is out of range 0..7"},
      {"<Priority>6</Priority>", "<Priority>6</Priority><Priority>6</Priority>",
       "<Msmq>/<Priority>: appears twice"},
      {"<Correlation>", "<Correlation>AAAA", "<Msmq>/<Correlation>: 'AAAA"},
      {"<App>4294967295</App>", "<App>4294967296</App>",
       "<Msmq>/<App>: 4294967296 is out of range 0..4294967295"},
      {"<BodyType>4113</BodyType>", "", "<Msmq>/<BodyType>: missing"},
      {"<BodyType>4113</BodyType>", "<BodyType>json</BodyType>",
       "<Msmq>/<BodyType>: 'json' is not a number"},
      {"<HashAlgorithm>32772", "<HashAlgorithm>0x8004",
       "<Msmq>/<HashAlgorithm>: '0x8004' is not a number"},
      {"<ConnectorId>", "<ConnectorId>zz", "<Msmq>/<ConnectorId>: 'zz"},
      {"<Eod><First/>", "<Eod><ConnectorId>nope</ConnectorId><First/>",
       "<Msmq>/<Eod>/<ConnectorId>: 'nope' is not a GUID"},
      {"<Type>1</Type>", "", "<Msmq>/<Provider>/<Type>: missing"},
      {"<Name>Microsoft Base Cryptographic Provider</Name>", "",
       "<Msmq>/<Provider>/<Name>: missing"},
      {"<SourceQmGuid>" + guid + "</SourceQmGuid>", "", "<Msmq>/<SourceQmGuid>: missing"},
      {"<SourceQmGuid>" + guid, "<SourceQmGuid>" + guid + "0",
       "<Msmq>/<SourceQmGuid>: '" + guid + "0' is not a GUID"},
      {"<TTrq>20251130T013320</TTrq>", "", "<Msmq>/<TTrq>: missing"},
      {"<TTrq>20251130T013320", "<TTrq>tomorrow", "<Msmq>/<TTrq>: 'tomorrow' is not a date"},
      {"<Ack>15</Ack>", "<Ack>16</Ack>", "<Mq>/<Ack>: 16 is out of range 0..15"},
      {"<XactId>", "<XactId>0", "<Mq>/<XactId>: '0"},
      {"<Validation>X</Validation>", "<Validation>Y</Validation>",
       "<Mq>/<Validation>: 'Y' is not N, E or X"},
      {"<ArrivedTime>", "<ArrivedTime>x", "<Mq>/<ArrivedTime>: 'x"},
      {"<ConversationHandle>", "<ConversationHandle>x", "<Mq>/<ConversationHandle>: 'x"},
      {"<DeliveryCount>4</DeliveryCount>", "<DeliveryCount>-1</DeliveryCount>",
       "<Mq>/<DeliveryCount>: '-1' is not a number"},
      {"<Status>0</Status>", "<Status>4</Status>", "<Mq>/<Status>: 4 is out of range 0..3"},
      {"<to>orders</to>", "<to encoding=\"rot13\">orders</to>",
       "<path>/<to>: unknown encoding 'rot13'"},
      {"<to>orders</to>", "<to encoding=\"base64\">!!</to>", "<path>/<to>: invalid base64"},
      // MIME framing.
      {"boundary=\"MSMQ - SOAP boundary, 3\"", "boundary=\"other\"",
       "MIME: boundary 'other' not found"},
      {body_cl, "Content-Length: 8O\r\n", "MIME part 2: Content-Length '8O' is not a number"},
      {body_cl, "Content-Length: 80000\r\n", "MIME part 2: Content-Length 80000 but only"},
      {"Content-Type: text/xml; charset=UTF-8", "Content-Type: image/png",
       "MIME part 1: Content-Type 'image/png' is not text/xml"},
      {"; boundary=\"MSMQ - SOAP boundary, 3\"", "",
       "Content-Type 'multipart/related; "
       "type=text/xml' has no boundary"},
  };
  for (const auto& c : cases) {
    INFO("replace " << c.from << " by " << c.to);
    Message m;
    std::string bad = Replace(doc, c.from, c.to);
    if (!c.from2.empty()) bad = Replace(bad, c.from2, c.to2);
    Status s = DecodeSrmp(bad, m);
    REQUIRE(!s.ok());
    REQUIRE(s.code() == Code::kInvalidArg);
    INFO(s.text());
    REQUIRE(s.text().find(c.error) != std::string::npos);
  }
  SECTION("data after the closing boundary") {
    Message m;
    Status s = DecodeSrmp(doc + doc, m);
    REQUIRE(s.text() == "MIME: data after the closing boundary (one document at a time)");
  }
  SECTION("a DTD, and so any entity of one") {
    Message m;
    std::string dtd = Replace(doc, "<se:Envelope ",
                              "<!DOCTYPE x [<!ENTITY big \"bigbigbig\">]><se:Envelope ");
    REQUIRE(DecodeSrmp(dtd, m).text() ==
            "<se:Envelope>: a document type declaration (DTD) is not allowed in SOAP");
  }
  SECTION("an empty envelope part") {
    Message m;
    std::string empty = "--b\r\nContent-Type: text/xml\r\n\r\n\r\n--b--\r\n";
    REQUIRE(DecodeSrmp(empty, m).text() == "<se:Envelope>: the first MIME part is empty");
  }
  SECTION("no boundary and no envelope") {
    Message m;
    REQUIRE(DecodeSrmp("hello\r\n", m).text() ==
            "MIME: no multipart boundary and no <se:Envelope> found");
  }
}

TEST_CASE("srmp: a stream of documents splits at each closing boundary", "[srmp]") {
  Message a = Full(), b;
  b.body = "second";
  std::string da = SrmpHttpRequest(EncodeSrmp(a), "orders");
  std::string db = SrmpHttpRequest(EncodeSrmp(b), "orders");
  REQUIRE(da.rfind("POST /msmq/private$/orders HTTP/1.1\r\nHost: ", 0) == 0);
  REQUIRE(da.find("SOAPAction: \"MSMQMessage\"\r\n") != std::string::npos);
  std::string receipt = Fixture("4.4-stream-receipt-1.txt");
  std::string all = da + db + receipt + da;
  std::vector<Message> got;
  std::string_view rest = all;
  while (size_t end = SrmpDocumentEnd(rest)) {
    got.push_back(Decoded(rest.substr(0, end)));
    rest.remove_prefix(end);
  }
  REQUIRE(got.size() == 4);
  REQUIRE(got[0] == a);
  REQUIRE(got[1] == b);
  REQUIRE(got[2].msg_class == 255);
  REQUIRE(got[3] == a);
  REQUIRE(SrmpDocumentEnd("  \r\n") == 0);
}

TEST_CASE("SRMP dates agree with the C library's calendar, both ways") {
  // FormatSrmpTime and ParseSrmpTime do their own calendar arithmetic: gmtime_r is the oracle,
  // over leap days, century years and the ends of months from 1900 to 2400.
  for (int64_t sec = -2208988800; sec < 13569465600; sec += 86400 * 37 + 3661) {
    for (int64_t extra : {int64_t{0}, int64_t{86399}}) {
      int64_t s = sec + extra;
      time_t t = static_cast<time_t>(s);
      struct tm tm {};
      REQUIRE(gmtime_r(&t, &tm));
      char want[32];
      std::snprintf(want, sizeof want, "%04d%02d%02dT%02d%02d%02d", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
      REQUIRE(FormatSrmpTime(s * 1000) == want);
      REQUIRE(FormatSrmpTime(s * 1000 + 7) == want);
      REQUIRE(FormatSrmpTimeMs(s * 1000 + 7) == std::string(want) + ".007");
      auto back = ParseSrmpTime(want);
      REQUIRE(back.ok());
      REQUIRE(*back == s * 1000);
    }
  }
  CHECK(ParseSrmpTime("20240229T000000").ok());
  CHECK(!ParseSrmpTime("20230229T000000").ok());
  CHECK(!ParseSrmpTime("21000229T000000").ok());
  CHECK(ParseSrmpTime("20000229T000000").ok());
  CHECK(!ParseSrmpTime("20240431T000000").ok());
}

TEST_CASE("srmp: an envelope of more elements than any SRMP envelope has is refused early",
          "[srmp]") {
  // issue 23, defect 8: the parser's table of elements was about 55 times its input (8 MB of
  // <a/> took 438 MB). It now stops at 4,096 elements.
  std::string doc =
      "<se:Envelope xmlns:se=\"http://schemas.xmlsoap.org/soap/envelope/\"><se:Header>";
  for (int i = 0; i < 200000; ++i) doc += "<a/>";
  doc += "</se:Header><se:Body/></se:Envelope>";
  Message m;
  Status s = DecodeSrmp(doc, m);
  CHECK(s.code() == Code::kInvalidArg);
  CHECK(s.text().find("more than 4096 elements") != std::string::npos);
}

TEST_CASE("srmp: receipts and a stream's start are read", "[srmp]") {
  Message m;
  SrmpStream s;
  SrmpReceipt r;
  REQUIRE(DecodeSrmp(Fixture("4.4-stream-receipt-1.txt"), m, &s, &r).ok());
  CHECK(r.kind == SrmpReceipt::Kind::kStream);
  CHECK(r.stream_id == "uid:2744e4e1-2b48-43e8-b441-42745f280d53\\4839986701558349830");
  CHECK(r.last_ordinal == 1);
  REQUIRE(DecodeSrmp(Fixture("4.3-delivery-receipt.txt"), m, &s, &r).ok());
  CHECK(r.kind == SrmpReceipt::Kind::kDelivery);
  CHECK(r.message_id == "uuid:1@00000000-0000-0000-0000-000000000000");
  REQUIRE(DecodeSrmp(Fixture("4.3-commitment-receipt.txt"), m, &s, &r).ok());
  CHECK(r.kind == SrmpReceipt::Kind::kCommitment);
  CHECK(r.positive);
  REQUIRE(DecodeSrmp(Fixture("4.4-stream-1.txt"), m, &s, &r).ok());
  CHECK(r.kind == SrmpReceipt::Kind::kNone);
  CHECK(s.current == 1);
  CHECK(s.receipt_request);
  CHECK(s.send_receipts_to.rfind("http://machine1/MSMQ/private$/receipts", 0) == 0);
  REQUIRE(DecodeSrmp(Fixture("4.4-stream-2.txt"), m, &s, &r).ok());
  CHECK(s.current == 2);
  CHECK(s.send_receipts_to.empty());
}

TEST_CASE("srmp: delivery and commitment receipts are written as section 4.3's samples", "[srmp]") {
  SrmpReceiptDoc d;
  d.kind = SrmpReceiptDoc::Kind::kCommitment;
  d.to = "http://machine1/msmq/private$/receipts";
  d.message_id = MakeMessageId(Guid{}, 1);
  d.message_id_text = SrmpIdText(d.message_id);
  d.id_text = "uuid:34827@ac678228-2dd6-418b-b31f-0539ffeea853";
  d.received_time = 1'184'815'641'000;  // 20070719T032721
  d.sent_time = d.received_time;
  CHECK(d.message_id_text == "uuid:1@00000000-0000-0000-0000-000000000000");
  for (uint16_t cls : {kClassAckReceive, kClassNackReceiveTimeout, kClassAckReachQueue}) {
    d.cls = cls;
    d.kind = cls == kClassAckReachQueue ? SrmpReceiptDoc::Kind::kDelivery
                                        : SrmpReceiptDoc::Kind::kCommitment;
    std::string doc = EncodeReceipt(d);
    CAPTURE(doc);
    CHECK(doc.find("<action>MSMQ:</action>") != std::string::npos);
    CHECK(doc.find("<to>http://machine1/msmq/private$/receipts</to>") != std::string::npos);
    CHECK(doc.find("<id>uuid:34827@ac678228-2dd6-418b-b31f-0539ffeea853</id>") !=
          std::string::npos);
    CHECK(doc.find(fmt::format("<Class>{}</Class>", cls)) != std::string::npos);
    CHECK(doc.find("<Correlation>AAAAAAAAAAAAAAAAAAAAAAEAAAA=</Correlation>") != std::string::npos);
    if (cls == kClassAckReachQueue) {
      CHECK(doc.find("<deliveryReceipt><receivedAt>20070719T032721</receivedAt><id>uuid:1@"
                     "00000000-0000-0000-0000-000000000000</id></deliveryReceipt>") !=
            std::string::npos);
    } else {
      CHECK(doc.find(fmt::format("<commitmentReceipt><decidedAt>20070719T032721</decidedAt>"
                                 "<decision>{}</decision><id>uuid:1@00000000-0000-0000-0000-"
                                 "000000000000</id></commitmentReceipt>",
                                 cls == kClassAckReceive ? "positive" : "negative")) !=
            std::string::npos);
    }
    Message m;
    SrmpReceipt r;
    REQUIRE(DecodeSrmp(doc, m, nullptr, &r).ok());
    CHECK(r.kind == (cls == kClassAckReachQueue ? SrmpReceipt::Kind::kDelivery
                                                : SrmpReceipt::Kind::kCommitment));
    CHECK(r.positive == (cls != kClassNackReceiveTimeout));
    CHECK(r.message_id == "uuid:1@00000000-0000-0000-0000-000000000000");
    CHECK(m.msg_class == cls);
    CHECK(m.correlation_id == d.message_id);
  }
}

TEST_CASE("srmp: an HTTP link's stream and addresses are written as MSMQ reads them", "[srmp]") {
  Message m;
  m.id = MakeMessageId(NewGuid(), 3);
  m.destination_queue = "DIRECT=http://win:8080/msmq/private$/orders";
  m.response_queue = "DIRECT=HTTP://me/msmq/private$/replies";
  m.xact_id = std::string(20, 'x');
  SrmpStream s;
  s.stream_id = "uid:2744e4e1-2b48-43e8-b441-42745f280d53\\7";
  s.current = 3;
  s.previous = 0;
  s.previous_given = true;  // the stream's first ordinal, after two that were not in it
  s.send_receipts_to = "http://me/msmq/private$/order_queue$";
  s.receipt_request = true;
  std::string doc = EncodeSrmp(m, &s, false);
  CHECK(doc.find("<to>http://win:8080/msmq/private$/orders</to>") != std::string::npos);
  CHECK(doc.find("<rev><via>http://me/msmq/private$/replies</via></rev>") != std::string::npos);
  CHECK(doc.find("<DestinationMqf>DIRECT=http://win:8080/msmq/private$/orders</DestinationMqf>") !=
        std::string::npos);
  Message back;
  SrmpStream got;
  REQUIRE(DecodeSrmp(doc, back, &got).ok());
  CHECK(got.current == 3);
  CHECK(got.previous == 0);
  CHECK(got.previous_given);  // not current - 1
  CHECK(got.send_receipts_to == s.send_receipts_to);
  CHECK(got.receipt_request);
  // Without previous_given, a previous of 0 is left out: absent, it reads as current - 1.
  s.previous_given = false;
  s.send_receipts_to.clear();
  REQUIRE(DecodeSrmp(EncodeSrmp(m, &s, false), back, &got).ok());
  CHECK_FALSE(got.previous_given);
  CHECK(SrmpUrlOf("DIRECT=HTTPS://h/msmq/private$/q") == "https://h/msmq/private$/q");
  CHECK(SrmpUrlOf("orders") == "orders");
}

TEST_CASE("srmp: bodies travel as MSMQ's formatters read them, and come back as they were",
          "[srmp]") {
  struct Case {
    uint32_t type;
    std::string body;
    uint32_t wire;
    std::string wire_body;
  };
  const std::string utf16_hi = std::string("h\0i\0\xE9\0", 6);
  for (const Case& c :
       std::vector<Case>{{kBodyText, "hi\xC3\xA9", kBodyText, utf16_hi},  // VT_BSTR, UTF-16LE
                         {kBodyJson, "hi\xC3\xA9", kBodyText,
                          utf16_hi},                              // text to MSMQ, json to mq
                         {kBodyXml, "<a/>", kBodyEmpty, "<a/>"},  // XmlMessageFormatter's
                         {kBodyText, "\xFF\xFE", kBodyBytes, "\xFF\xFE"},  // no UTF-8: bytes
                         {kBodyBytes, "\x01\x02", kBodyBytes, "\x01\x02"},
                         {kBodyEmpty, "raw", kBodyEmpty, "raw"}}) {
    INFO(c.type);
    Message m;
    m.id = MakeMessageId(NewGuid(), 1);
    m.body_type = c.type;
    m.body = c.body;
    std::string doc = EncodeSrmp(m);
    CHECK(doc.find(fmt::format("<BodyType>{}</BodyType>", c.wire)) != std::string::npos);
    CHECK(doc.find("\r\n\r\n" + c.wire_body + "\r\n--") != std::string::npos);
    // mq's own type, when it is no VARTYPE, only in <Mq>.
    for (uint32_t mine : {kBodyJson, kBodyXml})
      CHECK((doc.find(fmt::format("<BodyType>{}</BodyType>", mine)) == std::string::npos ||
             (c.type == mine && doc.find("<Mq ") != std::string::npos)));
    Message back;
    REQUIRE(DecodeSrmp(doc, back).ok());
    CHECK(back.body_type == c.type);
    CHECK(back.body == c.body);
  }
  // .NET's string (VT_LPWSTR) is read as text too.
  Message m;
  m.id = MakeMessageId(NewGuid(), 1);
  m.body_type = kBodyLpwstr;
  m.body = utf16_hi;
  Message back;
  REQUIRE(DecodeSrmp(EncodeSrmp(m), back).ok());
  CHECK(back.body == "hi\xC3\xA9");
  CHECK(back.body_type == kBodyText);
  CHECK(Utf8ToUtf16Le("\xF0\x9F\x98\x80").size() == 4);    // a surrogate pair
  CHECK_FALSE(Utf16LeToUtf8(std::string("\x00\xD8", 2)));  // an unpaired surrogate
  CHECK_FALSE(Utf16LeToUtf8("abc"));                       // an odd length
}
