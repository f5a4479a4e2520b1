// xml_helper.cpp: the well-formed XML check of the statically linked tools (xml_check.hpp), in
// one `mq-admin message-type check --validation well-formed-xml --null` beside this program:
// each body goes to its stdin followed by a NUL byte, and one line comes back, "ok" or
// "invalid: requires well-formed XML: REASON". The helper starts at the first check and lives
// as long as this process (it ends at end of file on its stdin, or with SIGKILL when this
// process dies); a helper that ended is started again at the next check.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "base/paths.hpp"
#include "proc/spawn.hpp"
#include "store/xml_check.hpp"

namespace mq {
namespace {

constexpr std::string_view kOk = "ok";
constexpr std::string_view kInvalid = "invalid: requires well-formed XML: ";

struct Helper {
  pid_t pid = -1;
  int to = -1;          // its stdin
  int from = -1;        // its stdout
  std::string pending;  // read past the last answer

  void Stop() {
    if (to >= 0) ::close(to);
    if (from >= 0) ::close(from);
    to = from = -1;
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    pid = -1;
    pending.clear();
  }

  Status Start() {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe", "cannot start mq-admin");
    if (::pipe2(out, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(in[0]);
      ::close(in[1]);
      return ErrnoStatus(e, "pipe", "cannot start mq-admin");
    }
    proc::SpawnOptions o;
    o.argv = {SiblingProgram("mq-admin"), "message-type", "check", "--validation",
              "well-formed-xml",          "--null"};
    o.stdin_fd = in[0];
    o.stdout_fd = out[1];
    // Its answers say all; what it would print at its end (a body refused) is not the
    // user's to read, and a failure of its own shows here as its end.
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    o.stderr_fd = null;
    o.death_signal = SIGKILL;
    auto c = proc::Spawn(o);
    ::close(in[0]);
    ::close(out[1]);
    if (null >= 0) ::close(null);
    if (!c.ok()) {
      ::close(in[1]);
      ::close(out[0]);
      return c.status();
    }
    pid = *c;
    ::fcntl(in[1], F_SETFL, O_NONBLOCK);  // polled with its answers (Ask)
    to = in[1];
    from = out[0];
    return {};
  }

  // The answer lines (without their newlines) to `bodies`, in order: the bodies are written
  // while the answers are read, both pipes polled, so that neither side waits on a full pipe.
  Result<std::vector<std::string>> Ask(const std::vector<std::string_view>& bodies) {
    if (pid < 0) MQ_RETURN_IF_ERROR(Start());
    std::vector<std::string> answers;
    answers.reserve(bodies.size());
    size_t body = 0, off = 0;  // what is being written: bodies[body], from off (its NUL last)
    while (answers.size() < bodies.size()) {
      size_t nl = pending.find('\n');
      if (nl != std::string::npos) {
        answers.push_back(pending.substr(0, nl));
        pending.erase(0, nl + 1);
        continue;
      }
      pollfd fds[2] = {{from, POLLIN, 0}, {to, POLLOUT, 0}};
      nfds_t n = body < bodies.size() ? 2 : 1;
      if (::poll(fds, n, -1) < 0) {
        if (errno == EINTR) continue;
        return Ended(std::strerror(errno));
      }
      if (n == 2 && fds[1].revents) {
        std::string_view b = bodies[body];
        ssize_t w =
            off < b.size() ? ::write(to, b.data() + off, b.size() - off) : ::write(to, "", 1);
        if (w < 0 && errno != EINTR && errno != EAGAIN)
          return Ended(errno == EPIPE ? "it ended" : std::strerror(errno));
        if (w > 0) off += static_cast<size_t>(w);
        if (off > b.size()) {
          ++body;
          off = 0;
        }
      }
      if (fds[0].revents) {
        char buf[4096];
        ssize_t r = ::read(from, buf, sizeof buf);
        if (r < 0 && errno != EINTR && errno != EAGAIN) return Ended(std::strerror(errno));
        if (r == 0) return Ended("it ended");
        if (r > 0) pending.append(buf, static_cast<size_t>(r));
      }
    }
    return answers;
  }

  Status Ended(const std::string& why) {
    Stop();
    return Status::Error(fmt::format("its checker, {} message-type check, failed: {}",
                                     SiblingProgram("mq-admin"), why));
  }
};

}  // namespace

Result<std::vector<std::string>> XmlWellFormedErrors(const std::vector<std::string_view>& bodies) {
  std::vector<std::string> errors(bodies.size());
  std::vector<std::string_view> asked;
  std::vector<size_t> asked_at;
  for (size_t i = 0; i < bodies.size(); ++i) {
    // The helper's separator, and a character XML 1.0 has no way to hold.
    if (size_t nul = bodies[i].find('\0'); nul != std::string_view::npos) {
      size_t line = 1;
      for (size_t k = 0; k < nul; ++k) line += bodies[i][k] == '\n';
      errors[i] = fmt::format("Char 0x0 out of allowed range (line {})", line);
      continue;
    }
    asked.push_back(bodies[i]);
    asked_at.push_back(i);
  }
  if (asked.empty()) return errors;
  static std::mutex mu;
  static Helper helper;
  std::lock_guard<std::mutex> lock(mu);
  auto answers = helper.Ask(asked);
  if (!answers.ok()) return answers.status();
  for (size_t k = 0; k < asked.size(); ++k) {
    const std::string& a = (*answers)[k];
    if (a == kOk) continue;
    if (a.compare(0, kInvalid.size(), kInvalid) != 0)
      return helper.Ended(fmt::format("it answered '{}'", a));
    errors[asked_at[k]] = a.substr(kInvalid.size());
  }
  return errors;
}

Result<std::string> XmlWellFormedError(std::string_view body) {
  auto errors = XmlWellFormedErrors({body});
  if (!errors.ok()) return errors.status();
  return std::move(errors->front());
}

}  // namespace mq
