// input.cpp: bodies and extensions read whole (input.hpp).
#include "send/input.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/codec.hpp"

namespace mq {

Status ReadAll(int fd, const std::string& name, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return {};
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, name, "read failed");
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

Status ForEachRecord(int fd, char sep, const std::function<Status(std::string_view)>& fn,
                     const std::function<Status()>& idle) {
  std::string pending;
  char buf[65536];
  bool first = true;
  for (;;) {
    if (idle && !first) {
      // Nothing to read now (a pipe whose writer pauses; a file or a busy pipe always has):
      // the records so far are handled before the read waits.
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, 0);
      if (ready == 0) MQ_RETURN_IF_ERROR(idle());
    }
    first = false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "stdin", "read failed");
    }
    if (n == 0) break;
    // memchr finds each separator; a record whole in `buf` is passed from there, one that
    // spans reads is put together in `pending`.
    const char* p = buf;
    const char* end = buf + n;
    for (;;) {
      auto* hit = static_cast<const char*>(memchr(p, sep, static_cast<size_t>(end - p)));
      if (!hit) break;
      std::string_view rec(p, static_cast<size_t>(hit - p));
      if (pending.empty()) {
        MQ_RETURN_IF_ERROR(fn(rec));
      } else {
        pending.append(rec);
        MQ_RETURN_IF_ERROR(fn(pending));
        pending.clear();
      }
      p = hit + 1;
    }
    pending.append(p, static_cast<size_t>(end - p));
  }
  if (!pending.empty()) return fn(pending);
  return {};
}

Status ReadBody(const std::string& file, std::string& out) {
  if (file.empty() || file == "-") return ReadAll(0, "stdin", out);
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::InvalidArg("cannot open body file: no such file", file);
    return ErrnoStatus(errno, file, "cannot open body file");
  }
  Status s = ReadAll(fd, file, out);
  ::close(fd);
  return s;
}

Status ReadExtension(const std::string& text, std::string& out) {
  if (text[0] != '@') {
    auto raw = HexDecode(text);
    if (!raw)
      return Status::InvalidArg(
          fmt::format("invalid --extension '{}': use hex digits or @FILE", text));
    out = std::move(*raw);
    return {};
  }
  std::string file = text.substr(1);
  if (file.empty()) return Status::InvalidArg("--extension @ needs a file name: @FILE");
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return Status::InvalidArg("cannot open extension file: no such file", file);
    return ErrnoStatus(errno, file, "cannot open extension file");
  }
  Status s = ReadAll(fd, file, out);
  ::close(fd);
  return s;
}

}  // namespace mq
