// filelock.cpp: flock(2)-based exclusive locks (see filelock.hpp).
#include "filelock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

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

Result<FileLock> FileLock::Acquire(const std::string& path, unsigned mode, bool wait) {
  FileLock l;
  l.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                 static_cast<mode_t>(mode));
  if (l.fd_ < 0) return ErrnoStatus(errno, path, "cannot open lock file");
  struct stat st;
  if (::fstat(l.fd_, &st) == 0 && (st.st_mode & 0777) != mode) (void)::fchmod(l.fd_, mode);
  for (;;) {
    if (::flock(l.fd_, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0) return l;
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      return Status(Code::kSharingViolation, "in use by another process", path);
    return ErrnoStatus(errno, path, "cannot lock");
  }
}

Result<bool> FileLock::IsHeld(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return ErrnoStatus(errno, path, "cannot open lock file");
  }
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

}  // namespace mq
