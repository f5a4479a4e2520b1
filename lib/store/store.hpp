// store.hpp: the public surface of libmq: a store of queues and messages in one LMDB
// environment, opened directly by every tool (no daemon).
//
// The named databases and their keys are in schema.hpp.
//
// Journal copies (QUEUE;journal, system;journal) keep the id of the message they copy; their
// by_id key is that id followed by the journal's queue id. Journals and the dead-letter
// queues are not "live": their messages do not expire, acknowledge or dead-letter again;
// neither does a retained conversation message (received, status 0).
//
// The message lifecycle (seed 002, DESIGN.md "Delivery semantics"), each step in the same
// write transaction as the operation that causes it:
//   - arrival (a send, or a delayed message becoming visible): ACK_REACH_QUEUE to the admin
//     queue if asked for; a copy in system;journal if the message asked for source journaling;
//   - receive (committed): ACK_RECEIVE if asked for; a copy in QUEUE;journal if the queue
//     keeps a journal (up to its journal quota; then copies are counted as dropped);
//   - failure (expiry, purge, queue deletion, rejection as poison): the NACK of that class if
//     asked for; the message moves to system;deadletter (system;deadxact if transactional)
//     with the class as its reason if it asked for dead-lettering, else it is discarded.
//   (the databases, conv_kept and the conversations' among them: schema.hpp)
//
// Locks (DESIGN.md "Locks"): a transactional receive takes an exclusive flock on
// locks/lease.QUEUE-ID.LEASE-ID before the transaction that marks its messages Locked commits,
// and keeps it until the transaction that ends the lease commits. Every writer that looks at a
// queue first probes the locks of the queue's process leases: a lock it can take means the
// owner died, and the messages return to the queue (delivery count kept, abort count + 1) in
// that writer's transaction. Expiring leases return at their expiry the same way. Nothing
// depends on time for a process lease, and nothing stays Locked after a SIGKILL.
// Every index is changed in the same write transaction as the message it describes;
// `mq-admin check` verifies that they agree.
//
// Conversation groups (seed 001): a receive from the head takes either plain messages (MSMQ
// semantics) or the messages of one conversation group, whichever comes first in delivery
// order (priority, then arrival). A group is locked while any of its messages is Locked by a
// lease: the lease's lock file is the group's lock, so a group goes back to the other
// receivers when its transaction ends or its holder dies, exactly as its messages do. Locked
// groups have no group_sel entry, so the best free group is one seek. A plain receive of a
// group does all of it in one write transaction (writers are serialized by LMDB).
//
// Durability: a send commits with LMDB's default sync (like write() then fdatasync() of data
// and meta pages) unless the process chose express delivery, which skips the meta sync: the
// commit survives a crash of the process but perhaps not a power loss, which may undo the
// last commits but never damages the store. Locking messages for a transactional receive
// commits the same way (a lost lock only means a redelivery); ending it is fully synced.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/ids.hpp"
#include "base/message.hpp"
#include "base/names.hpp"
#include "base/status.hpp"
#include "base/units.hpp"
#include "store/queue.hpp"

namespace mq {

// The store format this mq writes. 1: every message id has a by_id entry. 2: native ids
// (message_table.hpp). 3: lean records, which leave out what the store can say
// (message_table.hpp); records written before stay as they are. 4 (mq-admin upgrade, or a
// store made by this mq): one tree, each record keyed by its place in the delivery order
// (schema.hpp). This mq opens a store of an older format only to upgrade it
// (OpenOptions::older_format_ok), and refuses a newer one.
inline constexpr uint32_t kFormatVersion = 4;

struct OpenOptions {
  std::string dir;      // empty: the default location (CLI.md), created on first use
  bool create = false;  // create a missing store named by `dir`
  std::string group;    // with create: make a group-shared store (setgid 2770, files 0660)
  // With create: the account the new store belongs to (root only; default: the caller). An
  // existing empty directory of another account is refused unless it names that account.
  std::string owner;
  // >= 0: open the store alone (mq-admin compact), waiting at most this long for its other
  // users to leave; still in use then: MQ_ERROR_SHARING_VIOLATION. Users that start meanwhile
  // wait until this Store is gone (the store lock, paths.hpp).
  int64_t exclusive_wait_ms = -1;
  // The caller only reads (mq-peek, mq-admin stat, export, check): a store it cannot write
  // (a read-only mount, a directory without write permission) is opened read-only instead
  // of refused, and Store::read_only() says why. Any write then fails with
  // MQ_ERROR_ACCESS_DENIED.
  bool read_only_ok = false;
  // Open a store of a format older than this mq's (kFormatVersion), which is otherwise
  // refused: only to upgrade or compact it.
  bool older_format_ok = false;
};

// Incoming link streams (Store::AcceptedStreams).
struct StreamStats {
  uint64_t streams = 0;        // senders' streams ever accepted from
  uint64_t refusals = 0;       // refusals kept for their replays
  uint64_t refusal_bytes = 0;  // what those records take (keys and values)
};
inline constexpr int64_t kForgetStreamRefusalsMs = 30LL * 86'400'000;  // 30 days

// What Store::Compact did.
struct CompactReport {
  uint64_t before = 0;  // bytes of data.mdb
  uint64_t after = 0;
};

// Which messages a peek or receive takes, in the delivery order (priority, then arrival).
enum class Anchor {
  kHead,         // from the head of the queue
  kLast,         // from the tail, backwards
  kAt,           // from lookup id N (inclusive), forwards
  kAfter,        // after lookup id N, forwards
  kBefore,       // before lookup id N, backwards
  kId,           // the message with this id
  kCorrelation,  // messages with this correlation id, in delivery order
  kArrival,      // every message, visible, delayed or Locked, in arrival (lookup id) order:
                 // for export, peek only
};

struct Selection {
  Anchor anchor = Anchor::kHead;
  uint64_t lookup_id = 0;
  std::string id;           // 20 bytes, for kId
  std::string correlation;  // 20 bytes, for kCorrelation
  uint64_t limit = 1;       // 0: all
  bool include_locked = false;  // also Locked messages (AllowPeekWhenLocked), peeks only
  // Service Broker RECEIVE (kHead only): WHERE conversation_handle / conversation_group_id
  // (nil: none), and how many messages of the chosen group (0: all of them).
  Guid conversation{};
  Guid group{};
  uint64_t group_limit = 0;
  bool plain_only = false;  // skip conversation messages (plain MSMQ receives)
  // With plain_only: a selection aimed at a message (--id, --lookup-id, --last) that finds a
  // conversation message first fails (MQ_CONVERSATION_MESSAGE) instead of passing over it.
  bool refuse_conversation = false;
};

struct QueueSettings {
  std::optional<std::string> label;
  std::optional<uint64_t> quota;
  std::optional<uint64_t> max_message_size;
  std::optional<bool> enabled;
  std::optional<bool> receive;        // false: receiving paused (sends go on)
  std::optional<bool> transactional;  // create only
  std::optional<uint32_t> max_retries;
  std::optional<PoisonAction> poison;
  std::optional<int64_t> dedup_window;
  std::optional<int64_t> retry_delay;      // ms; 0: none
  std::optional<double> retry_backoff;     // >= 1
  std::optional<int64_t> retry_delay_max;  // ms; 0: no cap
  std::optional<double> retry_jitter;      // 0..1
  std::optional<bool> journal;             // target journaling into NAME;journal
  std::optional<uint64_t> journal_quota;   // bytes of NAME;journal; 0: no limit
  std::optional<bool> retention;
  // --rate COUNT/PERIOD (count 0: no limit) and --burst (tokens, >= 1; needs a rate).
  std::optional<Rate> rate;
  std::optional<uint64_t> rate_burst;
};

// How a read waits.
struct ReadOptions {
  int64_t wait_ms = 0;  // 0: look once; kInfinite (-1): wait forever; else milliseconds
  int stop_fd = -1;     // readable: stop waiting (signals through a self-pipe)
};

enum class CursorAction { kFirst, kCurrent, kNext };  // MQMSG_FIRST, MQMSG_CURRENT, MQMSG_NEXT

struct CursorOptions {
  std::string name;
  CursorAction action = CursorAction::kFirst;
  bool wait_lock = true;  // false: a cursor in use elsewhere is an error at once
  int64_t lock_wait_ms = -1;  // how long to wait for the cursor's lock: -1 as long as it takes
};

struct CursorInfo {
  std::string queue;
  std::string name;
  bool positioned = false;
  bool at_start = false;  // positioned in a queue that was empty: before its first message
  uint8_t priority = 0;
  uint64_t lookup_id = 0;
  bool holder = false;  // some process is using it now
};

struct WatchOptions {
  CursorAction action = CursorAction::kFirst;
  std::string cursor_name;  // empty: an anonymous cursor (FIRST only, or --follow)
  bool follow = false;
  bool wait_lock = true;
  int64_t lock_wait_ms = -1;  // as in CursorOptions
  bool include_locked = false;  // anonymous cursor: Locked messages too (AllowPeekWhenLocked)
};

struct QueueStat {
  QueueInfo info;
  int64_t oldest_arrived = 0;  // 0: empty
  int64_t next_due = 0;        // when the first delayed message becomes visible; 0: none
  uint64_t waiting = 0;        // readers waiting for a message (mq-receive/mq-peek --wait...)
};

struct AppendOptions {
  bool create_queue = false;   // make a missing queue
  bool keep_identity = false;  // import: keep id, times and origin as given
  // --tx: one transaction. Into a transactional queue, here or at the far side of a link
  // (remote_queue), its messages carry MSMQ's transactional properties (Eod First/Last, xact
  // id, sequence numbers) and priority 0, so that transactions are delivered in the order
  // they commit. Into a plain local queue it is an atomic batch only: none of those
  // properties, priorities kept.
  bool transactional = false;
  // -p was given: a priority that a transaction sets to 0 is worth a note (AppendReport).
  bool priority_given = false;
  std::string dedup_key;       // --dedup: a second append with this key within the queue's
                               // window is accepted and dropped
  // One dedup key per message, in the order the source gives them (bridge in: the AMQP
  // message_id of each delivery): a message whose key is live in the queue's window, or was
  // given earlier in the same append, is dropped alone (AppendReport::dropped); the others
  // are stored, each key recorded in the same transaction. An empty key: no dedup for that
  // message. Not combined with dedup_key.
  std::vector<std::string> dedup_keys;
  // How long this append's keys are remembered (ms), instead of the queue's --dedup-window
  // (bridge in: a broker redelivers an unacknowledged message whenever a consumer next
  // comes, which may be hours after a crash).
  std::optional<int64_t> dedup_window;
  // Messages with a conversation_handle: create the conversation (it must not exist) with
  // the first of them; without this an unknown handle is MQ_CONVERSATION_NOT_FOUND.
  bool new_conversation = false;
  // Sending to a queue of another store (mq-send LINK:QUEUE): `ref` is the link's outgoing
  // queue out;LINK (made with the link) and this is the queue's name at the far side, kept
  // as the message's destination_queue. The message waits there (its ttrq running: expiry
  // is NACK_REACH_QUEUE_TIMEOUT) until mq-admin forward moves it; it has reached no queue
  // yet, so ACK_REACH_QUEUE and source journaling wait for the far side's acknowledgement.
  std::string remote_queue;
};

// A conversation, as mq-admin conversations shows it.
struct ConversationInfo {
  Guid handle{};
  Guid group{};
  std::string queue;
  std::string state;  // open, ended, error
  uint8_t priority = 0;
  uint64_t messages = 0;
  uint64_t next_seq = 0;
  std::string service;
  std::string contract;
  int64_t created = 0;
  bool locked = false;      // its group is held by an open receive
  uint64_t holder_lease = 0;
  int64_t holder_pid = 0;  // 0: the holder is a --lease token, not a process
};

struct MessageTypeInfo {
  std::string name;
  char validation = 'N';
  bool builtin = false;
  int64_t created = 0;
};

// END CONVERSATION [WITH ERROR = code DESCRIPTION = text].
struct EndOptions {
  bool error = false;
  int64_t code = 0;
  std::string description;
};

// What an append did beyond storing: a dropped duplicate.
struct AppendReport {
  bool duplicate = false;
  std::string original_id;  // the message the duplicate key belongs to
  std::vector<std::string> notes;  // what the sender should know: e.g. a missing admin queue
  uint64_t dropped = 0;  // with AppendOptions::dedup_keys: messages dropped as duplicates
};

// A lease, as mq-admin locks shows it.
struct LeaseInfo {
  std::string queue;
  uint64_t lease_id = 0;
  bool process = true;  // held by a process (lock file); false: an expiring token
  int64_t pid = 0;
  int64_t since = 0;
  int64_t expires = 0;  // 0: none (a process lease)
  bool alive = true;    // the holder still holds its lock (or the lease has not expired)
  std::vector<uint64_t> lookup_ids;
};

// Notes of what a rollback did to poison messages, for the user.
// How long the messages of a rollback wait before they can be received again.
struct RetryDelay {
  RetryDelay(int64_t ms = 0, int64_t default_ms = 0)  // NOLINT: a plain delay converts
      : ms(ms), default_ms(default_ms) {}
  int64_t ms = 0;          // > 0: this long, whatever the queue sets
  int64_t default_ms = 0;  // when `ms` is 0 and the queue sets no --retry-delay
};

// Why a lease rolls back, kept with each of its messages (Message::last_failure...).
struct Failure {
  std::string what;         // "exited with status 3", "killed by signal 9 (Killed)", "nack"...
  int exit_status = -1;     // the command's exit status, if it exited
  int signal = 0;           // the signal that ended it, if one did
  std::string stderr_tail;  // the end of its standard error (kMaxFailureStderr bytes at most)
  static Failure Because(std::string what) {
    Failure f;
    f.what = std::move(what);
    return f;
  }
};
inline constexpr size_t kMaxFailureStderr = 2048;

struct FinishReport {
  std::vector<std::string> notes;
};

struct LockOptions {
  int64_t lease_ms = 0;  // 0: held by this process through a lock file; else a --lease token
  // A transactional receive counts a delivery (the record is rewritten); a mover (mq-admin
  // forward) is no reader and leaves the records as they are.
  bool count_delivery = true;
};

// A message read from the store, and where a walk stood when it found it.
struct FoundMessage {
  std::string walk_key;  // resume after it
  Message msg;
  uint64_t size = 0;  // of its record
  // A head walk's message that is the next record after the one before it in the walk, in
  // the same band (nothing between them): a lock makes them one range.
  bool follows = false;
};

// The messages of a lease, in their order: a read-only view of what the lease holds.
class LeaseMessages {
 public:
  explicit LeaseMessages(const std::vector<FoundMessage>& held) : held_(&held) {}
  size_t size() const { return held_->size(); }
  bool empty() const { return held_->empty(); }
  const Message& operator[](size_t i) const { return (*held_)[i].msg; }
  const Message& at(size_t i) const { return held_->at(i).msg; }
  const Message& front() const { return held_->front().msg; }
  const Message& back() const { return held_->back().msg; }
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Message;
    using difference_type = std::ptrdiff_t;
    using pointer = const Message*;
    using reference = const Message&;
    Iterator() = default;
    explicit Iterator(std::vector<FoundMessage>::const_iterator it) : it_(it) {}
    const Message& operator*() const { return it_->msg; }
    const Message* operator->() const { return &it_->msg; }
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator was = *this;
      ++it_;
      return was;
    }
    bool operator==(const Iterator&) const = default;

   private:
    std::vector<FoundMessage>::const_iterator it_;
  };
  Iterator begin() const { return Iterator(held_->begin()); }
  Iterator end() const { return Iterator(held_->end()); }

 private:
  const std::vector<FoundMessage>* held_;
};

// An open transactional receive: its messages are Locked in the store. A process lease holds
// the lock file for as long as this object lives; destroying it unfinished leaves the
// messages to be returned by the next reader, exactly as if the process had died.
class Lease {
 public:
  ~Lease();
  LeaseMessages messages() const { return LeaseMessages(held_); }
  const std::string& token() const { return token_; }
  int64_t expires() const { return expires_; }
  uint64_t id() const { return lease_id_; }
  // The descriptor of a process lease's lock file (-1 for a token lease): the lease lives
  // while any process holds it open (filelock.hpp), so a command given it keeps the lease.
  int lock_fd() const { return lock_fd_; }

 private:
  friend class Store;
  Lease() = default;
  std::string queue_;
  uint32_t qid_ = 0;
  uint64_t lease_id_ = 0;
  std::string token_;
  int64_t expires_ = 0;
  // Its messages with their record sizes as Locked (FoundMessage::size); walk_key unused.
  std::vector<FoundMessage> held_;
  std::string lock_path_;
  int lock_fd_ = -1;
  bool finished_ = false;
};

// A link to another store (mq-admin link; mq(7) "Transfer between machines").
struct LinkInfo {
  std::string name;
  std::string via;          // the command, run with /bin/sh -c
  std::string return_link;  // the far side's link back: qualifies reply and admin queues
  int64_t created = 0;
  int64_t connected_since = 0;  // 0: no forward connected
  int64_t forward_pid = 0;
  int64_t last_ack = 0;
  uint64_t acked = 0;
  uint64_t refused = 0;
  std::string last_error;
  int64_t last_error_time = 0;
  std::string peer;             // the far store's GUID, as last seen
  int64_t via_uid = -1;         // who last set `via` (-1: not recorded, an older store)
  // An HTTP link (MSMQ's HTTP transport, mq(7) "MSMQ over HTTP") has these and no `via`:
  std::string url;               // http[s]://HOST[:PORT]/msmq
  std::string receipts_url;      // where the far side posts stream receipts (a serve of this store)
  uint64_t receipted = 0;        // the last ordinal of its stream a stream receipt covers
  std::string receipted_stream;  // that stream
  // From the outgoing queue out;NAME:
  uint64_t backlog = 0;    // messages waiting (in flight included)
  uint64_t backlog_bytes = 0;
  uint64_t in_flight = 0;  // sent, not yet acknowledged (Locked by a forward)
};

// What mq-admin link set changes (unset: unchanged).
struct LinkSettings {
  std::optional<std::string> via;
  std::optional<std::string> return_link;
  std::optional<std::string> url{};  // an HTTP link's; a link has a url or a via, not both
  std::optional<std::string> receipts_url{};
};

// What a forward reports about its connection (Store::NoteLink).
struct LinkEvent {
  enum Kind { kConnected, kDisconnected, kError } kind = kError;
  std::string peer;
  std::string error;
};

// One message of an incoming transfer stream (mq-admin accept), and what became of it.
struct TransferItem {
  uint64_t seq = 0;   // TxSequenceNumber in the stream
  Message msg;        // destination_queue: the queue here
  uint16_t outcome = 0;    // after AcceptTransfer: 0 stored (or stored before), else a NACK class
  // Before AcceptTransfer: refused already with this NACK class (a message too large to be
  // read, whose `msg` is empty), recorded as any refusal is.
  uint16_t refuse = 0;
  bool duplicate = false;  // after AcceptTransfer: accepted before (a replay)
  // Before: when set, the message is stored only if this is at or below the stream's last
  // accepted sequence number ([MC-MQSRM] 3.1.5.1.6.3: SRMP's <previous>, the ordinal before
  // when absent; nothing lost in between). After: `gap` when it was not; then nothing is
  // stored or recorded for it, and the stream's position stays.
  std::optional<uint64_t> previous{};
  bool gap = false;
  // Before: stored even when its time to reach the queue is over (SRMP: [MC-MQSRM] 3.1.5.1.4,
  // expiry is not checked on arrival).
  bool keep_late = false;
  // Before: an id another message of the store holds (from another source) is replaced by a
  // new one instead of refusing the message: a stream's ordinals, not its ids, make it
  // exactly once ([MC-MQSRM]'s own stream samples share one id).
  bool new_id_if_taken = false;
};

// Supplies messages to Append. Next() fills `m` and returns false at the end; Rewind()
// starts over (the transaction is run again after the map grew). Next() sets every field of
// `m`: Append passes the same Message to each call, so that its buffers are reused.
class MessageSource {
 public:
  virtual ~MessageSource() = default;
  virtual Result<bool> Next(Message& m) = 0;
  virtual Status Rewind() = 0;
  // Whether a message may name a message type: Store::Append then reads the source once more,
  // before its write transaction, to check the bodies.
  virtual bool MayHaveTypes() const { return true; }
};

// A MessageSource over prepared messages (mq-send's batches, the bridge's deliveries).
class VectorSource : public MessageSource {
 public:
  explicit VectorSource(const std::vector<Message>& v) : v_(v), n_(v.size()) {}
  // The first `n` of `v` only.
  VectorSource(const std::vector<Message>& v, size_t n) : v_(v), n_(std::min(n, v.size())) {}
  Result<bool> Next(Message& m) override {
    if (i_ >= n_) return false;
    m = v_[i_++];
    return true;
  }
  Status Rewind() override {
    i_ = 0;
    return {};
  }
  bool MayHaveTypes() const override {
    for (size_t i = 0; i < n_; ++i)
      if (!v_[i].message_type_name.empty()) return true;
    return false;
  }

 private:
  const std::vector<Message>& v_;
  size_t n_;
  size_t i_ = 0;
};

// Receives the messages of a peek or receive. Add() may buffer; Flush() must complete the
// output. No store transaction is open during any of these calls: a receive has Locked the
// batch under its lease before, and removes it only after Flush() and Taken() succeeded.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Called before the messages of one receive or lease are written (n of them, a whole
  // conversation group perhaps): an error refuses them all, and nothing is removed.
  virtual Status Accept(size_t n) {
    (void)n;
    return {};
  }
  virtual Status Add(const Message& m) = 0;
  virtual Status Flush() = 0;
  // For a receive, after Flush(): returns once the reader has taken the output (for a pipe
  // or socket, read every byte of it; a file or terminal has taken what was written), or an
  // error if the reader went away first (the receive then removes nothing of the batch).
  virtual Status Taken() { return {}; }
  // Called before Add() for the messages of a --lease: their token and expiry.
  virtual void SetLease(const std::string& token, int64_t expires) {
    (void)token;
    (void)expires;
  }
};

// A queue's doorbell, armed (Store::ArmDoorbell; the protocol is DESIGN.md "Waits").
class Doorbell {
 public:
  virtual ~Doorbell() = default;
  enum class Wake { kLook, kTimeout, kStop };
  // Blocks until the doorbell rings, a re-look after a lock holder's end is due, the
  // wall-clock time `deadline_real_ms` passes (0: none; a step of the clock moves it along)
  // or the clock is set: kLook; the monotonic time `until_mono_ms` passes (-1: never):
  // kTimeout; or `stop_fd` (if >= 0) becomes readable: kStop.
  virtual Result<Wake> Wait(int64_t deadline_real_ms, int64_t until_mono_ms,
                            int stop_fd = -1) = 0;
  // For a caller with a poll loop of its own (mq-admin serve): the descriptor that becomes
  // readable when the doorbell rings, and Rang(), which reads what came without blocking and
  // says whether anything did (then look).
  virtual int fd() const = 0;
  virtual bool Rang() = 0;
};

// A lock held until it is destroyed (Store::LockLink); a killed holder's goes with it.
class HeldLock {
 public:
  virtual ~HeldLock() = default;
};

class Store {
 public:
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Opens (and where allowed creates) a store. One per directory per process (LMDB forbids
  // opening one environment twice in a process).
  static Result<std::unique_ptr<Store>> Open(const OpenOptions& options);

  const std::string& dir() const;
  const Guid& guid() const;
  // The store's owner (its directory's), and whether it is a group store (its members may
  // write to it).
  uid_t owner_uid() const;
  bool group_store() const;
  // Why the store was opened read-only (OpenOptions::read_only_ok), for a note to the user
  // ("a read-only file system"): empty if it is writable.
  const std::string& read_only() const;
  // Express delivery: later commits of this process do not wait for the meta page to reach
  // the disk (one fdatasync instead of two). A power loss may undo them; it never damages
  // the store.
  Status SetExpress(bool on);

  // Creates a plain queue; MQ_ERROR_QUEUE_EXISTS if it exists. With exist_ok (mq-admin create
  // --exist-ok, as mkdir -p), an existing queue is success when every setting given matches
  // its own, checked in the same transaction; settings not given are not compared, and a
  // setting that differs is MQ_ERROR_QUEUE_EXISTS naming it, with nothing changed.
  Status CreateQueue(const QueueRef& ref, const QueueSettings& settings, bool exist_ok = false);
  Status UpdateQueue(const QueueRef& ref, const QueueSettings& settings);
  // Deletes a queue with its messages, journal and subqueues.
  Status DeleteQueue(const QueueRef& ref);
  Result<std::vector<QueueInfo>> ListQueues();
  Result<QueueStat> StatQueue(const QueueRef& ref);
  // The queue's record alone, as it is (no maintenance, no counting of readers): its settings
  // for a caller that looks them up often (mq-admin serve, per request).
  Result<QueueInfo> QueueInfoOf(const QueueRef& ref);
  // Removes every message of a queue; returns how many.
  Result<uint64_t> Purge(const QueueRef& ref);

  // Appends the messages of `source` to a queue in one transaction: all or none. New ids go
  // to `ids` if it is not null.
  Status Append(const QueueRef& ref, const AppendOptions& options, MessageSource& source,
                std::vector<std::string>* ids, AppendReport* report = nullptr);
  // The same into each of `dests` in one transaction (mq-send a,b,LINK:c): a copy of every
  // message in each, or nothing if any destination refuses. Each destination's remote queue
  // stands for options.remote_queue. Every copy has an id of its own (ids are unique in a
  // store); `ids` gets them message by message, each message's copies in the order of
  // `dests`. A dedup key, an import (keep_identity) and conversation messages go to one
  // queue only: E_INVALIDARG with several.
  Status Append(std::span<const Destination> dests, const AppendOptions& options,
                MessageSource& source, std::vector<std::string>* ids,
                AppendReport* report = nullptr);

  // Gives the selected messages to `sink` without removing them, in chunks each copied out
  // of its own short read transaction, which ends before the chunk is written (a stalled
  // reader pins nothing). Nothing qualifying: MQ_ERROR_MESSAGE_NOT_FOUND when not waiting,
  // MQ_ERROR_IO_TIMEOUT when the wait ran out.
  Status Peek(const QueueRef& ref, const Selection& sel, const ReadOptions& ro,
              MessageSink& sink);
  // Removes the selected messages, batch by batch: a transaction Locks the batch under a
  // process lease (committed without the meta sync), the batch goes to `sink` with no
  // transaction open (Flush, then Taken: the reader has it), and a second transaction removes
  // it (journal copies, acks and retention as for any receive; also without the meta sync, so
  // a power loss may deliver it again but never loses it). Output that fails, or a reader that
  // goes away, returns the batch untouched (no abort count); a crash between the two
  // transactions returns it through lease recovery. Nothing qualifying: as Peek.
  Status Receive(const QueueRef& ref, const Selection& sel, const ReadOptions& ro,
                 MessageSink& sink);

  // Named cursors (MSMQ cursors kept in the store). A cursor's users are serialized by an
  // exclusive lock on its lock file, held for the whole call, waits included. kCurrent on a
  // cursor never moved is MQ_ERROR_ILLEGAL_CURSOR_ACTION, as is kNext; kCurrent on a message
  // removed since is MQ_ERROR_MESSAGE_ALREADY_RECEIVED. The cursor moves only if the output
  // was written (no transaction is open while it is).
  Status CursorPeek(const QueueRef& ref, const CursorOptions& co, const ReadOptions& ro,
                    MessageSink& sink);
  // Receives the message at the cursor (kCurrent only).
  Status CursorReceive(const QueueRef& ref, const CursorOptions& co, const ReadOptions& ro,
                       MessageSink& sink);
  Result<std::vector<CursorInfo>> ListCursors();
  Status DeleteCursor(const QueueRef& ref, const std::string& name);

  // EnableNotification (seed 000). Calls `on_arrived` with the message of each Arrived event.
  // Without `follow`: one event, then returns. With `follow`: re-arms after each event and
  // never reports a message twice or skips one that became suitable (an anonymous cursor
  // follows arrival order, and reports a message it passed while Locked if a rollback returns
  // it; a message moved in under an old lookup id is not reported: mq-watch(1));
  // returns ok when ro.stop_fd fires. Errors as for Peek; a queue deleted or disabled while
  // waiting is MQ_ERROR_QUEUE_DELETED / MQ_ERROR_QUEUE_NOT_ACTIVE.
  Status Watch(const QueueRef& ref, const WatchOptions& wo, const ReadOptions& ro,
               const std::function<Status(const Message&)>& on_arrived);

  // Transactional receive: marks the selected messages Locked (delivery count + 1) in one
  // transaction and returns them in a Lease. With a `sink` (leases printed by the caller)
  // the messages are written to it after that transaction committed; if that output fails,
  // the messages go back at once (no abort count) and the error is returned.
  Result<std::unique_ptr<Lease>> Lock(const QueueRef& ref, const Selection& sel,
                                      const ReadOptions& ro, const LockOptions& lo,
                                      MessageSink* sink);
  // Ends a lease: commit removes its messages; rollback returns them to their places (after
  // `delay`: its own, else the queue's --retry-delay, else its default), abort count + 1, and
  // runs the queue's poison action on a message rolled back max_retries times.
  // `failure` (or, without one, "rolled back") is recorded in each message rolled back.
  Status Finish(Lease& lease, bool commit, RetryDelay delay, FinishReport* report,
                const Failure* failure = nullptr);
  // The same, message by message in one transaction: commits those whose entry in `commit`
  // (by their index in lease.messages()) is true and rolls back the others.
  Status FinishEach(Lease& lease, const std::vector<bool>& commit, RetryDelay delay,
                    FinishReport* report, const Failure* failure = nullptr);
  // Returns a lease's messages untouched, as if never received (no abort count, no poison
  // action): for a mover that could not hand them on (mq-admin bridge out after a lost
  // connection or a broker's nack), as a reader that went away returns a receive's batch.
  Status Release(Lease& lease);
  // The same for a --lease token. An unknown or expired token is MQ_ERROR_TRANSACTION_USAGE
  // (exit 5) and changes nothing (an expired lease has rolled back by itself).
  Status FinishToken(const std::string& token, bool commit, int64_t delay_ms,
                     FinishReport* report);
  // Extends a --lease token's lease (mq-admin touch): it now ends `lease_ms` from now, or, with
  // 0, its original length from now (never earlier than it would have). The token stays the
  // same and covers every message of the lease. Errors as FinishToken's. Returns the new end.
  Result<int64_t> TouchToken(const std::string& token, int64_t lease_ms, FinishReport* report);
  Result<std::vector<LeaseInfo>> ListLeases();
  // Moves messages of a poison subqueue or dead-letter queue back to where they were going:
  // the one with `id` (20 bytes), or all. Returns how many. Messages from a dead-letter queue
  // get a fresh ttbr: `ttbr_ms` from now if given, else the time they were first given
  // (ttbr - sent time), from now.
  Result<uint64_t> Requeue(const QueueRef& from, const std::string& id,
                           std::optional<int64_t> ttbr_ms = std::nullopt);
  // MSMQ MoveMessage: moves the message with `lookup_id` from a queue (or one of its
  // subqueues) to a subqueue of the same queue, keeping its lookup id. A Locked message is
  // MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION, a delayed one MQ_ERROR_MESSAGE_NOT_FOUND.
  Status MoveToSubqueue(const QueueRef& from, uint64_t lookup_id, const QueueRef& to);
  // The message with `id` (20 bytes) wherever it is (a queue, or else a journal copy), for
  // replies. Missing: MQ_ERROR_MESSAGE_NOT_FOUND.
  Result<Message> FindMessage(const std::string& id);
  // The store's size limit: the map grows by itself up to it. 0: the built-in 1 TiB.
  Status SetMaxSize(uint64_t bytes);

  // For activators (mq-watch --exec) and movers: the queue's doorbell, armed (Doorbell), and
  // the next time something in the queue becomes due by itself (0: none).
  Result<std::unique_ptr<Doorbell>> ArmDoorbell(const QueueRef& ref);
  // For viewers (mq-admin top): every doorbell of the store at once, and the end of any lock
  // holder. Also on a store opened read-only, where nothing rings.
  Result<std::unique_ptr<Doorbell>> ArmStoreDoorbell();
  // For mq-admin serve: the doorbell of system;receipts (names.hpp kReceiptsQueue), which is
  // made if it is missing.
  Result<std::unique_ptr<Doorbell>> ArmReceipts();
  Result<int64_t> NextDeadline(const QueueRef& ref);
  // Returns once the queue holds no message, in any state (visible, delayed, Locked; those
  // kept by RETENTION ON are done with): at once if it is empty, else when a receive, an ack,
  // a purge or an expiry takes the last (its doorbell rings then: no polling, waiter.hpp).
  // ro.wait_ms: how long (0: only look; -1: as long as it takes), then MQ_ERROR_IO_TIMEOUT;
  // ro.stop_fd as for reads. mq-watch --until-empty.
  Status WaitEmpty(const QueueRef& ref, const ReadOptions& ro);

  // Makes due delayed messages visible, returns leases of dead holders and expired leases,
  // expires (dead-letters, NACKs) messages past their deadline, and forgets expired dedup
  // keys, in every queue; returns how many things it did. Finds what is due from the indexes
  // alone: one seek per queue that has entries there, nothing per message.
  Result<uint64_t> Sweep();

  // The incoming link streams this store has accepted from, and the refusals it keeps for
  // their replays (mq-admin stat). Sweep forgets the refusals of a stream silent for
  // kForgetStreamRefusalsMs.
  Result<StreamStats> AcceptedStreams();
  // What Sweep does for them at `now`: forgets the refusals kept for senders silent since
  // `now` - kForgetStreamRefusalsMs; returns how many.
  Result<uint64_t> ForgetAbandonedRefusals(int64_t now);

  // Message types (CREATE/DROP MESSAGE TYPE): `validation` is 'N', 'E' or 'X'.
  Status CreateMessageType(const std::string& name, char validation);
  Status DeleteMessageType(const std::string& name);
  Result<std::vector<MessageTypeInfo>> ListMessageTypes();
  // END CONVERSATION: queues the EndDialog (or Error) system message for the conversation,
  // refuses later sends (MQ_CONVERSATION_CLOSED), and removes its retained messages. On a
  // conversation already ended it only removes retained messages. Returns how many.
  Result<uint64_t> EndConversation(const Guid& handle, const EndOptions& options);
  Result<std::vector<ConversationInfo>> ListConversations();

  // Verifies that every index agrees with the messages and the counters. Appends a line per
  // problem to `problems`.
  Status Check(std::vector<std::string>& problems);
  // Makes an existing store group-shared: setgid 2770 directories, 0660 files, group `group`.
  Status ShareWithGroup(const std::string& group);
  // A consistent compacted copy into `dir` (which must not exist, or be empty), taken while
  // other processes keep working.
  Status Backup(const std::string& dir);
  // Rewrites data.mdb to its live size: LMDB's compacting copy into DIR/compact.tmp, synced,
  // renamed over data.mdb; lock.mdb is removed (the next user makes it anew). Only for a store
  // opened alone (OpenOptions::exclusive_wait_ms); the Store must not be used afterwards. A
  // crash leaves either the old file or the new one, whole.
  Result<CompactReport> Compact();
  // Brings the store to this mq's format (kFormatVersion), in one write transaction: from
  // format 1, the store gets its id prefix and each queue the native id source; from format
  // 2, new records are lean (message_table.hpp); from format 3, each record moves to its
  // order key (MessageTable::Upgrade4). Only for a store opened alone (an older mq still
  // running would not see the change). Returns the format before and after.
  struct UpgradeReport {
    uint32_t before = 0;
    uint32_t after = 0;
    uint64_t queues = 0;    // queues given a native id source
    uint64_t messages = 0;  // records moved to their order keys
  };
  Result<UpgradeReport> Upgrade();
  // The store's format version.
  uint32_t format() const;
  // Bytes of data.mdb on disk, bytes of it in use (up to its last page), and bytes of the
  // pages below that which LMDB's free list holds for reuse.
  struct Sizes {
    uint64_t file = 0;
    uint64_t used = 0;
    uint64_t free = 0;
  };
  Result<Sizes> FileSizes();

  // Links (mq-admin link). AddLink makes the link and its outgoing queue out;NAME; an
  // existing link is MQ_ERROR_QUEUE_EXISTS. DeleteLink refuses a link whose outgoing queue
  // holds messages unless `force` (then they are purged: NACK_PURGED, dead letters).
  Status AddLink(const std::string& name, const LinkSettings& settings);
  Status SetLink(const std::string& name, const LinkSettings& settings);
  Status DeleteLink(const std::string& name, bool force);
  Result<std::vector<LinkInfo>> ListLinks();
  Result<LinkInfo> GetLink(const std::string& name);
  // The lock a forward holds while it runs (one forward per link: the stream is sent in
  // order from the head of out;LINK). Held by another: MQ_ERROR_SHARING_VIOLATION.
  Result<std::unique_ptr<HeldLock>> LockLink(const std::string& name);
  // mq-admin forward's record of its connection, shown by link list/stat.
  Status NoteLink(const std::string& name, const LinkEvent& event);
  // mq-send DIRECT=HTTP://HOST/msmq/private$/Q: sets each destination's link (ref.sub) from
  // its url, the link added with that --url; MQ_ERROR_QUEUE_NOT_FOUND naming the command that
  // adds one when there is none.
  Status ResolveLinkUrls(std::vector<Destination>& dests);
  // The link whose --url is `url` (MsmqBaseUrl's form); empty if none. A receipt to an admin
  // queue at that machine goes through it (mq(7) "MSMQ over HTTP").
  Result<std::string> LinkOfUrl(std::string_view url);
  // A stream receipt posted to this store (mq-admin serve): when `stream` is the stream of a
  // link's outgoing queue (uid:THIS-STORE-GUID\QUEUE-ID), records that the far side holds its
  // messages up to `last_ordinal` (kept the highest seen) and returns the link's name; empty
  // when the stream is no link's of this store (a receipt for another store, or a link
  // deleted since).
  Result<std::string> NoteStreamReceipt(std::string_view stream, uint64_t last_ordinal);
  // Ends a forward's leases of out;LINK messages the far side has answered (what one
  // acknowledgement covers; leases of one queue, outcomes[l] for leases[l]): each message
  // with outcome 0 (stored there) gets its ACK_REACH_QUEUE and source journal copy and is
  // removed; any other value is the NACK class of a refusal there: the NACK, and the dead-
  // letter queue if asked for (as a local failure). One transaction, which also records the
  // acknowledgement in the link's record; committed without the meta sync (a power loss may
  // undo it: the messages are sent again and the far side answers the replay as before).
  Status FinishForwarded(const std::vector<Lease*>& leases,
                         const std::vector<std::vector<uint16_t>>& outcomes,
                         const std::string& link);
  // mq-admin accept: stores the messages of an incoming stream, in one transaction that also
  // records the stream's last accepted sequence number, so a replay is recognised (marked
  // duplicate, answered as before) and never stored twice. A message the store refuses (no
  // such queue, disabled, quota, size...) gets the NACK class in `outcome`, remembered for
  // replays. Sequence numbers must increase along `items`. Refusals remembered below
  // `forget_below` (the sender has moved past them) are dropped. Returns the stream's last
  // accepted sequence number. An empty `stream`: messages of no stream (SRMP's express and
  // recoverable ones): nothing recorded, sequence numbers ignored, a refusal not remembered;
  // a message whose id is stored already from the same source is still a replay.
  // `receipts_to`, when not empty, is kept with the stream's position: where its receipts go
  // (SRMP's <sendReceiptsTo>, sent on a stream's first message only).
  Result<uint64_t> AcceptTransfer(const std::string& stream, std::vector<TransferItem>& items,
                                  uint64_t forget_below, std::string_view receipts_to = {});
  // The last sequence number accepted from `stream` (0: none).
  Result<uint64_t> StreamPosition(const std::string& stream);
  // Where the receipts of `stream` go (AcceptTransfer's receipts_to); empty if nowhere.
  Result<std::string> StreamReceiptsTo(const std::string& stream);

  struct Impl;

 private:
  Status WatchLocked(const QueueRef& ref, const WatchOptions& wo, const ReadOptions& ro,
                     const std::function<Status(const Message&)>& on_arrived);
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mq
