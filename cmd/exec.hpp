// exec.hpp: running a command for received messages (mq-receive --exec, mq-watch --exec).
//
// The command is run directly (execvp of argv, never a shell), so message content can never
// become part of a command line. The body goes to its stdin; the properties go to MQ_*
// environment variables.
//
// Which processes hold the transaction (the protocol, also in mq-receive(1)):
//  - The command runs in a process group of its own, and inherits the lease's lock-file
//    descriptor (not close-on-exec), as do all its descendants: the lease is a flock on that
//    open file description (filelock.hpp), so it lives while mq-receive or any process of
//    the command holds the descriptor, and no other reader takes the messages back before
//    the last of them is gone.
//  - When the command (the process mq-receive started) exits, whatever is left of its
//    process group is killed (SIGKILL) and reaped (mq-receive is a child subreaper) before
//    the transaction ends: nothing of a command outlives its commit or rollback.
//  - If mq-receive dies, its command gets SIGKILL (PR_SET_PDEATHSIG); descendants of the
//    command that still hold the descriptor keep the messages Locked until they exit, and
//    then the messages return to the queue (a death is a rollback).
//  - AbandonCommand() (async-signal-safe, for SIGHUP: a lost terminal, or mq-watch's death)
//    kills the running command's process group at once; Interrupt forwards SIGINT to it, as
//    a terminal would have if the command were in the foreground group.
#pragma once

#include <string>
#include <vector>

#include "base/message.hpp"
#include "base/status.hpp"
#include "store/store.hpp"

namespace mq::cli {

// Splits argv at the first "--exec": the words before it are the tool's own; the words after
// it are the command and its arguments. Returns false if there is no --exec.
bool SplitExec(int argc, char** argv, std::vector<char*>& own, std::vector<std::string>& cmd);

struct ExecResult {
  int status = 0;      // as from waitpid, if the command ran
  Status not_started;  // why it could not be started (a missing program, no fork)
  std::string stderr_tail;  // the end of what it wrote to its stderr (kMaxFailureStderr)
  bool ok() const;
  // The command did not run: it could not be started, or it exited 126 or 127, the shell's
  // "cannot execute" and "not found" (sh -c 'missing.sh'). Its messages did nothing wrong:
  // they go back untouched, and mq-receive exits as env(1) and timeout(1) do.
  bool CannotStart() const;
  // The exit status for that: 127 not found, 126 not runnable (or the status's own code, for
  // a fork or pipe that failed).
  int CannotStartExit() const;
  std::string Describe() const;  // "exited with status 3", "was killed by signal 9 (Killed)"
};

// Whether `cmd` names a program that can run (found in PATH, executable): checked before any
// message is touched, so that a typo never rolls messages back.
Status CheckCommand(const std::vector<std::string>& cmd);

// Runs `cmd` with the messages: one message: its body on stdin and its properties in MQ_*;
// a --batch: every body followed by `sep` (even a batch of one), MQ_COUNT, MQ_LOOKUP_IDS,
// MQ_IDS, and the first message's properties.
// `lease_fd` (if >= 0) is inherited by the command and its descendants.
Result<ExecResult> RunCommand(const std::vector<std::string>& cmd,
                              const std::vector<Message>& messages, bool batch, char sep,
                              const std::string& store_dir, int lease_fd = -1);

// Makes this process a child subreaper, so that RunCommand can reap what is left of a
// command's process group; call once before the first RunCommand.
Status BecomeSubreaper();

// For signal handlers: SIGKILL (AbandonCommand) or SIGINT (InterruptCommand) to the process
// group of the command running now, if any; a command started later by the same RunCommand
// call is killed as soon as it exists.
void AbandonCommand();
void InterruptCommand();

}  // namespace mq::cli
