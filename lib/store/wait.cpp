// wait.cpp: waiting for a queue (the protocol is waiter.hpp's): arm the doorbell,
// look again, sleep until a ring, a lock file's close or the next deadline in the store.
#include "store/store_impl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
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

// The id of the queue a wait is about, giving a subqueue that was never written a catalog
// entry (and so a doorbell). A missing or (with `need_enabled`) disabled queue is an error.
Result<uint32_t> Store::Impl::QueueIdForWait(const QueueRef& ref, bool need_enabled) {
  uint32_t qid = 0;
  {
    // Usually the queue exists: a read transaction is enough.
    auto txn = lmdb::Txn::Begin(env, false);
    if (!txn.ok()) return txn.status();
    auto q = FindQueue(*txn, ref);
    if (!q.ok()) return q.status();
    if (need_enabled && !q->enabled)
      return Status::QueueNotActive("queue is disabled (status OFF)", q->name);
    if (q->id != 0) return q->id;
  }
  Status s = Write([&](lmdb::Txn& txn) -> Status {
    auto q = FindQueue(txn, ref);
    if (!q.ok()) return q.status();
    if (q->id == 0) {
      auto made = NewQueue(txn, ref.Full());
      if (!made.ok()) return made.status();
      *q = std::move(*made);
    }
    if (need_enabled && !q->enabled)
      return Status::QueueNotActive("queue is disabled (status OFF)", q->name);
    qid = q->id;
    return {};
  });
  if (!s.ok()) return s;
  return qid;
}

// A wait rings a doorbell file and marks itself in locks/: not in a store opened read-only.
Status Store::Impl::CanWait() const {
  if (read_only.empty()) return {};
  return Status::AccessDenied(
      fmt::format("cannot wait for messages in a store opened read-only ({}): use -w 0",
                  read_only),
      dir);
}

// The wait protocol of waiter.hpp around `attempt`, which looks once and returns ok (found),
// MQ_ERROR_MESSAGE_NOT_FOUND (look again later; it may set the store's next deadline), or
// another error (give up). Without waiting, `attempt` runs once.
Status Store::Impl::WaitLoop(
    const QueueRef& ref, const ReadOptions& ro,
    const std::function<Status(bool waiting, int64_t& next_deadline)>& attempt) {
  int64_t deadline = 0;
  // The first look needs no watch: most reads find something. Only then arm, and look
  // again before sleeping, so that nothing committed in between is missed.
  Status first = attempt(ro.wait_ms != 0, deadline);
  if (ro.wait_ms == 0 || first.code() != Code::kMessageNotFound) return first;
  MQ_RETURN_IF_ERROR(CanWait());
  auto qid = QueueIdForWait(ref, true);
  if (!qid.ok()) return qid.status();
  // One watch per queue, kept for the life of the store: closing an inotify instance waits
  // for an SRCU grace period (several ms), which mq-watch would pay before every event.
  auto it = armed.find(*qid);
  if (it == armed.end()) {
    auto a = Waiter::Arm(paths.notify(*qid), file_mode, paths.locks_dir());
    if (!a.ok()) return a.status();
    it = armed.emplace(*qid, std::move(*a)).first;
  }
  Waiter* w = &it->second;
  // While it waits, the reader holds a lock on locks/wait.QID.PID, which mq-admin stat counts
  // (a killed reader's file is not locked, is not counted, and sweep removes it). Only this
  // process locks or removes its own file; a prober (FileLock::IsHeld) holds it for an
  // instant, so a few tries get it, and without it the wait goes on, only uncounted. Opened
  // read-only: its close is no IN_CLOSE_WRITE in locks/, which would wake every waiter.
  struct Mark {
    std::string path;
    int fd = -1;
    ~Mark() {
      if (fd < 0) return;
      ::unlink(path.c_str());
      ::close(fd);
    }
  } mark{WaitMarkPath(*qid, ::getpid())};
  if (auto fd = OpenStoreFile(mark.path, O_RDONLY, file_mode); fd.ok()) {
    for (int i = 0; i < 100 && mark.fd < 0; ++i) {
      if (::flock(*fd, LOCK_EX | LOCK_NB) == 0) mark.fd = *fd;
      else ::usleep(1000);
    }
    if (mark.fd < 0) ::close(*fd);
  }
  int64_t until = ro.wait_ms < 0 ? -1 : MonotonicMs() + ro.wait_ms;
  for (;;) {
    deadline = 0;
    Status s = attempt(true, deadline);
    if (s.code() == Code::kQueueNotFound)
      return Status::QueueDeleted("queue was deleted while waiting", ref.Full());
    if (s.code() != Code::kMessageNotFound) return s;
    auto wake = w->Wait(deadline, until, ro.stop_fd);
    if (!wake.ok()) return wake.status();
    if (*wake == Waiter::Wake::kTimeout)
      return Status::IoTimeout(s.text() == "no message"
                                   ? std::string("timed out waiting for a message")
                                   : "timed out waiting for a message: " + s.text(),
                               ref.Full());
    if (*wake == Waiter::Wake::kStop)
      return Status::OperationCancelled("stopped by a signal", ref.Full());
  }
}

Status Store::WaitEmpty(const QueueRef& ref, const ReadOptions& ro) {
  // Empty: no message in any state (StatQueue returns expired leases and drops expired
  // messages first, as a reader would); those that RETENTION ON keeps are done with.
  auto empty = [&]() -> Result<bool> {
    auto st = StatQueue(ref);
    if (!st.ok()) return st.status();
    return st->info.count <= st->info.retained;
  };
  auto e = empty();
  if (!e.ok() || *e) return e.status();
  if (ro.wait_ms == 0) return Status::IoTimeout("the queue is not empty", ref.Full());
  MQ_RETURN_IF_ERROR(impl_->CanWait());
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  // The queue's doorbell, rung when its last message goes (RemoveMessage), and the lock
  // files (a receiver that dies returns its messages: waiter.hpp). Not counted as a waiting
  // reader: it wants none.
  auto w = Waiter::Arm(impl_->paths.notify(*qid), impl_->file_mode, impl_->paths.locks_dir());
  if (!w.ok()) return w.status();
  int64_t until = ro.wait_ms < 0 ? -1 : MonotonicMs() + ro.wait_ms;
  for (;;) {
    e = empty();
    if (!e.ok()) {
      if (e.status().code() == Code::kQueueNotFound)
        return Status::QueueDeleted("queue was deleted while waiting", ref.Full());
      return e.status();
    }
    if (*e) return {};
    // What becomes due by itself (a delayed message, an expiry, a lease's end) is looked at
    // then.
    auto deadline = NextDeadline(ref);
    if (!deadline.ok()) return deadline.status();
    // One that is due and still there (a reader's work, not ours) is looked at again soon,
    // not in a loop.
    if (*deadline && *deadline <= NowMs()) *deadline = NowMs() + 10;
    auto wake = w->Wait(*deadline, until, ro.stop_fd);
    if (!wake.ok()) return wake.status();
    if (*wake == Waiter::Wake::kTimeout)
      return Status::IoTimeout("timed out waiting for the queue to empty", ref.Full());
    if (*wake == Waiter::Wake::kStop)
      return Status::OperationCancelled("stopped by a signal", ref.Full());
  }
}

std::string Store::Impl::WaitMarkPath(uint32_t qid, long pid) {
  return paths.wait_mark(qid, pid);
}

// The readers waiting on queue `qid` now: the wait marks whose lock is held.
uint64_t Store::Impl::WaitingReaders(uint32_t qid) {
  uint64_t n = 0;
  std::string prefix = "wait." + std::to_string(qid) + ".";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(paths.locks_dir().c_str()), closedir);
  while (dir) {
    dirent* e = readdir(dir.get());
    if (!e) break;
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    auto held = FileLock::IsHeld(paths.in_locks(e->d_name));
    if (held.ok() && *held) ++n;
  }
  return n;
}

namespace {

class WaiterDoorbell : public Doorbell {
 public:
  explicit WaiterDoorbell(Waiter w) : w_(std::move(w)) {}
  Result<Wake> Wait(int64_t deadline_real_ms, int64_t until_mono_ms, int stop_fd) override {
    auto r = w_.Wait(deadline_real_ms, until_mono_ms, stop_fd);
    if (!r.ok()) return r.status();
    switch (*r) {
      case Waiter::Wake::kLook: return Wake::kLook;
      case Waiter::Wake::kTimeout: return Wake::kTimeout;
      case Waiter::Wake::kStop: return Wake::kStop;
    }
    return Wake::kLook;
  }
  int fd() const override { return w_.fd(); }
  bool Rang() override { return w_.Drain(); }

 private:
  Waiter w_;
};

}  // namespace

Result<std::unique_ptr<Doorbell>> Store::ArmDoorbell(const QueueRef& ref) {
  MQ_RETURN_IF_ERROR(impl_->CanWait());
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  auto w = Waiter::Arm(impl_->paths.notify(*qid), impl_->file_mode, impl_->paths.locks_dir());
  if (!w.ok()) return w.status();
  return std::unique_ptr<Doorbell>(std::make_unique<WaiterDoorbell>(std::move(*w)));
}

Result<std::unique_ptr<Doorbell>> Store::ArmStoreDoorbell() {
  auto w = Waiter::ArmDirectory(impl_->paths.notify_dir(), impl_->paths.locks_dir());
  if (!w.ok()) return w.status();
  return std::unique_ptr<Doorbell>(std::make_unique<WaiterDoorbell>(std::move(*w)));
}

Result<std::unique_ptr<Doorbell>> Store::ArmReceipts() {
  MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->LoadOrCreate(txn, std::string(kReceiptsQueue));
    return q.ok() ? Status() : q.status();
  }));
  auto ref = ParseQueueRef(kReceiptsQueue);
  if (!ref.ok()) return ref.status();
  MQ_RETURN_IF_ERROR(impl_->CanWait());
  auto qid = impl_->QueueIdForWait(*ref, false);
  if (!qid.ok()) return qid.status();
  // Without the locks directory: the caller's own leases of the queue close lock files there.
  auto w = Waiter::Arm(impl_->paths.notify(*qid), impl_->file_mode);
  if (!w.ok()) return w.status();
  return std::unique_ptr<Doorbell>(std::make_unique<WaiterDoorbell>(std::move(*w)));
}

Result<int64_t> Store::NextDeadline(const QueueRef& ref) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto q = impl_->FindQueue(*txn, ref);
  if (!q.ok()) return q.status();
  return impl_->NextDeadline(*txn, q->id);
}

}  // namespace mq
