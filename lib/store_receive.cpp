// store_receive.cpp: peek and plain (non-transactional) receive from a queue, and
// finding a message by id anywhere in the store.
#include "store_impl.hpp"

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

#include "codec.hpp"
#include "conversation.hpp"
#include "filelock.hpp"
#include "lmdb.hpp"
#include "paths.hpp"
#include "units.hpp"
#include "waiter.hpp"

namespace mq {

Status Store::Peek(const QueueRef& ref, const Selection& sel, const ReadOptions& ro,
                   MessageSink& sink) {
  return impl_->WaitLoop(ref, ro, [&](bool waiting, int64_t& deadline) -> Status {
    MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
    auto txn = lmdb::Txn::Begin(impl_->env, false);
    if (!txn.ok()) return txn.status();
    auto q = impl_->FindQueue(*txn, ref);
    if (!q.ok()) return q.status();
    if (waiting && !q->enabled)
      return Status(Code::kQueueNotActive, "queue was disabled (status OFF)", q->name);
    uint64_t remaining = sel.limit ? sel.limit : UINT64_MAX;
    uint64_t seen = 0;
    std::string resume;
    std::vector<Impl::Found> batch;
    while (remaining) {
      MQ_RETURN_IF_ERROR(impl_->Collect(*txn, *q, sel, resume,
                                        std::min<uint64_t>(remaining, kBatchCount), batch));
      if (batch.empty()) break;
      for (auto& f : batch) MQ_RETURN_IF_ERROR(sink.Add(f.msg));
      MQ_RETURN_IF_ERROR(sink.Flush());
      resume = batch.back().walk_key;
      remaining -= batch.size();
      seen += batch.size();
    }
    if (seen) return {};
    deadline = impl_->NextDeadline(*txn, q->id);
    return Status(Code::kMessageNotFound, "no message", ref.Full());
  });
}

Status Store::Receive(const QueueRef& ref, const Selection& sel_in, const ReadOptions& ro,
                      MessageSink& sink) {
  if (sel_in.anchor == Anchor::kArrival || sel_in.include_locked)
    return Status(Code::kInvalidArg, "a receive takes visible messages only", ref.Full());
  if (Impl::GroupCandidate(sel_in)) return ReceiveConversation(ref, sel_in, ro, sink);
  // From here on plain MSMQ messages only: conversation messages go by group.
  Selection sel = sel_in;
  sel.plain_only = true;
  return impl_->WaitLoop(ref, ro, [&](bool, int64_t& deadline) -> Status {
    uint64_t remaining = sel.limit ? sel.limit : UINT64_MAX;
    uint64_t received = 0;
    std::string resume;
    std::vector<Impl::Found> batch;
    while (remaining) {
      bool got = false;
      Status s = impl_->Write(
          [&](lmdb::Txn& txn) -> Status {
            auto q = impl_->FindQueue(txn, ref);
            if (!q.ok()) return q.status();
            if (!q->enabled)
              return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
            auto n = impl_->Maintain(txn, *q, NowMs());
            if (!n.ok()) return n.status();
            if (*n) resume.clear();  // returned or promoted messages: look from the start
            MQ_RETURN_IF_ERROR(impl_->Collect(
                txn, *q, sel, resume, std::min<uint64_t>(remaining, kBatchCount), batch));
            if (batch.empty()) {
              deadline = impl_->NextDeadline(txn, q->id);
              return {};  // commits what Maintain did
            }
            int64_t now = NowMs();
            for (auto& f : batch) {
              MQ_RETURN_IF_ERROR(impl_->Received(txn, *q, f.msg, now));
              MQ_RETURN_IF_ERROR(impl_->RemoveMessage(txn, *q, f.msg, f.size));
            }
            MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, *q));
            // Output last: nothing may fail after it but the commit.
            for (auto& f : batch) MQ_RETURN_IF_ERROR(sink.Add(f.msg));
            MQ_RETURN_IF_ERROR(sink.Flush());
            got = true;
            return {};
          },
          /*rerun_after_commit=*/false);
      if (!s.ok()) {
        if (s.code() == Code::kBrokenPipe || s.code() == Code::kIo ||
            s.code() == Code::kInsufficientResources) {
          std::string what = received ? fmt::format("{} messages were received, the rest stay "
                                                    "in the queue",
                                                    received)
                                      : "nothing was removed";
          return Status(s.code(), fmt::format("{}; {}", s.text(), what), s.subject());
        }
        return s;
      }
      if (!got) break;
      resume = batch.back().walk_key;
      remaining -= batch.size();
      received += batch.size();
    }
    if (!received) return Status(Code::kMessageNotFound, "no message", ref.Full());
    return {};
  });
}

Result<Message> Store::FindMessage(const std::string& id) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  // The message itself (key = the id), else a journal copy (key = id + journal queue id).
  lmdb::Cursor c(*txn, impl_->by_id);
  if (id.size() != kIdSize || !c.SeekGe(id) || !HasPrefix(c.key(), id) || c.value().size() != 12)
    return Status(Code::kMessageNotFound, "no message with this id in the store",
                  FormatMessageId(id));
  uint32_t qid = GetU32BE(c.value(), 0);
  auto name = txn->Get(impl_->queue_ids, QueueIdKey(qid));
  if (!name) return Status(Code::kCorrupted, "message of an unknown queue", FormatMessageId(id));
  QueueInfo q;
  q.name = std::string(*name);
  q.id = qid;
  Impl::Found f;
  MQ_RETURN_IF_ERROR(impl_->LoadMessage(*txn, q, GetU64BE(c.value(), 4), f));
  return std::move(f.msg);
}

}  // namespace mq
