// format.hpp: how messages are written and read as text: JSON lines (every property and the
// body), --template placeholders, and the writer that sends output to a file descriptor.
//
// Rows of chosen Service Broker columns (TSV, CSV, JSON): columns.hpp.
//
// JSON: one object per message. The body is a string when it is valid UTF-8
// ("body_encoding": "utf-8") and base64 otherwise ("body_encoding": "base64"). Times are
// RFC 3339 UTC strings; absent deadlines are null; ids use their text forms (ids.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/message.hpp"
#include "base/status.hpp"

namespace mq {

nlohmann::ordered_json MessageToJson(const Message& m);
// Reads a message written by MessageToJson. Unknown keys are ignored; missing keys take
// defaults.
Result<Message> MessageFromJson(const nlohmann::ordered_json& j);
std::string MessageToJsonLine(const Message& m);

// A --template: literal text with {field} placeholders (any key of the JSON form, body as raw
// bytes), "{{" and "}}" for braces, and the escapes \n \t \0 \\.
class Template {
 public:
  static Result<Template> Parse(std::string_view text);
  std::string Render(const Message& m) const;

 private:
  struct Part {
    bool field;
    std::string text;
  };
  std::vector<Part> parts_;
};

// Writes to a file descriptor with write(2), retrying on EINTR and short writes. A closed
// pipe is Code::kBrokenPipe (the caller ignores SIGPIPE).
class FdWriter {
 public:
  explicit FdWriter(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  void Append(std::string_view s) { buf_.append(s.data(), s.size()); }
  size_t buffered() const { return buf_.size(); }
  Status Flush();
  // Returns once the reader has taken everything written so far: for a pipe, when no unread
  // byte is left in it (FIONREAD); for a socket, when none is left in its send queue
  // (SIOCOUTQ); anything else (a file, a terminal, /dev/null) has taken what was written.
  // A reader that goes away first (POLLERR/POLLHUP) is Code::kBrokenPipe. There is no event
  // for "the pipe became empty": it looks again after a pause that doubles from 50 us to
  // 10 ms, and wakes at once when the reader closes its end.
  Status WaitTaken();

 private:
  int fd_;
  std::string name_;
  std::string buf_;
  int kind_ = -1;  // WaitTaken: 0 nothing to wait for, 1 pipe, 2 socket; -1 not known yet
};

// Appends whole batches to a file (mq-receive --into), so that no reader or other appender
// ever sees part of one and a batch is on disk before the caller goes on:
//  - the file is opened O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, created with mode 0666 & ~umask
//    (as the shell's >> does); a file it creates has its directory fsync'ed at once, so that
//    its name is as durable as the rows that will be synced into it;
//  - Append() takes an exclusive flock(2) on it, writes the batch with write(2) (looping over
//    short writes: a single O_APPEND write of any size is not promised to be atomic, the lock
//    is), then fdatasync(2), then unlocks. Appenders that do not take the lock are not
//    serialized against;
//  - if the write or the sync fails, the file is cut back (ftruncate) to its length before the
//    batch, so that it never ends in a partial row, and the error is returned.
// Files that cannot be synced (pipes, terminals, character devices) are written without it.
class FileAppender {
 public:
  static Result<std::unique_ptr<FileAppender>> Open(const std::string& path);
  ~FileAppender();
  FileAppender(const FileAppender&) = delete;
  FileAppender& operator=(const FileAppender&) = delete;

  // Appends `prefix_if_empty` (a header) and `data` when the file is empty (for a pipe or a
  // device: at the first Append), else `data`.
  Status Append(std::string_view data, std::string_view prefix_if_empty);
  const std::string& path() const { return path_; }

 private:
  FileAppender(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
  bool appended_ = false;
};

}  // namespace mq
