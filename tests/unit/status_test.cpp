// status_test.cpp: the one mapping from codes to CLI.md's exit statuses.
#include <catch2/catch.hpp>

#include <cerrno>

#include "base/status.hpp"

using namespace mq;

TEST_CASE("status codes map to the exit table of CLI.md", "[status]") {
  CHECK(ExitCode(Status()) == 0);
  CHECK(ExitCode(Status(Code::kMessageNotFound, "")) == 1);
  CHECK(ExitCode(Status(Code::kIoTimeout, "")) == 1);
  CHECK(ExitCode(Status(Code::kInvalidArg, "")) == 2);
  CHECK(ExitCode(Status(Code::kIllegalQueuePathname, "")) == 2);
  CHECK(ExitCode(Status(Code::kLabelTooLong, "")) == 2);
  CHECK(ExitCode(Status(Code::kQueueNotFound, "")) == 3);
  CHECK(ExitCode(Status(Code::kServiceNotAvailable, "")) == 3);
  CHECK(ExitCode(Status(Code::kAccessDenied, "")) == 4);
  CHECK(ExitCode(Status(Code::kQueueNotActive, "")) == 5);
  CHECK(ExitCode(Status(Code::kQueueDeleted, "")) == 5);
  CHECK(ExitCode(Status(Code::kInsufficientResources, "")) == 6);
  CHECK(ExitCode(Status(Code::kIllegalCursorAction, "")) == 7);
  CHECK(ExitCode(Status(Code::kBadXmlFormat, "")) == 7);
  CHECK(ExitCode(Status(Code::kExecFailed, "")) == 8);
  CHECK(ExitCode(Status(Code::kCorrupted, "")) == 10);
  CHECK(ExitCode(Status(Code::kIo, "")) == 10);
}

TEST_CASE("status text carries subject, symbol and value", "[status]") {
  Status s(Code::kMessageNotFound, "no message", "jobs");
  CHECK(s.ToString() == "jobs: no message (MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088)");
  CHECK(Status(Code::kInvalidArg, "bad").ToString() == "bad (E_INVALIDARG 0x80070057)");
}

TEST_CASE("errno values map to access, resources or I/O", "[status]") {
  CHECK(ErrnoStatus(EACCES, "f", "open").code() == Code::kAccessDenied);
  CHECK(ErrnoStatus(EROFS, "f", "open").code() == Code::kAccessDenied);
  CHECK(ErrnoStatus(ENOSPC, "f", "write").code() == Code::kInsufficientResources);
  CHECK(ErrnoStatus(EPIPE, "f", "write").code() == Code::kBrokenPipe);
  CHECK(ErrnoStatus(EIO, "f", "write").code() == Code::kIo);
}
