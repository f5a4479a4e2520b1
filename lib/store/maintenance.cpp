// maintenance.cpp: `mq-admin check` (every index against the messages and
// counters), backup (LMDB's compacting copy) and making a store group-shared.
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

#include "base/accounts.hpp"
#include "base/codec.hpp"
#include "base/paths.hpp"
#include "base/units.hpp"
#include "store/conversation.hpp"
#include "store/filelock.hpp"
#include "store/lmdb.hpp"
#include "store/waiter.hpp"

namespace mq {

Status Store::Check(std::vector<std::string>& problems) {
  // A damaged page found by any read below is noted in `problems` and the walk goes on
  // (lmdb.hpp); a fault that cannot be survived ends the process with what was found so far
  // and the tree being walked.
  lmdb::RecordDamage(&problems);
  struct Stop {
    ~Stop() {
      lmdb::RecordDamage(nullptr);
      lmdb::SetDamageContext("");
    }
  } stop;
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto& t = *txn;
  auto problem = [&](std::string s) {
    if (problems.size() < 1000) problems.push_back(std::move(s));
  };
  // First every page of every tree, the free-page list and the catalog of databases
  // included: each entry's key and value bytes are read, and the count must be the tree's.
  {
    std::vector<std::pair<std::string, lmdb::Dbi>> trees = {{"the free-page list", 0},
                                                             {"the database catalog", 1}};
    impl_->ForEachDb([&](const char* name, lmdb::Dbi dbi) {
      trees.emplace_back(fmt::format("database {}", name), dbi);
    });
    for (const auto& [name, dbi] : trees) {
      lmdb::SetDamageContext("walking " + name);
      size_t before = problems.size();
      uint64_t n = 0, sum = 0;
      lmdb::Cursor c(t, dbi);
      for (bool on = c.First(); on; on = c.Next()) {
        ++n;
        for (char ch : c.key()) sum += static_cast<unsigned char>(ch);
        for (char ch : c.value()) sum += static_cast<unsigned char>(ch);
      }
      (void)sum;
      if (problems.size() == before && n != t.Count(dbi))
        problem(fmt::format("{}: {} entries found, {} counted in its root", name, n, t.Count(dbi)));
      else if (problems.size() != before)
        problem(fmt::format("{}: damaged; {} entries could be read", name, n));
    }
    lmdb::SetDamageContext("checking the indexes");
  }
  auto format = impl_->GetMeta(t, "format");
  if (!format || format->size() != 4) problem("meta: no format record");
  else if (GetU32BE(*format, 0) >= 2 && impl_->GetMeta(t, "id_prefix").value_or("").size() != 12)
    problem("meta: a store of format 2 without its 12-byte id prefix");
  if (!impl_->GetMeta(t, "guid")) problem("meta: no store GUID");

  std::map<uint32_t, QueueInfo> by_qid;
  impl_->CheckCatalog(t, by_qid, problem);

  // Each queue's id source: no message may carry an id it has not given out yet (the next
  // send would then make that id again).
  std::map<std::string, const QueueInfo*> id_sources;
  for (auto& [qid, q] : by_qid)
    if (q.id_guid.size() == 16 && !id_sources.emplace(q.id_guid, &q).second)
      problem(fmt::format("queue {}: its message id GUID is another queue's too", q.name));

  impl_->msgs.Check(t, by_qid, id_sources, problem);
  impl_->CheckLeases(t, problem);
  impl_->CheckConversations(t, by_qid, problem);
  return {};
}

namespace {

// Gives a directory the mode and group of a store (group -1: keep).
Status SetDirMode(const std::string& dir, mode_t mode, gid_t gid) {
  if (gid != static_cast<gid_t>(-1) && ::chown(dir.c_str(), static_cast<uid_t>(-1), gid) != 0)
    return ErrnoStatus(errno, dir, "cannot set the group");
  if (::chmod(dir.c_str(), mode) != 0) return ErrnoStatus(errno, dir, "cannot set the mode");
  return {};
}

}  // namespace

Status Store::Backup(const std::string& dir) {
  bool group = impl_->file_mode == 0660;
  mode_t dir_mode = group ? 02770 : 0700;
  struct stat src;
  gid_t gid = static_cast<gid_t>(-1);
  if (group && ::stat(impl_->dir.c_str(), &src) == 0) gid = src.st_gid;
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode) || !DirIsEmpty(dir))
      return Status::InvalidArg("backup target exists and is not an empty directory", dir);
  } else {
    MQ_RETURN_IF_ERROR(MakeParents(dir));
    MQ_RETURN_IF_ERROR(MakeDir(dir, dir_mode));
  }
  // The copy is a store like its source: same mode, and for a shared store the same group
  // (the setgid directory passes it on to the files made in it).
  MQ_RETURN_IF_ERROR(SetDirMode(dir, dir_mode, gid));
  mode_t old_umask = ::umask(group ? 007 : 077);
  Status copied = impl_->env.CopyTo(dir);
  StorePaths paths(dir);
  if (copied.ok()) copied = MakeDir(paths.locks_dir(), dir_mode);
  if (copied.ok()) copied = MakeDir(paths.notify_dir(), dir_mode);
  ::umask(old_umask);
  MQ_RETURN_IF_ERROR(copied);
  MQ_RETURN_IF_ERROR(SetDirMode(paths.locks_dir(), dir_mode, gid));
  MQ_RETURN_IF_ERROR(SetDirMode(paths.notify_dir(), dir_mode, gid));
  if (::chmod(paths.data().c_str(), group ? 0660 : 0600) != 0)
    return ErrnoStatus(errno, paths.data(), "cannot set the mode");
  return {};
}

uint32_t Store::format() const { return impl_->format; }

Result<Store::UpgradeReport> Store::Upgrade() {
  if (!impl_->alone || impl_->compacted)
    return Status::TransactionUsage("upgrade needs the store opened alone", impl_->dir);
  UpgradeReport report;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    report.queues = 0;
    MQ_RETURN_IF_ERROR(impl_->LoadFormat(txn));
    report.before = impl_->format;
    if (impl_->format >= kFormatVersion) return {};
    if (impl_->format < 2) {
      // Format 1 -> 2: the store's id prefix, and each queue's id source starts over from it
      // (a GUID never used before, so every id stays unique). The messages keep their by_id
      // entries: their ids are not native.
      Guid fresh = NewGuid();
      std::string prefix(GuidBytes(fresh).substr(0, 12));
      MQ_RETURN_IF_ERROR(impl_->PutMeta(txn, "id_prefix", prefix));
      auto all = impl_->AllQueues(txn);
      if (!all.ok()) return all.status();
      for (QueueInfo& q : *all) {
        q.id_guid = prefix;
        PutU32BE(q.id_guid, q.id);
        q.id_counter = 0;
        MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, q));
        ++report.queues;
      }
    }
    // Format 2 -> 3: nothing to rewrite. The whole records already there still decode; the
    // records written from now on are lean.
    // Format 3 -> 4: every record to its order key, `order` gone, the Locked marks ranges.
    report.messages = 0;
    if (impl_->format < 4) {
      auto moved = impl_->msgs.Upgrade4(txn);
      if (!moved.ok()) return moved.status();
      report.messages = *moved;
    }
    std::string v;
    PutU32BE(v, kFormatVersion);
    MQ_RETURN_IF_ERROR(impl_->PutMeta(txn, "format", v));
    return impl_->LoadFormat(txn);
  });
  if (!s.ok()) {
    // What this process knows of the store is what is on disk again.
    auto txn = lmdb::Txn::Begin(impl_->env, false);
    if (txn.ok()) (void)impl_->LoadFormat(*txn);
    return s;
  }
  report.after = impl_->format;
  return report;
}

Result<CompactReport> Store::Compact() {
  if (!impl_->alone || impl_->compacted)
    return Status::TransactionUsage("compact needs the store opened alone", impl_->dir);
  const StorePaths& p = impl_->paths;
  std::string tmp = p.compact_dir();
  StorePaths tp(tmp);
  // What a compaction that died left behind.
  ::unlink(tp.data().c_str());
  ::unlink(tp.lock().c_str());
  ::rmdir(tmp.c_str());
  MQ_RETURN_IF_ERROR(MakeDir(tmp, 0700));
  CompactReport r;
  struct stat st;
  if (::stat(p.data().c_str(), &st) == 0) r.before = static_cast<uint64_t>(st.st_size);
  Status copied = impl_->env.CopyTo(tmp);
  if (copied.ok()) {
    // The new file must be on disk before its name replaces the old one.
    int fd = ::open(tp.data().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      copied = ErrnoStatus(errno, tp.data(), "cannot open the copy");
    } else {
      if (::fchmod(fd, impl_->file_mode) != 0 || ::fsync(fd) != 0)
        copied = ErrnoStatus(errno, tp.data(), "cannot sync the copy");
      AdoptFd(fd);
      if (::fstat(fd, &st) == 0) r.after = static_cast<uint64_t>(st.st_size);
      ::close(fd);
    }
  }
  if (!copied.ok()) {
    ::unlink(tp.data().c_str());
    ::rmdir(tmp.c_str());
    return copied;
  }
  if (::rename(tp.data().c_str(), p.data().c_str()) != 0) {
    Status s = ErrnoStatus(errno, p.data(), "cannot put the compacted copy in place");
    ::unlink(tp.data().c_str());
    ::rmdir(tmp.c_str());
    return s;
  }
  impl_->compacted = true;
  // LMDB's lock file describes the old file (its readers, its last transaction): the next
  // user makes a new one. No one has it open: the store lock is ours alone.
  ::unlink(p.lock().c_str());
  ::rmdir(tmp.c_str());
  int dfd = ::open(p.dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    int rc = ::fsync(dfd);
    int err = errno;
    ::close(dfd);
    if (rc != 0) return ErrnoStatus(err, p.dir(), "cannot sync the store directory");
  }
  return r;
}

Result<Store::Sizes> Store::FileSizes() {
  Sizes z;
  struct stat st;
  if (::stat(impl_->paths.data().c_str(), &st) != 0)
    return ErrnoStatus(errno, impl_->paths.data(), "cannot stat");
  z.file = static_cast<uint64_t>(st.st_size);
  z.used = impl_->env.UsedBytes();
  auto free = impl_->env.FreeBytes();
  if (!free.ok()) return free.status();
  z.free = *free;
  return z;
}

Status Store::ShareWithGroup(const std::string& group_name) {
  auto g = GroupByName(group_name);
  if (!g) return Status::InvalidArg(fmt::format("no such group '{}'", group_name));
  gid_t gid = *g;
  const StorePaths& p = impl_->paths;
  for (const std::string& d : {p.dir(), p.locks_dir(), p.notify_dir()}) {
    MQ_RETURN_IF_ERROR(SetDirMode(d, 02770, gid));
    if (d == p.dir()) continue;
    std::unique_ptr<DIR, int (*)(DIR*)> dh(opendir(d.c_str()), closedir);
    while (dh && (errno = 0, true)) {
      dirent* e = readdir(dh.get());
      if (!e) break;
      if (e->d_name[0] == '.') continue;
      std::string f = d + "/" + e->d_name;
      if (::chown(f.c_str(), static_cast<uid_t>(-1), gid) != 0 || ::chmod(f.c_str(), 0660) != 0)
        return ErrnoStatus(errno, f, "cannot share");
    }
  }
  for (const std::string& f : {p.data(), p.lock()}) {
    if (::chown(f.c_str(), static_cast<uid_t>(-1), gid) != 0 || ::chmod(f.c_str(), 0660) != 0)
      return ErrnoStatus(errno, f, "cannot share");
  }
  impl_->file_mode = 0660;
  return {};
}

}  // namespace mq
