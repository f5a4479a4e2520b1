// store.hpp: the public surface of libmq: a store of queues and messages in one LMDB
// environment, opened directly by every tool (no daemon).
//
// Named databases (keys big-endian, so byte order is numeric order):
//   meta       "format" -> u32 format version; "guid" -> store GUID (16 bytes);
//              "id_guid" + "id_counter" -> the source of message ids; "next_queue_id" -> u32
//   queues     name -> queue record (queue.hpp)
//   queue_ids  queue id (u32) -> name
//   messages   queue id (u32), lookup id (u64) -> message record (message.hpp)
//   order      queue id (u32), 7 - priority (u8), lookup id (u64) -> "": delivery order; the
//              head of a queue is one seek
//   by_id      message id (20 bytes) -> queue id, lookup id
//   by_corr    correlation id (20), queue id, 7 - priority, lookup id -> ""
// Every index is changed in the same write transaction as the message it describes;
// `mq-admin check` verifies that they agree.
//
// Durability: a send commits with LMDB's default sync (like write() then fdatasync() of data
// and meta pages) unless the process chose express delivery, which skips the fsync: the
// commit survives a crash of the process but not of the machine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ids.hpp"
#include "message.hpp"
#include "names.hpp"
#include "queue.hpp"
#include "status.hpp"

namespace mq {

inline constexpr uint32_t kFormatVersion = 1;

struct OpenOptions {
  std::string dir;      // empty: the default location (CLI.md), created on first use
  bool create = false;  // create a missing store named by `dir`
  std::string group;    // with create: make a group-shared store (setgid 2770, files 0660)
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
};

struct Selection {
  Anchor anchor = Anchor::kHead;
  uint64_t lookup_id = 0;
  std::string id;           // 20 bytes, for kId
  std::string correlation;  // 20 bytes, for kCorrelation
  uint64_t limit = 1;       // 0: all
};

struct QueueSettings {
  std::optional<std::string> label;
  std::optional<uint64_t> quota;
  std::optional<uint64_t> max_message_size;
  std::optional<bool> enabled;
};

struct QueueStat {
  QueueInfo info;
  int64_t oldest_arrived = 0;  // 0: empty
};

struct AppendOptions {
  bool create_queue = false;   // make a missing queue
  bool keep_identity = false;  // import: keep id, times and origin as given
};

// Supplies messages to Append. Next() fills `m` and returns false at the end; Rewind()
// starts over (the transaction is run again after the map grew).
class MessageSource {
 public:
  virtual ~MessageSource() = default;
  virtual Result<bool> Next(Message& m) = 0;
  virtual Status Rewind() = 0;
};

// Receives the messages of a peek or receive. Add() may buffer; Flush() must complete the
// output (for a receive it runs before the commit, so a failed write rolls back).
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual Status Add(const Message& m) = 0;
  virtual Status Flush() = 0;
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
  // Express delivery: later commits of this process skip fsync.
  Status SetExpress(bool on);

  Status CreateQueue(const QueueRef& ref, const QueueSettings& settings);
  Status UpdateQueue(const QueueRef& ref, const QueueSettings& settings);
  // Deletes a queue with its messages, journal and subqueues.
  Status DeleteQueue(const QueueRef& ref);
  Result<std::vector<QueueInfo>> ListQueues();
  Result<QueueStat> StatQueue(const QueueRef& ref);
  // Removes every message of a queue; returns how many.
  Result<uint64_t> Purge(const QueueRef& ref);

  // Appends the messages of `source` to a queue in one transaction: all or none. New ids go
  // to `ids` if it is not null.
  Status Append(const QueueRef& ref, const AppendOptions& options, MessageSource& source,
                std::vector<std::string>* ids);

  // Gives the selected messages to `sink` without removing them.
  Status Peek(const QueueRef& ref, const Selection& sel, MessageSink& sink);
  // Removes the selected messages, each batch in a transaction that commits only after
  // sink.Flush() succeeded. Returns MQ_ERROR_MESSAGE_NOT_FOUND if nothing qualified.
  Status Receive(const QueueRef& ref, const Selection& sel, MessageSink& sink);

  // Verifies that every index agrees with the messages and the counters. Appends a line per
  // problem to `problems`.
  Status Check(std::vector<std::string>& problems);
  // A consistent compacted copy into `dir` (which must not exist, or be empty), taken while
  // other processes keep working.
  Status Backup(const std::string& dir);

  struct Impl;

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mq
