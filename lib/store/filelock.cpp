// filelock.cpp: flock(2)-based exclusive locks (see filelock.hpp).
#include "store/filelock.hpp"

#include "base/paths.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "store/waiter.hpp"

namespace mq {

FileLock::~FileLock() { Release(); }

FileLock::FileLock(FileLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    Release();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void FileLock::Release() {
  if (fd_ >= 0) ::close(fd_);  // closing the description drops the lock
  fd_ = -1;
}

Result<FileLock> FileLock::Acquire(const std::string& path, unsigned mode, bool wait,
                                   int64_t timeout_ms) {
  FileLock l;
  auto fd = OpenStoreFile(path, O_RDWR, mode);
  if (!fd.ok()) return fd.status();
  l.fd_ = *fd;
  if (::flock(l.fd_, LOCK_EX | LOCK_NB) == 0) return l;
  if (errno != EWOULDBLOCK) return ErrnoStatus(errno, path, "cannot lock");
  if (!wait) return Status::SharingViolation("in use by another process", path);
  if (timeout_ms == 0) return Status::IoTimeout("in use by another process", path);
  if (timeout_ms < 0) {
    for (;;) {
      if (::flock(l.fd_, LOCK_EX) == 0) return l;
      if (errno != EINTR) return ErrnoStatus(errno, path, "cannot lock");
    }
  }
  // A bounded wait: no signal around a blocking flock() (a timer that fires just before the
  // call would leave it blocked for good), but LOCK_NB tries, woken by the holder's close of
  // the file (IN_CLOSE_WRITE: every holder opens it for writing) and at least every 50 ms, as
  // the kernel queues that event before it drops the lock.
  int in = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in >= 0 && ::inotify_add_watch(in, path.c_str(), IN_CLOSE_WRITE) < 0) {
    ::close(in);
    in = -1;
  }
  int64_t until = MonotonicMs() + timeout_ms;
  Status result = Status::IoTimeout("in use by another process", path);
  for (;;) {
    if (::flock(l.fd_, LOCK_EX | LOCK_NB) == 0) {
      result = Status();
      break;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      result = ErrnoStatus(errno, path, "cannot lock");
      break;
    }
    int64_t left = until - MonotonicMs();
    if (left <= 0) break;
    pollfd p{in, POLLIN, 0};
    int n = ::poll(&p, in >= 0 ? 1 : 0, static_cast<int>(std::min<int64_t>(left, 50)));
    if (n > 0) {
      char buf[1024];
      while (::read(in, buf, sizeof buf) > 0) {
      }
    }
  }
  if (in >= 0) ::close(in);
  if (!result.ok()) return result;
  return l;
}

Result<bool> FileLock::IsHeld(const std::string& path) {
  // Read-only: closing it raises no IN_CLOSE_WRITE, so probing wakes no waiter (waiter.hpp).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return ErrnoStatus(errno, path, "cannot open lock file");
  }
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

}  // namespace mq
