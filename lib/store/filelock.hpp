// filelock.hpp: exclusive advisory locks on files under the store's locks/ directory.
//
// flock(2) locks belong to the open file description: they go away when the process dies,
// whatever the signal, so a killed holder never leaves a lock behind. Lock files are never
// unlinked (a waiter could otherwise lock a file that is no longer in the directory).
#pragma once

#include <string>
#include <utility>

#include "base/status.hpp"

namespace mq {

class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Takes an exclusive lock on `path` (created with `mode` if missing). With `wait` false, a
  // lock held by another process is MQ_ERROR_SHARING_VIOLATION (exit 5) at once; with `wait`
  // true, blocks until it is free.
  // With `wait` and `timeout_ms` >= 0, waits at most that long: MQ_ERROR_IO_TIMEOUT after
  // (no signals are used: it retries, woken by the holder's close and every 50 ms).
  static Result<FileLock> Acquire(const std::string& path, unsigned mode, bool wait,
                                  int64_t timeout_ms = -1);
  // Whether some process holds a lock on `path` now (probing takes and drops it).
  static Result<bool> IsHeld(const std::string& path);

  bool held() const { return fd_ >= 0; }
  // Gives up ownership of the descriptor (which keeps the lock) to the caller.
  int Detach() { return std::exchange(fd_, -1); }
  void Release();

 private:
  int fd_ = -1;
};

}  // namespace mq
