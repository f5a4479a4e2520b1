// batch.hpp: a send cut into store transactions. BatchSender gathers messages (a prototype
// with each its own body) and appends them in batches of at most kMaxMessages messages or
// about kMaxBytes of bodies, each batch one transaction, atomic and durable when it commits;
// after each commit it prints what the sender asked to see (message ids, a new conversation's
// handle). SendRecords feeds it stdin cut into lines or NUL-terminated records, with memory
// bounded by the batch; SpoolSource gives such records to one transaction (--tx) instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/message.hpp"
#include "base/names.hpp"
#include "base/status.hpp"
#include "store/store.hpp"

namespace mq {

struct BatchOptions {
  // For every append. new_conversation: the prototype's handle is a conversation to begin
  // with the first commit; its handle is printed then, and later batches send on it.
  AppendOptions append;
  // Print the id of each message sent, a line each, after each commit (with several
  // destinations, each message's copies in their order).
  bool print_ids = false;
  // What the user should know (a missing admin queue, a dropped duplicate), each note once.
  std::function<void(const std::string& text)> note;
};

class BatchSender {
 public:
  static constexpr size_t kMaxMessages = 10000;
  static constexpr size_t kMaxBytes = 8 << 20;

  // Ids and the handle are printed on standard output. Each batch goes to every one of
  // `dests` in its transaction (Store::Append).
  BatchSender(Store& store, std::vector<Destination> dests, Message proto, BatchOptions options);

  // Adds the prototype with `body` to the batch. The batch keeps only the bodies, end to end
  // in one buffer that stays from one batch to the next: a long send allocates nothing per
  // message once the first batch is made, and a batch of 10,000 small messages is its bodies'
  // bytes, not 10,000 copies of the prototype (7 MB to fault in, and to walk).
  void Add(std::string_view body);
  // Whether the batch should be committed before more is added.
  bool Full() const { return ends_.size() >= kMaxMessages || bodies_.size() >= kMaxBytes; }
  // Appends the batch, if any, in one transaction.
  Status Commit();
  // Appends everything `src` gives in one transaction. An error after earlier commits says
  // how many messages those sent.
  Status Append(MessageSource& src);

 private:
  Store& store_;
  std::vector<Destination> dests_;
  Message proto_;
  BatchOptions options_;
  std::string bodies_;        // the batch's bodies, end to end
  std::vector<size_t> ends_;  // where each ends in bodies_
  std::vector<std::string> ids_;
  std::set<std::string> noted_;  // notes already given (one per admin queue, not per batch)
  uint64_t sent_ = 0;
};

// Splits what `fd` gives on `sep`, each record (the separator left out; a last one without it
// included) a message, committed in batches of at most kMaxMessages, and whenever `fd` has
// nothing more to read at the moment; memory stays bounded by the batch.
Status SendRecords(int fd, char sep, BatchSender& sender);

// The records of `fd` (split on `sep` as SendRecords does) for a --tx send: spooled to an
// unlinked temporary file first by Spool(), so that one transaction can take them all (and run
// again if the store's map must grow, through Rewind) without holding them in memory.
class SpoolSource : public MessageSource {
 public:
  SpoolSource(int fd, const Message& proto, char sep) : fd_(fd), proto_(proto), sep_(sep) {}
  ~SpoolSource() override;
  SpoolSource(const SpoolSource&) = delete;
  SpoolSource& operator=(const SpoolSource&) = delete;
  Status Spool();
  Result<bool> Next(Message& m) override;
  Status Rewind() override;
  bool MayHaveTypes() const override { return !proto_.message_type_name.empty(); }

 private:
  int fd_;
  Message proto_;
  char sep_;
  FILE* f_ = nullptr;
  char* line_ = nullptr;
  size_t cap_ = 0;
};

}  // namespace mq
