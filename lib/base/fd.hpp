// fd.hpp: writing to a file descriptor, whole. Owns no descriptor: the caller opens and
// closes it, and ignores SIGPIPE if a closed pipe must be an error rather than the end.
#pragma once

#include <string>
#include <string_view>

#include "base/status.hpp"

namespace mq {

// Writes all of `data` to the blocking descriptor `fd` with write(2), retrying on EINTR and
// short writes. A failure is ErrnoStatus(errno, name, "write failed") (EPIPE included);
// what was written before it stays written.
Status WriteAll(int fd, std::string_view data, const std::string& name);

}  // namespace mq
