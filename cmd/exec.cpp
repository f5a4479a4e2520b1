// exec.cpp: fork, exec and feed a command (see exec.hpp).
#include "exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/fd.hpp"
#include "base/ids.hpp"
#include "base/units.hpp"
#include "proc/spawn.hpp"

extern char** environ;

namespace mq::cli {

bool SplitExec(int argc, char** argv, std::vector<char*>& own, std::vector<std::string>& cmd) {
  own.clear();
  cmd.clear();
  bool found = false;
  for (int i = 0; i < argc; ++i) {
    if (!found && std::strcmp(argv[i], "--exec") == 0) {
      found = true;
      continue;
    }
    if (found) cmd.emplace_back(argv[i]);
    else own.push_back(argv[i]);
  }
  if (!cmd.empty() && cmd.front() == "--") cmd.erase(cmd.begin());  // --exec -- CMD ...
  return found;
}

Status CheckCommand(const std::vector<std::string>& cmd) {
  if (cmd.empty()) return Status::InvalidArg("--exec needs a command");
  const std::string& name = cmd.front();
  auto runnable = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return {};
  } else {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string dir = dirs.substr(start, end - start);
      if (runnable((dir.empty() ? "." : dir) + "/" + name)) return {};
      start = end + 1;
    }
  }
  return Status::InvalidArg(fmt::format("command not found or not executable: {}", name));
}

bool ExecResult::ok() const {
  return not_started.ok() && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool ExecResult::CannotStart() const {
  return !not_started.ok() ||
         (WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127));
}

int ExecResult::CannotStartExit() const {
  if (not_started.ok()) return WEXITSTATUS(status);
  if (not_started.code() == Code::kInvalidArg) return 127;  // not found (proc::Spawn)
  if (not_started.code() == Code::kExecFailed) return 126;
  return ExitCode(not_started);
}

std::string ExecResult::Describe() const {
  if (!not_started.ok()) return not_started.text();
  return proc::DescribeWait(status);
}

namespace {

// The process group of the running command (0: none), and whether AbandonCommand was called
// for it: read and written by signal handlers.
volatile sig_atomic_t g_command_group = 0;
volatile sig_atomic_t g_abandoned = 0;

void KillGroupWithSavedErrno(int sig) {
  int saved = errno;
  pid_t g = g_command_group;
  if (g > 0) ::kill(-g, sig);
  errno = saved;
}

}  // namespace

void AbandonCommand() {
  g_abandoned = 1;
  KillGroupWithSavedErrno(SIGKILL);
}

void InterruptCommand() { KillGroupWithSavedErrno(SIGINT); }

Status BecomeSubreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return ErrnoStatus(errno, "prctl", "cannot become the reaper of commands");
  return {};
}

namespace {

std::vector<std::string> Environment(const std::vector<Message>& msgs, const std::string& store) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "MQ_", 3) == 0 && std::strncmp(*e, "MQ_STORE=", 9) != 0) continue;
    if (std::strncmp(*e, "MQ_STORE=", 9) == 0) continue;
    env.emplace_back(*e);
  }
  const Message& m = msgs.front();
  auto guid = [](const Guid& g) { return IsNil(g) ? std::string() : FormatGuid(g); };
  auto add = [&](const char* k, const std::string& v) { env.push_back(std::string(k) + "=" + v); };
  add("MQ_STORE", store);
  add("MQ_QUEUE", m.queue);
  add("MQ_ID", FormatMessageId(m.id));
  add("MQ_LOOKUP_ID", std::to_string(m.lookup_id));
  add("MQ_LABEL", m.label);
  add("MQ_PRIORITY", std::to_string(m.priority));
  add("MQ_CLASS", ClassName(m.msg_class));
  add("MQ_CORRELATION_ID", m.correlation_id.empty() ? "" : FormatCorrelationId(m.correlation_id));
  add("MQ_APP_SPECIFIC", std::to_string(m.app_specific));
  add("MQ_BODY_TYPE", BodyTypeName(m.body_type));
  add("MQ_RESPONSE_QUEUE", m.response_queue);
  add("MQ_ADMIN_QUEUE", m.admin_queue);
  add("MQ_SENT_TIME", m.sent_time ? FormatTime(m.sent_time) : "");
  add("MQ_ARRIVED_TIME", m.arrived_time ? FormatTime(m.arrived_time) : "");
  add("MQ_DELIVERY_COUNT", std::to_string(m.delivery_count));
  add("MQ_ABORT_COUNT", std::to_string(m.abort_count));
  add("MQ_CONVERSATION_HANDLE", guid(m.conversation_handle));
  add("MQ_CONVERSATION_GROUP_ID", guid(m.conversation_group_id));
  add("MQ_MESSAGE_SEQUENCE_NUMBER", std::to_string(m.message_sequence_number));
  add("MQ_MESSAGE_TYPE_NAME", m.message_type_name);
  add("MQ_SERVICE_NAME", m.service_name);
  add("MQ_SERVICE_CONTRACT_NAME", m.service_contract_name);
  add("MQ_COUNT", std::to_string(msgs.size()));
  std::string lookups, ids;
  for (const Message& x : msgs) {
    if (!lookups.empty()) lookups += ' ';
    lookups += std::to_string(x.lookup_id);
    if (!ids.empty()) ids += ' ';
    ids += FormatMessageId(x.id);
  }
  add("MQ_LOOKUP_IDS", lookups);
  add("MQ_IDS", ids);
  return env;
}

}  // namespace

namespace {

// Keeps the end of the command's standard error: the last kMaxFailureStderr bytes, from the
// start of a UTF-8 sequence.
class Tail {
 public:
  void Add(const char* p, size_t n) {
    buf_.append(p, n);
    if (buf_.size() > 4 * kMaxFailureStderr) buf_.erase(0, buf_.size() - kMaxFailureStderr);
  }
  std::string Take() {
    if (buf_.size() > kMaxFailureStderr) buf_.erase(0, buf_.size() - kMaxFailureStderr);
    size_t skip = 0;
    while (skip < buf_.size() && skip < 3 && (static_cast<uint8_t>(buf_[skip]) & 0xC0) == 0x80)
      ++skip;
    return buf_.substr(skip);
  }

 private:
  std::string buf_;
};

// Passes what the command wrote to its stderr on to ours, and keeps its end; false at end of
// file (every writer closed it).
bool Relay(int from, Tail& tail) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 && errno == EAGAIN;
    tail.Add(buf, static_cast<size_t>(n));
    for (ssize_t done = 0; done < n;) {  // a stderr that cannot take it loses it, as before
      ssize_t w = ::write(2, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += w;
    }
  }
}

}  // namespace

Result<ExecResult> RunCommand(const std::vector<std::string>& cmd,
                              const std::vector<Message>& messages, bool batch, char sep,
                              const std::string& store_dir, int lease_fd) {
  if (cmd.empty()) return Status::InvalidArg("--exec needs a command");
  std::vector<std::string> env = Environment(messages, store_dir);
  std::string input;
  if (!batch) {
    input = messages.front().body;
  } else {
    for (const Message& m : messages) {
      input += m.body;
      input += sep;
    }
  }
  // Its stdin, and its stderr: a pipe that we pass on to ours, keeping its end for the
  // failure record (mq(7): last_stderr).
  Fd in_r, in_w, err_r, err_w;
  for (auto [r, w] : {std::pair{&in_r, &in_w}, std::pair{&err_r, &err_w}}) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
      ExecResult none;
      none.not_started = ErrnoStatus(errno, "pipe", "cannot run command");
      return none;
    }
    r->reset(p[0]);
    w->reset(p[1]);
  }
  proc::SpawnOptions o;
  o.argv = cmd;
  o.env = &env;
  o.stdin_fd = in_r.get();
  o.stderr_fd = err_w.get();
  o.keep_fd = lease_fd;  // the lease lives while any process of the command holds it
  o.own_group = true;
  o.death_signal = SIGKILL;
  g_abandoned = 0;
  auto spawned = proc::Spawn(o);
  in_r.reset();
  err_w.reset();
  if (!spawned.ok()) {
    ExecResult none;
    none.not_started = spawned.status();
    return none;
  }
  pid_t pid = *spawned;
  g_command_group = pid;
  if (g_abandoned) ::kill(-pid, SIGKILL);
  ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
  // Its end wakes the poll through a pidfd (Linux 5.3); without one, a look every 10 ms.
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  // Feed stdin, pass stderr on, until the command exits; a command that does not read its
  // input is fine (EPIPE is ignored).
  size_t fed = 0;
  if (input.empty()) in_w.reset();
  Tail tail;
  int status = 0;
  Status lost;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      lost = ErrnoStatus(errno, "waitpid", "lost the command");
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    if (in_w.get() >= 0) fds[n++] = {in_w.get(), POLLOUT, 0};
    if (err_r.get() >= 0) fds[n++] = {err_r.get(), POLLIN, 0};
    if (pidfd.get() >= 0) fds[n++] = {pidfd.get(), POLLIN, 0};
    if (::poll(fds, n, pidfd.get() >= 0 ? -1 : 10) < 0 && errno != EINTR) {
      lost = ErrnoStatus(errno, "poll", "lost the command");
      break;
    }
    if (in_w.get() >= 0) {
      ssize_t k = ::write(in_w.get(), input.data() + fed, input.size() - fed);
      if (k > 0) fed += static_cast<size_t>(k);
      if (fed == input.size() || (k < 0 && errno != EAGAIN && errno != EINTR)) in_w.reset();
    }
    if (err_r.get() >= 0 && !Relay(err_r.get(), tail)) err_r.reset();
  }
  in_w.reset();
  // Nothing of the command outlives it: its group is killed, and what we inherited of it (as
  // the subreaper) reaped, before the caller ends the transaction.
  ::kill(-pid, SIGKILL);
  g_command_group = 0;
  int ignored_status;
  for (;;) {
    pid_t r = ::waitpid(-pid, &ignored_status, 0);
    if (r > 0 || (r < 0 && errno == EINTR)) continue;
    break;
  }
  // What is left in the pipe (a writer that escaped the group keeps it open: not waited for).
  if (err_r.get() >= 0) (void)Relay(err_r.get(), tail);
  if (!lost.ok()) return lost;
  ExecResult ran;
  ran.status = status;
  ran.stderr_tail = tail.Take();
  return ran;
}

}  // namespace mq::cli
