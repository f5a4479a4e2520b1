// queue.hpp: a queue's catalog record (the value in the `queues` database).
//
// Version byte 1, then TLV fields (codec.hpp) as for messages: absent fields take defaults.
// A subqueue ("orders;poison") or journal ("orders;journal") is a catalog entry of its own,
// made when first written; the system queues are made with the store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/message.hpp"
#include "base/status.hpp"
#include "base/units.hpp"

namespace mq {

inline constexpr uint32_t kDefaultMaxRetries = 5;
inline constexpr int64_t kDefaultDedupWindow = 5 * 60 * 1000;

// What happens to a message rolled back max_retries times.
enum class PoisonAction : uint8_t {
  kSubqueue = 0,    // move to QUEUE;poison (MSMQ 4 poison subqueue)
  kDeadletter = 1,  // move to system;deadletter (system;deadxact for a transactional queue)
  kDisable = 2,     // Service Broker: set the queue's status OFF
};
const char* PoisonName(PoisonAction a);

struct QueueInfo {
  std::string name;  // the key, e.g. "orders" or "orders;poison"
  uint32_t id = 0;
  std::string label;
  uint64_t quota = 0;  // bytes of records; 0: no limit
  uint64_t max_message_size = kDefaultMaxMessageSize;
  bool enabled = true;  // Service Broker STATUS
  // Receiving paused (mq-admin set --receive off): sends go on, receives find nothing and
  // waiting receivers wait on; peeks see the messages.
  bool receive_paused = false;
  int64_t created_time = 0;
  int64_t modified_time = 0;
  // Counters, kept in every transaction that changes the queue.
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t next_lookup = 1;
  uint64_t delayed = 0;  // of `count`: stored but not visible yet (delayed delivery)
  uint64_t locked = 0;   // of `count`: held by an open transactional receive or lease

  // Transactions and poison messages.
  bool transactional = false;  // accepts only transactional sends (--tx)
  uint32_t max_retries = kDefaultMaxRetries;
  PoisonAction poison = PoisonAction::kSubqueue;
  int64_t dedup_window = kDefaultDedupWindow;  // ms
  // A message rolled back (a failed --exec, a nack, a dead holder) is visible again after
  // this long, ms (beanstalkd's release with delay, SQS's visibility timeout); 0: at once.
  int64_t retry_delay = 0;
  // Backoff: after the n-th rollback the delay is retry_delay x retry_backoff^(n-1), at most
  // retry_delay_max (0: no cap), less a random part of up to retry_jitter of it (0..1), so
  // that messages that failed together do not return together (RetryDelayFor).
  double retry_backoff = 1;
  int64_t retry_delay_max = 0;
  double retry_jitter = 0;
  // Rate limit (mq-admin set --rate COUNT/PERIOD --burst B; count 0: none): messages leave
  // the queue (Locked or received, by any process) at most `rate.count` per
  // `rate.period_ms`, from a token bucket of `rate_burst` tokens (0: 1), GCRA-style in one
  // timestamp: `rate_empty_ns` is the real time (ns) at which the bucket was, or will be,
  // empty; a token accrues every period/count from then on (RateTokens).
  Rate rate;
  uint64_t rate_burst = 0;
  int64_t rate_empty_ns = 0;
  uint64_t next_lease = 1;
  uint64_t tx_sequence_id = 0;  // MS-MQQB TxSequenceID of sends into this queue
  uint32_t tx_next_seq = 1;     // the next TxSequenceNumber
  // Since the queue was made: messages that entered it (sends, moves, acks, journal copies;
  // a delayed message once, when sent) and messages received from it (committed).
  uint64_t sent_total = 0;
  uint64_t received_total = 0;
  // The source of the ids of messages made in this queue ({GUID}\counter, MSMQ's form):
  // kept in the record that every send writes anyway, so a send touches no shared counter.
  // Empty until the first id; a spent counter starts again under a fresh GUID.
  std::string id_guid;  // 16 bytes
  uint32_t id_counter = 0;

  // Journals (target journaling): a copy of each received message goes to NAME;journal, up
  // to journal_quota bytes there (0: no limit); copies left out because it was full are
  // counted in journal_dropped.
  bool journal = false;
  uint64_t journal_quota = 0;
  uint64_t journal_dropped = 0;
  // Service Broker RETENTION: a received message stays with status 0.
  bool retention = false;
  uint64_t retained = 0;  // of `count`: retained messages (status 0)

  bool operator==(const QueueInfo&) const = default;
};

// The delay before the `attempt`-th retry (abort_count after the rollback, from 1) of a
// message of `q` whose delay before the first retry is `base_ms`; `random` in [0, 1) draws
// the jitter. 0 when base_ms is 0.
int64_t RetryDelayFor(const QueueInfo& q, int64_t base_ms, uint32_t attempt, double random);

// The rate limit: how many whole tokens `q` has at real time `now_ns` (UINT64_MAX without a
// limit), the same with the fraction (for stat), spending `n` of them (at most RateTokens),
// the real time (ms, rounded up) at which the next one accrues, and the wait for it as a
// user reads it ("1h": whole seconds from a second on, rounded up from the nanosecond). A
// clock set back leaves the bucket empty from the new time on, never stalled until the old one.
uint64_t RateTokens(const QueueInfo& q, int64_t now_ns);
double RateTokensExact(const QueueInfo& q, int64_t now_ns);
void RateTake(QueueInfo& q, int64_t now_ns, uint64_t n);
int64_t RateNextMs(const QueueInfo& q, int64_t now_ns);
std::string RateWaitText(const QueueInfo& q, int64_t now_ns);
uint64_t RateBurst(const QueueInfo& q);

// The queue's state in a word, for tables: "off" (status OFF: no sends or receives), "paused"
// (receiving paused, sends go on) or "on".
const char* StateWord(const QueueInfo& q);

std::string EncodeQueue(const QueueInfo& q);
// Decodes a record; `name` is left as it is in `q`.
Status DecodeQueue(std::string_view record, QueueInfo& q);

}  // namespace mq
