// status_test.cpp: the one mapping from codes to CLI.md's exit statuses.
#include <catch2/catch.hpp>

#include <cerrno>

#include "base/status.hpp"

using namespace mq;

TEST_CASE("status codes map to the exit table of CLI.md", "[status]") {
  CHECK(ExitCode(Status()) == 0);
  CHECK(ExitCode(Status::MessageNotFound("")) == 1);
  CHECK(ExitCode(Status::IoTimeout("")) == 1);
  CHECK(ExitCode(Status::InvalidArg("")) == 2);
  CHECK(ExitCode(Status::IllegalQueuePathname("")) == 2);
  CHECK(ExitCode(Status::LabelTooLong("")) == 2);
  CHECK(ExitCode(Status::QueueNotFound("")) == 3);
  CHECK(ExitCode(Status::ServiceNotAvailable("")) == 3);
  CHECK(ExitCode(Status::AccessDenied("")) == 4);
  CHECK(ExitCode(Status::QueueNotActive("")) == 5);
  CHECK(ExitCode(Status::QueueDeleted("")) == 5);
  CHECK(ExitCode(Status::InsufficientResources("")) == 6);
  CHECK(ExitCode(Status::IllegalCursorAction("")) == 7);
  CHECK(ExitCode(Status::BadXmlFormat("")) == 7);
  CHECK(ExitCode(Status::ExecFailed("")) == 8);
  CHECK(ExitCode(Status::Corrupted("")) == 10);
  CHECK(ExitCode(Status::Io("")) == 10);
}

TEST_CASE("status text carries subject, symbol and value", "[status]") {
  Status s = Status::MessageNotFound("no message", "jobs");
  CHECK(s.ToString() == "jobs: no message (MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088)");
  CHECK(Status::InvalidArg("bad").ToString() == "bad (E_INVALIDARG 0x80070057)");
}

TEST_CASE("errno values map to access, resources or I/O", "[status]") {
  CHECK(ErrnoStatus(EACCES, "f", "open").code() == Code::kAccessDenied);
  CHECK(ErrnoStatus(EROFS, "f", "open").code() == Code::kAccessDenied);
  CHECK(ErrnoStatus(ENOSPC, "f", "write").code() == Code::kInsufficientResources);
  CHECK(ErrnoStatus(EPIPE, "f", "write").code() == Code::kBrokenPipe);
  CHECK(ErrnoStatus(EIO, "f", "write").code() == Code::kIo);
}

TEST_CASE("named constructors carry their code, text and subject", "[status]") {
  Status s = Status::QueueNotFound("no such queue", "jobs");
  CHECK(s.code() == Code::kQueueNotFound);
  CHECK(s.text() == "no such queue");
  CHECK(s.subject() == "jobs");
  CHECK(ExitCode(s) == ExitCode(Status(Code::kQueueNotFound, "x")));
  CHECK(Status::Corrupted("bad").code() == Code::kCorrupted);
  CHECK(Status::Corrupted("bad").subject().empty());
}
