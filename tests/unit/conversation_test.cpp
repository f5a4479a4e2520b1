// conversation_test.cpp: the RECEIVE order encoded in the conversation index keys, the group
// selection key, record round trips, body validation, and group selection through the store
// (priority, locked groups skipped, WHERE, TOP).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>

#include "store/conversation.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

using namespace mq;

namespace {

Guid G(uint8_t b) {
  Guid g{};
  g.fill(b);
  return g;
}

struct TempStore : test::TempStore {
  TempStore() { REQUIRE(store->CreateQueue(*ParseQueueRef("q"), {}).ok()); }
  // Sends `body` on conversation `conv` (created if `create`), in group `group` if not nil.
  void Send(const Guid& conv, bool create, int priority, const std::string& body,
            const Guid& group = Guid{}) {
    test::OneMessage src{Message()};
    src.m.conversation_handle = conv;
    src.m.conversation_group_id = group;
    src.m.priority = static_cast<uint8_t>(priority);
    src.m.body = body;
    src.m.message_type_name = "DEFAULT";
    AppendOptions o;
    o.new_conversation = create;
    Status s = store->Append(*ParseQueueRef("q"), o, src, nullptr);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  void Plain(int priority, const std::string& body) {
    test::OneMessage src{Message()};
    src.m.priority = static_cast<uint8_t>(priority);
    src.m.body = body;
    REQUIRE(store->Append(*ParseQueueRef("q"), {}, src, nullptr).ok());
  }
};

class Bodies : public MessageSink {
 public:
  std::vector<std::string> got;
  Status Add(const Message& m) override {
    got.push_back(m.body);
    return {};
  }
  Status Flush() override { return {}; }
};

std::vector<std::string> Receive(Store& st, Selection sel = {}) {
  Bodies b;
  Status s = st.Receive(*ParseQueueRef("q"), sel, {}, b);
  if (!s.ok()) REQUIRE(s.code() == Code::kMessageNotFound);
  return b.got;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("conversation index keys sort in RECEIVE order", "[conversation]") {
  // Higher priority conversations first, then older ones; an Error message first in its
  // conversation; then ascending sequence numbers (big-endian: 256 after 2).
  std::vector<std::string> keys = {
      ConvMsgKey(1, G(9), 3, 2, G(2), false, 256), ConvMsgKey(1, G(9), 3, 2, G(2), false, 2),
      ConvMsgKey(1, G(9), 3, 1, G(1), false, 7),   ConvMsgKey(1, G(9), 6, 5, G(5), false, 0),
      ConvMsgKey(1, G(9), 3, 2, G(2), true, 900),
  };
  for (auto& k : keys) REQUIRE(k.size() == kConvMsgKeySize);
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<std::string>{keys[3], keys[2], keys[4], keys[1], keys[0]});
  // Every key of a group shares its prefix; of a conversation, its own.
  for (auto& k : keys) CHECK(k.compare(0, 20, ConvMsgGroupPrefix(1, G(9))) == 0);
  CHECK(keys[0].compare(0, 45, ConvMsgConvPrefix(1, G(9), 3, 2, G(2))) == 0);
}

TEST_CASE("group selection keys: priority, then the head's arrival", "[conversation]") {
  std::string a = GroupSelKey(4, 7, 100, G(1));
  std::string b = GroupSelKey(4, 3, 5, G(2));
  std::string c = GroupSelKey(4, 3, 6, G(0));
  std::string other_queue = GroupSelKey(5, 7, 1, G(0));
  REQUIRE(a.size() == kGroupSelKeySize);
  CHECK(a < b);
  CHECK(b < c);
  CHECK(c < other_queue);
  CHECK(OrderBand(7, false, false) == 0);
  CHECK(OrderBand(0, false, false) == 7);
  CHECK(OrderBand(7, true, false) == 8);
  CHECK(OrderBand(0, true, true) == 23);
}

TEST_CASE("conversation and group records round-trip", "[conversation]") {
  ConvRecord c;
  c.qid = 7;
  c.group = G(3);
  c.state = ConvState::kError;
  c.next_seq = 1234567;
  c.priority = 6;
  c.rank = 42;
  c.count = 9;
  c.service = "//svc";
  c.contract = "//contract";
  c.created = 1700000000000;
  ConvRecord d;
  REQUIRE(DecodeConv(EncodeConv(c), d));
  CHECK(EncodeConv(d) == EncodeConv(c));
  CHECK(d.state == ConvState::kError);
  GroupRecord g;
  g.convs = 2;
  g.count = 10;
  g.locked = 3;
  g.holder = 77;
  g.sel_key = GroupSelKey(1, 2, 3, G(4));
  GroupRecord h;
  REQUIRE(DecodeGroup(EncodeGroup(g), h));
  CHECK(EncodeGroup(h) == EncodeGroup(g));
  CHECK_FALSE(DecodeConv("", d));
}

TEST_CASE("validation: none, empty, well-formed XML", "[conversation]") {
  CHECK(ValidateBody('N', "anything <", "t").ok());
  CHECK(ValidateBody('E', "", "t").ok());
  CHECK(ValidateBody('E', "x", "t").code() == Code::kValidationFailed);
  CHECK(ValidateBody('X', "<a b='1'><c/></a>", "t").ok());
  // Bounded work: limits no real document meets, refused before libxml2 parses.
  {
    std::string wide = "<a";
    for (int i = 0; i < 1001; ++i) wide += " a" + std::to_string(i) + "='x'";
    Status s = ValidateBody('X', wide + "/>", "t");
    CHECK(s.code() == Code::kValidationFailed);
    CHECK(s.text().find("more than 1000 attributes") != std::string::npos);
    std::string deep;
    for (int i = 0; i < 257; ++i) deep += "<a>";
    for (int i = 0; i < 257; ++i) deep += "</a>";
    CHECK(ValidateBody('X', deep, "t").text().find("nested more than 256 deep") !=
          std::string::npos);
    CHECK(ValidateBody('X', "<r><!-- <a b='1' c='2' d='3'> --><b t='a=b'/></r>", "t").ok());
  }
  CHECK(ValidateBody('X', "<?xml version='1.0'?><a>&amp;</a>", "t").ok());
  CHECK(ValidateBody('X', "<a><b></a>", "t").code() == Code::kValidationFailed);
  CHECK(ValidateBody('X', "<a/><b/>", "t").code() == Code::kValidationFailed);
  CHECK(ValidateBody('X', "", "t").code() == Code::kValidationFailed);
  // An external DTD is never fetched (XML_PARSE_NONET): with one declared, an undeclared
  // entity is a validity matter, not one of form.
  CHECK(ValidateBody('X', "<!DOCTYPE a SYSTEM 'http://127.0.0.1:1/x.dtd'><a>&e;</a>", "t").ok());
  CHECK(*ParseValidation("well-formed-xml") == 'X');
  CHECK(!ParseValidation("valid-xml").ok());
  std::string body = ErrorBody(7, "a<b");
  CHECK(ValidateBody('X', body, "t").ok());
  // Control characters cannot be in XML 1.0 at all: the body stays well-formed (issue 15).
  body = ErrorBody(7, std::string("a\x01" "b\x1f\x7f\tc\n", 9));
  CHECK(ValidateBody('X', body, "t").ok());
  CHECK(body.find("a\xEF\xBF\xBD" "b") != std::string::npos);
}

TEST_CASE("validation of several bodies: the first that fails, in their order", "[conversation]") {
  CHECK(ValidateBodies({}).ok());
  CHECK(ValidateBodies({{'X', "<a/>", "x"}, {'E', "", "e"}, {'N', "<", "n"}}).ok());
  // An XML fault after a lexical one: the lexical one, which comes first, is the status.
  Status s = ValidateBodies({{'X', "<a/>", "x"}, {'E', "full", "e"}, {'X', "<a>", "x"}});
  CHECK(s.code() == Code::kValidationFailed);
  CHECK(s.text() == "message type 'e' requires an empty body (4 bytes given); nothing was sent");
  // An XML fault before a lexical one: the XML one, though the parser is asked last.
  s = ValidateBodies({{'X', "<a></b>", "x"}, {'X', "", "y"}});
  CHECK(s.code() == Code::kValidationFailed);
  CHECK(s.text().rfind("message type 'x' requires well-formed XML: Opening and ending tag "
                       "mismatch",
                       0) == 0);
  auto fault = BodyFault('X', "<a/><b/>");
  REQUIRE(fault.ok());
  CHECK(fault->rfind("well-formed XML: ", 0) == 0);
  CHECK(BodyFault('X', "<a/>").value().empty());
}

// A message type made well-formed XML after a send checked its bodies and before its write
// transaction: the transaction checks no XML (a static tool's check is a helper process), the
// send checks its bodies again, and a bad body is refused with nothing stored.
class TypeMadeLate : public MessageSource {
 public:
  TypeMadeLate(Store& st, std::string body) : st_(st), body_(std::move(body)) {}
  Result<bool> Next(Message& m) override {
    if (done_) {
      // The end of a pass: the first is the precheck's, before the transaction.
      if (++passes_ == 1) REQUIRE(st_.CreateMessageType("late", 'X').ok());
      return false;
    }
    m = Message();
    m.body = body_;
    m.message_type_name = "late";
    done_ = true;
    return true;
  }
  Status Rewind() override {
    done_ = false;
    return {};
  }
  int passes_ = 0;

 private:
  Store& st_;
  std::string body_;
  bool done_ = false;
};

TEST_CASE("a type made XML while a send checked its bodies: checked again, outside the "
          "transaction",
          "[conversation]") {
  {
    TempStore t;
    TypeMadeLate src(*t.store, "<a>");
    Status s = t.store->Append(*ParseQueueRef("q"), {}, src, nullptr);
    CHECK(s.code() == Code::kValidationFailed);
    CHECK(s.text().find("requires well-formed XML") != std::string::npos);
    CHECK(Receive(*t.store).empty());
  }
  {
    TempStore t;
    TypeMadeLate src(*t.store, "<a/>");
    Status s = t.store->Append(*ParseQueueRef("q"), {}, src, nullptr);
    INFO(s.ToString());
    CHECK(s.ok());
    CHECK(Receive(*t.store) == V{"<a/>"});
    // Read to its end by the precheck, the precheck again (after the transaction that found
    // the type changed stopped at its message) and the transaction that stored it; checked in
    // that first transaction, it would have been read to its end twice.
    CHECK(src.passes_ == 3);
  }
}

TEST_CASE("group selection: highest priority, whole group, locked groups skipped",
          "[conversation]") {
  TempStore t;
  Store& st = *t.store;
  t.Send(G(1), true, 2, "low.0");
  t.Send(G(1), false, 2, "low.1");
  t.Send(G(2), true, 6, "high.0");
  t.Send(G(3), true, 4, "mid-other.0", G(2));  // joins group 2 at priority 4
  t.Send(G(2), false, 6, "high.1");
  t.Plain(5, "plain5");

  SECTION("order: group 2 (conversation 2 before 3), plain, group 1") {
    CHECK(Receive(st) == V{"high.0", "high.1", "mid-other.0"});
    CHECK(Receive(st) == V{"plain5"});
    CHECK(Receive(st) == V{"low.0", "low.1"});
    CHECK(Receive(st).empty());
  }
  SECTION("TOP(1) takes one message of the best group") {
    Selection top;
    top.group_limit = 1;
    CHECK(Receive(st, top) == V{"high.0"});
    CHECK(Receive(st, top) == V{"high.1"});
    // The group's head is now a priority-4 conversation: the priority-5 plain message first.
    CHECK(Receive(st, top) == V{"plain5"});
    CHECK(Receive(st, top) == V{"mid-other.0"});
  }
  SECTION("a locked group is skipped until its lease ends; rollback keeps the order") {
    Selection top;
    top.group_limit = 1;
    auto lease = st.Lock(*ParseQueueRef("q"), top, {}, {}, nullptr);
    REQUIRE(lease.ok());
    REQUIRE((*lease)->messages().size() == 1);
    CHECK((*lease)->messages()[0].body == "high.0");
    CHECK(Receive(st, top) == V{"plain5"});
    CHECK(Receive(st, top) == V{"low.0"});
    Selection where;
    where.conversation = G(3);
    CHECK(Receive(st, where).empty());  // its group is locked
    REQUIRE(st.Finish(**lease, false, 0, nullptr).ok());
    CHECK(Receive(st) == V{"high.0", "high.1", "mid-other.0"});
    std::vector<std::string> problems;
    REQUIRE(st.Check(problems).ok());
    CHECK(problems.empty());
  }
  SECTION("WHERE conversation and group; unknown ones are errors") {
    Selection where;
    where.conversation = G(3);
    CHECK(Receive(st, where) == V{"mid-other.0"});
    where = Selection();
    where.group = G(1);
    CHECK(Receive(st, where) == V{"low.0", "low.1"});
    where.group = G(9);
    Bodies b;
    CHECK(st.Receive(*ParseQueueRef("q"), where, {}, b).code() == Code::kConversationNotFound);
  }
}

TEST_CASE("group selection stays one seek with many groups", "[conversation]") {
  TempStore t;
  for (int i = 1; i <= 200; ++i) {
    Guid g{};
    g[0] = static_cast<uint8_t>(i);
    g[15] = 1;
    // Appended rather than "m" + ...: GCC 12's -Wrestrict false positive at -O3 (bug 105329).
    std::string body = "m";
    body += std::to_string(i);
    t.Send(g, true, i % 8, body);
  }
  // Priority 7 groups first (i = 7, 15, ...), each in arrival order.
  CHECK(Receive(*t.store) == V{"m7"});
  CHECK(Receive(*t.store) == V{"m15"});
  std::vector<std::string> problems;
  REQUIRE(t.store->Check(problems).ok());
  CHECK(problems.empty());
}
