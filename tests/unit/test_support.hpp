// test_support.hpp: what several unit tests share: a store in a temporary directory, removed
// afterwards, and a message source of one message.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace mq::test {

struct TempStore {
  std::string path;
  std::unique_ptr<Store> store;
  TempStore() {
    char tmpl[] = "/tmp/mq-unit.XXXXXX";
    path = mkdtemp(tmpl);
    OpenOptions o;
    o.dir = path + "/s";
    o.create = true;
    auto s = Store::Open(o);
    REQUIRE(s.ok());
    store = std::move(*s);
  }
  ~TempStore() {
    store.reset();
    std::filesystem::remove_all(path);
  }
};

// Keeps what a peek or receive gives it.
class Collect : public MessageSink {
 public:
  std::vector<Message> got;
  Status Add(const Message& m) override {
    got.push_back(m);
    return {};
  }
  Status Flush() override { return {}; }
};

// Gives Store::Append the messages of `v` (again after a Rewind).
class Vec : public MessageSource {
 public:
  std::vector<Message> v;
  size_t i = 0;
  Result<bool> Next(Message& m) override {
    if (i >= v.size()) return false;
    m = v[i++];
    return true;
  }
  Status Rewind() override {
    i = 0;
    return {};
  }
};

// Gives Store::Append one message (again after a Rewind).
struct OneMessage : MessageSource {
  Message m;
  bool done = false;
  explicit OneMessage(Message msg) : m(std::move(msg)) {}
  Result<bool> Next(Message& out) override {
    if (done) return false;
    out = m;
    done = true;
    return true;
  }
  Status Rewind() override {
    done = false;
    return {};
  }
};

// Sends n messages "m0".."m{n-1}" to `q` in one append (making the queue if `create`); their ids.
inline std::vector<std::string> SendN(Store& st, const std::string& q, int n, bool create = true) {
  Vec src;
  for (int i = 0; i < n; ++i) {
    Message m;
    m.body = "m" + std::to_string(i);
    src.v.push_back(m);
  }
  AppendOptions o;
  o.create_queue = create;
  std::vector<std::string> ids;
  REQUIRE(st.Append(*ParseQueueRef(q), o, src, &ids).ok());
  return ids;
}

}  // namespace mq::test
