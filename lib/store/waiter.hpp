// waiter.hpp: sleeping until a queue changes, without polling.
//
// Protocol (DESIGN.md "Waits"):
//  - Every writer that makes a message visible, changes a queue's status, deletes a queue or
//    releases a lock touches the queue's doorbell file (paths.hpp: notify/QUEUE-ID) after its
//    commit returns (a one-byte pwrite: inotify does not see writes through LMDB's mmap, and
//    a watch on data.mdb would fire before the commit is visible).
//  - A waiter arms its inotify watch on the doorbell first, then looks in the store, then
//    blocks in poll() until the watch fires, the store's next deadline (a delayed message
//    becoming visible, a lease expiring) or its own timeout, and then looks again. A wake-up
//    is only a hint: any event, IN_Q_OVERFLOW or EINTR means "look again" (EINTR only for a
//    waiter without a stop pipe: with one, a signal that matters wrote there, kStop).
//  - A process holding a lease lock file can die without ringing anything; the kernel closes
//    its files, and the IN_CLOSE_WRITE on the locks directory wakes waiters instead. Linux
//    queues that event before it drops the closing file's flock, so a waiter can look too
//    early and still see the lock held: after an event on the locks directory the waiter
//    looks again 25 ms, 250 ms and 1 s later, whatever else happens.
//  - No read transaction is held while blocked.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.hpp"
#include "base/units.hpp"

namespace mq {

class Waiter {
 public:
  Waiter() = default;
  ~Waiter();
  Waiter(Waiter&& o) noexcept;
  Waiter& operator=(Waiter&& o) noexcept;
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Watches the doorbell file at `path`, creating it (with `mode`) if it is missing, and, if
  // `locks_dir` is not empty, the closing of files there that were open for writing: a lock
  // holder (a transactional receive, a cursor user) that ends, dies included, wakes the
  // waiter so that it can take back what the holder had Locked. Probes of locks open files
  // read-only and so wake nobody.
  static Result<Waiter> Arm(const std::string& path, unsigned mode,
                            const std::string& locks_dir = {});

  // Watches every doorbell of a store at once: the files of `notify_dir` (any ring, a queue
  // made or deleted) and, as Arm, the closing of lock files in `locks_dir`. Creates nothing,
  // so that it works on a store mounted read-only too (where nothing rings).
  static Result<Waiter> ArmDirectory(const std::string& notify_dir,
                                     const std::string& locks_dir);

  enum class Wake { kLook, kTimeout, kStop };
  // Blocks until the doorbell rings, a re-look after a lock file's close is due, the
  // wall-clock time `deadline_real_ms` passes (0: none; an absolute timer of the real-time
  // clock, so a step of the clock moves the wake-up with it) or the clock is set: kLook; the
  // monotonic time `until_mono_ms` passes (-1: never): kTimeout; or `stop_fd` (if >= 0; a
  // signalfd or self-pipe) becomes readable: kStop.
  Result<Wake> Wait(int64_t deadline_real_ms, int64_t until_mono_ms, int stop_fd = -1);

  // For a caller that polls its own descriptors: this one becomes readable when the doorbell
  // rings; Drain() then reads what came, without blocking, and says whether anything did.
  int fd() const { return fd_; }
  bool Drain();

  bool armed() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  int locks_wd_ = -1;      // the watch on the locks directory
  int64_t relook_at_ = 0;  // monotonic ms of the next re-look after a lock file's close
  int relooks_done_ = 0;   // of kRelookAfterMs, since the last such close
  int timer_fd_ = -1;      // the wall-clock deadline (ArmTimer)

  bool ArmTimer(int64_t at_ms);
};

}  // namespace mq
