// spawn.hpp: starting a program, the one fork-and-exec of libmq. proc::Child (a link's
// command), mq-receive --exec (a message's command) and mq-watch's activator (its receivers)
// all start their processes here. Owns nothing once it returns: the caller reaps the pid.
//
// Rules:
//  - The program starts with SIGPIPE, SIGHUP, SIGINT, SIGTERM and SIGCHLD at their default
//    actions and no signal blocked, whatever this process ignores or blocks (a tool ignores
//    SIGPIPE to see EPIPE; a handler set here is reset by exec anyway).
//  - Descriptors: only 0, 1 and 2 and `keep_fd` cross the exec; everything libmq opens is
//    close-on-exec.
//  - Between fork and exec the child makes async-signal-safe calls only (safe in a process
//    with threads); everything it needs (argv, environment) is built before the fork.
//  - Spawn() returns once the exec has happened or failed: a program that cannot be run is
//    an error here (and its child reaped), never an exit status 127 to guess from.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.hpp"

namespace mq::proc {

struct SpawnOptions {
  // The program and its arguments. A name without a slash is looked up in PATH (execvp).
  std::vector<std::string> argv;
  // The whole environment, as NAME=VALUE; nullptr: this process's environment.
  const std::vector<std::string>* env = nullptr;
  int stdin_fd = -1;   // becomes the program's stdin, if >= 0
  int stdout_fd = -1;  // becomes its stdout, if >= 0
  int stderr_fd = -1;  // becomes its stderr, if >= 0
  int keep_fd = -1;    // inherited by the program and its descendants, if >= 0
  // A process group of its own (setpgid in both processes, so that the group exists when
  // Spawn returns): killing -pid then reaches everything the program starts.
  bool own_group = false;
  // Sent to the program when this process dies (PR_SET_PDEATHSIG); 0: none. A parent that
  // died before the program was set up makes it exit 127 at once.
  int death_signal = 0;
};

// Starts the program and returns its pid. Errors: the pipe or the fork failed (resources),
// or the exec did: a program that does not exist is MQ_ERROR_INVALID_ARGUMENT ("cannot run
// 'NAME': No such file or directory"), any other exec error kExecFailed.
Result<pid_t> Spawn(const SpawnOptions& options);

// How a process ended, from waitpid's status: "exited with status 3", "was killed by signal
// 9 (Killed)".
std::string DescribeWait(int wait_status);

}  // namespace mq::proc
