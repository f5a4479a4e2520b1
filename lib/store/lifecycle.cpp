// lifecycle.cpp: the MSMQ message lifecycle (store.hpp): arrival and receive
// acknowledgements, journals, expiry and dead letters, delayed messages becoming visible, the
// maintenance every writer does on a queue before it reads it, sweep, requeue and move.
#include "store/store_impl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
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

// Sends the acknowledgement of class `cls` for `orig`, a message of `cur`, to its admin
// queue if it asked for that class (MSMQ: the ack has no body, the original's label, and
// correlation id = the original's id). An admin queue that is missing, disabled or full
// gets nothing: the operation that caused the ack never fails because of it. An admin queue
// of another store, LINK:QUEUE (a message that came over a link whose forward qualified it
// with its --return link), gets it through that link: it waits in out;LINK as a message sent
// there does, and a link that does not exist here gets nothing. An admin queue named by an
// HTTP format name (a message that came from MSMQ over HTTP, or from an mq forward's HTTP
// link) gets its receipt through the link whose --url reaches that machine: ACK_REACH_QUEUE
// as a delivery receipt, ACK_RECEIVE and the receive NACKs (0xC0xx) as commitment receipts,
// posted by that link's forward ([MC-MQSRM] 2.2.6), or, with no link there, waiting in
// system;receipts for mq-admin serve to post; SRMP has no receipt for the other NACKs.
Status Store::Impl::EmitAck(lmdb::Txn& txn, QueueInfo& cur, const Message& orig, uint16_t cls,
                            int64_t now) {
  if (orig.admin_queue.empty() || !AckWanted(orig.ack, cls) || !IsLive(cur) ||
      IsOutgoingName(orig.admin_queue))
    return {};
  Message a;
  a.msg_class = cls;
  a.label = orig.label;
  a.correlation_id = orig.id;
  a.priority = orig.priority;
  a.destination_queue = orig.admin_queue;
  a.sent_time = a.arrived_time = a.message_enqueue_time = now;
  a.source_qm_guid = guid;
  // Into `to` (whose id source gives the id); a full queue takes no acknowledgement. `cur` is
  // saved by the caller, any other queue here.
  auto deliver = [&](QueueInfo& to) -> Status {
    a.id = NewMessageId(to);
    Status s = InsertMessage(txn, to, a, to.quota);
    if (s.code() == Code::kInsufficientResources) return {};
    MQ_RETURN_IF_ERROR(s);
    return &to == &cur ? Status() : PutQueue(txn, to);
  };
  // A queue of another store: the link to it, and the queue there.
  std::string link;
  if (orig.admin_queue.find("://") != std::string::npos) {
    auto dests = ParseDestinations(orig.admin_queue);
    if (!HasSrmpReceipt(cls) || !dests.ok() || dests->size() != 1 || dests->front().url.empty())
      return {};
    link = LinkOfUrl(txn, dests->front().url);
    if (link.empty()) {
      // No link there: system;receipts, where mq-admin serve posts it to the admin queue's
      // URL, which it keeps as its destination.
      auto rq = LoadOrCreate(txn, std::string(kReceiptsQueue));
      if (!rq.ok()) return rq.status();
      return deliver(*rq);
    }
    a.destination_queue = dests->front().remote_queue;
  } else if (auto remote = ParseRemoteRef(orig.admin_queue); remote.ok() && *remote) {
    link = (*remote)->link;
    a.destination_queue = (*remote)->queue;
  }
  if (!link.empty()) {
    a.awaiting_arrival = true;  // it reaches its queue at the far side
    if (cur.name == std::string(kOutgoingBase) + ";" + link) return deliver(cur);
    auto oq = LoadOutgoing(txn, link);
    if (!oq.ok()) return oq.status();
    if (!*oq || !(*oq)->enabled) return {};
    return deliver(**oq);
  }
  if (orig.admin_queue == cur.name) return deliver(cur);
  auto aq = LoadQueue(txn, orig.admin_queue);
  if (!aq.ok()) return aq.status();
  if (!*aq || !(*aq)->enabled) return {};
  return deliver(**aq);
}

// Puts a copy of `m` in the journal `jname` (made on first use). With `own_quota` the
// journal's own quota applies (system;journal), else `quota`. A full journal takes nothing
// and sets `*dropped`.
Status Store::Impl::JournalCopy(lmdb::Txn& txn, const std::string& jname, const Message& m,
                                bool own_quota, uint64_t quota, bool* dropped) {
  auto jq = LoadOrCreate(txn, jname);
  if (!jq.ok()) return jq.status();
  Message c = m;
  c.visible_time = 0;
  c.awaiting_arrival = false;
  Status s = InsertMessage(txn, *jq, c, own_quota ? jq->quota : quota);
  if (s.code() == Code::kInsufficientResources) {
    *dropped = true;
    if (own_quota) {
      jq->journal_dropped++;
      return PutQueue(txn, *jq);
    }
    return {};
  }
  MQ_RETURN_IF_ERROR(s);
  return PutQueue(txn, *jq);
}

// `m` has reached `q` (sent, or a delayed message made visible): ACK_REACH_QUEUE if asked
// for, and source journaling (a copy in system;journal) if the message asked for it.
Status Store::Impl::Arrived(lmdb::Txn& txn, QueueInfo& q, const Message& m, int64_t now) {
  MQ_RETURN_IF_ERROR(EmitAck(txn, q, m, kClassAckReachQueue, now));
  if (!m.journal || !IsLive(q)) return {};
  bool dropped = false;
  return JournalCopy(txn, "system;journal", m, true, 0, &dropped);
}

// `m` was received from `q` (and is removed in this transaction): ACK_RECEIVE if asked for,
// and target journaling (a copy in QUEUE;journal) if the queue keeps a journal. The caller
// saves `q`.
Status Store::Impl::Received(lmdb::Txn& txn, QueueInfo& q, const Message& m, int64_t now) {
  q.received_total++;
  MQ_RETURN_IF_ERROR(EmitAck(txn, q, m, kClassAckReceive, now));
  if (!q.journal || !IsLive(q)) return {};
  bool dropped = false;
  MQ_RETURN_IF_ERROR(JournalCopy(txn, q.name + ";journal", m, false, q.journal_quota, &dropped));
  if (dropped) q.journal_dropped++;
  return {};
}

// A message of `q` that failed for the reason `cls` (expiry, purge, deletion): the NACK if
// asked for, then to the dead-letter queue (system;deadxact for a transactional message)
// with the reason as its class if it asked for dead-lettering, else discarded.
Status Store::Impl::DeadLetterOrDrop(lmdb::Txn& txn, QueueInfo& q, Found& f, uint16_t cls,
                                     int64_t now) {
  MQ_RETURN_IF_ERROR(EmitAck(txn, q, f.msg, cls, now));
  if (!f.msg.deadletter || !IsLive(q)) return RemoveMessage(txn, q, f.msg, f.size);
  f.msg.msg_class = cls;
  // A transactional message that came from another store: its dead letter is the source's
  // (MSMQ: the NACK takes it back to the source's transactional dead-letter queue). It
  // travels back through the link to its source, a transaction of one, with no deadline
  // left to fail it again on the way; the source recognises its own message by its source
  // GUID and its NACK class (AcceptTransfer). With no link back, it stays here.
  if (!f.msg.xact_id.empty() && !IsOutgoingName(q.name) && f.msg.source_qm_guid != guid) {
    auto back = LinkBackTo(txn, f.msg);
    if (!back.ok()) return back.status();
    if (*back)
      return MoveMessage(txn, q, f, std::string(kOutgoingBase) + ";" + **back, false, now,
                         true, [](Message& m) {
                           m.ttbr = m.ttrq = 0;
                           m.eod_first = m.eod_last = true;
                         });
  }
  std::string to =
      f.msg.xact_id.empty() && !q.transactional ? "system;deadletter" : "system;deadxact";
  if (f.msg.destination_queue.empty()) {
    f.msg.destination_queue = q.name;
  } else if (IsOutgoingName(q.name)) {
    // It was going to QUEUE at the far side of the link: the dead letter names both, as
    // LINK:QUEUE, the name mq-send takes and requeue sends it back through.
    f.msg.destination_queue =
        q.name.substr(kOutgoingBase.size() + 1) + ":" + f.msg.destination_queue;
  }
  return MoveMessage(txn, q, f, to, false, now);
}

// The earliest expiry among `q`'s messages; 0 if none.
int64_t Store::Impl::FirstExpiry(lmdb::Txn& txn, uint32_t qid) {
  return msgs.FirstExpiry(txn, qid);
}

// Handles the messages of `q` whose deadline is past by `now`, walking the deadline index
// from its start: never the queue. A Locked message waits for its transaction to end.
Result<uint64_t> Store::Impl::ExpireDue(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
  uint64_t n = 0;
  if (q.id == 0 || !IsLive(q)) return n;
  std::string resume;
  for (;;) {
    auto due = msgs.DueExpiries(txn, q.id, now, resume, kBatchCount);
    if (due.empty()) return n;
    for (const auto& d : due) {
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, d.lookup, f));
      if (msgs.IsLocked(txn, OrderKeyFor(q, f.msg))) continue;
      MQ_RETURN_IF_ERROR(
          DeadLetterOrDrop(txn, q, f, ExpiryClass(f.msg, IsOutgoingName(q.name)), now));
      ++n;
    }
    resume = due.back().key;
  }
}

// Removes every message of `q` for the reason `reached` (`awaiting`: for delayed messages
// that had not reached it yet), with NACKs and dead-lettering as the messages asked.
Status Store::Impl::DrainQueue(lmdb::Txn& txn, QueueInfo& q, uint16_t reached, uint16_t awaiting,
                               int64_t now) {
  if (q.id == 0) return {};
  if (!IsLive(q)) return RemoveAll(txn, q);
  std::vector<Found> batch;
  for (;;) {
    MQ_RETURN_IF_ERROR(msgs.Batch(txn, q, 0, kBatchCount, batch));
    if (batch.empty()) return {};
    for (auto& f : batch)
      MQ_RETURN_IF_ERROR(
          DeadLetterOrDrop(txn, q, f, f.msg.awaiting_arrival ? awaiting : reached, now));
  }
}

// Removes every message of `q`, visible or delayed.
Status Store::Impl::RemoveAll(lmdb::Txn& txn, QueueInfo& q) {
  if (q.id == 0) return {};
  std::vector<Found> batch;
  for (;;) {
    MQ_RETURN_IF_ERROR(msgs.Batch(txn, q, 0, kBatchCount, batch));
    if (batch.empty()) return {};
    for (auto& f : batch) MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size));
  }
}

// The earliest visible time among `q`'s delayed messages; 0 if none.
int64_t Store::Impl::FirstDelay(lmdb::Txn& txn, uint32_t qid) {
  return msgs.FirstDelay(txn, qid);
}

// Makes the delayed messages of `q` that are due by `now` visible: each gets a new lookup
// id (its arrival in the queue proper) and an order entry. Returns how many.
Result<uint64_t> Store::Impl::PromoteDue(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
  uint64_t n = 0;
  for (;;) {
    int64_t first = FirstDelay(txn, q.id);
    if (first == 0 || first > now) return n;
    std::vector<uint64_t> due = msgs.DueDelays(txn, q.id, now, kBatchCount);
    for (uint64_t lookup : due) {
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, lookup, f));
      Message& m = f.msg;
      bool arriving = m.awaiting_arrival;
      if (arriving && Expired(q, m, m.visible_time)) {
        // Its ttrq (or ttbr) ran out before it could become visible: it never arrives.
        MQ_RETURN_IF_ERROR(
            DeadLetterOrDrop(txn, q, f, ExpiryClass(m, IsOutgoingName(q.name)), now));
        continue;
      }
      MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, m, f.size));
      // It keeps its visible time: when it became visible. In an outgoing queue it is still
      // on its way: it arrives at the far side.
      bool outgoing = IsOutgoingName(q.name);
      m.awaiting_arrival = outgoing;
      MQ_RETURN_IF_ERROR(InsertMessage(txn, q, m, 0, 0, true));
      if (arriving && !outgoing) MQ_RETURN_IF_ERROR(Arrived(txn, q, m, now));
      ++n;
    }
    MQ_RETURN_IF_ERROR(PutQueue(txn, q));
  }
}

// Promotes due delayed messages and returns what dead or expired leases hold.
Result<uint64_t> Store::Impl::Maintain(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
  auto p = PromoteDue(txn, q, now);
  if (!p.ok()) return p.status();
  auto r = RecoverLeases(txn, q, now);
  if (!r.ok()) return r.status();
  auto e = ExpireDue(txn, q, now);
  if (!e.ok()) return e.status();
  if (*p || *r) to_notify.insert(q.id);
  if (*p || *r || *e) MQ_RETURN_IF_ERROR(PutQueue(txn, q));
  return *p + *r + *e;
}

// The next time something in `q` changes by itself: a delayed message becomes visible or a
// lease expires. 0: none.
int64_t Store::Impl::NextDeadline(lmdb::Txn& txn, uint32_t qid) {
  int64_t d = FirstDelay(txn, qid);
  auto list = LeasesOf(txn, qid);
  if (list.ok())
    for (const LeaseEntry& e : *list)
      if (!e.rec.process && e.rec.expires && (d == 0 || e.rec.expires < d)) d = e.rec.expires;
  return d;
}

// For read-only paths: runs Maintain in a write transaction of its own if the queue `ref`
// names has anything due. Cheap when it has not: a seek and a look at its leases.
Status Store::Impl::MaintainIfNeeded(const QueueRef& ref) {
  int64_t now = NowMs();
  {
    auto txn = lmdb::Txn::Begin(env, false);
    if (!txn.ok()) return txn.status();
    auto q = LoadQueue(*txn, ref.Full());
    if (!q.ok()) return q.status();
    if (!*q) return {};
    uint32_t qid = (*q)->id;
    int64_t first = FirstDelay(*txn, qid);
    int64_t expiry = FirstExpiry(*txn, qid);
    bool due = (first != 0 && first <= now) || (expiry != 0 && expiry <= now);
    if (!due) {
      auto list = LeasesOf(*txn, qid);
      if (!list.ok()) return list.status();
      for (const LeaseEntry& e : *list) due = due || LeaseIsOver(qid, e, now);
    }
    if (!due) return {};
  }
  // A store opened read-only is shown as it was left: what is due waits for a writable open.
  if (!read_only.empty()) return {};
  // Promotions and recoveries redo themselves if a power loss undoes them: a light commit.
  return WriteLight(
      [&](lmdb::Txn& txn) -> Status {
        auto q = LoadQueue(txn, ref.Full());
        if (!q.ok()) return q.status();
        if (!*q) return {};
        auto n = Maintain(txn, **q, now);
        return n.ok() ? Status() : n.status();
      },
      true);
}

Result<uint64_t> Store::Sweep() {
  // Which queues have anything due, from the delays, leases, dedup and deadline indexes alone:
  // one seek per queue that has entries there, none per message; nothing is written when
  // nothing is due.
  int64_t now = NowMs();
  std::set<uint32_t> due;
  {
    auto txn = lmdb::Txn::Begin(impl_->env, false);
    if (!txn.ok()) return txn.status();
    impl_->msgs.QueuesDue(*txn, now, due);
    impl_->QueuesWithLeases(*txn, due);
    impl_->QueuesWithDueDedup(*txn, now, due);
  }
  uint64_t total = 0;
  // Lease lock files left by a holder that died after its lease ended but before it removed
  // the file. Inside a write transaction: a Lock makes its file and commits its lease under
  // the same writer lock, so no file of a lease being made can be taken for an orphan.
  MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(impl_->paths.locks_dir().c_str()), closedir);
    while (dir) {
      dirent* e = readdir(dir.get());
      if (!e) break;
      unsigned qid = 0;
      unsigned long long lease_id = 0;
      int used = 0;
      long pid = 0;
      // The wait mark of a reader killed while waiting (wait.cpp): not locked, and
      // its process is gone (a mark being made is not locked yet either).
      if (std::sscanf(e->d_name, "wait.%u.%ld%n", &qid, &pid, &used) == 2 &&
          e->d_name[used] == '\0') {
        std::string path = impl_->paths.in_locks(e->d_name);
        auto held = FileLock::IsHeld(path);
        if (held.ok() && !*held && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
          ::unlink(path.c_str());
        continue;
      }
      if (std::sscanf(e->d_name, "lease.%u.%llu%n", &qid, &lease_id, &used) != 2 ||
          e->d_name[used] != '\0')
        continue;
      if (impl_->LoadLease(txn, qid, lease_id, nullptr)) continue;
      std::string path = impl_->LeaseLockPath(qid, lease_id);
      auto held = FileLock::IsHeld(path);
      if (held.ok() && !*held && ::unlink(path.c_str()) == 0) ++total;
    }
    return {};
  }));
  for (uint32_t qid : due) {
    MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
      auto name = impl_->QueueNameOf(txn, qid);
      if (!name) return {};
      auto q = impl_->LoadQueue(txn, std::string(*name));
      if (!q.ok()) return q.status();
      if (!*q) return {};
      auto n = impl_->Maintain(txn, **q, now);
      if (!n.ok()) return n.status();
      total += *n;
      // Forget expired dedup keys.
      auto forgotten = impl_->ForgetExpiredDedup(txn, qid, now);
      if (!forgotten.ok()) return forgotten.status();
      total += *forgotten;
      return {};
    }));
  }
  auto refusals = ForgetAbandonedRefusals(now);
  if (!refusals.ok()) return refusals.status();
  return total + *refusals;
}

Result<uint64_t> Store::Requeue(const QueueRef& from, const std::string& id,
                                std::optional<int64_t> ttbr_ms) {
  bool dead_letters = from.IsSystem() && from.sub != "journal";
  if (!dead_letters && !(from.IsSub() && from.sub != "journal" && !from.IsOutgoing()))
    return Status::UnsupportedFormatnameOperation(
        "requeue takes a poison subqueue (QUEUE;poison) or a dead-letter queue", from.Full());
  uint64_t n = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    n = 0;
    auto q = impl_->FindQueue(txn, from);
    if (!q.ok()) return q.status();
    Selection sel;
    sel.limit = 0;
    if (!id.empty()) {
      sel.anchor = Anchor::kId;
      sel.id = id;
    }
    int64_t now = NowMs();
    for (;;) {
      std::vector<Impl::Found> batch;
      MQ_RETURN_IF_ERROR(impl_->msgs.Collect(txn, *q, sel, {}, kBatchCount, batch));
      if (batch.empty()) break;
      for (auto& f : batch) {
        std::string dest = dead_letters ? f.msg.destination_queue : from.base;
        // A dead letter of a link's outgoing queue was going to LINK:QUEUE: back into out;LINK,
        // a message of its own in the link's stream (a transaction of one at the far side).
        auto remote = dead_letters ? ParseRemoteRef(dest) : std::optional<RemoteRef>();
        if (remote.ok() && *remote) {
          if (!impl_->GetMeta(txn, LinkKey((*remote)->link)))
            return Status::QueueNotFound(
                fmt::format("message {} was going to '{}', and there is no link '{}'",
                            f.msg.lookup_id, dest, (*remote)->link),
                from.Full());
          auto oq = impl_->LoadOutgoing(txn, (*remote)->link);
          if (!oq.ok()) return oq.status();
          if (!*oq) return Status::QueueNotFound("no outgoing queue", (*remote)->link);
          f.msg.abort_count = 0;
          f.msg.msg_class = kClassNormal;
          if (ttbr_ms)
            f.msg.ttbr = *ttbr_ms < 0 ? 0 : now + *ttbr_ms;
          else if (f.msg.ttbr)
            f.msg.ttbr = now + std::max<int64_t>(f.msg.ttbr - f.msg.sent_time, 0);
          f.msg.ttrq = 0;
          f.msg.destination_queue = (*remote)->queue;
          if (!f.msg.xact_id.empty()) f.msg.eod_first = f.msg.eod_last = true;
          MQ_RETURN_IF_ERROR(impl_->MoveMessage(txn, *q, f, (*oq)->name, false, now, true));
          ++n;
          continue;
        }
        auto dq = impl_->LoadQueue(txn, dest);
        if (!dq.ok()) return dq.status();
        if (dest.empty() || !*dq || !ParseQueueRef(dest).ok() || ParseQueueRef(dest)->IsSub())
          return Status::QueueNotFound(
              fmt::format("message {} was going to '{}', which does not exist", f.msg.lookup_id,
                          dest),
              from.Full());
        if (!IsNil(f.msg.conversation_handle) && !ParseQueueRef(dest)->IsSub()) {
          // Back into its conversation, which must still be there.
          auto conv = impl_->LoadConv(txn, f.msg.conversation_handle);
          if (!conv.ok()) return conv.status();
          if (!*conv || (*conv)->qid != (*dq)->id)
            return Status::ConversationNotFound(
                fmt::format("message {} belongs to conversation {}, which no longer "
                            "exists in '{}': it cannot go back",
                            f.msg.lookup_id, FormatGuid(f.msg.conversation_handle), dest),
                from.Full());
        }
        f.msg.abort_count = 0;
        if (dead_letters) {
          f.msg.msg_class = kClassNormal;
          // Fresh deadlines: the one given, or the time to be received it was sent with.
          if (ttbr_ms)
            f.msg.ttbr = *ttbr_ms < 0 ? 0 : now + *ttbr_ms;
          else if (f.msg.ttbr)
            f.msg.ttbr = now + std::max<int64_t>(f.msg.ttbr - f.msg.sent_time, 0);
          f.msg.ttrq = 0;
        } else if (ttbr_ms) {
          f.msg.ttbr = *ttbr_ms < 0 ? 0 : now + *ttbr_ms;
        }
        MQ_RETURN_IF_ERROR(impl_->MoveMessage(txn, *q, f, dest, !dead_letters, now));
        ++n;
      }
      if (!id.empty()) break;
    }
    if (!id.empty() && n == 0) return Status::MessageNotFound("no such message", from.Full());
    return q->id ? impl_->PutQueue(txn, *q) : Status();
  });
  if (!s.ok()) return s;
  return n;
}

Status Store::MoveToSubqueue(const QueueRef& from, uint64_t lookup_id, const QueueRef& to) {
  if (from.IsSystem() || to.IsSystem() || from.sub == "journal" || from.IsOutgoing() ||
      to.IsOutgoing())
    return Status::UnsupportedFormatnameOperation(
        "move works between a queue and its subqueues (not system queues, journals or "
        "links' outgoing queues)",
        from.Full());
  if (!to.IsSub() || to.base != from.base || to.sub == "journal" || to.sub == from.sub)
    return Status::UnsupportedFormatnameOperation(
        fmt::format("--to must name another subqueue of {} (e.g. {};retry), not a "
                    "journal",
                    from.base, from.base),
        to.Full());
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto base = impl_->LoadQueue(txn, from.base);
    if (!base.ok()) return base.status();
    if (!*base) return Status::QueueNotFound("no such queue", from.base);
    auto q = impl_->FindQueue(txn, from);
    if (!q.ok()) return q.status();
    Status missing = Status::MessageNotFound(fmt::format("no message with lookup id {}", lookup_id),
                                             from.Full());
    if (q->id == 0 || !impl_->msgs.Exists(txn, q->id, lookup_id)) return missing;
    Impl::Found f;
    MQ_RETURN_IF_ERROR(impl_->LoadMessage(txn, *q, lookup_id, f));
    std::string key = Impl::OrderKeyFor(*q, f.msg);
    if (impl_->msgs.IsLocked(txn, key))
      return Status::MessageLockedUnderTransaction(
          fmt::format("message {} is held by an open transactional receive", lookup_id),
          from.Full());
    if (!impl_->msgs.IsReady(txn, key))
      return Status::MessageNotFound(
          fmt::format("message {} is delayed: it can be moved once it is visible", lookup_id),
          from.Full());
    if (Impl::Expired(*q, f.msg, NowMs())) return missing;
    MQ_RETURN_IF_ERROR(impl_->MoveMessage(txn, *q, f, to.Full(), true, NowMs()));
    return impl_->PutQueue(txn, *q);
  });
}

}  // namespace mq
