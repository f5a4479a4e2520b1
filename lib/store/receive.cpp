// receive.cpp: peek and plain (non-transactional) receive from a queue, and
// finding a message by id anywhere in the store.
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

Status Store::Peek(const QueueRef& ref, const Selection& sel, const ReadOptions& ro,
                   MessageSink& sink) {
  return impl_->WaitLoop(ref, ro, [&](bool waiting, int64_t& deadline) -> Status {
    MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
    uint64_t remaining = sel.limit ? sel.limit : UINT64_MAX;
    uint64_t seen = 0;
    std::string resume;
    std::vector<Impl::Found> batch;
    while (remaining) {
      {
        // A chunk is copied out of its own read transaction, which ends before the chunk is
        // written: a reader that stalls pins no pages of the store.
        auto txn = lmdb::Txn::Begin(impl_->env, false);
        if (!txn.ok()) return txn.status();
        auto q = impl_->FindQueue(*txn, ref);
        if (!q.ok()) return q.status();
        if (waiting && !q->enabled)
          return Status::QueueNotActive("queue was disabled (status OFF)", q->name);
        MQ_RETURN_IF_ERROR(impl_->msgs.Collect(*txn, *q, sel, resume,
                                          std::min<uint64_t>(remaining, kBatchCount), batch));
        if (batch.empty() && !seen) deadline = impl_->NextDeadline(*txn, q->id);
      }
      if (batch.empty()) break;
      for (auto& f : batch) MQ_RETURN_IF_ERROR(sink.Add(f.msg));
      MQ_RETURN_IF_ERROR(sink.Flush());
      resume = batch.back().walk_key;
      remaining -= batch.size();
      seen += batch.size();
    }
    if (seen) return {};
    return Status::MessageNotFound("no message", ref.Full());
  });
}

namespace {

// A receive that stopped after `received` messages: the error, and what became of the rest.
Status Stopped(const Status& s, uint64_t received) {
  if (s.code() != Code::kBrokenPipe && s.code() != Code::kIo &&
      s.code() != Code::kInsufficientResources && s.code() != Code::kInvalidArg)
    return s;
  std::string what = received ? fmt::format("{} messages were received, the rest stay in the "
                                            "queue",
                                            received)
                              : "nothing was removed";
  return Status(s.code(), fmt::format("{}; {}", s.text(), what), s.subject());
}

}  // namespace

Status Store::Receive(const QueueRef& ref, const Selection& sel_in, const ReadOptions& ro,
                      MessageSink& sink) {
  if (sel_in.anchor == Anchor::kArrival || sel_in.include_locked)
    return Status::InvalidArg("a receive takes visible messages only", ref.Full());
  return impl_->WaitLoop(ref, ro, [&](bool, int64_t& deadline) -> Status {
    uint64_t remaining = sel_in.limit ? sel_in.limit : UINT64_MAX;
    uint64_t received = 0;
    std::string resume;
    Selection sel = sel_in;
    while (remaining) {
      sel.limit = remaining == UINT64_MAX ? 0 : remaining;
      bool group = false;
      auto l = impl_->LockAny(ref, sel, LockOptions(), false, resume, deadline, &group);
      if (!l.ok() && l.status().code() == Code::kMessageNotFound && received) break;  // paused
      if (!l.ok()) return Stopped(l.status(), received);
      if (!*l) break;
      Lease& lease = **l;
      uint64_t n = lease.messages().size();
      Status out = Impl::Deliver(lease, sink, true);
      if (!out.ok()) {
        // Not taken: the batch goes back as it was. Should that fail too, the lease ends
        // with this process and the next reader returns the batch.
        (void)impl_->EndLease(lease, Impl::LeaseEnd::Release(true));
        return Stopped(out, received);
      }
      Status fin = impl_->EndLease(lease, Impl::LeaseEnd::Commit(true));
      if (!fin.ok())
        return Status(fin.code(),
                      fmt::format("{}; the last {} message(s) were written but not removed, and "
                                  "will be received again",
                                  fin.text(), n),
                      fin.subject());
      received += n;
      if (group) break;  // one conversation group per receive
      sel.plain_only = true;  // the rest: plain messages, after this batch
      if (remaining != UINT64_MAX) remaining -= n;
    }
    if (!received) return Status::MessageNotFound("no message", ref.Full());
    return {};
  });
}

Result<Message> Store::FindMessage(const std::string& id) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  // The message itself (key = the id), else a journal copy (key = id + journal queue id).
  auto where = id.size() == kIdSize ? impl_->msgs.FindId(*txn, id, true) : std::nullopt;
  if (!where)
    return Status::MessageNotFound("no message with this id in the store", FormatMessageId(id));
  auto [qid, lookup] = *where;
  auto name = impl_->QueueNameOf(*txn, qid);
  if (!name) return Status::Corrupted("message of an unknown queue", FormatMessageId(id));
  QueueInfo q;
  q.name = std::string(*name);
  q.id = qid;
  Impl::Found f;
  MQ_RETURN_IF_ERROR(impl_->LoadMessage(*txn, q, lookup, f));
  return std::move(f.msg);
}

}  // namespace mq
