// message_table.hpp: the message table, the one owner of a message's record and of the
// indexes that place it. Internal to libmq (the store's own files).
//
// It owns these databases (their keys: schema.hpp) and is the only code that reads or
// writes them:
//   messages   the record, keyed by its order key (queue id, band, lookup id): delivery order
//   locked     ranges of records that a lease holds (Locked), with the lease
//   delays     messages not yet visible (--delay, --at, a rollback's retry delay), whose
//              records wait in kDelayedBand
//   by_id      message id -> where the message is
//   by_corr    correlation id -> the messages that carry it
//   deadlines  when each message of a live queue expires
//
// Rules:
//  - A message's state is where its record is (store format 4): in a ready band and under no
//    `locked` range, ready; under a range, Locked; in kDelayedBand (with its `delays` entry),
//    delayed. It is in `by_id` unless its id is native, in `by_corr` if it has a correlation
//    id, and in `deadlines` if it expires in a live queue: `mq-admin check` verifies it
//    (Check). Each operation below keeps this true for its step; the store's orchestration
//    (messages.cpp: insert, remove, move; leases.cpp: lock, roll back) calls them in one
//    write transaction.
//  - A record moves only when its band changes: a delay (into kDelayedBand), a retention
//    (into the retained band: Rekey). A lock or a rollback leaves it where it is.
//  - Where only a lookup id is known (an id's entry, a correlation, a deadline, a
//    conversation's index), the record is found by a seek in each band that holds
//    messages of the queue, up to its own (Locate): a few seeks, still O(log n).
//  - The queue's counters (count, bytes, delayed, locked) live in its catalog record
//    (queue.hpp); the operations that change a message's state update the QueueInfo they are
//    given, and the caller saves it.
//  - Keys are put and deleted in increasing order where a batch allows (the *Seq calls of
//    lmdb.hpp): a batch of sends or a drain from the head then needs no B-tree search.
//  - Native ids (store format 2): the id of a message sent to its queue in a format 2 store
//    is the store's id prefix (12 bytes, meta "id_prefix"), the queue id and a counter that
//    follows the queue's lookup ids (Store::Impl::NewMessageIdInto). When the counter is
//    the message's lookup id, the id itself says where the message is, and by_id holds no
//    entry for it: one B-tree put and one delete fewer per message. Every other message (sent
//    before format 2, transferred, imported, moved, promoted from a delay, a journal copy)
//    has its by_id entry as before.
//  - Lean records (store format 3): a record leaves out what the store can say again (record
//    version 2, message.hpp Implied): a native id, the store's own GUID as the source, an
//    enqueue time equal to the arrival time, a queuing order equal to the lookup id. About 50
//    bytes of a message's 70 of properties: fewer pages to write, sync and free. Only this
//    table encodes and decodes records (Encode, Decode).
//  - One tree (store format 4): formats 1-3 kept each record under (queue id, lookup id) and
//    its place in the delivery order in a second tree, `order`, and a Locked message's mark
//    in a third: a drain deleted from three B-trees a message. Format 4 deletes from one.
//    Upgrade4 moves an older store's records to their order keys (mq-admin upgrade); this mq
//    opens an older store only for that.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/message.hpp"
#include "store/conversation.hpp"
#include "store/lmdb.hpp"
#include "store/queue.hpp"
#include "store/schema.hpp"
#include "store/store.hpp"

namespace mq {

// Whether `m`, a message of `q`, is past its deadline at `now` (and so never delivered, even
// before a writer removes it).
inline bool ExpiredAt(const QueueInfo& q, const Message& m, int64_t now) {
  int64_t at = ExpiryOf(m);
  return at && at <= now && IsLive(q) && m.status != 0;
}

// Conversation messages are indexed only in a queue proper: moved to a poison subqueue or a
// dead-letter queue they are plain messages there.
inline bool IsConvQueue(const QueueInfo& q) { return q.name.find(';') == std::string::npos; }

inline bool IsConvMessageOf(const QueueInfo& q, const Message& m) {
  return !IsNil(m.conversation_handle) && IsConvQueue(q);
}

// The key of `m`'s record when it is ready or Locked: its queue, its band (priority;
// conversation and retained messages in bands of their own, schema.hpp) and its lookup id.
inline std::string OrderKeyOf(const QueueInfo& q, const Message& m) {
  // An outgoing queue is FIFO (schema.hpp): one band whatever the priority.
  uint8_t priority = IsOutgoingName(q.name) ? 0 : m.priority;
  return BandKey(q.id, OrderBand(priority, IsConvMessageOf(q, m), m.status == 0), m.lookup_id);
}

// The lookup id in an order key.
inline uint64_t OrderKeyLookup(std::string_view okey) { return GetU64BE(okey, 5); }

// For the databases keyed by queue id first (delays, deadlines, leases, dedup_exp): adds to
// `out` each queue that has an entry, one seek per queue; with `due_by` >= 0 only those whose
// first entry's time (the u64 after the queue id) is at or before it.
void QueuesWithEntries(lmdb::Txn& txn, lmdb::Dbi dbi, int64_t due_by, std::set<uint32_t>& out);

class MessageTable {
 public:
  // Opens (creating them in a write transaction when `create`) the six databases; for a
  // store of format 3 or older (opened to be upgraded) also its `order`.
  Status Open(lmdb::Txn& txn, bool create, uint32_t format);
  // Moves a store of format 3 or older to format 4's layout (schema.hpp), in the caller's
  // write transaction: each record to its order key (or kDelayedBand), each `locked` entry
  // to a range of one, `order` dropped. E_CORRUPTED, nothing changed, if a record is in none
  // or more than one of `order`, `locked` and `delays`. Returns how many records moved.
  Result<uint64_t> Upgrade4(lmdb::Txn& txn);
  // The store's id prefix (12 bytes; empty for a format 1 store, where every id has a by_id
  // entry).
  void SetIdPrefix(std::string prefix) { id_prefix_ = std::move(prefix); }
  // Whether records are lean (format 3), and the store's GUID they may leave out.
  void SetLean(bool lean, const Guid& store_guid) {
    lean_ = lean;
    store_guid_ = store_guid;
  }
  // The record of `m`, a message of queue `qid` at m.lookup_id, as this store writes it.
  void Encode(uint32_t qid, const Message& m, std::string& out) const;
  // Decodes the record of the message `lookup` of `qid` into `m` (lookup_id set, queue left
  // as it is), filling in what the record leaves out.
  Status Decode(std::string_view rec, uint32_t qid, uint64_t lookup, Message& m) const;
  // Whether the message `id` at `lookup` of queue `qid` is native: located by its id alone,
  // with no by_id entry.
  bool IsNative(uint32_t qid, std::string_view id, uint64_t lookup) const;
  // Each database with its name (for the page-level check).
  void ForEachDb(const std::function<void(const char* name, lmdb::Dbi dbi)>& fn) const;

  // ---- records
  // The key of the record of the message `lookup` of `qid`, wherever it is (Locate in the
  // header comment); nullopt if there is none.
  std::optional<std::string> Locate(lmdb::Txn& txn, uint32_t qid, uint64_t lookup) const;
  // Loads the message `lookup` of `q` into `f` (E_CORRUPTED if an index named it and it is
  // missing).
  Status Load(lmdb::Txn& txn, const QueueInfo& q, uint64_t lookup, FoundMessage& f) const;
  // The same for the record at order key `okey` (a lease's, a cursor's): through the
  // sequential cursor, as a walk of the head loads records in increasing order.
  Status LoadAt(lmdb::Txn& txn, const QueueInfo& q, std::string_view okey, FoundMessage& f) const;
  bool Exists(lmdb::Txn& txn, uint32_t qid, uint64_t lookup) const;
  // The size of a record; nullopt if there is none.
  std::optional<uint64_t> RecordSize(lmdb::Txn& txn, uint32_t qid, uint64_t lookup) const;
  // Up to `max` messages of `q` in arrival (lookup id) order from `from_lookup` on.
  Status Batch(lmdb::Txn& txn, const QueueInfo& q, uint64_t from_lookup, size_t max,
               std::vector<FoundMessage>& out) const;
  // The arrival time of the oldest message of `qid`; nullopt for an empty queue.
  Result<std::optional<int64_t>> OldestArrival(lmdb::Txn& txn, uint32_t qid) const;
  // Writes the record of a stored message again, where it is (its properties changed, not
  // its band); the queue's byte counter follows.
  Status Rewrite(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t old_size,
                 uint64_t* new_size = nullptr);
  // Moves the record at `old_okey` to m's order key (its band changed: a retention), written
  // anew from `m`; the byte counter follows.
  Status Rekey(lmdb::Txn& txn, QueueInfo& q, std::string_view old_okey, const Message& m,
               uint64_t old_size, uint64_t* new_size = nullptr);

  // ---- one message in, one out
  // Stores the record (ready at its order key, or in kDelayedBand with its `delays` entry when
  // `delayed`) and its id, correlation and deadline entries; counters count, bytes, delayed.
  // `rec` is m's encoded record. E_ILLEGAL_PROPERTY_VALUE (nothing written) when its id is
  // already in the store. With `seq`, through the sequential cursor (a batch of sends).
  Status Insert(lmdb::Txn& txn, QueueInfo& q, const Message& m, std::string_view rec,
                bool delayed);
  // Where the caller knows the message is: anywhere (ready, Locked or delayed), Locked, or
  // Locked with its `locked` entry already cleared.
  enum class Held { kAnywhere, kLocked, kLockedCleared };
  // Removes the record and every index entry; counters count, bytes, delayed, locked.
  // Returns whether it was Locked.
  Result<bool> Remove(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t size,
                      Held held);

  // ---- state: ready, Locked (under a `locked` range), delayed (kDelayedBand)
  // Whether a record is at `okey` and ready (under no range); Locked (under one).
  bool IsReady(lmdb::Txn& txn, std::string_view okey) const;
  bool IsLocked(lmdb::Txn& txn, std::string_view okey) const;
  // Ready, or Locked when `include_locked`.
  bool Visible(lmdb::Txn& txn, const QueueInfo& q, const Message& m, bool include_locked) const;
  // Ready -> Locked by `lease_id` (the record stays); counter locked.
  Status Lock(lmdb::Txn& txn, QueueInfo& q, const std::string& okey, uint64_t lease_id) {
    return LockRange(txn, q, okey, okey, 1, lease_id);
  }
  // The same for the `n` ready records from `first` to `last`, which follow each other in
  // one band (nothing between them: FoundMessage::follows): one range.
  Status LockRange(lmdb::Txn& txn, QueueInfo& q, std::string_view first, std::string_view last,
                   uint64_t n, uint64_t lease_id);
  // Ends the Locked state of the messages at `keys` that `lease_id` holds, which are all the
  // messages the lease still holds: its ranges go, one delete each. Returns which keys it
  // held. With `count`, the counter locked falls by their number (a rollback); a removal
  // counts them itself (Held::kLockedCleared).
  Result<std::vector<char>> Release(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id,
                                    const std::vector<std::string>& keys, bool count);
  // The lease that holds a Locked message: that of the range over it.
  std::optional<uint64_t> Holder(lmdb::Txn& txn, std::string_view okey) const;
  // Locked -> ready, where it was (or removed next by the caller): its range splits around
  // it; counter locked. False if it was not Locked.
  Result<bool> Unlock(lmdb::Txn& txn, QueueInfo& q, std::string_view okey);
  // A ready message (its record at its order key) waits until `m.visible_time`: its record
  // moves to kDelayedBand, its `delays` entry is put; counter delayed.
  Status Delay(lmdb::Txn& txn, QueueInfo& q, const Message& m);
  // A received message kept by RETENTION ON no longer expires.
  Status DropDeadline(lmdb::Txn& txn, const QueueInfo& q, const Message& m);

  // ---- times
  // The earliest visible time among `qid`'s delayed messages, expiry among its messages; 0
  // if none.
  int64_t FirstDelay(lmdb::Txn& txn, uint32_t qid) const;
  int64_t FirstExpiry(lmdb::Txn& txn, uint32_t qid) const;
  // Up to `max` lookup ids of `qid`'s delayed messages due by `now`, earliest first.
  std::vector<uint64_t> DueDelays(lmdb::Txn& txn, uint32_t qid, int64_t now, size_t max) const;
  // Up to `max` deadline entries of `qid` past by `now`, after `resume` (a key returned
  // before; empty: from the start).
  struct Due {
    std::string key;
    uint64_t lookup;
  };
  std::vector<Due> DueExpiries(lmdb::Txn& txn, uint32_t qid, int64_t now,
                               const std::string& resume, size_t max) const;
  // The queues with a delayed message or a deadline due by `now`: one seek per queue.
  void QueuesDue(lmdb::Txn& txn, int64_t now, std::set<uint32_t>& out) const;

  // ---- ids
  // Where the message with by_id key `id_key` is (the first key at or after it that starts
  // with it when `prefix`: a message or, after it, its journal copies), native ids included.
  std::optional<std::pair<uint32_t, uint64_t>> FindId(lmdb::Txn& txn, std::string_view id_key,
                                                      bool prefix = false) const;
  bool HasId(lmdb::Txn& txn, std::string_view id_key) const;

  // ---- walks for peek and receive
  // Up to `max_count` messages (and about kBatchBytes) chosen by `sel`, resuming after
  // `resume` if it is not empty. The head order merges the bands of `messages`, past the
  // ranges of `locked` unless include_locked: see Collect in message_table.cpp.
  Status Collect(lmdb::Txn& txn, const QueueInfo& q, const Selection& sel,
                 const std::string& resume, size_t max_count,
                 std::vector<FoundMessage>& out) const;
  // The order key of the first plain (non-conversation, not retained) ready message of
  // `qid` (Locked ones passed); nullopt if none.
  std::optional<std::string> FirstPlainReady(lmdb::Txn& txn, uint32_t qid) const;
  // Calls `fn` for each message of `q` with a lookup id above `after`, in arrival order, with
  // whether it is ready and whether it is Locked, until `fn` returns false.
  Status ForEachArrival(lmdb::Txn& txn, const QueueInfo& q, uint64_t after,
                        const std::function<Result<bool>(Message& m, bool ready,
                                                         bool locked)>& fn) const;

  // ---- check (mq-admin check)
  // Each `locked` range: its first order key and the lease that holds it (0 if the value is
  // not one).
  void ForEachLocked(lmdb::Txn& txn,
                     const std::function<void(std::string_view okey, uint64_t lease)>& fn) const;
  // Every message of the store, in key order (records with a bad key or that do not decode
  // are skipped: Check reports them).
  void ForEachRecord(lmdb::Txn& txn,
                     const std::function<void(uint32_t qid, const Message& m)>& fn) const;
  // Every record against its indexes and the queue's counters, every index entry against its
  // record; `id_sources` maps each queue's id GUID to the queue (an id beyond its counter
  // is reported).
  void Check(lmdb::Txn& txn, const std::map<uint32_t, QueueInfo>& by_qid,
             const std::map<std::string, const QueueInfo*>& id_sources,
             const std::function<void(std::string)>& problem) const;

 private:
  // Where the message with the native id `id` is, if it is there.
  std::optional<std::pair<uint32_t, uint64_t>> NativeWhere(lmdb::Txn& txn,
                                                           std::string_view id) const;
  // The range of `locked` over `okey`: its lease and last key; nullopt if none.
  struct Range {
    std::string first, last;
    uint64_t lease = 0;
  };
  std::optional<Range> Covering(lmdb::Txn& txn, std::string_view okey) const;
  // Takes `okey` out of `r`, a range over it: the records of `r` before and after it keep
  // ranges of their own.
  Status Split(lmdb::Txn& txn, const Range& r, std::string_view okey);
  Result<bool> Undelay(lmdb::Txn& txn, QueueInfo& q, const Message& m);
  // A merged walk of `qid`'s bands by lookup id (arrival order), from `from` on.
  Status Arrivals(
      lmdb::Txn& txn, uint32_t qid, uint64_t from,
      const std::function<Result<bool>(std::string_view okey, std::string_view rec)>& fn) const;
  std::string id_prefix_;
  bool lean_ = false;
  Guid store_guid_{};
  lmdb::Dbi messages_ = 0, locked_ = 0, delays_ = 0, by_id_ = 0, by_corr_ = 0, deadlines_ = 0;
  lmdb::Dbi order_ = 0;  // formats 1-3 only (open to be upgraded)
};

}  // namespace mq
