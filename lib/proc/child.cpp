// child.cpp: a command run with /bin/sh -c, with pipes (child.hpp).
#include "proc/child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "base/units.hpp"

extern char** environ;

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
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  sigaddset(&def, SIGTERM);
  sigaddset(&def, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &def);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  int rc = ::posix_spawn(&pid_, "/bin/sh", &fa, &attr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    pid_ = -1;
    return ErrnoStatus(rc, "/bin/sh", "cannot start " + what);
  }
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
