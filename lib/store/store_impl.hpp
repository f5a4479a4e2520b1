// store_impl.hpp: Store::Impl, the state every part of the store shares (the environment,
// the database handles, the id source, the doorbells to ring), and the operations on it,
// declared here and defined in one store_*.cpp per concept. Internal to libmq.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/conversation.hpp"
#include "store/filelock.hpp"
#include "store/lmdb.hpp"
#include "store/message_table.hpp"
#include "base/paths.hpp"
#include "store/schema.hpp"
#include "store/store.hpp"
#include "store/waiter.hpp"

namespace mq {

// Directories of a store (open.cpp).
Status MakeDir(const std::string& dir, mode_t mode);
Status MakeParents(const std::string& dir);
bool DirIsEmpty(const std::string& dir);

// A descriptor closed when its holder goes (the store lock).
struct OwnedFd {
  int fd = -1;
  OwnedFd() = default;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
};

struct Store::Impl {
  std::string dir;
  std::pair<dev_t, ino_t> dir_key{};  // the directory's identity: one env per process
  StorePaths paths{""};
  OwnedFd store_lock;  // before env: released only after the environment is closed
  bool alone = false;      // opened with exclusive_wait_ms: Compact may run
  std::string read_only;   // why it was opened read-only (Store::read_only); empty: writable
  Status CanWait() const;  // MQ_ERROR_ACCESS_DENIED in a store opened read-only
  bool compacted = false;  // data.mdb was replaced: the environment is stale
  lmdb::Env env;
  Guid guid{};
  uint32_t format = 0;    // the store's format version (meta "format")
  std::string id_prefix;  // format 2: the 12 bytes that begin its native ids (message_table.hpp)
  unsigned file_mode = 0600;
  uid_t owner_uid = 0;  // the store directory's owner
  std::set<uint32_t> to_notify;  // doorbells to ring after the current write commits
  bool express = false;          // SetExpress: every commit skips the meta sync
  // The message table owns messages, order, locked, delays, by_id, by_corr and deadlines
  // (message_table.hpp); the databases below are the other modules' (schema.hpp lists all).
  MessageTable msgs;
  lmdb::Dbi meta = 0, queues = 0, queue_ids = 0, cursors = 0, leases = 0, dedup = 0,
            dedup_exp = 0;
  lmdb::Dbi convs = 0, conv_q = 0, groups = 0, conv_msgs = 0, group_sel = 0, conv_kept = 0,
            msg_types = 0;
  // Every database but the message table's, by name: opened by OpenDbs, walked by Check.
  struct NamedDb {
    const char* name;
    lmdb::Dbi Impl::*dbi;
  };
  static const NamedDb kNamedDbs[14];
  // Calls `fn` for every database of the store, the message table's included.
  void ForEachDb(const std::function<void(const char* name, lmdb::Dbi dbi)>& fn) const;

  using Found = FoundMessage;

  struct LeaseEntry {
    uint64_t id;
    LeaseRecord rec;
  };

  std::map<uint32_t, Waiter> armed;  // the watches of WaitLoop, by queue id

  struct CursorState {
    bool positioned = false;
    std::string key;  // order key of the position
  };

  // Where a receive from the head goes: the group to take, or plain messages, or nothing.
  struct GroupPick {
    enum Kind { kNone, kPlain, kGroup } kind = kNone;
    Guid group{};
    std::string prefix;  // of conv_msgs: the group's, or one conversation's
  };

  static bool Expired(const QueueInfo& q, const Message& m, int64_t now) {
    return ExpiredAt(q, m, now);
  }
  static bool IsConvMessage(const QueueInfo& q, const Message& m) {
    return IsConvMessageOf(q, m);
  }
  static std::string OrderKeyFor(const QueueInfo& q, const Message& m) {
    return OrderKeyOf(q, m);
  }

  static std::string KeptKey(const Guid& handle, uint64_t seq) {
    std::string k(GuidBytes(handle));
    PutU64BE(k, seq);
    return k;
  }

  static bool GroupCandidate(const Selection& sel) {
    return sel.anchor == Anchor::kHead && !sel.include_locked && !sel.plain_only;
  }

  // ---- open.cpp
  // A new message id from `q`'s id source (QueueInfo::id_guid): the caller saves `q`.
  std::string NewMessageId(QueueInfo& q) const;
  // The same into `id`, reusing its buffer.
  void NewMessageIdInto(QueueInfo& q, std::string& id) const;
  // Reads the format and id prefix from meta (open, and after an upgrade); a format newer
  // than this mq's is refused.
  Status LoadFormat(lmdb::Txn& txn);
  ~Impl();
  Status WriteLight(const std::function<Status(lmdb::Txn&)>& fn, bool rerun_after_commit);
  Status Write(const std::function<Status(lmdb::Txn&)>& fn, bool rerun_after_commit = true);
  std::string ResourceShortage();
  uint64_t MaxMapSize();
  Status ApplyMaxMapSize();
  Status Grow();
  void Notify(uint32_t qid);
  Status OpenDbs(lmdb::Txn& txn, bool create);
  // `meta` (schema.hpp lists its keys), read and written through these alone.
  std::optional<std::string_view> GetMeta(lmdb::Txn& txn, std::string_view key);
  Status PutMeta(lmdb::Txn& txn, std::string_view key, std::string_view value);
  Result<bool> DelMeta(lmdb::Txn& txn, std::string_view key);
  // Calls `fn` with each meta key that starts with `prefix` and its value, in key order,
  // until it returns false.
  void ScanMeta(lmdb::Txn& txn, std::string_view prefix,
                const std::function<bool(std::string_view key, std::string_view value)>& fn);

  // ---- queues.cpp
  Result<std::optional<QueueInfo>> LoadQueue(lmdb::Txn& txn, const std::string& name);
  Result<QueueInfo> FindQueue(lmdb::Txn& txn, const QueueRef& ref);
  Status PutQueue(lmdb::Txn& txn, const QueueInfo& q);
  // Every queue of the store, by name.
  Result<std::vector<QueueInfo>> AllQueues(lmdb::Txn& txn);
  Result<uint32_t> MetaU32(lmdb::Txn& txn, std::string_view key, uint32_t dflt);
  Status PutMetaU32(lmdb::Txn& txn, std::string_view key, uint32_t v);
  Result<QueueInfo> NewQueue(lmdb::Txn& txn, const std::string& name);
  Result<QueueInfo> LoadOrCreate(lmdb::Txn& txn, const std::string& name);
  bool QueueExists(lmdb::Txn& txn, const std::string& name);
  // The name of the queue with id `qid`; nullopt if there is none.
  std::optional<std::string> QueueNameOf(lmdb::Txn& txn, uint32_t qid);
  // Takes a queue out of the catalog (its messages, cursors, conversations are gone already).
  Status DropQueueRecord(lmdb::Txn& txn, const QueueInfo& q);
  // The catalog's part of mq-admin check: every queue record, its id mapped back to it.
  void CheckCatalog(lmdb::Txn& t, std::map<uint32_t, QueueInfo>& by_qid,
                    const std::function<void(std::string)>& problem);

  // The leases' part of mq-admin check (leases.cpp): every Locked message is held by a lease
  // whose record exists.
  void CheckLeases(lmdb::Txn& t, const std::function<void(std::string)>& problem);

  // ---- messages.cpp
  using Held = MessageTable::Held;
  Status RemoveMessage(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t size,
                       Held held = Held::kAnywhere);
  Status LoadMessage(lmdb::Txn& txn, const QueueInfo& q, uint64_t lookup, Found& f) {
    return msgs.Load(txn, q, lookup, f);
  }
  // One destination of Store::Append in its transaction: the messages of `source` (rewound)
  // into `dest` (its remote queue, not options.remote_queue); `several` when other
  // destinations take copies too. A body of a type whose validation became well-formed XML
  // after `prechecked` was made sets *recheck, and the transaction fails: Append checks again.
  Status AppendTo(lmdb::Txn& txn, const Destination& dest, const AppendOptions& options,
                  MessageSource& source, std::vector<std::string>* ids, AppendReport* report,
                  const std::map<std::string, char>& prechecked, bool several, bool* recheck);
  Status InsertMessage(lmdb::Txn& txn, QueueInfo& q, Message& m, uint64_t quota,
                       uint64_t lookup = 0, bool promoted = false);
  // `change`, if given, changes the message once it is out of `q` (a deadline changed before
  // would leave `q`'s index entry behind).
  Status MoveMessage(lmdb::Txn& txn, QueueInfo& q, Found& f, const std::string& to_name,
                     bool keep_lookup, int64_t now, bool awaiting_arrival = false,
                     const std::function<void(Message&)>& change = nullptr);
  Status Rewrite(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t old_size,
                 uint64_t* new_size = nullptr) {
    return msgs.Rewrite(txn, q, m, old_size, new_size);
  }

  // ---- lifecycle.cpp
  Status EmitAck(lmdb::Txn& txn, QueueInfo& cur, const Message& orig, uint16_t cls, int64_t now);
  // transfer_streams.cpp (owns the link records): the link back to a message's source, and
  // the link to a given far store.
  Result<std::optional<std::string>> LinkBackTo(lmdb::Txn& txn, const Message& m);
  std::string LinkWithPeer(lmdb::Txn& txn, const std::string& peer);
  Status JournalCopy(lmdb::Txn& txn, const std::string& jname, const Message& m, bool own_quota,
                     uint64_t quota, bool* dropped);
  Status Arrived(lmdb::Txn& txn, QueueInfo& q, const Message& m, int64_t now);
  Status Received(lmdb::Txn& txn, QueueInfo& q, const Message& m, int64_t now);
  Status DeadLetterOrDrop(lmdb::Txn& txn, QueueInfo& q, Found& f, uint16_t cls, int64_t now);
  int64_t FirstExpiry(lmdb::Txn& txn, uint32_t qid);
  Result<uint64_t> ExpireDue(lmdb::Txn& txn, QueueInfo& q, int64_t now);
  Status DrainQueue(lmdb::Txn& txn, QueueInfo& q, uint16_t reached, uint16_t awaiting,
                    int64_t now);
  Status RemoveAll(lmdb::Txn& txn, QueueInfo& q);
  int64_t FirstDelay(lmdb::Txn& txn, uint32_t qid);
  Result<uint64_t> PromoteDue(lmdb::Txn& txn, QueueInfo& q, int64_t now);
  // ---- send.cpp (owns `dedup` and `dedup_exp`)
  Status DropDedup(lmdb::Txn& txn, uint32_t qid, const std::string& exp_key);
  // Forgets the dedup keys of `qid` expired by `now`: how many.
  Result<uint64_t> ForgetExpiredDedup(lmdb::Txn& txn, uint32_t qid, int64_t now);
  // The queues with a dedup key expired by `now`.
  void QueuesWithDueDedup(lmdb::Txn& txn, int64_t now, std::set<uint32_t>& out);
  Result<uint64_t> Maintain(lmdb::Txn& txn, QueueInfo& q, int64_t now);
  int64_t NextDeadline(lmdb::Txn& txn, uint32_t qid);
  Status MaintainIfNeeded(const QueueRef& ref);

  // ---- leases.cpp (owns `leases`)
  Status PutLease(lmdb::Txn& txn, uint32_t qid, uint64_t lease_id, const LeaseRecord& rec);
  // Whether the lease is there (and, with `rec`, decodes it: false if it does not decode).
  bool LoadLease(lmdb::Txn& txn, uint32_t qid, uint64_t lease_id, LeaseRecord* rec);
  Status DropLease(lmdb::Txn& txn, uint32_t qid, uint64_t lease_id);
  // The queues that have a lease.
  void QueuesWithLeases(lmdb::Txn& txn, std::set<uint32_t>& out);
  std::string LeaseLockPath(uint32_t qid, uint64_t lease_id);
  // With `ends` false the lease record stays (FinishEach: the rest of it rolls back next).
  Status CommitLease(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id, const LeaseRecord& rec,
                     const Lease* held = nullptr, bool ends = true);
  Status CloseLease(Lease& lease, Status s);
  // `failure` is recorded in each message (count_abort); none: "rolled back".
  Status RollbackLease(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id, const LeaseRecord& rec,
                       RetryDelay delay, int64_t now, FinishReport* report, bool count_abort = true,
                       const Failure* failure = nullptr);
  // A --lease token's live lease, in a write transaction, for FinishToken and TouchToken.
  Status WithToken(
      const std::string& token, FinishReport* report,
      const std::function<Status(lmdb::Txn&, QueueInfo&, uint64_t, LeaseRecord&, int64_t)>& fn);
  // The leases of a queue, without the keys of the messages they hold.
  Result<std::vector<LeaseEntry>> LeasesOf(lmdb::Txn& txn, uint32_t qid);
  bool LeaseIsOver(uint32_t qid, const LeaseEntry& e, int64_t now);
  Result<uint64_t> RecoverLeases(lmdb::Txn& txn, QueueInfo& q, int64_t now);
  Result<QueueInfo> ReceivableQueue(lmdb::Txn& txn, const QueueRef& ref, int64_t now,
                                    uint64_t* maintained);
  // What a receive from a queue whose receiving is paused finds: no message, and why.
  static Status ReceivePaused(const std::string& queue);
  // MQ_ERROR_MESSAGE_NOT_FOUND for a receive that finds messages but no token of `q`'s rate
  // limit, saying when the next one comes.
  static Status RateLimited(const QueueInfo& q, int64_t now_ns);
  Result<uint64_t> BeginLease(QueueInfo& q, const LockOptions& lo, int64_t now, Lease& lease,
                              LeaseRecord& rec);
  Status MarkLocked(lmdb::Txn& txn, QueueInfo& q, Found& f, uint64_t lease_id, bool count_delivery,
                    LeaseRecord& rec, bool lock = true);
  Result<std::unique_ptr<Lease>> LockPlainOnce(const QueueRef& ref, const Selection& sel,
                                               const LockOptions& lo, bool count_delivery,
                                               std::string& resume, int64_t& deadline);
  Result<std::unique_ptr<Lease>> LockAny(const QueueRef& ref, const Selection& sel,
                                         const LockOptions& lo, bool count_delivery,
                                         std::string& resume, int64_t& deadline, bool* group);
  static Status Deliver(Lease& lease, MessageSink& sink, bool wait_taken);
  // How a lease ends: commit (its messages are received), rollback (they return, abort
  // count + 1, after `delay`, see RetryDelay; poison actions go to `report`),
  // or release (they return untouched, as if never received). `light`: the transaction
  // skips the meta sync (the steps of a plain receive).
  struct LeaseEnd {
    enum class Outcome { kCommit, kRollback, kRelease };
    Outcome outcome = Outcome::kRelease;
    RetryDelay delay;
    FinishReport* report = nullptr;
    bool light = false;
    const Failure* failure = nullptr;
    // kRollback: the messages whose entry is true are committed instead (FinishEach).
    const std::vector<bool>* commit_some = nullptr;
    static LeaseEnd Commit(bool light) { return {Outcome::kCommit, {}, nullptr, light}; }
    static LeaseEnd Rollback(RetryDelay delay, FinishReport* report, const Failure* failure) {
      return {Outcome::kRollback, delay, report, false, failure};
    }
    static LeaseEnd Release(bool light) { return {Outcome::kRelease, {}, nullptr, light}; }
  };
  Status EndLease(Lease& lease, const LeaseEnd& how);

  // ---- wait.cpp
  std::string WaitMarkPath(uint32_t qid, long pid);
  uint64_t WaitingReaders(uint32_t qid);
  Result<uint32_t> QueueIdForWait(const QueueRef& ref, bool need_enabled);
  Status WaitLoop(const QueueRef& ref, const ReadOptions& ro,
                  const std::function<Status(bool waiting, int64_t& next_deadline)>& attempt);

  // ---- cursors.cpp (owns `cursors`)
  Status DropCursors(lmdb::Txn& txn, uint32_t qid);
  std::string CursorLockPath(uint32_t qid, const std::string& name);
  Result<FileLock> LockCursor(const QueueRef& ref, uint32_t qid, const std::string& name,
                              bool wait_lock, int64_t wait_ms);
  CursorState LoadCursor(lmdb::Txn& txn, uint32_t qid, const std::string& name);
  Status SaveCursor(lmdb::Txn& txn, uint32_t qid, const std::string& name, const std::string& key);
  Result<std::optional<Found>> NextVisible(lmdb::Txn& txn, const QueueInfo& q,
                                           const std::string& after);
  Result<Found> MoveCursor(lmdb::Txn& txn, const QueueInfo& q, const std::string& name,
                           CursorAction action, bool notify,
                           std::optional<uint64_t>* arrivals = nullptr);
  Status PositionAtStart(const QueueRef& ref, const std::string& name);

  // ---- conversations.cpp (owns convs, conv_q, groups, conv_msgs, group_sel, conv_kept,
  // msg_types)
  Status SaveConv(lmdb::Txn& txn, const Guid& handle, const ConvRecord& c);
  Result<std::optional<ConvRecord>> LoadConv(lmdb::Txn& txn, const Guid& handle);
  Result<ConvRecord> ConvOf(lmdb::Txn& txn, const QueueInfo& q, const Message& m);
  Result<GroupRecord> LoadGroup(lmdb::Txn& txn, uint32_t qid, const Guid& group);
  std::string ConvMsgKeyOf(const QueueInfo& q, const ConvRecord& c, const Message& m);
  Status TouchGroup(lmdb::Txn& txn, const QueueInfo& q, const Guid& group,
                    const std::function<void(GroupRecord&)>& fn);
  Status ConvOnAdd(lmdb::Txn& txn, QueueInfo& q, const Message& m);
  Status ConvOnRemove(lmdb::Txn& txn, QueueInfo& q, const Message& m, bool was_locked);
  Status ConvOnRestore(lmdb::Txn& txn, QueueInfo& q, const Message& m);
  Status Retain(lmdb::Txn& txn, QueueInfo& q, Found& f, bool from_locked);
  Status ConsumeAvailable(lmdb::Txn& txn, QueueInfo& q, Found& f);
  Status ConvPrepare(lmdb::Txn& txn, QueueInfo& q, Message& m, bool may_create,
                     bool keep_identity, std::set<Guid>& created, int64_t now);
  Status MoveConversation(lmdb::Txn& txn, QueueInfo& q, const Guid& handle, ConvRecord& c,
                          const Guid& to);
  Result<GroupPick> PickGroup(lmdb::Txn& txn, const QueueInfo& q, const Selection& sel);
  Status CollectGroup(lmdb::Txn& txn, const QueueInfo& q, const std::string& prefix,
                      uint64_t limit, std::vector<Found>& out);
  bool MayHaveGroups(const QueueRef& ref, const Selection& sel);
  Result<std::unique_ptr<Lease>> LockGroupOnce(const QueueRef& ref, const Selection& sel,
                                               const LockOptions& lo, bool count_delivery,
                                               int64_t& deadline, bool* try_plain);
  Result<char> TypeValidation(lmdb::Txn& txn, const std::string& name);
  // For checking bodies before a write transaction (Append, AcceptTransfer): the validation
  // of message type `name`, read once into `seen` in a read transaction of its own, ended
  // before any body is parsed; 0 if it cannot be read (the write transaction says why).
  char PrecheckValidation(std::map<std::string, char>& seen, const std::string& name);
  Status DropConversations(lmdb::Txn& txn, uint32_t qid);

  // ---- transfer_streams.cpp
  // The outgoing queue out;LINK of the link `link`, made if it is not there (a link's queue
  // is made with it, and again if it was deleted); null if there is no such link.
  Result<std::optional<QueueInfo>> LoadOutgoing(lmdb::Txn& txn, const std::string& link);
  // The link whose --url is `url` (MsmqBaseUrl's form), other than `except`; empty if none.
  std::string LinkOfUrl(lmdb::Txn& txn, std::string_view url, std::string_view except = {});
  // No other link has `url` (one link per machine reached over HTTP).
  Status CheckUrlFree(lmdb::Txn& txn, const std::string& url, const std::string& name);
  // The sending end of a conversation through a link (mq-send LINK:QUEUE --conversation):
  // begins it (`may_create`) or finds it, and gives `m` its sequence number. E_INVALIDARG-class
  // and conversation errors as ConvPrepare's.
  Status RemoteConvPrepare(lmdb::Txn& txn, const std::string& link, const std::string& queue,
                           Message& m, bool may_create, std::set<Guid>& created);
  // The receiving end, for a message that came over a link into `q`: its message type's
  // validation, and its conversation (begun by sequence number 0, or open here). 0, with the
  // message ready to insert, or the NACK class that refuses it.
  Result<std::optional<std::pair<std::string, std::string>>> FindRemoteConv(lmdb::Txn& txn,
                                                                           const Guid& handle);
  // `checked`: the validation its body was checked against before the transaction (0: none)
  // and whether it passed; checked again only if its type's validation is another now.
  Result<uint16_t> AcceptConvMessage(lmdb::Txn& txn, QueueInfo& q, Message& m,
                                     std::set<Guid>& created, int64_t now,
                                     std::pair<char, bool> checked);

  // ---- maintenance.cpp
  void CheckConversations(lmdb::Txn& t, const std::map<uint32_t, QueueInfo>& by_qid,
                          const std::function<void(std::string)>& problem);
};

}  // namespace mq
