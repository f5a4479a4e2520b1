// bridge.hpp: the engines of mq-admin bridge out and bridge in: they move messages between
// an mq queue and an AMQP broker, exactly once in both directions. They own no store state
// (they call the store's public API, store.hpp) and no connection (a Connector makes their
// channels, channel.hpp); they never print or exit: they report through a callback and end
// with a Status.
//
// Protocol (mq(7) "Beyond one machine" says the same for users):
//  out: 1. Lock a batch (up to `batch` messages) under a process lease: while this process
//          lives nobody else gets them; if it dies, the next reader returns them.
//       2. Publish each, persistent and mandatory, on a channel in confirm mode, with the mq
//          message id as AMQP message_id (amqp_map.hpp has the mapping).
//       3. Wait for the broker's confirms. All acked and none returned: Finish (commit)
//          removes the batch in one synced transaction. A nack, a return (no queue bound) or
//          a lost connection: Release returns the batch untouched (no abort count).
//       kConfirmWindow batches are in flight at once: the next is locked and published while
//       the confirms of the one before come in, and batches are removed in the order they
//       were published. A failure returns every batch in flight.
//       A crash between 3's confirm and the removal publishes the batch again: the copies
//       carry the same message_id, which bridge in (or any consumer) drops.
//  in:  1. Consume with manual acknowledgements and a prefetch window.
//       2. Append the deliveries at hand (up to `batch`) in one LMDB transaction, each with a
//          dedup key "amqp:MESSAGE_ID" recorded in that same transaction (for
//          `dedup_window_ms`); a key seen before in the window drops its message.
//       3. Only after that commit, ack them (multiple) to the broker. A crash before the ack
//          makes the broker redeliver; the dedup keys store each message once. A delivery
//          without message_id is stored at least once. A delivery the queue refuses for what
//          it is (its size, the quota, a property) is rejected without requeue (for the AMQP
//          queue's dead-letter exchange) with a note; the others are stored.
// Without `follow` an engine stops when the source is empty; with it, it waits (the doorbell
// on the mq side, the consumer on the AMQP side). A transient error (channel.hpp) is
// reconnected with proc::Backoff (doubling from 100 ms to 10 s), for `retry_ms` from the first
// failed attempt; without `follow` the first connection is not retried, so a wrong URL fails
// at once. A stop request (proc::StopSignal): the batch in flight is finished (confirmed and
// removed, or stored and acked), then the engine returns ok.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/names.hpp"
#include "base/status.hpp"
#include "bridge/channel.hpp"
#include "proc/backoff.hpp"
#include "proc/stop.hpp"
#include "store/store.hpp"

namespace mq::bridge {

// bridge out: batches published and awaiting their confirms at once. Two keep the broker
// busy with one batch while the bridge removes the one before from the store.
constexpr size_t kConfirmWindow = 2;
// bridge in: the dedup key of a delivery with a message_id is this followed by it.
inline constexpr const char* kDedupPrefix = "amqp:";

// What mq-admin bridge's options say, parsed. Where to connect (URL, credentials, TLS files)
// is the Connector's (amqp_link.hpp: LinkConnector).
struct BridgeOptions {
  QueueRef queue;      // a plain queue (not a journal, subqueue or system queue)
  std::string broker;  // the broker as shown to users (its URL without the password)
  int timeout_ms = 30000;  // waiting for the broker's replies and confirms
  // How long to keep reconnecting after a transient error (kNever: for ever).
  int64_t retry_ms = proc::Backoff::kNever;
  bool follow = false;   // false: --once
  bool declare = false;  // declare what the bridge uses (channel.hpp)
  // Messages per store transaction (out: per lease and confirm round), at least 1.
  uint32_t batch = 500;
  // out
  std::string exchange;
  std::string routing_key;  // empty: the queue's name (and, with declare, the queue's)
  // in
  std::string from;  // the AMQP queue
  uint16_t prefetch = 1000;
  int64_t dedup_window_ms = int64_t{7} * 24 * 3600 * 1000;
};

// Something the user should know that is no error: a lost connection being retried, a
// connection back, a delivery rejected. mq-admin prints "SUBJECT: text".
struct BridgeNote {
  std::string subject;
  std::string text;
};
using NoteFn = std::function<void(const BridgeNote&)>;

// Runs bridge out (or in) until the source is empty (without follow), a stop request, or an
// error that ends it: ok, or that error (a transient one after the retry budget: its text
// followed by " (gave up after DURATION)"). Every channel comes from `connector`; `note` may
// be empty.
Status RunBridgeOut(Store& store, const BridgeOptions& options, Connector& connector,
                    const proc::StopSignal& stop, const NoteFn& note);
Status RunBridgeIn(Store& store, const BridgeOptions& options, Connector& connector,
                   const proc::StopSignal& stop, const NoteFn& note);

}  // namespace mq::bridge
