// fd.hpp: writing to a file descriptor, whole (owns no descriptor: the caller opens and
// closes it, and ignores SIGPIPE if a closed pipe must be an error rather than the end); and
// Fd, which owns one.
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>

#include "base/status.hpp"

namespace mq {

// Writes all of `data` to the blocking descriptor `fd` with write(2), retrying on EINTR and
// short writes. A failure is ErrnoStatus(errno, name, "write failed") (EPIPE included);
// what was written before it stays written.
Status WriteAll(int fd, std::string_view data, const std::string& name);

// Owns a descriptor (-1: none), closed when it is reset or destroyed.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

}  // namespace mq
