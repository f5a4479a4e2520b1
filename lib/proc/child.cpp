// child.cpp: a command run with /bin/sh -c, with pipes (child.hpp).
#include "proc/child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "base/units.hpp"
#include "proc/spawn.hpp"

namespace mq::proc {

Status Child::Start(const std::string& command, const std::string& what) {
  Stop();
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe", "cannot make a pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return ErrnoStatus(errno, "pipe", "cannot make a pipe");
  }
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", command};
  o.stdin_fd = in[0];
  o.stdout_fd = out[1];
  auto pid = Spawn(o);
  ::close(in[0]);
  ::close(out[1]);
  if (!pid.ok()) {
    ::close(in[1]);
    ::close(out[0]);
    pid_ = -1;
    return Status(pid.status().code(), "cannot start " + what + ": " + pid.status().text());
  }
  pid_ = *pid;
  status_ = "ended";
  to_ = in[1];
  from_ = out[0];
  ::fcntl(to_, F_SETFL, ::fcntl(to_, F_GETFL) | O_NONBLOCK);
  // Up to fs.pipe-max-size (1 MiB by default); where it cannot grow, the default 64 KiB does.
  (void)::fcntl(to_, F_SETPIPE_SZ, 1 << 20);
  ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
  return {};
}

void Child::CloseTo() {
  if (to_ >= 0) ::close(to_);
  to_ = -1;
}

std::string Child::Reap(int64_t wait_ms) {
  if (pid_ < 0) return status_;
  int64_t until = MonotonicMs() + wait_ms;
  int st = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) break;
    if (r < 0) {
      pid_ = -1;
      return status_;
    }
    if (MonotonicMs() >= until) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, &st, 0);
      break;
    }
    ::usleep(10000);
  }
  pid_ = -1;
  if (WIFEXITED(st))
    status_ = fmt::format("exit status {}", WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    status_ = fmt::format("killed by signal {}", WTERMSIG(st));
  return status_;
}

void Child::Stop() {
  CloseTo();
  if (from_ >= 0) ::close(from_);
  from_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
}

}  // namespace mq::proc
