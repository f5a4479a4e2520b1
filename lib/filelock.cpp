// filelock.cpp: flock(2)-based exclusive locks (see filelock.hpp).
#include "filelock.hpp"

#include "paths.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "waiter.hpp"

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

namespace {
void OnAlarm(int) {}  // only to interrupt flock()
}  // namespace

Result<FileLock> FileLock::Acquire(const std::string& path, unsigned mode, bool wait,
                                   int64_t timeout_ms) {
  FileLock l;
  auto fd = OpenStoreFile(path, O_RDWR, mode);
  if (!fd.ok()) return fd.status();
  l.fd_ = *fd;
  if (::flock(l.fd_, LOCK_EX | LOCK_NB) == 0) return l;
  if (errno != EWOULDBLOCK) return ErrnoStatus(errno, path, "cannot lock");
  if (!wait) return Status(Code::kSharingViolation, "in use by another process", path);
  if (timeout_ms == 0) return Status(Code::kIoTimeout, "in use by another process", path);
  // Block in flock(); a timeout is a one-shot SIGALRM without SA_RESTART, which makes flock()
  // return EINTR.
  struct sigaction sa {}, old {};
  itimerval timer{}, old_timer{};
  if (timeout_ms > 0) {
    sa.sa_handler = OnAlarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    timer.it_value.tv_sec = timeout_ms / 1000;
    timer.it_value.tv_usec = (timeout_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &timer, &old_timer);
  }
  int64_t until = MonotonicMs() + timeout_ms;
  Status result;
  for (;;) {
    if (::flock(l.fd_, LOCK_EX) == 0) break;
    if (errno == EINTR) {
      if (timeout_ms > 0 && MonotonicMs() >= until) {
        result = Status(Code::kIoTimeout, "in use by another process", path);
        break;
      }
      continue;
    }
    result = ErrnoStatus(errno, path, "cannot lock");
    break;
  }
  if (timeout_ms > 0) {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old, nullptr);
  }
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
