// leases.cpp: transactional receive. A lease marks messages Locked (a range of `locked`
// over their records) under a lease record; a process lease is held through the flock on
// its lock file (filelock.hpp), an expiring one by its token. Commit removes the messages,
// rollback makes them ready where they are; a dead holder's lease is rolled back by the
// next writer that looks at the queue.
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
#include <random>
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
namespace {

// The messages of this thread's last ended lease, kept whole for its next plain lease: a
// drain's batch decodes into them again (MessageTable::Collect), where making and freeing
// 4,000 Messages (2.8 MB, some twenty strings each) a batch would cost more than the reads.
thread_local std::vector<FoundMessage> spare_held;

}  // namespace

std::string Store::Impl::LeaseLockPath(uint32_t qid, uint64_t lease_id) {
  return paths.lease_lock(qid, lease_id);
}

// Ends a lease by removing its messages.
// `held`, if given, is the lease object of this process: its messages are the records as
// Locked (a Locked record does not change), so they need not be read and decoded again.
Status Store::Impl::CommitLease(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id,
                                const LeaseRecord& rec, const Lease* held, bool ends) {
  bool known = held && held->held_.size() == rec.keys.size();
  // The whole lease: its ranges go first, one delete each (a drain's batch is one range),
  // and each message is then removed as Locked. Part of it (FinishEach): each message's
  // range splits around it, and the rest stays Locked for the rollback that follows.
  std::vector<char> holds;
  if (ends) {
    auto h = msgs.Release(txn, q, lease_id, rec.keys, false);
    if (!h.ok()) return h.status();
    holds = std::move(*h);
  }
  int64_t now = NowMs();
  for (size_t i = 0; i < rec.keys.size(); ++i) {
    const std::string& key = rec.keys[i];
    if (ends ? !holds[i] : msgs.Holder(txn, key) != lease_id) continue;
    Held how = ends ? Held::kLockedCleared : Held::kLocked;
    bool mine = known && held->held_[i].msg.lookup_id == GetU64BE(key, 5);
    if (mine) {
      const Found& h = held->held_[i];
      MQ_RETURN_IF_ERROR(Received(txn, q, h.msg, now));
      if (!q.retention) {
        MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, h.msg, h.size, how));
        continue;
      }
    }
    // Retained, or not this process's lease: a Message of its own (made only here, as a
    // drain removes thousands of messages a commit).
    Found f;
    if (mine) {
      f.msg = held->held_[i].msg;
      f.size = held->held_[i].size;
    } else {
      MQ_RETURN_IF_ERROR(msgs.LoadAt(txn, q, key, f));
      MQ_RETURN_IF_ERROR(Received(txn, q, f.msg, now));
    }
    if (q.retention)
      MQ_RETURN_IF_ERROR(Retain(txn, q, f, true));
    else
      MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size, how));
  }
  if (ends) {
    auto r = txn.Del(leases, LeaseKey(q.id, lease_id));
    if (!r.ok()) return r.status();
  }
  return PutQueue(txn, q);
}

// Every Locked message is held by a lease whose record exists: a lease is written and removed
// with its messages' ranges. A range without its lease would keep its messages out of the
// queue.
void Store::Impl::CheckLeases(lmdb::Txn& t, const std::function<void(std::string)>& problem) {
  msgs.ForEachLocked(t, [&](std::string_view okey, uint64_t lease) {
    uint32_t qid = okey.size() == 13 ? GetU32BE(okey, 0) : 0;
    if (!t.Get(leases, LeaseKey(qid, lease)))
      problem(fmt::format("locked: messages from {} of queue id {} are held by lease {}, which "
                          "does not exist",
                          okey.size() == 13 ? OrderKeyLookup(okey) : 0, qid, lease));
  });
}

// Ends a lease by returning its messages to their places (after `delay_ms`), abort count
// + 1; a message rolled back max_retries times meets the queue's poison action. With
// `count_abort` false (a release: the reader went away before it took the messages) they
// return untouched, as if never received.
Status Store::Impl::RollbackLease(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id,
                                  const LeaseRecord& rec, RetryDelay delay, int64_t now,
                                  FinishReport* report, bool count_abort, const Failure* failure) {
  static const Failure kRolledBack = Failure::Because("rolled back");
  const Failure& why = failure ? *failure : kRolledBack;
  // A delay given (nack --delay) as it is; else the queue's, or the receiver's default, grown
  // by the queue's backoff with each rollback of the message (RetryDelayFor).
  int64_t base_ms = q.retry_delay ? q.retry_delay : delay.default_ms;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  // Its ranges go first, one delete each: its messages are ready again where they are.
  auto holds = msgs.Release(txn, q, lease_id, rec.keys, true);
  if (!holds.ok()) return holds.status();
  for (size_t i = 0; i < rec.keys.size(); ++i) {
    const std::string& key = rec.keys[i];
    if (!(*holds)[i]) continue;
    Found f;
    MQ_RETURN_IF_ERROR(msgs.LoadAt(txn, q, key, f));
    Message& m = f.msg;
    if (!count_abort) {
      if (IsConvMessage(q, m)) MQ_RETURN_IF_ERROR(ConvOnRestore(txn, q, m));
      continue;
    }
    m.abort_count++;
    m.last_failure = why.what;
    m.last_exit_status = why.exit_status;
    m.last_signal = why.signal;
    m.last_stderr = why.stderr_tail.substr(why.stderr_tail.size() -
                                           std::min(why.stderr_tail.size(), kMaxFailureStderr));
    m.last_failure_time = now;
    bool poison = q.max_retries && m.abort_count >= q.max_retries;
    int64_t delay_ms =
        delay.ms > 0 ? delay.ms : RetryDelayFor(q, base_ms, m.abort_count, jitter(rng));
    // A conversation message returns at once: its group's order is its sequence.
    if (!poison && delay_ms > 0 && !IsConvMessage(q, m)) {
      m.visible_time = now + delay_ms;
      MQ_RETURN_IF_ERROR(Rewrite(txn, q, m, f.size, &f.size));
      MQ_RETURN_IF_ERROR(msgs.Delay(txn, q, m));
      continue;
    }
    m.visible_time = 0;
    MQ_RETURN_IF_ERROR(Rewrite(txn, q, m, f.size, &f.size));  // ready where it was
    if (IsConvMessage(q, m)) MQ_RETURN_IF_ERROR(ConvOnRestore(txn, q, m));
    to_notify.insert(q.id);
    if (!poison) continue;
    switch (q.poison) {
      case PoisonAction::kSubqueue: {
        std::string to = q.name + ";poison";
        MQ_RETURN_IF_ERROR(MoveMessage(txn, q, f, to, true, now));
        if (report)
          report->notes.push_back(fmt::format("message {} rolled back {} times: moved to {}",
                                              m.lookup_id, m.abort_count, to));
        break;
      }
      case PoisonAction::kDeadletter: {
        std::string to = q.transactional ? "system;deadxact" : "system;deadletter";
        uint64_t lookup = m.lookup_id;
        MQ_RETURN_IF_ERROR(EmitAck(txn, q, m, kClassNackReceiveRejected, now));
        m.msg_class = kClassNackReceiveRejected;
        m.destination_queue = q.name;
        MQ_RETURN_IF_ERROR(MoveMessage(txn, q, f, to, false, now));
        if (report)
          report->notes.push_back(fmt::format("message {} rolled back {} times: moved to {}",
                                              lookup, m.abort_count, to));
        break;
      }
      case PoisonAction::kDisable:
        q.enabled = false;
        q.modified_time = now;
        if (report)
          report->notes.push_back(fmt::format(
              "message {} rolled back {} times: queue disabled (status OFF)", m.lookup_id,
              m.abort_count));
        break;
    }
  }
  auto r = txn.Del(leases, LeaseKey(q.id, lease_id));
  if (!r.ok()) return r.status();
  to_notify.insert(q.id);
  return PutQueue(txn, q);
}

Result<std::vector<Store::Impl::LeaseEntry>> Store::Impl::LeasesOf(lmdb::Txn& txn, uint32_t qid) {
  std::vector<LeaseEntry> out;
  if (qid == 0) return out;
  std::string prefix = QueueIdKey(qid);
  lmdb::Cursor c(txn, leases);
  for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next()) {
    LeaseEntry e;
    e.id = GetU64BE(c.key(), 4);
    if (!DecodeLease(c.value(), e.rec, false))
      return Status::Corrupted("malformed lease record", fmt::format("#{}", qid));
    out.push_back(std::move(e));
  }
  return out;
}

// Whether a lease's holder is gone: its lock file is not locked (process lease), or it
// expired by `now` (token lease).
bool Store::Impl::LeaseIsOver(uint32_t qid, const LeaseEntry& e, int64_t now) {
  if (!e.rec.process) return e.rec.expires <= now;
  auto held = FileLock::IsHeld(LeaseLockPath(qid, e.id));
  return held.ok() && !*held;
}

// Returns the messages of dead or expired leases of `q`.
Result<uint64_t> Store::Impl::RecoverLeases(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
  auto list = LeasesOf(txn, q.id);
  if (!list.ok()) return list.status();
  uint64_t n = 0;
  for (LeaseEntry& e : *list) {
    if (!LeaseIsOver(q.id, e, now)) continue;
    // LeasesOf leaves out the keys of the messages a lease holds: read again, whole.
    auto v = txn.Get(leases, LeaseKey(q.id, e.id));
    e.rec = LeaseRecord();
    if (!v || !DecodeLease(*v, e.rec))
      return Status::Corrupted("malformed lease record", fmt::format("#{}", q.id));
    static const Failure kDied = Failure::Because("receiver died"),
                         kExpired = Failure::Because("lease expired");
    MQ_RETURN_IF_ERROR(RollbackLease(txn, q, e.id, e.rec, 0, now, nullptr, true,
                                     e.rec.process ? &kDied : &kExpired));
    if (e.rec.process) ::unlink(LeaseLockPath(q.id, e.id).c_str());
    ++n;
  }
  return n;
}

// The queue a receive takes from, in the receive's write transaction: it must exist and be
// enabled; what is due in it is done first (Maintain), and `*maintained` says how much.
Result<QueueInfo> Store::Impl::ReceivableQueue(lmdb::Txn& txn, const QueueRef& ref, int64_t now,
                                               uint64_t* maintained) {
  auto q = FindQueue(txn, ref);
  if (!q.ok()) return q.status();
  if (!q->enabled) return Status::QueueNotActive("queue is disabled (status OFF)", q->name);
  auto n = Maintain(txn, *q, now);
  if (!n.ok()) return n.status();
  *maintained = *n;
  return q;
}

Status Store::Impl::RateLimited(const QueueInfo& q, int64_t now_ns) {
  return Status::MessageNotFound(
      fmt::format("rate limit {} reached: the next message may leave in {}", FormatRate(q.rate),
                  RateWaitText(q, now_ns)),
      q.name);
}

Status Store::Impl::ReceivePaused(const std::string& queue) {
  return Status::MessageNotFound(fmt::format("receiving is paused (mq-admin set {} --receive on)",
                                             queue),
                                 queue);
}

// A new lease of `q` for messages about to be Locked in this transaction: its id and record,
// and for a process lease its lock file, ours before the lease is visible to anyone. The lock
// file is never unlinked here: if the transaction does not commit, the file stays (unlocked
// once `lease` is gone) until sweep removes it under the writer lock, so no other process can
// hold a lock on a name that no longer leads to its file.
//
// The file of an id not committed yet can still be locked: by a writer killed in its
// transaction, as the kernel releases a dying process's robust mutexes (the LMDB writer lock)
// before it closes its files, or by a process whose transaction failed and which has not
// dropped its Lease yet. Neither can commit that id any more (we hold the writer lock), so
// the lease takes the next id whose file is free.
Result<uint64_t> Store::Impl::BeginLease(QueueInfo& q, const LockOptions& lo, int64_t now,
                                         Lease& lease, LeaseRecord& rec) {
  uint64_t lease_id = q.next_lease++;
  rec = LeaseRecord();
  rec.pid = ::getpid();
  rec.since = now;
  if (lo.lease_ms > 0) {
    rec.process = false;
    rec.expires = now + lo.lease_ms;
    rec.length = lo.lease_ms;
    rec.secret = std::string(GuidBytes(NewGuid()));
  } else {
    if (lease.lock_fd_ >= 0) ::close(lease.lock_fd_);
    lease.lock_fd_ = -1;
    for (int tries = 1;; ++tries) {
      lease.lock_path_ = LeaseLockPath(q.id, lease_id);
      auto l = FileLock::Acquire(lease.lock_path_, file_mode, false);
      if (l.ok()) {
        lease.lock_fd_ = l->Detach();
        break;
      }
      if (l.status().code() != Code::kSharingViolation || tries == 64) return l.status();
      lease_id = q.next_lease++;
    }
  }
  lease.held_.clear();
  lease.queue_ = q.name;
  lease.qid_ = q.id;
  lease.lease_id_ = lease_id;
  lease.expires_ = rec.expires;
  lease.token_.clear();
  if (!rec.process) lease.token_ = fmt::format("{}.{}.{}", q.id, lease_id, HexEncode(rec.secret));
  return lease_id;
}

// Marks the message `f` of `q` Locked under `lease_id`: a range of `locked` over its record
// (with `lock` false, the caller's range over several). With `count_delivery` its delivery
// count rises (a transactional receive); a plain receive leaves the record alone, as its
// messages are either removed once taken or returned as if never received. The caller puts
// `f` into the lease (its size is the record's now).
Status Store::Impl::MarkLocked(lmdb::Txn& txn, QueueInfo& q, Found& f, uint64_t lease_id,
                               bool count_delivery, LeaseRecord& rec, bool lock) {
  std::string key = OrderKeyFor(q, f.msg);
  if (lock) MQ_RETURN_IF_ERROR(msgs.Lock(txn, q, key, lease_id));
  if (count_delivery) {
    f.msg.delivery_count++;
    MQ_RETURN_IF_ERROR(Rewrite(txn, q, f.msg, f.size, &f.size));
  }
  rec.keys.push_back(std::move(key));
  return {};
}

// One look for plain messages, without waiting: Locks what `sel` picks (up to a batch, after
// `resume`) under a new lease, in one write transaction committed without the meta sync (a
// lock lost to a power cut means only a redelivery). Null when nothing qualifies; then
// `deadline` is when something may become due. On success `resume` is where the walk stopped;
// it is cleared when maintenance changed the queue (returned or promoted messages).
Result<std::unique_ptr<Lease>> Store::Impl::LockPlainOnce(const QueueRef& ref,
                                                          const Selection& sel,
                                                          const LockOptions& lo,
                                                          bool count_delivery,
                                                          std::string& resume,
                                                          int64_t& deadline) {
  std::unique_ptr<Lease> lease(new Lease());
  bool found = false, paused = false;
  std::optional<Status> limited;
  std::string walked;
  Status w = WriteLight(
      [&](lmdb::Txn& txn) -> Status {
        found = false;
        limited.reset();
        int64_t now_ns = NowNs(), now = now_ns / 1'000'000;
        uint64_t n = 0;
        auto q = ReceivableQueue(txn, ref, now, &n);
        if (!q.ok()) return q.status();
        paused = q->receive_paused;
        if (paused) return {};  // commits what Maintain did
        std::string from = n ? std::string() : resume;
        // The last ended lease's messages (Lease::~Lease), decoded into again: a drain's
        // batches reuse one batch's memory.
        std::vector<Found>& batch = spare_held;
        uint64_t limit = sel.limit ? sel.limit : UINT64_MAX;
        // No more than the rate limit's tokens; with none, one look says whether the limit
        // or an empty queue is the reason.
        uint64_t tokens = RateTokens(*q, now_ns);
        MQ_RETURN_IF_ERROR(msgs.Collect(
            txn, *q, sel, from,
            std::max<uint64_t>(1, std::min({limit, tokens, uint64_t{kLockBatchCount}})), batch));
        if (!batch.empty() && tokens == 0) {
          limited = RateLimited(*q, now_ns);
          deadline = RateNextMs(*q, now_ns);
          return {};  // commits what Maintain did
        }
        if (batch.empty()) {
          deadline = NextDeadline(txn, q->id);
          return {};  // commits what Maintain did
        }
        RateTake(*q, now_ns, batch.size());
        LeaseRecord rec;
        auto lease_id = BeginLease(*q, lo, now, *lease, rec);
        if (!lease_id.ok()) return lease_id.status();
        walked = batch.back().walk_key;
        // Each run of messages that follow each other in their band is one range (a drain's
        // batch, one range).
        for (size_t i = 0, run = 0; i < batch.size(); ++i) {
          MQ_RETURN_IF_ERROR(MarkLocked(txn, *q, batch[i], *lease_id, count_delivery, rec, false));
          if (i + 1 < batch.size() && batch[i + 1].follows) continue;
          MQ_RETURN_IF_ERROR(
              msgs.LockRange(txn, *q, rec.keys[run], rec.keys[i], i + 1 - run, *lease_id));
          run = i + 1;
        }
        // The lease takes the batch as it is, and gives it back when it ends.
        lease->held_.swap(batch);
        MQ_RETURN_IF_ERROR(txn.Put(leases, LeaseKey(q->id, *lease_id), EncodeLease(rec)));
        MQ_RETURN_IF_ERROR(PutQueue(txn, *q));
        found = true;
        return {};
      },
      true);
  if (!w.ok()) return w;
  if (paused) return ReceivePaused(ref.Full());
  if (limited) return *limited;
  if (!found) return std::unique_ptr<Lease>();
  resume = walked;
  return lease;
}

// One look from the head of a queue that may hold conversation groups (Service Broker
// RECEIVE): Locks the best free group's messages, or, when plain messages come first in
// delivery order, plain ones (`*group` tells which). For other selections, plain messages.
// Null when nothing qualifies.
Result<std::unique_ptr<Lease>> Store::Impl::LockAny(const QueueRef& ref, const Selection& sel,
                                                    const LockOptions& lo, bool count_delivery,
                                                    std::string& resume, int64_t& deadline,
                                                    bool* group) {
  *group = false;
  Selection plain = sel;
  plain.plain_only = true;
  plain.refuse_conversation =
      sel.anchor == Anchor::kId || sel.anchor == Anchor::kAt || sel.anchor == Anchor::kLast;
  if (!GroupCandidate(sel)) return LockPlainOnce(ref, plain, lo, count_delivery, resume, deadline);
  // A few rounds at most: another receiver may take what one look chose.
  for (int round = 0; round < 16; ++round) {
    bool try_plain = !MayHaveGroups(ref, sel);
    if (!try_plain) {
      auto l = LockGroupOnce(ref, sel, lo, count_delivery, deadline, &try_plain);
      if (!l.ok()) return l.status();
      if (*l) {
        *group = true;
        return l;
      }
      if (!try_plain) return l;
    }
    auto l = LockPlainOnce(ref, plain, lo, count_delivery, resume, deadline);
    if (!l.ok() || *l) return l;
    if (MayHaveGroups(ref, sel)) continue;  // its recovery freed a group
    return l;
  }
  return std::unique_ptr<Lease>();
}

// Writes a lease's messages to `sink` with no transaction open (the token first for an
// expiring lease); with `wait_taken`, returns only once the reader has taken them.
Status Store::Impl::Deliver(Lease& lease, MessageSink& sink, bool wait_taken) {
  MQ_RETURN_IF_ERROR(sink.Accept(lease.held_.size()));
  if (!lease.token_.empty()) sink.SetLease(lease.token_, lease.expires_);
  for (const Found& f : lease.held_) MQ_RETURN_IF_ERROR(sink.Add(f.msg));
  MQ_RETURN_IF_ERROR(sink.Flush());
  return wait_taken ? sink.Taken() : Status();
}

// Ends a lease (LeaseEnd says how): a commit removes its messages (with journal copies, acks,
// retention), a rollback or release returns them. The lock file goes only after the commit:
// until then the lease is ours.
Status Store::Impl::EndLease(Lease& lease, const LeaseEnd& how) {
  if (lease.finished_) return Status::TransactionUsage("lease already ended", lease.queue_);
  auto fn = [&](lmdb::Txn& txn) -> Status {
    auto q = LoadQueue(txn, lease.queue_);
    if (!q.ok()) return q.status();
    if (!*q || (*q)->id != lease.qid_) return {};  // the queue was deleted: nothing to do
    auto v = txn.Get(leases, LeaseKey(lease.qid_, lease.lease_id_));
    LeaseRecord rec;
    if (!v || !DecodeLease(*v, rec))
      return Status::TransactionUsage("the lease is gone (expired or returned)", lease.queue_);
    if (how.outcome == LeaseEnd::Outcome::kCommit)
      return CommitLease(txn, **q, lease.lease_id_, rec, &lease);
    if (how.commit_some) {
      // The lease's keys are its messages', in order (MarkLocked): those to commit go first,
      // the rest roll back, which ends the lease.
      LeaseRecord done = rec, back = rec;
      done.keys.clear();
      back.keys.clear();
      for (size_t i = 0; i < rec.keys.size(); ++i)
        ((i < how.commit_some->size() && (*how.commit_some)[i]) ? done : back)
            .keys.push_back(rec.keys[i]);
      if (!done.keys.empty())
        MQ_RETURN_IF_ERROR(
            CommitLease(txn, **q, lease.lease_id_, done, nullptr, back.keys.empty()));
      if (back.keys.empty()) return Status();
      return RollbackLease(txn, **q, lease.lease_id_, back, how.delay, NowMs(), how.report, true,
                           how.failure);
    }
    return RollbackLease(txn, **q, lease.lease_id_, rec, how.delay, NowMs(), how.report,
                         how.outcome == LeaseEnd::Outcome::kRollback, how.failure);
  };
  Status s = how.light ? WriteLight(fn, true) : Write(fn);
  return CloseLease(lease, s);
}

// After the transaction that ended `lease` (`s`: its outcome): the lock file goes only after
// a commit (until then the lease is ours), and the lease is over either way.
Status Store::Impl::CloseLease(Lease& lease, Status s) {
  if (lease.lock_fd_ >= 0) {
    if (s.ok()) ::unlink(lease.lock_path_.c_str());
    ::close(lease.lock_fd_);
    lease.lock_fd_ = -1;
  }
  lease.finished_ = true;
  return s;
}

Result<std::unique_ptr<Lease>> Store::Lock(const QueueRef& ref, const Selection& sel,
                                           const ReadOptions& ro, const LockOptions& lo,
                                           MessageSink* sink) {
  if (sel.anchor == Anchor::kArrival || sel.include_locked)
    return Status::InvalidArg("a receive takes visible messages only", ref.Full());
  std::unique_ptr<Lease> lease;
  Status s = impl_->WaitLoop(ref, ro, [&](bool, int64_t& deadline) -> Status {
    std::string resume;
    bool group = false;
    auto l = impl_->LockAny(ref, sel, lo, lo.count_delivery, resume, deadline, &group);
    if (!l.ok()) return l.status();
    if (!*l) return Status::MessageNotFound("no message", ref.Full());
    lease = std::move(*l);
    return {};
  });
  if (!s.ok()) return s;
  if (sink) {
    // Printed after the commit: output that cannot be written returns the messages untouched.
    Status out = Impl::Deliver(*lease, *sink, false);
    if (!out.ok()) {
      Status back = impl_->EndLease(*lease, Impl::LeaseEnd::Release(true));
      if (!back.ok()) return Status(out.code(), fmt::format("{}; and the messages could not be "
                                                            "returned ({}): the lease expires",
                                                            out.text(), back.text()),
                                    out.subject());
      return Status(out.code(), fmt::format("{}; nothing was removed", out.text()),
                    out.subject());
    }
  }
  return lease;
}

Status Store::Finish(Lease& lease, bool commit, RetryDelay delay, FinishReport* report,
                     const Failure* failure) {
  return impl_->EndLease(lease, commit ? Impl::LeaseEnd::Commit(false)
                                       : Impl::LeaseEnd::Rollback(delay, report, failure));
}

Status Store::FinishEach(Lease& lease, const std::vector<bool>& commit, RetryDelay delay,
                         FinishReport* report, const Failure* failure) {
  Impl::LeaseEnd how = Impl::LeaseEnd::Rollback(delay, report, failure);
  how.commit_some = &commit;
  return impl_->EndLease(lease, how);
}

Status Store::Release(Lease& lease) {
  return impl_->EndLease(lease, Impl::LeaseEnd::Release(false));
}

Lease::~Lease() {
  // Unfinished: closing the lock file hands the messages to the next reader, as a death would.
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (held_.size() > spare_held.size()) spare_held.swap(held_);
}

// A --lease token's lease, found in a write transaction: `fn` runs on it unless the token is
// unknown (MQ_ERROR_TRANSACTION_USAGE) or the lease expired, which then rolls back here if no
// one did yet, and is MQ_ERROR_TRANSACTION_USAGE too ("its messages were returned").
Status Store::Impl::WithToken(
    const std::string& token, FinishReport* report,
    const std::function<Status(lmdb::Txn&, QueueInfo&, uint64_t, LeaseRecord&, int64_t)>& fn) {
  Status unknown = Status::TransactionUsage("unknown or expired lease token", token);
  unsigned long long qid = 0, lease_id = 0;
  char hex[64] = {0};
  if (std::sscanf(token.c_str(), "%llu.%llu.%32[0-9a-f]", &qid, &lease_id, hex) != 3 ||
      std::strlen(hex) != 32 || qid > UINT32_MAX)
    return Status::InvalidArg("invalid lease token", token);
  auto secret = HexDecode(hex);
  bool expired = false;
  Status s = Write([&](lmdb::Txn& txn) -> Status {
    expired = false;
    auto name = QueueNameOf(txn, static_cast<uint32_t>(qid));
    if (!name) return unknown;
    auto q = LoadQueue(txn, std::string(*name));
    if (!q.ok()) return q.status();
    if (!*q) return unknown;
    auto v = txn.Get(leases, LeaseKey(static_cast<uint32_t>(qid), lease_id));
    LeaseRecord rec;
    if (!v || !DecodeLease(*v, rec) || rec.process || rec.secret != *secret) return unknown;
    int64_t now = NowMs();
    if (rec.expires <= now) {
      // Expired: it rolls back by itself, here if no one did yet; the token changes nothing.
      expired = true;
      static const Failure kExpired = Failure::Because("lease expired");
      return RollbackLease(txn, **q, lease_id, rec, 0, now, report, true, &kExpired);
    }
    return fn(txn, **q, lease_id, rec, now);
  });
  if (!s.ok()) return s;
  if (expired)
    return Status::TransactionUsage("the lease expired; its messages were returned", token);
  return {};
}

Status Store::FinishToken(const std::string& token, bool commit, int64_t delay_ms,
                          FinishReport* report) {
  return impl_->WithToken(token, report,
                          [&](lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id, LeaseRecord& rec,
                              int64_t now) -> Status {
                            if (commit) return impl_->CommitLease(txn, q, lease_id, rec);
                            static const Failure kNack = Failure::Because("nack");
                            return impl_->RollbackLease(txn, q, lease_id, rec, delay_ms, now,
                                                        report, true, &kNack);
                          });
}

Result<int64_t> Store::TouchToken(const std::string& token, int64_t lease_ms,
                                  FinishReport* report) {
  int64_t expires = 0;
  Status s =
      impl_->WithToken(token, report,
                       [&](lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id, LeaseRecord& rec,
                           int64_t now) -> Status {
                         int64_t length = lease_ms > 0 ? lease_ms
                                          : rec.length ? rec.length
                                                       : rec.expires - rec.since;
                         // From now, as beanstalkd's touch and SQS's ChangeMessageVisibility count:
                         // a lease is never shortened below what is left of it unless asked for a
                         // length.
                         rec.expires =
                             lease_ms > 0 ? now + length : std::max(rec.expires, now + length);
                         expires = rec.expires;
                         return txn.Put(impl_->leases, LeaseKey(q.id, lease_id), EncodeLease(rec));
                       });
  if (!s.ok()) return s;
  return expires;
}

Result<std::vector<LeaseInfo>> Store::ListLeases() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  std::vector<LeaseInfo> out;
  int64_t now = NowMs();
  lmdb::Cursor c(*txn, impl_->leases);
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() != 12) continue;
    uint32_t qid = GetU32BE(c.key(), 0);
    Impl::LeaseEntry e;
    e.id = GetU64BE(c.key(), 4);
    if (!DecodeLease(c.value(), e.rec)) continue;
    LeaseInfo li;
    auto name = impl_->QueueNameOf(*txn, qid);
    li.queue = name ? std::string(*name) : fmt::format("#{}", qid);
    li.lease_id = e.id;
    li.process = e.rec.process;
    li.pid = e.rec.pid;
    li.since = e.rec.since;
    li.expires = e.rec.expires;
    li.alive = !impl_->LeaseIsOver(qid, e, now);
    for (const auto& k : e.rec.keys) li.lookup_ids.push_back(GetU64BE(k, 5));
    out.push_back(std::move(li));
  }
  return out;
}


Status Store::Impl::PutLease(lmdb::Txn& txn, uint32_t qid, uint64_t lease_id,
                             const LeaseRecord& rec) {
  return txn.Put(leases, LeaseKey(qid, lease_id), EncodeLease(rec));
}

bool Store::Impl::LoadLease(lmdb::Txn& txn, uint32_t qid, uint64_t lease_id, LeaseRecord* rec) {
  auto v = txn.Get(leases, LeaseKey(qid, lease_id));
  return v && (!rec || DecodeLease(*v, *rec));
}

Status Store::Impl::DropLease(lmdb::Txn& txn, uint32_t qid, uint64_t lease_id) {
  auto r = txn.Del(leases, LeaseKey(qid, lease_id));
  return r.ok() ? Status() : r.status();
}

void Store::Impl::QueuesWithLeases(lmdb::Txn& txn, std::set<uint32_t>& out) {
  QueuesWithEntries(txn, leases, -1, out);
}

}  // namespace mq
