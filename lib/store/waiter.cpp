// waiter.cpp: the inotify side of the wait protocol (see waiter.hpp).
#include "store/waiter.hpp"

#include "base/paths.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>
#include <utility>

#include "base/units.hpp"

namespace mq {

Waiter::~Waiter() {
  if (fd_ >= 0) ::close(fd_);
  if (timer_fd_ >= 0) ::close(timer_fd_);
}

Waiter::Waiter(Waiter&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      locks_wd_(std::exchange(o.locks_wd_, -1)),
      relook_at_(std::exchange(o.relook_at_, 0)),
      relooks_done_(std::exchange(o.relooks_done_, 0)),
      timer_fd_(std::exchange(o.timer_fd_, -1)) {}

Waiter& Waiter::operator=(Waiter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    if (timer_fd_ >= 0) ::close(timer_fd_);
    fd_ = std::exchange(o.fd_, -1);
    timer_fd_ = std::exchange(o.timer_fd_, -1);
    locks_wd_ = std::exchange(o.locks_wd_, -1);
    relook_at_ = std::exchange(o.relook_at_, 0);
    relooks_done_ = std::exchange(o.relooks_done_, 0);
  }
  return *this;
}

namespace {
// When to look again after a lock file's close (waiter.hpp), counted from that close.
constexpr int64_t kRelookAfterMs[] = {25, 250, 1000};
constexpr int kRelooks = sizeof kRelookAfterMs / sizeof kRelookAfterMs[0];
}  // namespace

Result<Waiter> Waiter::Arm(const std::string& path, unsigned mode,
                           const std::string& locks_dir) {
  auto f = OpenStoreFile(path, O_WRONLY, mode);
  if (!f.ok()) return f.status();
  ::close(*f);
  Waiter w;
  w.fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (w.fd_ < 0) return ErrnoStatus(errno, "inotify", "cannot watch the queue");
  if (::inotify_add_watch(w.fd_, path.c_str(),
                          IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF |
                              IN_MOVE_SELF) < 0)
    return ErrnoStatus(errno, path, "cannot watch the queue's doorbell");
  if (!locks_dir.empty()) {
    w.locks_wd_ = ::inotify_add_watch(w.fd_, locks_dir.c_str(), IN_CLOSE_WRITE);
    if (w.locks_wd_ < 0) return ErrnoStatus(errno, locks_dir, "cannot watch the lock files");
  }
  return w;
}

Result<Waiter> Waiter::ArmDirectory(const std::string& notify_dir,
                                    const std::string& locks_dir) {
  Waiter w;
  w.fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (w.fd_ < 0) return ErrnoStatus(errno, "inotify", "cannot watch the store");
  if (::inotify_add_watch(w.fd_, notify_dir.c_str(),
                          IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE) < 0)
    return ErrnoStatus(errno, notify_dir, "cannot watch the store's doorbells");
  w.locks_wd_ = ::inotify_add_watch(w.fd_, locks_dir.c_str(), IN_CLOSE_WRITE);
  if (w.locks_wd_ < 0) return ErrnoStatus(errno, locks_dir, "cannot watch the lock files");
  return w;
}

// Arms the timer for the wall-clock time `at_ms`: an absolute timer of CLOCK_REALTIME, so
// that a step of the clock moves the wake-up with the deadline (a relative timeout computed
// before the step would not), and cancelled by the step (TFD_TIMER_CANCEL_ON_SET) so that the
// waiter also looks again then. False if there is no timer (the caller falls back on poll's
// relative timeout).
bool Waiter::ArmTimer(int64_t at_ms) {
  if (timer_fd_ < 0) {
    timer_fd_ = ::timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
    if (timer_fd_ < 0) return false;
  }
  itimerspec its{};
  its.it_value.tv_sec = static_cast<time_t>(at_ms / 1000);
  its.it_value.tv_nsec = static_cast<long>(at_ms % 1000) * 1'000'000;
  if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its,
                        nullptr) == 0)
    return true;
  ::close(timer_fd_);
  timer_fd_ = -1;
  return false;
}

bool Waiter::Drain() {
  alignas(inotify_event) char buf[4096];
  bool any = false;
  while (::read(fd_, buf, sizeof buf) > 0) any = true;
  return any;
}

Result<Waiter::Wake> Waiter::Wait(int64_t deadline_real_ms, int64_t until_mono_ms, int stop_fd) {
  for (;;) {
    int64_t now_mono = MonotonicMs();
    if (relook_at_ && now_mono >= relook_at_) {
      int64_t closed_at = relook_at_ - kRelookAfterMs[relooks_done_];
      relook_at_ = ++relooks_done_ < kRelooks ? closed_at + kRelookAfterMs[relooks_done_] : 0;
      return Wake::kLook;
    }
    if (until_mono_ms >= 0 && now_mono >= until_mono_ms) return Wake::kTimeout;
    int64_t wait = -1;
    if (until_mono_ms >= 0) wait = until_mono_ms - now_mono;
    if (relook_at_ && (wait < 0 || relook_at_ - now_mono < wait)) wait = relook_at_ - now_mono;
    bool timer = false;
    if (deadline_real_ms > 0) {
      int64_t d = deadline_real_ms - NowMs();
      if (d <= 0) return Wake::kLook;
      timer = ArmTimer(deadline_real_ms);
      // Without the timer: one millisecond late rather than early (poll() rounds down).
      if (!timer && (wait < 0 || d + 1 < wait)) wait = d + 1;
    }
    if (wait > INT_MAX) wait = INT_MAX;
    pollfd fds[3] = {{fd_, POLLIN, 0}, {timer ? timer_fd_ : -1, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(fds, 3, static_cast<int>(wait));
    if (n < 0) {
      // A signal: with a stop pipe, its handler wrote there if it meant something (a stop,
      // a child's end), and the next poll says so; a ring it is not.
      if (errno == EINTR && stop_fd >= 0) continue;
      if (errno == EINTR) return Wake::kLook;
      return ErrnoStatus(errno, "poll", "wait failed");
    }
    if (n == 0) {
      if (deadline_real_ms > 0 && NowMs() >= deadline_real_ms) return Wake::kLook;
      continue;  // our own timeout or a re-look: the loop head decides
    }
    if (fds[1].revents) {
      // The deadline passed, or the clock was set (ECANCELED): look again either way.
      uint64_t expirations;
      [[maybe_unused]] ssize_t r = ::read(timer_fd_, &expirations, sizeof expirations);
      if (!fds[0].revents && !fds[2].revents) return Wake::kLook;
    }
    if (stop_fd >= 0 && fds[2].revents) return Wake::kStop;
    if (fds[0].revents) {
      // Drain the events; only whether one came from the locks directory matters (an
      // overflow counts as one), not what changed.
      alignas(inotify_event) char buf[4096];
      bool lock_closed = false;
      ssize_t got;
      while ((got = ::read(fd_, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= got;) {
          const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
          if (ev->wd == locks_wd_ || (ev->mask & IN_Q_OVERFLOW)) lock_closed = true;
          off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        }
      }
      if (lock_closed && locks_wd_ >= 0) {
        relooks_done_ = 0;
        relook_at_ = MonotonicMs() + kRelookAfterMs[0];
      }
    }
    return Wake::kLook;
  }
}

}  // namespace mq
