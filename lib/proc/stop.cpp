// stop.cpp: the StopSignal self-pipe (stop.hpp).
#include "proc/stop.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "base/units.hpp"

namespace mq::proc {

StopSignal::StopSignal() {
  if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
}

StopSignal::~StopSignal() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void StopSignal::Request() {
  requested_ = 1;
  Wake();
}

void StopSignal::Wake() {
  if (fds_[1] < 0) return;
  int saved = errno;
  char c = 1;
  ssize_t ignored = ::write(fds_[1], &c, 1);  // a full pipe is readable already
  (void)ignored;
  errno = saved;
}

bool StopSignal::Requested() const { return requested_ != 0; }

void StopSignal::Drain() const {
  char buf[64];
  while (fds_[0] >= 0 && ::read(fds_[0], buf, sizeof buf) > 0) {
  }
}

bool StopSignal::SleepFor(int64_t ms) const {
  int64_t until = MonotonicMs() + ms;
  pollfd p{fds_[0], POLLIN, 0};
  while (!Requested()) {
    int64_t left = until - MonotonicMs();
    if (left <= 0) return false;
    ::poll(&p, fds_[0] >= 0 ? 1 : 0, static_cast<int>(left));
  }
  return true;
}

}  // namespace mq::proc
