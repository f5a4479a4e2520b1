// exec.hpp: running a command for received messages (mq-receive --exec, mq-watch --exec).
//
// The command is run directly (execvp of argv, never a shell), so message content can never
// become part of a command line. The body goes to its stdin; the properties go to MQ_*
// environment variables. The child gets PR_SET_PDEATHSIG(SIGKILL): if mq-receive dies, its
// command dies with it, so a message returned to the queue is never still being worked on.
#pragma once

#include <string>
#include <vector>

#include "message.hpp"
#include "status.hpp"

namespace mq::cli {

// Splits argv at the first "--exec": the words before it are the tool's own; the words after
// it are the command and its arguments. Returns false if there is no --exec.
bool SplitExec(int argc, char** argv, std::vector<char*>& own, std::vector<std::string>& cmd);

struct ExecResult {
  int status = 0;  // as from waitpid
  bool ok() const;
  std::string Describe() const;  // "exited with status 3", "killed by signal 9"
};

// Whether `cmd` names a program that can run (found in PATH, executable): checked before any
// message is touched, so that a typo never rolls messages back.
Status CheckCommand(const std::vector<std::string>& cmd);

// Runs `cmd` with the messages: one message: its body on stdin and its properties in MQ_*;
// a --batch: every body followed by `sep` (even a batch of one), MQ_COUNT, MQ_LOOKUP_IDS,
// MQ_IDS, and the first message's properties.
Result<ExecResult> RunCommand(const std::vector<std::string>& cmd,
                              const std::vector<Message>& messages, bool batch, char sep,
                              const std::string& store_dir);

}  // namespace mq::cli
