// activator.hpp: Service Broker activation (mq-watch --exec). While a queue has available
// messages, keeps up to `max_readers` receivers running, each a process that takes messages
// in transactions until none is left (mq-watch starts `mq-receive QUEUE --all --keep-going
// --quiet --retry-delay D --wait 1s --exec CMD...`). Owns its receivers; nothing in the store (it
// reads the queue's counts and deadlines, and sleeps on its doorbell).
//
// The loop, and why it neither spins nor stalls:
//  - It starts receivers as messages arrive (doorbell) or become due (deadline), never more
//    than there are available messages (count less delayed, Locked and retained), nor than
//    the rate limit's tokens due within `rate_lead_ms` (the receivers wait for them).
//  - A receiver's exit status says what it did. 0: it committed, the pool works (a hold ends).
//    8: some of its commands failed; their messages were rolled back and wait a retry delay
//    while it went on with the next (a failing message waits, not the pool): nothing is held.
//    1: it found nothing it could take (another process took the message first, or the rest is
//    in conversation groups that others hold): the activator goes idle, starting no receiver
//    until the doorbell rings, unless it already rang after that receiver started (counted in
//    `rings`): that ring may be the very one that freed the work it missed.
//  - Any other end processed nothing: the command cannot be started (126, 127: its messages
//    went back untouched), a store error (10), a receiver killed by a signal. Then new
//    receivers are held off until a backoff time (200 ms doubling up to 30 s). The wait ends
//    at that time, which clears the hold: a hold that has passed never stays in the wait's
//    timeout. A doorbell ring during a hold starts one probe receiver (one at a time, at most
//    every 250 ms): a command that can start again (its file put back) resumes the pool at
//    once, and one that cannot makes no hot loop.
//  - Otherwise it sleeps on the doorbell until a ring, the queue's next deadline (a delayed
//    message due), a stop or a wake of `stop` (the tool's SIGCHLD handler calls Wake()), and
//    then looks again.
//  - A stop: no new receivers; the running ones get SIGTERM, finish their current command and
//    exit; then RunActivator returns OK. The queue disabled or deleted: the same, and it
//    returns MQ_ERROR_QUEUE_NOT_ACTIVE or MQ_ERROR_QUEUE_DELETED.
//  - Receivers get SIGHUP if the activator's process dies (PR_SET_PDEATHSIG), which makes
//    mq-receive kill its command's process group and roll back: the work stops with it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "proc/stop.hpp"
#include "store/store.hpp"

namespace mq::activate {

struct ActivatorOptions {
  QueueRef queue;
  std::vector<std::string> receiver;  // the argv of one receiver
  int max_readers = 1;
  // How long before a rate limit's token is due a receiver may start: the receiver's own
  // first receive must wait at least this long (mq-watch passes --wait), and takes the token
  // as it comes. Without a lead, the time a receiver takes to start is lost from every
  // token of a full bucket (10/s ran 9 commands a second on a loaded machine).
  int64_t rate_lead_ms = 0;
};

// What the activator did, for tests and logs.
struct ActivatorEvent {
  enum class Kind { kStarted, kEnded, kHold } kind;
  int pid = 0;
  int wait_status = 0;  // kEnded: as from waitpid
  int64_t hold_ms = 0;  // kHold: how long new receivers are held off
};

Status RunActivator(Store& store, const ActivatorOptions& o, const proc::StopSignal& stop,
                    const std::function<void(const ActivatorEvent&)>& on_event = {});

}  // namespace mq::activate
