// messages.cpp: a message in, out or moved, across the modules that keep it: the message
// table (its record and indexes: message_table.hpp), the conversation indexes and the
// queue's counters, in the caller's transaction.
#include "store/store_impl.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace mq {

// Removes a message of `q` from the message table and from its conversation's indexes.
Status Store::Impl::RemoveMessage(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t size,
                                  Held held) {
  auto was_locked = msgs.Remove(txn, q, m, size, held);
  if (!was_locked.ok()) return was_locked.status();
  if (IsConvMessage(q, m))
    MQ_RETURN_IF_ERROR(ConvOnRemove(txn, q, m, *was_locked));
  else if (m.status == 0)
    q.retained -= std::min<uint64_t>(q.retained, 1);  // RETENTION ON
  // The last message gone (what retention keeps is done with): waiters for an empty queue
  // (mq-watch --until-empty) are rung after the commit, as receivers are for an arrival.
  if (q.count <= q.retained) to_notify.insert(q.id);
  return {};
}

// Stores `m` as a new message of `q`: its record and indexes (the message table, which puts it
// in its place in the delivery order), the conversation's indexes, and the counters. The lookup id
// is `lookup` if not 0 (a move that keeps it), else the queue's next; a `promoted` message goes to
// the delivery order even though it keeps its visible time. With `quota` not 0, a message that
// would take the queue's bytes above it is refused (MQ_ERROR_INSUFFICIENT_RESOURCES) before
// anything changes. The caller saves `q`.
Status Store::Impl::InsertMessage(lmdb::Txn& txn, QueueInfo& q, Message& m, uint64_t quota,
                                  uint64_t lookup, bool promoted) {
  m.lookup_id = lookup ? lookup : q.next_lookup;
  m.queuing_order = m.lookup_id;
  m.queue = q.name;
  // Reused from one insert to the next (a batch of sends inserts thousands).
  thread_local std::string rec;
  msgs.Encode(q.id, m, rec);
  if (quota && q.bytes + rec.size() > quota)
    return Status::InsufficientResources(
        fmt::format("queue quota of {} bytes would be exceeded ({} used, {} more)", quota, q.bytes,
                    rec.size()),
        q.name);
  bool delayed = m.visible_time && !promoted;
  MQ_RETURN_IF_ERROR(msgs.Insert(txn, q, m, rec, delayed));
  q.next_lookup = std::max(q.next_lookup, m.lookup_id + 1);
  if (!delayed) {
    if (IsConvMessage(q, m))
      MQ_RETURN_IF_ERROR(ConvOnAdd(txn, q, m));
    else if (m.status == 0)
      q.retained++;  // kept by RETENTION ON
    to_notify.insert(q.id);
  }
  if (!promoted) q.sent_total++;
  return {};
}

// Moves a message of `q` (in any state) to the queue `to_name` (created if missing, as
// subqueues and system queues are), keeping its lookup id if `keep_lookup` and it is free
// there (MSMQ MoveMessage), else giving it the target's next one.
Status Store::Impl::MoveMessage(lmdb::Txn& txn, QueueInfo& q, Found& f, const std::string& to_name,
                                bool keep_lookup, int64_t now, bool awaiting_arrival,
                                const std::function<void(Message&)>& change) {
  MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size));
  if (change) change(f.msg);
  auto to_r = LoadOrCreate(txn, to_name);
  if (!to_r.ok()) return to_r.status();
  QueueInfo& to = to_r.value();
  Message& m = f.msg;
  m.move_count++;
  m.last_move_time = now;
  m.visible_time = 0;
  m.awaiting_arrival = awaiting_arrival;
  uint64_t lookup = m.lookup_id;
  if (!keep_lookup || msgs.Exists(txn, to.id, lookup)) lookup = 0;
  MQ_RETURN_IF_ERROR(InsertMessage(txn, to, m, 0, lookup));
  return PutQueue(txn, to);
}

}  // namespace mq
