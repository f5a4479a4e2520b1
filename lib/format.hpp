// format.hpp: how messages are written and read as text: JSON lines (every property and the
// body), --template placeholders, and the writer that sends output to a file descriptor.
//
// JSON: one object per message. The body is a string when it is valid UTF-8
// ("body_encoding": "utf-8") and base64 otherwise ("body_encoding": "base64"). Times are
// RFC 3339 UTC strings; absent deadlines are null; ids use their text forms (ids.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "message.hpp"
#include "status.hpp"

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

 private:
  int fd_;
  std::string name_;
  std::string buf_;
};

}  // namespace mq
