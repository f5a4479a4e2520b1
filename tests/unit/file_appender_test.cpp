// file_appender_test.cpp: FileAppender (lib/output/format.hpp), the writer of --into: appends,
// writes the header only into an empty file, reports errors with their errno's code.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "output/format.hpp"

using namespace mq;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mq-unit-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("FileAppender appends whole batches, the header only into an empty file",
          "[format]") {
  TempDir t;
  std::string path = t.path + "/rows";
  {
    auto f = FileAppender::Open(path);
    REQUIRE(f.ok());
    REQUIRE((*f)->Append("1\n2\n", "h\n").ok());
    REQUIRE((*f)->Append("3\n", "h\n").ok());
  }
  auto g = FileAppender::Open(path);  // a second run appends, without a second header
  REQUIRE(g.ok());
  REQUIRE((*g)->Append("4\n", "h\n").ok());
  CHECK(Slurp(path) == "h\n1\n2\n3\n4\n");
  CHECK((*g)->path() == path);
}

TEST_CASE("FileAppender errors", "[format]") {
  TempDir t;
  SECTION("a missing directory fails at open") {
    auto f = FileAppender::Open(t.path + "/no/such/file");
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == Code::kIo);
  }
  SECTION("a full device is MQ_ERROR_INSUFFICIENT_RESOURCES") {
    auto f = FileAppender::Open("/dev/full");
    // Linux always has /dev/full: a failure to open it is a failure, not a reason to pass.
    REQUIRE(f.ok());
    CHECK((*f)->Append("x\n", "").code() == Code::kInsufficientResources);
  }
  SECTION("a device is written without sync; the header goes first, once") {
    auto f = FileAppender::Open("/dev/null");
    REQUIRE(f.ok());
    CHECK((*f)->Append("x\n", "h\n").ok());
    CHECK((*f)->Append("y\n", "h\n").ok());
  }
}
