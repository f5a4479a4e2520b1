// connection.hpp: how a forward reaches the far side: a Connector makes one Connection per
// session, a pair of byte streams to an mq-admin accept (the frames of wire/transfer.hpp).
// The default, CommandConnector, runs the link's --via command (proc/child.hpp); tests put an
// in-process accept behind the same interface.
//
// A Connection's contract, as the forward uses it:
//  - to() is written and from() read, both non-blocking and O_CLOEXEC, polled by the forward;
//  - CloseTo() ends the stream to the far side (it sees end of file, the forward's last word);
//  - Reap(wait_ms) then waits up to wait_ms for the far side to end and says how it ended, in
//    the words error texts use after "the link's command ended with": "exit status 0" is a
//    clean end, anything else is not;
//  - Stop() (and the destructor) ends it at once: both streams closed, the far side told to
//    stop and waited for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.hpp"

namespace mq::link {

class Connection {
 public:
  virtual ~Connection() = default;
  virtual int to() const = 0;
  virtual int from() const = 0;
  virtual void CloseTo() = 0;
  virtual std::string Reap(int64_t wait_ms) = 0;
  virtual void Stop() = 0;
};

class Connector {
 public:
  virtual ~Connector() = default;
  // A new connection for a session; an error if none could be made (retried like any failed
  // session).
  virtual Result<std::unique_ptr<Connection>> Connect() = 0;
};

// Runs `via` (the link's command) with /bin/sh -c for each connection: its stdin and stdout
// are the streams, its stderr is this process's.
class CommandConnector : public Connector {
 public:
  explicit CommandConnector(std::string via) : via_(std::move(via)) {}
  Result<std::unique_ptr<Connection>> Connect() override;

 private:
  std::string via_;
};

}  // namespace mq::link
