// queue.cpp: encoding of queue catalog records.
#include "store/queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/codec.hpp"

namespace mq {

namespace {

constexpr uint8_t kQueueVersion = 1;

// Never renumber or reuse a tag.
enum Tag : uint32_t {
  kTagId = 1,
  kTagLabel = 2,
  kTagQuota = 3,
  kTagMaxMessageSize = 4,
  kTagDisabled = 5,
  kTagCreated = 6,
  kTagModified = 7,
  kTagCount = 8,
  kTagBytes = 9,
  kTagNextLookup = 10,
  kTagDelayed = 11,
  kTagLocked = 12,
  kTagTransactional = 13,
  kTagMaxRetries = 14,
  kTagPoison = 15,
  kTagDedupWindow = 16,
  kTagNextLease = 17,
  kTagTxSequenceId = 18,
  kTagTxNextSeq = 19,
  kTagSentTotal = 20,
  kTagReceivedTotal = 21,
  kTagRetryDelay = 22,
  kTagIdGuid = 23,
  kTagIdCounter = 24,
  kTagJournal = 30,
  kTagJournalQuota = 31,
  kTagJournalDropped = 32,
  // 40 and up: conversations (issue 5).
  kTagRetention = 40,
  kTagRetained = 41,
  kTagReceivePaused = 50,
  kTagRetryBackoff = 51,  // x 1000
  kTagRetryDelayMax = 52,
  kTagRetryJitter = 53,  // x 1000
  kTagRateCount = 54,
  kTagRatePeriod = 55,
  kTagRateBurst = 56,
  kTagRateEmpty = 57,
};

}  // namespace

std::string EncodeQueue(const QueueInfo& q) {
  std::string out(1, static_cast<char>(kQueueVersion));
  TlvWriter w(out);
  w.Uint(kTagId, q.id);
  w.BytesIfNotEmpty(kTagLabel, q.label);
  w.UintIfNot(kTagQuota, q.quota, 0);
  w.UintIfNot(kTagMaxMessageSize, q.max_message_size, kDefaultMaxMessageSize);
  w.UintIfNot(kTagDisabled, q.enabled ? 0 : 1, 0);
  w.Uint(kTagCreated, static_cast<uint64_t>(q.created_time));
  w.Uint(kTagModified, static_cast<uint64_t>(q.modified_time));
  w.Uint(kTagCount, q.count);
  w.Uint(kTagBytes, q.bytes);
  w.Uint(kTagNextLookup, q.next_lookup);
  w.UintIfNot(kTagDelayed, q.delayed, 0);
  w.UintIfNot(kTagLocked, q.locked, 0);
  w.UintIfNot(kTagTransactional, q.transactional ? 1 : 0, 0);
  w.UintIfNot(kTagMaxRetries, q.max_retries, kDefaultMaxRetries);
  w.UintIfNot(kTagPoison, static_cast<uint8_t>(q.poison), 0);
  w.UintIfNot(kTagDedupWindow, static_cast<uint64_t>(q.dedup_window), kDefaultDedupWindow);
  w.UintIfNot(kTagNextLease, q.next_lease, 1);
  w.UintIfNot(kTagTxSequenceId, q.tx_sequence_id, 0);
  w.UintIfNot(kTagTxNextSeq, q.tx_next_seq, 1);
  w.UintIfNot(kTagSentTotal, q.sent_total, 0);
  w.UintIfNot(kTagReceivedTotal, q.received_total, 0);
  w.UintIfNot(kTagRetryDelay, static_cast<uint64_t>(q.retry_delay), 0);
  w.BytesIfNotEmpty(kTagIdGuid, q.id_guid);
  w.UintIfNot(kTagIdCounter, q.id_counter, 0);
  w.UintIfNot(kTagJournal, q.journal ? 1 : 0, 0);
  w.UintIfNot(kTagJournalQuota, q.journal_quota, 0);
  w.UintIfNot(kTagJournalDropped, q.journal_dropped, 0);
  w.UintIfNot(kTagRetention, q.retention ? 1 : 0, 0);
  w.UintIfNot(kTagRetained, q.retained, 0);
  w.UintIfNot(kTagReceivePaused, q.receive_paused ? 1 : 0, 0);
  w.UintIfNot(kTagRetryBackoff, static_cast<uint64_t>(std::llround(q.retry_backoff * 1000)), 1000);
  w.UintIfNot(kTagRetryDelayMax, static_cast<uint64_t>(q.retry_delay_max), 0);
  w.UintIfNot(kTagRetryJitter, static_cast<uint64_t>(std::llround(q.retry_jitter * 1000)), 0);
  w.UintIfNot(kTagRateCount, q.rate.count, 0);
  w.UintIfNot(kTagRatePeriod, static_cast<uint64_t>(q.rate.period_ms), 0);
  w.UintIfNot(kTagRateBurst, q.rate_burst, 0);
  w.UintIfNot(kTagRateEmpty, static_cast<uint64_t>(q.rate_empty_ns), 0);
  return out;
}

Status DecodeQueue(std::string_view record, QueueInfo& q) {
  if (record.empty() || record[0] == 0) return Status::Corrupted("bad queue record");
  if (static_cast<uint8_t>(record[0]) > kQueueVersion)
    return Status::Error("queue record is newer than this mq understands; upgrade mq");
  QueueInfo d;
  d.name = std::move(q.name);
  TlvReader r(record.substr(1));
  while (r.Next()) {
    switch (r.tag()) {
      case kTagId: d.id = static_cast<uint32_t>(r.uint()); break;
      case kTagLabel: d.label = r.bytes(); break;
      case kTagQuota: d.quota = r.uint(); break;
      case kTagMaxMessageSize: d.max_message_size = r.uint(); break;
      case kTagDisabled: d.enabled = r.uint() == 0; break;
      case kTagCreated: d.created_time = static_cast<int64_t>(r.uint()); break;
      case kTagModified: d.modified_time = static_cast<int64_t>(r.uint()); break;
      case kTagCount: d.count = r.uint(); break;
      case kTagBytes: d.bytes = r.uint(); break;
      case kTagNextLookup: d.next_lookup = r.uint(); break;
      case kTagDelayed: d.delayed = r.uint(); break;
      case kTagLocked: d.locked = r.uint(); break;
      case kTagTransactional: d.transactional = r.uint() != 0; break;
      case kTagMaxRetries: d.max_retries = static_cast<uint32_t>(r.uint()); break;
      case kTagPoison: d.poison = static_cast<PoisonAction>(std::min<uint64_t>(r.uint(), 2)); break;
      case kTagDedupWindow: d.dedup_window = static_cast<int64_t>(r.uint()); break;
      case kTagNextLease: d.next_lease = r.uint(); break;
      case kTagTxSequenceId: d.tx_sequence_id = r.uint(); break;
      case kTagTxNextSeq: d.tx_next_seq = static_cast<uint32_t>(r.uint()); break;
      case kTagSentTotal: d.sent_total = r.uint(); break;
      case kTagReceivedTotal: d.received_total = r.uint(); break;
      case kTagRetryDelay: d.retry_delay = static_cast<int64_t>(r.uint()); break;
      case kTagIdGuid: d.id_guid = r.bytes(); break;
      case kTagIdCounter: d.id_counter = static_cast<uint32_t>(r.uint()); break;
      case kTagJournal: d.journal = r.uint() != 0; break;
      case kTagJournalQuota: d.journal_quota = r.uint(); break;
      case kTagJournalDropped: d.journal_dropped = r.uint(); break;
      case kTagRetention: d.retention = r.uint() != 0; break;
      case kTagRetained: d.retained = r.uint(); break;
      case kTagReceivePaused: d.receive_paused = r.uint() != 0; break;
      case kTagRetryBackoff: d.retry_backoff = static_cast<double>(r.uint()) / 1000; break;
      case kTagRetryDelayMax: d.retry_delay_max = static_cast<int64_t>(r.uint()); break;
      case kTagRetryJitter: d.retry_jitter = static_cast<double>(r.uint()) / 1000; break;
      case kTagRateCount: d.rate.count = r.uint(); break;
      case kTagRatePeriod: d.rate.period_ms = static_cast<int64_t>(r.uint()); break;
      case kTagRateBurst: d.rate_burst = r.uint(); break;
      case kTagRateEmpty: d.rate_empty_ns = static_cast<int64_t>(r.uint()); break;
      default: break;
    }
  }
  if (r.error()) return Status::Corrupted("malformed queue record");
  q = std::move(d);
  return {};
}

int64_t RetryDelayFor(const QueueInfo& q, int64_t base_ms, uint32_t attempt, double random) {
  if (base_ms <= 0) return 0;
  // In double: a factor of 2 overflows int64 after 63 attempts; a year is cap enough.
  constexpr double kLongest = 366.0 * 24 * 3600 * 1000;
  double d = static_cast<double>(base_ms) *
             std::pow(std::max(q.retry_backoff, 1.0), attempt > 1 ? attempt - 1 : 0);
  if (q.retry_delay_max > 0) d = std::min(d, static_cast<double>(q.retry_delay_max));
  d = std::min(d, kLongest);
  d -= d * std::clamp(q.retry_jitter, 0.0, 1.0) * std::clamp(random, 0.0, 1.0);
  return std::max<int64_t>(1, std::llround(d));
}

namespace {

// The time between two tokens, ns (at least 1). A record damaged into a period of 0 or one
// beyond any that set accepts still yields a sane interval.
int64_t RateInterval(const QueueInfo& q) {
  constexpr int64_t kLongest = 366LL * 86'400'000;
  int64_t period = std::clamp<int64_t>(q.rate.period_ms, 1, kLongest);
  return std::max<int64_t>(1, period * 1'000'000 / static_cast<int64_t>(q.rate.count));
}

// The time the bucket is empty from, as seen at `now_ns`: never later than now (a clock set
// back), never earlier than a full bucket's.
int64_t RateEmptyAt(const QueueInfo& q, int64_t now_ns) {
  __int128 full =
      static_cast<__int128>(now_ns) - static_cast<__int128>(RateBurst(q)) * RateInterval(q);
  int64_t lo = full < 0 ? 0 : static_cast<int64_t>(full);
  return std::clamp(q.rate_empty_ns, std::min(lo, now_ns), now_ns);
}

}  // namespace

uint64_t RateBurst(const QueueInfo& q) {
  return std::clamp<uint64_t>(q.rate_burst, 1, 1'000'000'000);
}

uint64_t RateTokens(const QueueInfo& q, int64_t now_ns) {
  if (q.rate.count == 0) return UINT64_MAX;
  return static_cast<uint64_t>((now_ns - RateEmptyAt(q, now_ns)) / RateInterval(q));
}

double RateTokensExact(const QueueInfo& q, int64_t now_ns) {
  if (q.rate.count == 0) return 0;
  return static_cast<double>(now_ns - RateEmptyAt(q, now_ns)) /
         static_cast<double>(RateInterval(q));
}

void RateTake(QueueInfo& q, int64_t now_ns, uint64_t n) {
  if (q.rate.count == 0) return;
  q.rate_empty_ns = RateEmptyAt(q, now_ns) + static_cast<int64_t>(n) * RateInterval(q);
}

int64_t RateNextMs(const QueueInfo& q, int64_t now_ns) {
  return (RateEmptyAt(q, now_ns) + RateInterval(q) + 999'999) / 1'000'000;
}

std::string RateWaitText(const QueueInfo& q, int64_t now_ns) {
  int64_t wait_ns = std::max<int64_t>(0, RateEmptyAt(q, now_ns) + RateInterval(q) - now_ns);
  int64_t ms = (wait_ns + 999'999) / 1'000'000;
  if (ms >= 1000) ms = (ms + 999) / 1000 * 1000;  // "1h", not "3599998ms"
  return FormatDuration(ms);
}

const char* StateWord(const QueueInfo& q) {
  return !q.enabled ? "off" : q.receive_paused ? "paused" : "on";
}

const char* PoisonName(PoisonAction a) {
  switch (a) {
    case PoisonAction::kSubqueue: return "subqueue";
    case PoisonAction::kDeadletter: return "deadletter";
    case PoisonAction::kDisable: return "disable";
  }
  return "subqueue";
}

}  // namespace mq
