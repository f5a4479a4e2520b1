// cursors.cpp: named cursors kept in the store (MSMQ cursors) and notifications
// (EnableNotification, mq-watch): a cursor's users are serialized by its lock file.
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

std::string Store::Impl::CursorLockPath(uint32_t qid, const std::string& name) {
  return paths.cursor_lock(qid, name);
}

// Takes a named cursor's lock, waiting at most `wait_ms` (0: not at all; -1: as long as it
// takes). A cursor is stored once it has moved.
Result<FileLock> Store::Impl::LockCursor(const QueueRef& ref, uint32_t qid, const std::string& name,
                                         bool wait_lock, int64_t wait_ms) {
  auto l = FileLock::Acquire(CursorLockPath(qid, name), file_mode, wait_lock, wait_ms);
  if (!l.ok()) {
    Status s = l.status();
    if (s.code() == Code::kIoTimeout)
      return Status(s.code(), fmt::format("timed out waiting for cursor {}, in use by another "
                                          "process", name), ref.Full());
    if (s.code() == Code::kSharingViolation)
      return Status(s.code(), fmt::format("cursor {} is in use by another process", name),
                    ref.Full());
    return s;
  }
  return l;
}

Store::Impl::CursorState Store::Impl::LoadCursor(lmdb::Txn& txn, uint32_t qid,
                                                 const std::string& name) {
  CursorState st;
  auto v = txn.Get(cursors, CursorKey(qid, name));
  // 0x01 and an order key: at that message; 0x01 alone: at the first message location of
  // a queue that was empty when the cursor's first PEEK_CURRENT came (MSMQ positions it).
  if (v && (v->size() == 14 || v->size() == 1) && (*v)[0] == 1) {
    st.positioned = true;
    st.key = std::string(v->substr(1));
  }
  return st;
}

Status Store::Impl::SaveCursor(lmdb::Txn& txn, uint32_t qid, const std::string& name,
                               const std::string& key) {
  std::string v(1, '\x01');
  v += key;
  return txn.Put(cursors, CursorKey(qid, name), v);
}

// The first visible message of `q` strictly after order key `after` (or from the head if
// `after` is empty).
Result<std::optional<Store::Impl::Found>> Store::Impl::NextVisible(lmdb::Txn& txn,
                                                                   const QueueInfo& q,
                                                                   const std::string& after) {
  // The head order of Collect (priority, then arrival, conversation messages included).
  Selection sel;
  std::vector<Found> one;
  MQ_RETURN_IF_ERROR(msgs.Collect(txn, q, sel, after, 1, one));
  if (one.empty()) return std::optional<Found>();
  return std::optional<Found>(std::move(one[0]));
}

// Moves a named cursor of `q` as MSMQ does ("Cursor Behavior") and saves its new position:
// kFirst to the head; kNext past its message; kCurrent stays. kCurrent is a cursor's first
// move too: on a cursor never moved (or positioned in a queue that was empty) it moves to the
// head. kNext on a cursor never moved is illegal. kCurrent on a message gone since is
// MQ_ERROR_MESSAGE_ALREADY_RECEIVED, or, for a notification (`notify`, seed 000), a move to
// the next suitable message. Nothing there: MQ_ERROR_MESSAGE_NOT_FOUND (the caller may
// wait). A kNext that waits passes `arrivals`: the first look that finds nothing sets it to
// the queue's last lookup id, and later looks move the cursor to the first message that
// arrived since, wherever its priority placed it (MSMQ: a cursor at the end of the queue
// moves to the next message that arrives).
Result<Store::Impl::Found> Store::Impl::MoveCursor(lmdb::Txn& txn, const QueueInfo& q,
                                                   const std::string& name, CursorAction action,
                                                   bool notify,
                                                   std::optional<uint64_t>* arrivals) {
  CursorState st = LoadCursor(txn, q.id, name);
  std::optional<Found> found;
  if (action == CursorAction::kNext && !st.positioned)
    return Status::IllegalCursorAction(
        fmt::format("cursor {} was never moved: move it to the first message first", name), q.name);
  bool on_message = st.positioned && !st.key.empty();  // not at the start of an empty queue
  if (action == CursorAction::kCurrent && on_message && msgs.IsReady(txn, st.key)) {
    Found f;
    MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(st.key, 5), f));
    f.walk_key = st.key;
    found = std::move(f);
  } else if (action == CursorAction::kCurrent && on_message && !notify) {
    return Status::MessageAlreadyReceived(
        fmt::format("the message at cursor {} was received or moved", name), q.name);
  } else {
    auto f = NextVisible(txn, q, action == CursorAction::kFirst ? std::string() : st.key);
    if (!f.ok()) return f.status();
    found = std::move(*f);
    if (!found && action == CursorAction::kNext && arrivals) {
      if (!*arrivals) {
        *arrivals = q.next_lookup ? q.next_lookup - 1 : 0;
      } else {
        MQ_RETURN_IF_ERROR(msgs.ForEachArrival(
            txn, q, **arrivals, [&](Message& m, bool ready, bool) -> Result<bool> {
              if (!ready || Expired(q, m, NowMs())) return true;
              Found a;
              a.walk_key = OrderKeyFor(q, m);
              a.msg = std::move(m);
              found = std::move(a);
              return false;
            }));
      }
    }
  }
  if (!found) return Status::MessageNotFound("no message", q.name);
  MQ_RETURN_IF_ERROR(SaveCursor(txn, q.id, name, found->walk_key));
  return std::move(*found);
}

// Positions a cursor never moved at the first message location of its (empty) queue, as a
// PEEK_CURRENT that found nothing does in MSMQ: its next PEEK_NEXT is legal.
Status Store::Impl::PositionAtStart(const QueueRef& ref, const std::string& name) {
  return Write([&](lmdb::Txn& txn) -> Status {
    auto q = FindQueue(txn, ref);
    if (!q.ok()) return q.status();
    if (LoadCursor(txn, q->id, name).positioned) return {};
    return txn.Put(cursors, CursorKey(q->id, name), std::string(1, '\x01'));
  });
}

Status Store::CursorPeek(const QueueRef& ref, const CursorOptions& co, const ReadOptions& ro,
                         MessageSink& sink) {
  MQ_RETURN_IF_ERROR(CheckCursorName(co.name));
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  int64_t started = MonotonicMs();
  auto lock = impl_->LockCursor(ref, *qid, co.name, co.wait_lock, co.lock_wait_ms);
  if (!lock.ok()) return lock.status();
  ReadOptions left = ro;
  if (ro.wait_ms > 0) left.wait_ms = std::max<int64_t>(1, ro.wait_ms - (MonotonicMs() - started));
  // The cursor moves in a transaction of its own; the message is written after it committed,
  // and if that fails the cursor is put back where it was (no one else moves it meanwhile:
  // its lock is ours).
  std::optional<std::string> before;
  Message found_msg;
  std::optional<uint64_t> arrivals;  // a waiting --next: MoveCursor
  Status moved = impl_->WaitLoop(ref, left, [&](bool waiting, int64_t& deadline) -> Status {
    MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
    return impl_->Write([&](lmdb::Txn& txn) -> Status {
      auto q = impl_->FindQueue(txn, ref);
      if (!q.ok()) return q.status();
      if (waiting && !q->enabled)
        return Status::QueueNotActive("queue was disabled (status OFF)", q->name);
      deadline = impl_->NextDeadline(txn, q->id);
      auto old = txn.Get(impl_->cursors, CursorKey(q->id, co.name));
      before = old ? std::optional<std::string>(std::string(*old)) : std::nullopt;
      auto found = impl_->MoveCursor(txn, *q, co.name, co.action, false, &arrivals);
      if (!found.ok()) return found.status();
      found_msg = std::move(found->msg);
      return {};
    });
  });
  if ((moved.code() == Code::kMessageNotFound || moved.code() == Code::kIoTimeout) &&
      co.action == CursorAction::kCurrent) {
    Status at = impl_->PositionAtStart(ref, co.name);
    if (!at.ok()) return at;
  }
  if (!moved.ok()) return moved;
  Status out = sink.Add(found_msg);
  if (out.ok()) out = sink.Flush();
  if (out.ok()) return {};
  Status back = impl_->Write([&](lmdb::Txn& txn) -> Status {
    std::string key = CursorKey(*qid, co.name);
    if (before) return txn.Put(impl_->cursors, key, *before);
    auto r = txn.Del(impl_->cursors, key);
    return r.ok() ? Status() : r.status();
  });
  if (!back.ok())
    return Status(out.code(), fmt::format("{}; and cursor {} could not be put back ({})",
                                          out.text(), co.name, back.text()),
                  out.subject());
  return out;
}

Status Store::CursorReceive(const QueueRef& ref, const CursorOptions& co, const ReadOptions& ro,
                            MessageSink& sink) {
  if (co.action != CursorAction::kCurrent)
    return Status::IllegalCursorAction("a receive at a cursor takes its current message",
                                       ref.Full());
  MQ_RETURN_IF_ERROR(CheckCursorName(co.name));
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  auto lock = impl_->LockCursor(ref, *qid, co.name, co.wait_lock, co.lock_wait_ms);
  if (!lock.ok()) return lock.status();
  (void)ro;  // the message at a cursor is there or not: nothing to wait for
  // As Receive: Locked under a process lease, written with no transaction open, then removed.
  std::unique_ptr<Lease> lease(new Lease());
  Status locked = impl_->WriteLight(
      [&](lmdb::Txn& txn) -> Status {
        int64_t now_ns = NowNs(), now = now_ns / 1'000'000;
        uint64_t maintained = 0;
        auto q = impl_->ReceivableQueue(txn, ref, now, &maintained);
        if (!q.ok()) return q.status();
        if (q->receive_paused) return Impl::ReceivePaused(q->name);
        if (RateTokens(*q, now_ns) == 0) return Impl::RateLimited(*q, now_ns);
        RateTake(*q, now_ns, 1);
        Impl::CursorState st = impl_->LoadCursor(txn, q->id, co.name);
        if (!st.positioned || st.key.empty())
          return Status::IllegalCursorAction(
              fmt::format("cursor {} is on no message: use mq-peek --cursor {} --first or "
                          "--current",
                          co.name, co.name),
              q->name);
        if (!impl_->msgs.IsReady(txn, st.key))
          return Status::MessageAlreadyReceived(
              fmt::format("the message at cursor {} was received or moved", co.name), q->name);
        Impl::Found f;
        MQ_RETURN_IF_ERROR(impl_->LoadMessage(txn, *q, GetU64BE(st.key, 5), f));
        if (Impl::IsConvMessage(*q, f.msg))
          return Status::IllegalCursorAction(
              fmt::format("the message at cursor {} belongs to conversation {}: "
                          "receive it with --conversation or --group, in its order",
                          co.name, FormatGuid(f.msg.conversation_handle)),
              q->name);
        LeaseRecord rec;
        auto lease_id = impl_->BeginLease(*q, LockOptions(), now, *lease, rec);
        if (!lease_id.ok()) return lease_id.status();
        MQ_RETURN_IF_ERROR(impl_->MarkLocked(txn, *q, f, *lease_id, false, rec));
        lease->held_.push_back(std::move(f));
        MQ_RETURN_IF_ERROR(impl_->PutLease(txn, q->id, *lease_id, rec));
        return impl_->PutQueue(txn, *q);
      },
      true);
  if (!locked.ok()) return locked;
  Status out = Impl::Deliver(*lease, sink, true);
  if (!out.ok()) {
    (void)impl_->EndLease(*lease, Impl::LeaseEnd::Release(true));
    return Status(out.code(), fmt::format("{}; nothing was removed", out.text()), out.subject());
  }
  Status fin = impl_->EndLease(*lease, Impl::LeaseEnd::Commit(true));
  if (!fin.ok())
    return Status(fin.code(),
                  fmt::format("{}; the message was written but not removed, and will be "
                              "received again",
                              fin.text()),
                  fin.subject());
  return {};
}

Result<std::vector<CursorInfo>> Store::ListCursors() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  std::vector<CursorInfo> out;
  lmdb::Cursor c(*txn, impl_->cursors);
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() < 5) continue;
    CursorInfo ci;
    uint32_t qid = GetU32BE(c.key(), 0);
    auto name = impl_->QueueNameOf(*txn, qid);
    ci.queue = name ? std::string(*name) : fmt::format("#{}", qid);
    ci.name = std::string(c.key().substr(4));
    if (c.value().size() == 14 && c.value()[0] == 1) {  // else: never moved
      ci.positioned = true;
      ci.priority = static_cast<uint8_t>(7 - static_cast<uint8_t>(c.value()[5]));
      ci.lookup_id = GetU64BE(c.value(), 6);
    } else if (c.value().size() == 1 && c.value()[0] == 1) {  // placed in an empty queue
      ci.positioned = ci.at_start = true;
    }
    auto held = FileLock::IsHeld(impl_->CursorLockPath(qid, ci.name));
    ci.holder = held.ok() && *held;
    out.push_back(std::move(ci));
  }
  // Cursors in use that have not moved yet exist only as held lock files.
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(impl_->paths.locks_dir().c_str()), closedir);
  std::vector<CursorInfo> fresh;
  while (dir) {
    dirent* e = readdir(dir.get());
    if (!e) break;
    unsigned qid = 0;
    int used = 0;
    if (std::sscanf(e->d_name, "cursor.%u.%n", &qid, &used) != 1 || used == 0) continue;
    std::string name = e->d_name + used;
    if (txn->Get(impl_->cursors, CursorKey(qid, name))) continue;
    auto held = FileLock::IsHeld(impl_->CursorLockPath(qid, name));
    if (!held.ok() || !*held) continue;
    auto qname = impl_->QueueNameOf(*txn, qid);
    if (!qname) continue;
    CursorInfo ci;
    ci.queue = std::string(*qname);
    ci.name = name;
    ci.holder = true;
    fresh.push_back(std::move(ci));
  }
  std::sort(fresh.begin(), fresh.end(),
            [](const CursorInfo& a, const CursorInfo& b) {
              return std::tie(a.queue, a.name) < std::tie(b.queue, b.name);
            });
  out.insert(out.end(), fresh.begin(), fresh.end());
  return out;
}

Status Store::DeleteCursor(const QueueRef& ref, const std::string& name) {
  MQ_RETURN_IF_ERROR(CheckCursorName(name));
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->FindQueue(txn, ref);
    if (!q.ok()) return q.status();
    auto r = txn.Del(impl_->cursors, CursorKey(q->id, name));
    if (!r.ok()) return r.status();
    if (!*r) return Status::InvalidArg(fmt::format("no cursor named {}", name), q->name);
    return {};
  });
}

Status Store::Watch(const QueueRef& ref, const WatchOptions& wo, const ReadOptions& ro,
                    const std::function<Status(const Message&)>& on_arrived) {
  bool named = !wo.cursor_name.empty();
  if (!named && wo.action != CursorAction::kFirst)
    return Status::InvalidArg("--cursor current and next need --cursor-name");
  if (named && wo.include_locked)
    return Status::InvalidArg(
        "--locked applies to the head of the queue; a cursor skips Locked messages");
  FileLock lock;
  if (named) {
    MQ_RETURN_IF_ERROR(CheckCursorName(wo.cursor_name));
    auto qid = impl_->QueueIdForWait(ref, false);
    if (!qid.ok()) return qid.status();
    int64_t started = MonotonicMs();
    auto l = impl_->LockCursor(ref, *qid, wo.cursor_name, wo.wait_lock, wo.lock_wait_ms);
    if (!l.ok()) return l.status();
    lock = std::move(*l);
    if (ro.wait_ms > 0) {
      ReadOptions left = ro;
      left.wait_ms = std::max<int64_t>(1, ro.wait_ms - (MonotonicMs() - started));
      return WatchLocked(ref, wo, left, on_arrived);
    }
  }
  return WatchLocked(ref, wo, ro, on_arrived);
}

Status Store::WatchLocked(const QueueRef& ref, const WatchOptions& wo, const ReadOptions& ro,
                          const std::function<Status(const Message&)>& on_arrived) {
  bool named = !wo.cursor_name.empty();
  CursorAction action = wo.action;
  // Anonymous --follow: the last lookup id looked at, and the order keys of the messages it
  // passed while they were Locked, in lookup order: a rollback returns them under the same
  // lookup id, and they are reported then (forgotten once received). As many as were Locked
  // when the follower passed them, 13 bytes each.
  uint64_t high_water = 0;
  std::vector<std::string> passed_locked;
  for (;;) {
    std::optional<uint64_t> arrivals;  // a waiting NEXT: MoveCursor
    Message event;
    Status s = impl_->WaitLoop(ref, ro, [&](bool waiting, int64_t& deadline) -> Status {
      MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
      if (!named && wo.follow) {
        // Arrival order: every visible message with a lookup id above the high-water mark.
        // Promoted delayed messages get new, higher lookup ids, so none is skipped.
        auto txn = lmdb::Txn::Begin(impl_->env, false);
        if (!txn.ok()) return txn.status();
        auto q = impl_->FindQueue(*txn, ref);
        if (!q.ok()) return q.status();
        if (!q->enabled) return Status::QueueNotActive("queue was disabled (status OFF)", q->name);
        deadline = impl_->NextDeadline(*txn, q->id);
        int64_t now = NowMs();
        // First what came back from a rollback.
        for (auto it = passed_locked.begin(); it != passed_locked.end();) {
          if (impl_->msgs.IsReady(*txn, *it)) {
            Impl::Found f;
            MQ_RETURN_IF_ERROR(impl_->LoadMessage(*txn, *q, OrderKeyLookup(*it), f));
            it = passed_locked.erase(it);
            if (Impl::Expired(*q, f.msg, now)) continue;
            f.msg.queue = q->name;
            event = std::move(f.msg);
            return {};
          }
          it = impl_->msgs.IsLocked(*txn, *it) ? it + 1 : passed_locked.erase(it);
        }
        bool found = false;
        MQ_RETURN_IF_ERROR(impl_->msgs.ForEachArrival(
            *txn, *q, high_water, [&](Message& m, bool ready, bool is_locked) -> Result<bool> {
              high_water = m.lookup_id;
              if (!ready) {
                // Locked: reported with --locked, else remembered. Delayed: promoted later
                // under a new, higher lookup id.
                if (!(is_locked && wo.include_locked)) {
                  if (is_locked) passed_locked.push_back(Impl::OrderKeyFor(*q, m));
                  return true;
                }
              }
              if (Impl::Expired(*q, m, now)) return true;  // never delivered: no event either
              event = std::move(m);
              found = true;
              return false;
            }));
        if (found) return {};
        return Status::MessageNotFound("no message", ref.Full());
      }
      if (!named) {
        auto txn = lmdb::Txn::Begin(impl_->env, false);
        if (!txn.ok()) return txn.status();
        auto q = impl_->FindQueue(*txn, ref);
        if (!q.ok()) return q.status();
        if (waiting && !q->enabled)
          return Status::QueueNotActive("queue was disabled (status OFF)", q->name);
        deadline = impl_->NextDeadline(*txn, q->id);
        // The head, as mq-peek and mq-receive see it.
        Selection sel;
        sel.include_locked = wo.include_locked;
        std::vector<Impl::Found> head;
        MQ_RETURN_IF_ERROR(impl_->msgs.Collect(*txn, *q, sel, {}, 1, head));
        // Retained messages (status 0, the last ready band) are not arrivals.
        if (head.empty() || head[0].msg.status == 0)
          return Status::MessageNotFound("no message", ref.Full());
        event = std::move(head[0].msg);
        return {};
      }
      // A named cursor, moved as EnableNotification moves it.
      return impl_->Write([&](lmdb::Txn& txn) -> Status {
        auto q = impl_->FindQueue(txn, ref);
        if (!q.ok()) return q.status();
        if (waiting && !q->enabled)
          return Status::QueueNotActive("queue was disabled (status OFF)", q->name);
        deadline = impl_->NextDeadline(txn, q->id);
        auto found = impl_->MoveCursor(txn, *q, wo.cursor_name, action, true, &arrivals);
        if (!found.ok()) return found.status();
        event = std::move(found->msg);
        return {};
      });
    });
    if (s.code() == Code::kOperationCancelled) return {};
    if (!s.ok()) return s;
    MQ_RETURN_IF_ERROR(on_arrived(event));
    if (!wo.follow) return {};
    if (named) action = CursorAction::kNext;
  }
}


Status Store::Impl::DropCursors(lmdb::Txn& txn, uint32_t qid) {
  std::vector<std::string> keys;
  {
    lmdb::Cursor c(txn, cursors);
    std::string prefix = QueueIdKey(qid);
    for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next())
      keys.emplace_back(c.key());
  }
  for (auto& k : keys) {
    auto d = txn.Del(cursors, k);
    if (!d.ok()) return d.status();
  }
  return {};
}

}  // namespace mq
