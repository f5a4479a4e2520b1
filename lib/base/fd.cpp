// fd.cpp: WriteAll (fd.hpp).
#include "base/fd.hpp"

#include <unistd.h>

#include <cerrno>

namespace mq {

Status WriteAll(int fd, std::string_view data, const std::string& name) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, name, "write failed");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace mq
