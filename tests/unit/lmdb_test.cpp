// lmdb_test.cpp: the sequential cursor paths of lmdb::Txn (PutSeq, PutNewSeq, GetSeq,
// DelSeq) give the results of the plain calls whatever the order of the keys: a batch usually
// goes in increasing order, but nothing may depend on it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/codec.hpp"
#include "store/lmdb.hpp"

using namespace mq;

namespace {

struct TempEnv {
  std::string path;
  lmdb::Env env;
  TempEnv() {
    char tmpl[] = "/tmp/mq-lmdb.XXXXXX";
    path = mkdtemp(tmpl);
    REQUIRE(env.Open(path, 0600, 64 << 20, 4).ok());
  }
  ~TempEnv() { std::filesystem::remove_all(path); }
};

std::string Key(uint64_t i) {
  std::string k;
  PutU64BE(k, i);
  return k;
}

// Every entry of `dbi`, in key order.
std::map<std::string, std::string> Dump(lmdb::Txn& txn, lmdb::Dbi dbi) {
  std::map<std::string, std::string> out;
  lmdb::Cursor c(txn, dbi);
  for (bool on = c.First(); on; on = c.Next()) out.emplace(c.key(), c.value());
  return out;
}

}  // namespace

TEST_CASE("sequential puts, gets and deletes agree with the plain ones in any key order",
          "[lmdb]") {
  TempEnv t;
  std::vector<uint64_t> ids(3000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i * 7;
  std::mt19937 rng(42);
  // Increasing (a batch), decreasing, and shuffled orders.
  std::vector<std::vector<uint64_t>> orders = {ids, {ids.rbegin(), ids.rend()}, ids};
  std::shuffle(orders[2].begin(), orders[2].end(), rng);
  for (const auto& order : orders) {
    auto txn = lmdb::Txn::Begin(t.env, true);
    REQUIRE(txn.ok());
    auto dbi = txn->OpenDb("d", true);
    REQUIRE(dbi.ok());
    REQUIRE(txn->Clear(*dbi).ok());
    std::map<std::string, std::string> want;
    for (uint64_t i : order) {
      // Interleaved with plain puts of keys in between, which move nothing of the cursor's.
      REQUIRE(txn->PutSeq(*dbi, Key(i), "v" + std::to_string(i)).ok());
      want[Key(i)] = "v" + std::to_string(i);
      if (i % 3 == 0) {
        REQUIRE(txn->Put(*dbi, Key(i + 1), "p").ok());
        want[Key(i + 1)] = "p";
      }
    }
    CHECK(Dump(*txn, *dbi) == want);
    // PutNewSeq refuses a present key and leaves its value; takes an absent one.
    for (uint64_t i : order) {
      auto fresh = txn->PutNewSeq(*dbi, Key(i), "again");
      REQUIRE(fresh.ok());
      CHECK_FALSE(*fresh);
      auto other = txn->PutNewSeq(*dbi, Key(i + 2), "n");
      REQUIRE(other.ok());
      CHECK(*other == (want.count(Key(i + 2)) == 0));
      want.emplace(Key(i + 2), "n");
    }
    CHECK(Dump(*txn, *dbi) == want);
    // GetSeq and DelSeq find exactly what is there.
    for (uint64_t i : order) {
      auto v = txn->GetSeq(*dbi, Key(i));
      REQUIRE(v);
      CHECK(*v == want[Key(i)]);
      CHECK_FALSE(txn->GetSeq(*dbi, Key(i) + "x"));
      auto gone = txn->DelSeq(*dbi, Key(i));
      REQUIRE(gone.ok());
      CHECK(*gone);
      want.erase(Key(i));
      auto again = txn->DelSeq(*dbi, Key(i));
      REQUIRE(again.ok());
      CHECK_FALSE(*again);
    }
    CHECK(Dump(*txn, *dbi) == want);
    REQUIRE(txn->Commit().ok());
  }
}

TEST_CASE("a full map is a resource error that the transaction remembers", "[lmdb]") {
  char tmpl[] = "/tmp/mq-lmdb.XXXXXX";
  std::string path = mkdtemp(tmpl);
  {
    lmdb::Env env;
    REQUIRE(env.Open(path, 0600, 1 << 20, 4).ok());  // 1 MiB
    auto txn = lmdb::Txn::Begin(env, true);
    REQUIRE(txn.ok());
    auto dbi = txn->OpenDb("t", true);
    REQUIRE(dbi.ok());
    CHECK_FALSE(txn->map_full());
    Status s;
    std::string value(1000, 'v');
    for (uint64_t i = 0; i < 10000 && s.ok(); ++i) s = txn->Put(*dbi, Key(i), value);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == Code::kInsufficientResources);
    CHECK(ExitCode(s) == 6);
    CHECK(txn->map_full());
    lmdb::Txn moved = std::move(*txn);
    CHECK(moved.map_full());  // a moved transaction keeps what it found
  }
  std::filesystem::remove_all(path);
}
