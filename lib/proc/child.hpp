// child.hpp: a command run with /bin/sh -c, talked to through pipes (a link's --via command).
// Owns the child process and the parent's ends of its pipes; nothing in the store.
//
// Rules:
//  - The command's stdin and stdout are pipes to this process; its stderr is ours. The
//    parent's ends are O_CLOEXEC and non-blocking (poll() them); the pipe to the command is
//    grown to 1 MiB where the kernel allows, so that the far side has work queued while this
//    side is busy.
//  - It is started by proc::Spawn (spawn.hpp): default signal actions, nothing blocked.
//  - It ends in one of two ways: CloseTo() (its stdin reaches end of file) then Reap(), which
//    waits for it and sends SIGTERM once the wait runs out; or Stop(), which closes both
//    pipes, sends SIGTERM at once and waits. The destructor Stop()s. A child is always
//    reaped: no zombie outlives its Child.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace mq::proc {

class Child {
 public:
  Child() = default;
  ~Child() { Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Runs `command` with /bin/sh -c. An error if the pipes cannot be made or the shell cannot
  // be started ("cannot start `what`"; a command that fails shows at its end, in Reap()).
  Status Start(const std::string& command, const std::string& what = "the command");

  // The write end of the command's stdin, and the read end of its stdout (-1 once closed).
  int to() const { return to_; }
  int from() const { return from_; }
  void CloseTo();

  // Waits up to `wait_ms` for the command to end (SIGTERM after that, and waits on), and
  // says how it ended: "exit status N", "killed by signal N", or "ended" if it was not
  // running (never started, or reaped already: then the same answer as the first time).
  std::string Reap(int64_t wait_ms);

  // Closes both pipes and ends the command at once (SIGTERM), if it is still running.
  void Stop();

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string status_ = "ended";
};

}  // namespace mq::proc
