// spawn.cpp: fork and exec (spawn.hpp).
#include "proc/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace mq::proc {
namespace {

// In the child, before exec: `fd` becomes `target` without close-on-exec.
void Install(int fd, int target) {
  if (fd < 0) return;
  if (fd == target)
    ::fcntl(fd, F_SETFD, 0);
  else
    ::dup2(fd, target);
}

}  // namespace

Result<pid_t> Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Status::InvalidArg("no program to run");
  std::vector<char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char** env = environ;
  if (o.env) {
    for (const auto& e : *o.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    env = envp.data();
  }
  // The child reports a failed exec through this pipe; a successful exec closes it.
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0)
    return ErrnoStatus(errno, "pipe", "cannot start " + o.argv.front());
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(err[0]);
    ::close(err[1]);
    return ErrnoStatus(e, "fork", "cannot start " + o.argv.front());
  }
  if (pid == 0) {
    // Async-signal-safe calls only from here to the exec.
    if (o.death_signal) {
      ::prctl(PR_SET_PDEATHSIG, o.death_signal);
      if (::getppid() != parent) ::_exit(127);  // the parent died before the prctl
    }
    if (o.own_group) ::setpgid(0, 0);
    for (int sig : {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGCHLD}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    Install(o.stdin_fd, 0);
    Install(o.stdout_fd, 1);
    Install(o.stderr_fd, 2);
    if (o.keep_fd >= 0) ::fcntl(o.keep_fd, F_SETFD, 0);
    ::execvpe(argv[0], argv.data(), env);
    int e = errno;
    ssize_t ignored = ::write(err[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  // Also here, so that the group exists before the caller can signal it.
  if (o.own_group) ::setpgid(pid, pid);
  ::close(err[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(err[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  ::close(err[0]);
  if (got != static_cast<ssize_t>(sizeof exec_errno)) return pid;
  int st;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  std::string text = fmt::format("cannot run '{}': {}", o.argv.front(), std::strerror(exec_errno));
  if (exec_errno == ENOENT) return Status::InvalidArg(text);
  return Status::ExecFailed(text);
}

std::string DescribeWait(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return "ended abnormally";
}

}  // namespace mq::proc
