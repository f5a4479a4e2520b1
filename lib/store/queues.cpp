// queues.cpp: the catalog (the `queues` and `queue_ids` databases and the meta
// counters): loading, creating, updating, deleting, listing, stat and purge of queues.
#include "store/store_impl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "store/conversation.hpp"
#include "store/filelock.hpp"
#include "store/lmdb.hpp"
#include "base/paths.hpp"
#include "base/units.hpp"
#include "store/waiter.hpp"

namespace mq {

Result<std::optional<QueueInfo>> Store::Impl::LoadQueue(lmdb::Txn& txn, const std::string& name) {
  auto v = txn.Get(queues, name);
  if (!v) return std::optional<QueueInfo>();
  QueueInfo q;
  q.name = name;
  Status s = DecodeQueue(*v, q);
  if (!s.ok()) return s.WithSubject(name);
  return std::optional<QueueInfo>(std::move(q));
}

// The queue a reference names. A subqueue or journal of an existing queue that was never
// written reads as an empty queue with id 0.
Result<QueueInfo> Store::Impl::FindQueue(lmdb::Txn& txn, const QueueRef& ref) {
  auto q = LoadQueue(txn, ref.Full());
  if (!q.ok()) return q.status();
  if (*q) return std::move(**q);
  if (ref.IsSub() && !ref.IsSystem()) {
    auto base = LoadQueue(txn, ref.base);
    if (!base.ok()) return base.status();
    if (*base) {
      QueueInfo empty;
      empty.name = ref.Full();
      return empty;
    }
  }
  return Status::QueueNotFound("no such queue", ref.Full());
}

Status Store::Impl::PutQueue(lmdb::Txn& txn, const QueueInfo& q) {
  return txn.Put(queues, q.name, EncodeQueue(q));
}

Result<uint32_t> Store::Impl::MetaU32(lmdb::Txn& txn, std::string_view key, uint32_t dflt) {
  auto v = GetMeta(txn, key);
  if (!v) return dflt;
  if (v->size() != 4) return Status::Corrupted(fmt::format("bad meta record {}", key));
  return GetU32BE(*v, 0);
}

Status Store::Impl::PutMetaU32(lmdb::Txn& txn, std::string_view key, uint32_t v) {
  std::string b;
  PutU32BE(b, v);
  return PutMeta(txn, key, b);
}

Result<QueueInfo> Store::Impl::NewQueue(lmdb::Txn& txn, const std::string& name) {
  // "out" would have subqueues out;X, the outgoing queue of link X. A queue of that name made
  // before links existed stays usable (names.hpp): only making one is refused.
  if (name == kOutgoingBase)
    return Status::IllegalQueuePathname(
        "invalid queue name: 'out' is reserved: out;LINK is the outgoing queue of the "
        "link LINK",
        name);
  auto next = MetaU32(txn, "next_queue_id", 1);
  if (!next.ok()) return next.status();
  QueueInfo q;
  q.name = name;
  q.id = *next;
  q.created_time = q.modified_time = NowMs();
  MQ_RETURN_IF_ERROR(PutMetaU32(txn, "next_queue_id", *next + 1));
  MQ_RETURN_IF_ERROR(txn.Put(queue_ids, QueueIdKey(q.id), name));
  MQ_RETURN_IF_ERROR(PutQueue(txn, q));
  return q;
}

Result<QueueInfo> Store::Impl::LoadOrCreate(lmdb::Txn& txn, const std::string& name) {
  auto q = LoadQueue(txn, name);
  if (!q.ok()) return q.status();
  if (*q) return std::move(**q);
  auto made = NewQueue(txn, name);
  if (made.ok() && name == kReceiptsQueue) {
    // A receipt that fails goes back until it is posted: never poison, tried again 1 s later,
    // then twice as long each time, up to every 5 minutes (mq-admin set changes that).
    made->max_retries = 0;
    made->retry_delay = 1000;
    made->retry_backoff = 2;
    made->retry_delay_max = 300'000;
    MQ_RETURN_IF_ERROR(PutQueue(txn, *made));
  }
  return made;
}

namespace {

Status ApplySettings(QueueInfo& q, const QueueSettings& s) {
  if (s.label) q.label = *s.label;
  if (s.quota) q.quota = *s.quota;
  if (s.max_message_size) q.max_message_size = *s.max_message_size;
  if (s.enabled) q.enabled = *s.enabled;
  if (s.receive) q.receive_paused = !*s.receive;
  if (s.max_retries) q.max_retries = *s.max_retries;
  if (s.poison) q.poison = *s.poison;
  if (s.dedup_window) q.dedup_window = *s.dedup_window;
  if (s.retry_delay) q.retry_delay = *s.retry_delay;
  if (s.retry_backoff) q.retry_backoff = *s.retry_backoff;
  if (s.retry_delay_max) q.retry_delay_max = *s.retry_delay_max;
  if (s.retry_jitter) q.retry_jitter = *s.retry_jitter;
  if (s.journal) q.journal = *s.journal;
  if (s.journal_quota) q.journal_quota = *s.journal_quota;
  if (s.retention) q.retention = *s.retention;
  if (s.rate) {
    // A new rate starts with a full bucket; none forgets the burst too.
    q.rate = *s.rate;
    q.rate_empty_ns = 0;
    if (!q.rate.count) q.rate_burst = 0;
  }
  if (s.rate_burst) q.rate_burst = *s.rate_burst;
  if (q.rate_burst && !q.rate.count)
    return Status::InvalidArg("--burst needs a rate: give --rate COUNT/PERIOD too", q.name);
  return {};
}

// For CreateQueue with exist_ok: the settings given that the existing queue does not have,
// as "quota 1048576, not 2097152"; empty when every one given matches.
std::string SettingsConflicts(const QueueInfo& q, const QueueSettings& s) {
  std::vector<std::string> out;
  auto differs = [&out](bool differ, const char* name, const std::string& have,
                        const std::string& asked) {
    if (differ) out.push_back(fmt::format("{} {}, not {}", name, have, asked));
  };
  auto on_off = [](bool b) { return std::string(b ? "on" : "off"); };
  if (s.label) differs(*s.label != q.label, "label", fmt::format("'{}'", q.label),
                       fmt::format("'{}'", *s.label));
  if (s.quota) differs(*s.quota != q.quota, "quota", std::to_string(q.quota),
                       std::to_string(*s.quota));
  if (s.max_message_size)
    differs(*s.max_message_size != q.max_message_size, "max-message-size",
            std::to_string(q.max_message_size), std::to_string(*s.max_message_size));
  if (s.transactional)
    differs(*s.transactional != q.transactional, "transactional", on_off(q.transactional),
            on_off(*s.transactional) + " (fixed at creation)");
  if (s.max_retries)
    differs(*s.max_retries != q.max_retries, "max-retries", std::to_string(q.max_retries),
            std::to_string(*s.max_retries));
  if (s.poison)
    differs(*s.poison != q.poison, "poison", PoisonName(q.poison), PoisonName(*s.poison));
  if (s.dedup_window)
    differs(*s.dedup_window != q.dedup_window, "dedup-window", FormatDuration(q.dedup_window),
            FormatDuration(*s.dedup_window));
  if (s.retry_delay)
    differs(*s.retry_delay != q.retry_delay, "retry-delay", FormatDuration(q.retry_delay),
            FormatDuration(*s.retry_delay));
  auto number = [](double v) { return fmt::format("{:g}", v); };
  if (s.retry_backoff)
    differs(number(*s.retry_backoff) != number(q.retry_backoff), "retry-backoff",
            number(q.retry_backoff), number(*s.retry_backoff));
  if (s.retry_delay_max)
    differs(*s.retry_delay_max != q.retry_delay_max, "retry-delay-max",
            FormatDuration(q.retry_delay_max), FormatDuration(*s.retry_delay_max));
  if (s.retry_jitter)
    differs(number(*s.retry_jitter) != number(q.retry_jitter), "retry-jitter",
            number(q.retry_jitter), number(*s.retry_jitter));
  if (s.journal) differs(*s.journal != q.journal, "journal", on_off(q.journal), on_off(*s.journal));
  if (s.journal_quota)
    differs(*s.journal_quota != q.journal_quota, "journal-quota", std::to_string(q.journal_quota),
            std::to_string(*s.journal_quota));
  if (s.retention)
    differs(*s.retention != q.retention, "retention", on_off(q.retention), on_off(*s.retention));
  if (s.receive)
    differs(*s.receive == q.receive_paused, "receive", on_off(!q.receive_paused),
            on_off(*s.receive));
  auto rate = [](const Rate& r) { return r.count ? FormatRate(r) : std::string("off"); };
  if (s.rate) differs(rate(*s.rate) != rate(q.rate), "rate", rate(q.rate), rate(*s.rate));
  if (s.rate_burst)
    differs(*s.rate_burst != RateBurst(q), "burst", std::to_string(RateBurst(q)),
            std::to_string(*s.rate_burst));
  std::string joined;
  for (const std::string& d : out) joined += (joined.empty() ? "" : "; ") + d;
  return joined;
}

}  // namespace

Status Store::CreateQueue(const QueueRef& ref, const QueueSettings& settings, bool exist_ok) {
  if (ref.IsSub() || ref.IsSystem())
    return Status::UnsupportedFormatnameOperation(
        "only plain queue names can be created (subqueues and journals come with "
        "their queue)",
        ref.Full());
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto existing = impl_->LoadQueue(txn, ref.Full());
    if (!existing.ok()) return existing.status();
    if (*existing && exist_ok) {
      std::string conflicts = SettingsConflicts(**existing, settings);
      if (conflicts.empty()) return Status();
      return Status::QueueExists(fmt::format("queue exists with other settings: {}", conflicts),
                                 ref.Full());
    }
    if (*existing) return Status::QueueExists("queue already exists", ref.Full());
    auto q = impl_->NewQueue(txn, ref.Full());
    if (!q.ok()) return q.status();
    MQ_RETURN_IF_ERROR(ApplySettings(*q, settings));
    if (settings.transactional) q->transactional = *settings.transactional;
    return impl_->PutQueue(txn, *q);
  });
}

Status Store::UpdateQueue(const QueueRef& ref, const QueueSettings& settings) {
  uint32_t qid = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->LoadQueue(txn, ref.Full());
    if (!q.ok()) return q.status();
    if (!*q) return Status::QueueNotFound("no such queue", ref.Full());
    QueueInfo& info = **q;
    if (settings.transactional && *settings.transactional != info.transactional)
      return Status::TransactionUsage(
          "whether a queue is transactional is fixed when it is created", info.name);
    MQ_RETURN_IF_ERROR(ApplySettings(info, settings));
    info.modified_time = NowMs();
    qid = info.id;
    return impl_->PutQueue(txn, info);
  });
  if (s.ok()) impl_->Notify(qid);
  return s;
}

Status Store::DeleteQueue(const QueueRef& ref) {
  if (ref.IsSub() || ref.IsSystem())
    return Status::UnsupportedFormatnameOperation(
        "only plain queues can be deleted (use purge for subqueues)", ref.Full());
  std::vector<uint32_t> ids;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    ids.clear();
    auto base = impl_->LoadQueue(txn, ref.Full());
    if (!base.ok()) return base.status();
    if (!*base) return Status::QueueNotFound("no such queue", ref.Full());
    std::vector<QueueInfo> victims{**base};
    {
      lmdb::Cursor c(txn, impl_->queues);
      std::string prefix = ref.Full() + ";";
      for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next()) {
        QueueInfo q;
        q.name = std::string(c.key());
        MQ_RETURN_IF_ERROR(DecodeQueue(c.value(), q));
        victims.push_back(std::move(q));
      }
    }
    int64_t now = NowMs();
    for (QueueInfo& q : victims) {
      // The queue's current record: acknowledgements of an earlier victim may have gone to it.
      auto fresh = impl_->LoadQueue(txn, q.name);
      if (!fresh.ok()) return fresh.status();
      if (*fresh) q = std::move(**fresh);
      MQ_RETURN_IF_ERROR(
          impl_->DrainQueue(txn, q, kClassNackQDeleted, kClassNackBadDstQ, now));
      MQ_RETURN_IF_ERROR(impl_->DropConversations(txn, q.id));
      MQ_RETURN_IF_ERROR(impl_->DropCursors(txn, q.id));
      MQ_RETURN_IF_ERROR(impl_->DropQueueRecord(txn, q));
      ids.push_back(q.id);
    }
    return {};
  });
  if (!s.ok()) return s;
  for (uint32_t id : ids) {
    impl_->Notify(id);
    ::unlink(impl_->paths.notify(id).c_str());
  }
  return {};
}

Result<std::vector<QueueInfo>> Store::Impl::AllQueues(lmdb::Txn& txn) {
  std::vector<QueueInfo> out;
  lmdb::Cursor c(txn, queues);
  for (bool on = c.First(); on; on = c.Next()) {
    QueueInfo q;
    q.name = std::string(c.key());
    MQ_RETURN_IF_ERROR(DecodeQueue(c.value(), q));
    out.push_back(std::move(q));
  }
  return out;
}

Result<std::vector<QueueInfo>> Store::ListQueues() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  return impl_->AllQueues(*txn);
}

Result<QueueStat> Store::StatQueue(const QueueRef& ref) {
  // Expired messages and returned leases are not counted as available.
  MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto q = impl_->FindQueue(*txn, ref);
  if (!q.ok()) return q.status();
  QueueStat st;
  st.info = *q;
  if (q->id != 0) {
    auto oldest = impl_->msgs.OldestArrival(*txn, q->id);
    if (!oldest.ok()) return oldest.status();
    if (*oldest) st.oldest_arrived = **oldest;
    st.next_due = impl_->msgs.FirstDelay(*txn, q->id);
  }
  txn->Abort();  // no transaction open while the lock files are probed
  if (st.info.id != 0) st.waiting = impl_->WaitingReaders(st.info.id);
  return st;
}

Result<QueueInfo> Store::QueueInfoOf(const QueueRef& ref) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  return impl_->FindQueue(*txn, ref);
}

Result<uint64_t> Store::Purge(const QueueRef& ref) {
  uint64_t n = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    n = 0;
    auto q = impl_->FindQueue(txn, ref);
    if (!q.ok()) return q.status();
    if (q->id == 0) return {};
    n = q->count;
    int64_t now = NowMs();
    // A purged journal has room again: journaling resumes, and stat stops calling it full.
    if (IsJournalName(q->name)) {
      if (q->name == "system;journal") {
        q->journal_dropped = 0;
      } else {
        auto base = impl_->LoadQueue(txn, ref.base);
        if (!base.ok()) return base.status();
        if (*base && (*base)->journal_dropped) {
          (*base)->journal_dropped = 0;
          MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, **base));
        }
      }
    }
    // MSMQ: purged in the destination queue (NACK_Q_PURGED), or, for a delayed message that
    // had not reached it yet, before reaching it (NACK_PURGED).
    MQ_RETURN_IF_ERROR(
        impl_->DrainQueue(txn, *q, kClassNackQPurged, kClassNackPurged, now));
    q->modified_time = now;
    return impl_->PutQueue(txn, *q);
  });
  if (!s.ok()) return s;
  return n;
}

std::optional<std::string> Store::Impl::QueueNameOf(lmdb::Txn& txn, uint32_t qid) {
  auto name = txn.Get(queue_ids, QueueIdKey(qid));
  if (!name) return std::nullopt;
  return std::string(*name);
}

Status Store::Impl::DropQueueRecord(lmdb::Txn& txn, const QueueInfo& q) {
  auto r = txn.Del(queues, q.name);
  if (!r.ok()) return r.status();
  r = txn.Del(queue_ids, QueueIdKey(q.id));
  return r.ok() ? Status() : r.status();
}

void Store::Impl::CheckCatalog(lmdb::Txn& t, std::map<uint32_t, QueueInfo>& by_qid,
                               const std::function<void(std::string)>& problem) {
  {
    lmdb::Cursor c(t, queues);
    for (bool on = c.First(); on; on = c.Next()) {
      QueueInfo q;
      q.name = std::string(c.key());
      Status s = DecodeQueue(c.value(), q);
      if (!s.ok()) {
        problem(fmt::format("queue {}: {}", q.name, s.text()));
        continue;
      }
      if (!ParseQueueRef(q.name).ok()) problem(fmt::format("queue {}: invalid name", q.name));
      auto back = t.Get(queue_ids, QueueIdKey(q.id));
      if (!back || *back != q.name)
        problem(fmt::format("queue {}: id {} is not mapped back to it", q.name, q.id));
      if (!by_qid.emplace(q.id, q).second)
        problem(fmt::format("queue {}: id {} is used twice", q.name, q.id));
    }
  }
  if (t.Count(queue_ids) != by_qid.size())
    problem(fmt::format("queue_ids has {} entries for {} queues", t.Count(queue_ids),
                        by_qid.size()));
}

bool Store::Impl::QueueExists(lmdb::Txn& txn, const std::string& name) {
  return txn.Get(queues, name).has_value();
}

}  // namespace mq
