// stop.hpp: how a long-running engine (forward, accept, bridge out and in, an activator) is
// told to stop. Owns nothing in the store.
//
// A StopSignal is a self-pipe: Request() sets a flag and writes a byte (async-signal-safe, so
// a SIGTERM handler may call it), after which fd() stays readable and Requested() is true for
// good. Wake() makes fd() readable without asking for a stop (a SIGCHLD handler's "look
// again"): readability is a hint, Requested() the answer.
// Engines put fd() in their poll sets and sleep with SleepFor(), so that a stop wakes them at
// once; they never install signal handlers themselves (the tools do: cli::StopOnSignals).
#pragma once

#include <csignal>
#include <cstdint>

namespace mq::proc {

class StopSignal {
 public:
  // The pipe is made at construction; if that fails, valid() is false.
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  bool valid() const { return fds_[0] >= 0; }
  // Readable once a stop was requested, or woken, until Drain().
  int fd() const { return fds_[0]; }
  // Empties the pipe after a wake-up, so that the next poll sleeps until the next one;
  // Requested() stays true.
  void Drain() const;
  // Both async-signal-safe.
  void Request();
  void Wake();
  bool Requested() const;
  // Sleeps `ms`, or less if a stop is requested: whether one was.
  bool SleepFor(int64_t ms) const;

 private:
  int fds_[2] = {-1, -1};
  volatile sig_atomic_t requested_ = 0;
};

}  // namespace mq::proc
