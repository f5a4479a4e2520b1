// names_test.cpp: the queue reference grammar of CLI.md.
#include <catch2/catch.hpp>

#include "base/names.hpp"

using namespace mq;

TEST_CASE("valid queue references", "[names]") {
  auto r = ParseQueueRef("orders");
  REQUIRE(r.ok());
  CHECK(r->Full() == "orders");
  CHECK(ParseQueueRef("orders;journal")->sub == "journal");
  CHECK(ParseQueueRef("orders;poison")->Full() == "orders;poison");
  CHECK(ParseQueueRef("system;deadletter")->IsSystem());
  CHECK(ParseQueueRef(".\\private$\\orders")->Full() == "orders");
  CHECK(ParseQueueRef("DIRECT=OS:.\\PRIVATE$\\orders")->Full() == "orders");
  CHECK(ParseQueueRef(std::string(124, 'a')).ok());
  CHECK(ParseQueueRef("A-z_0.9").ok());
  CHECK(ParseQueueRef("out;link")->IsOutgoing());
  CHECK_FALSE(ParseQueueRef("outbox")->IsOutgoing());
}

TEST_CASE("invalid queue references are E_INVALIDARG-class errors", "[names]") {
  for (const char* bad : {"", "../x", "a/b", ".hidden", "a b", "x;", "system", "system;foo",
                          "a\x01", "DIRECT=TCP:1.2.3.4\\private$\\q", "q;a;b"}) {
    auto r = ParseQueueRef(bad);
    INFO(bad);
    CHECK(r.status().code() == Code::kIllegalQueuePathname);
  }
  CHECK_FALSE(ParseQueueRef(std::string(125, 'a')).ok());
}

TEST_CASE("'out' is reserved for the links' outgoing queues", "[names]") {
  // A queue of the user's named out would have subqueues out;X, the outgoing queue of link X.
  // A bare "out" parses (a store made before links may hold a queue of that name, which
  // stays reachable); the store refuses to make one (store_test). out;LINK is outgoing.
  for (const char* name : {"out", ".\\private$\\out", "DIRECT=OS:.\\private$\\out"}) {
    auto r = ParseQueueRef(name);
    INFO(name);
    REQUIRE(r.ok());
    CHECK_FALSE(r->IsOutgoing());
  }
  CHECK(ParseQueueRef("out;link")->IsOutgoing());
  auto remote = ParseRemoteRef("link:out");
  CHECK(remote.status().code() == Code::kIllegalQueuePathname);
  CHECK((*ParseRemoteRef("link:outbox"))->queue == "outbox");
}

TEST_CASE("a list of destinations: a,b,LINK:c and MSMQ multiple-element format names", "[names]") {
  auto d = ParseDestinations("a,b,L:c");
  REQUIRE(d.ok());
  REQUIRE(d->size() == 3);
  CHECK((*d)[0].ref.Full() == "a");
  CHECK((*d)[0].remote_queue.empty());
  CHECK((*d)[1].ref.Full() == "b");
  CHECK((*d)[2].ref.Full() == "out;L");
  CHECK((*d)[2].remote_queue == "c");
  auto f = ParseDestinations("FORMATNAME:DIRECT=OS:.\\private$\\a,DIRECT=OS:L\\private$\\c");
  REQUIRE(f.ok());
  REQUIRE(f->size() == 2);
  CHECK((*f)[0].ref.Full() == "a");
  CHECK((*f)[1].remote_queue == "c");
  auto one = ParseDestinations("orders");
  REQUIRE(one.ok());
  CHECK(one->size() == 1);
  CHECK(ParseDestinations("L:c,L:d")->size() == 2);  // two queues through one link
  for (const char* bad :
       {"", "a,", ",a", "a,,b", "a,b,a", "a,.\\private$\\a", "L:c,L:c", "a,b;x;y", "FormatName:"}) {
    INFO(bad);
    CHECK(ParseDestinations(bad).status().code() == Code::kIllegalQueuePathname);
  }
}

TEST_CASE("an MSMQ HTTP machine's base URL, in one form", "[names]") {
  CHECK(*MsmqBaseUrl("HTTP://Win.Example:80/MSMQ/") == "http://win.example/msmq");
  CHECK(*MsmqBaseUrl("https://h:443/msmq") == "https://h/msmq");
  CHECK(*MsmqBaseUrl("http://127.0.0.1:8080/msmq") == "http://127.0.0.1:8080/msmq");
  CHECK(*MsmqBaseUrl("http://[::1]:8080/msmq") == "http://[::1]:8080/msmq");
  for (const char* bad : {"ftp://h/msmq", "http:///msmq", "http://h/other", "http://h:0/msmq",
                          "http://h:70000/msmq", "http://h/msmq/private$/q", "http://a b/msmq"}) {
    INFO(bad);
    CHECK(MsmqBaseUrl(bad).status().code() == Code::kIllegalFormatname);
  }
}

TEST_CASE("HTTP format names leave their link to be found by its url", "[names]") {
  auto d = ParseDestinations("FormatName:DIRECT=HTTPS://Host:8443/Msmq/PRIVATE$/orders,a");
  REQUIRE(d.ok());
  REQUIRE(d->size() == 2);
  CHECK((*d)[0].url == "https://host:8443/msmq");
  CHECK((*d)[0].remote_queue == "orders");
  CHECK((*d)[0].ref.Full() == "out");  // the link's name comes from the store
  CHECK((*d)[1].url.empty());
  for (const char* bad : {"DIRECT=HTTP://h/msmq/orders", "DIRECT=HTTP://h/msmq/private$/",
                          "DIRECT=HTTP://h/msmq/private$/a;b", "DIRECT=HTTP://h/x/private$/q"}) {
    INFO(bad);
    CHECK(ParseDestinations(bad).status().code() == Code::kIllegalQueuePathname);
  }
}
