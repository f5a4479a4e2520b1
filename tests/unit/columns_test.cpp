// columns_test.cpp: Service Broker column lists (`*`, names, repeats, unknown names) and the
// TSV, CSV and JSON encodings of their values (lib/output/columns.hpp).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "output/columns.hpp"
#include "base/ids.hpp"

using namespace mq;

namespace {

// String members are move-assigned from std::string values: assigning a literal to a
// std::string trips GCC 12's -Wrestrict false positive at -O2/-O3 (GCC bug 105329).
Message Sample() {
  using namespace std::string_literals;
  Message m;
  m.id = MakeMessageId(*ParseGuid("8aa8ebae-0ddc-419e-b6c0-57102c449d93"), 3);
  m.lookup_id = 3;
  m.queue = "q"s;
  m.priority = 5;
  m.label = "L"s;
  m.body = "x"s;
  m.conversation_handle = *ParseGuid("6F9619FF-8B86-D011-B42D-00C04FC964FF");
  m.conversation_group_id = *ParseGuid("11111111-2222-3333-4444-555555555555");
  m.message_sequence_number = 7;
  m.service_name = "//svc"s;
  m.service_contract_name = "//contract"s;
  m.message_type_name = "//t,1"s;
  m.validation = 'X';
  m.status = 1;
  m.queuing_order = 3;
  m.message_enqueue_time = 1764466379123;
  m.delivery_count = 2;
  return m;
}

}  // namespace

TEST_CASE("* is the queue columns of REFERENCE.md 3.1 in order", "[columns]") {
  auto c = ColumnList::Parse("*", RowFormat::kTsv);
  REQUIRE(c.ok());
  CHECK(c->names() == std::vector<std::string>{
                          "status", "priority", "queuing_order", "conversation_group_id",
                          "conversation_handle", "message_sequence_number", "service_name",
                          "service_contract_name", "message_type_name", "validation",
                          "message_body", "message_id", "message_enqueue_time"});
  CHECK(c->Header() ==
        "status\tpriority\tqueuing_order\tconversation_group_id\tconversation_handle\t"
        "message_sequence_number\tservice_name\tservice_contract_name\tmessage_type_name\t"
        "validation\tmessage_body\tmessage_id\tmessage_enqueue_time\n");
  CHECK(c->Row(Sample()) ==
        "1\t5\t3\t11111111-2222-3333-4444-555555555555\t6f9619ff-8b86-d011-b42d-00c04fc964ff\t"
        "7\t//svc\t//contract\t//t,1\tX\tx\t{8aa8ebae-0ddc-419e-b6c0-57102c449d93}\\\\3\t"
        "2025-11-30T01:32:59.123Z\n");
}

TEST_CASE("column lists", "[columns]") {
  SECTION("names in the given order, repeats allowed, * among names") {
    auto c = ColumnList::Parse("priority,status,priority,*,lookup_id", RowFormat::kCsv);
    REQUIRE(c.ok());
    CHECK(c->names().size() == 3 + 13 + 1);
    CHECK(c->names()[2] == "priority");
    CHECK(c->names()[3] == "status");
    CHECK(c->names().back() == "lookup_id");
    CHECK(c->Header().substr(0, 25) == "priority,status,priority,");
  }
  SECTION("unknown, empty and object-id columns are usage errors") {
    for (const char* spec : {"nope", "status,", ",status", "", "STATUS", "service_id",
                             "service_contract_id", "message_type_id"}) {
      auto c = ColumnList::Parse(spec, RowFormat::kTsv);
      INFO(spec);
      REQUIRE_FALSE(c.ok());
      CHECK(c.status().code() == Code::kInvalidArg);
    }
    CHECK(ColumnList::Parse("service_id", RowFormat::kTsv).status().text().find("service_name") !=
          std::string::npos);
  }
  SECTION("alias=name renames a column in the header and in JSON") {
    auto c = ColumnList::Parse("h=conversation_handle,status,body=message_body", RowFormat::kTsv);
    REQUIRE(c.ok());
    CHECK(c->names() ==
          std::vector<std::string>{"conversation_handle", "status", "message_body"});
    CHECK(c->Header() == "h\tstatus\tbody\n");
    auto j = ColumnList::Parse("p=priority,priority", RowFormat::kJson);
    REQUIRE(j.ok());
    CHECK(j->Row(Sample()) == "{\"p\":5,\"priority\":5}\n");
    for (const char* spec : {"=status", "a b=status", "x=*", "x=nope", "p=priority,p=status"}) {
      INFO(spec);
      CHECK_FALSE(ColumnList::Parse(spec, RowFormat::kJson).ok());
    }
  }
  SECTION("JSON refuses a repeated key") {
    CHECK_FALSE(ColumnList::Parse("status,status", RowFormat::kJson).ok());
    CHECK_FALSE(ColumnList::Parse("*,status", RowFormat::kJson).ok());
    CHECK(ColumnList::Parse("status,status", RowFormat::kTsv).ok());
  }
}

TEST_CASE("TSV escapes like PostgreSQL COPY text", "[columns]") {
  CHECK(TsvEscape("plain ✓") == "plain ✓");
  CHECK(TsvEscape("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e");
  CHECK(TsvEscape(std::string("\0\x01\x7f", 3)) == "\\x00\\x01\\x7f");
  // Not UTF-8: every high byte escaped, so that the row is 7-bit clean.
  CHECK(TsvEscape("\xff\xc3\xa9") == "\\xff\\xc3\\xa9");
  CHECK(TsvEscape("\xc3\xa9") == "\xc3\xa9");
  CHECK(TsvEscape("\\N") == "\\\\N");  // never mistaken for NULL
  auto c = ColumnList::Parse("service_name,message_body,label", RowFormat::kTsv);
  REQUIRE(c.ok());
  Message m;
  m.label = "";
  CHECK(c->Row(m) == "\\N\t\t\n");  // NULL, empty body, empty label
}

TEST_CASE("CSV quotes as RFC 4180 and writes bodies that are not text as hex escapes",
          "[columns]") {
  CHECK(CsvQuote("plain") == "plain");
  CHECK(CsvQuote("") == "\"\"");
  CHECK(CsvQuote("a,b") == "\"a,b\"");
  CHECK(CsvQuote("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(CsvQuote("two\nlines") == "\"two\nlines\"");
  CHECK(CsvQuote("cr\r") == "\"cr\r\"");
  CHECK(CsvBody("text, too") == "\"text, too\"");
  CHECK(CsvBody(std::string("a\0b", 3)) == "\\x610062");
  CHECK(CsvBody("\xff") == "\\xff");
  CHECK(CsvBody("\\x41") == "\\x5c783431");  // text that looks like hex is hex-encoded
  auto c = ColumnList::Parse("conversation_handle,message_type_name,message_body",
                             RowFormat::kCsv);
  REQUIRE(c.ok());
  Message m;
  CHECK(c->Row(m) == ",,\"\"\r\n");  // NULL, NULL, empty body
  CHECK(c->Row(Sample()) == "6f9619ff-8b86-d011-b42d-00c04fc964ff,\"//t,1\",x\r\n");
}

TEST_CASE("JSON rows have exactly the listed keys in order", "[columns]") {
  auto c = ColumnList::Parse("message_body,status,conversation_group_id,message_enqueue_time,"
                             "service_name,message_id",
                             RowFormat::kJson);
  REQUIRE(c.ok());
  CHECK(c->Header().empty());
  Message m = Sample();
  m.service_name.clear();
  CHECK(c->Row(m) ==
        "{\"message_body\":\"x\",\"status\":1,"
        "\"conversation_group_id\":\"11111111-2222-3333-4444-555555555555\","
        "\"message_enqueue_time\":\"2025-11-30T01:32:59.123Z\",\"service_name\":null,"
        "\"message_id\":\"{8aa8ebae-0ddc-419e-b6c0-57102c449d93}\\\\3\"}\n");
  m.body = std::string("\xff\0", 2);
  auto j = nlohmann::json::parse(c->Row(m));
  CHECK(j["message_body"] == nlohmann::json{{"base64", "/wA="}});
}
