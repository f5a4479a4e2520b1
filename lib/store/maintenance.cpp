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

#include "base/codec.hpp"
#include "store/conversation.hpp"
#include "store/filelock.hpp"
#include "store/lmdb.hpp"
#include "base/paths.hpp"
#include "base/units.hpp"
#include "store/waiter.hpp"

namespace mq {

// Store::Check for the conversation indexes: every conversation message of a queue is in
// conv_msgs (ready), conv_kept (retained) or locked; counts of conversations, groups and
// queues agree; each free group with ready messages has the group_sel entry of its head.
void Store::Impl::CheckConversations(lmdb::Txn& t, const std::map<uint32_t, QueueInfo>& by_qid,
                                     const std::function<void(std::string)>& problem) {
  std::map<Guid, uint64_t> conv_count;
  std::map<std::pair<uint32_t, Guid>, uint64_t> group_count, group_locked, group_convs;
  std::map<uint32_t, uint64_t> retained;
  uint64_t ready = 0, kept = 0;
  msgs.ForEachRecord(t, [&](uint32_t qid, uint64_t lookup, std::string_view rec) {
      auto qit = by_qid.find(qid);
      if (qit == by_qid.end()) return;
      const QueueInfo& q = qit->second;
      Message m;
      m.lookup_id = lookup;
      if (!DecodeRecord(rec, m).ok()) return;
      if (!IsConvMessage(q, m)) {
        if (m.status == 0) retained[qid]++;  // a plain message kept by RETENTION ON
        return;
      }
      std::string where = fmt::format("queue {} lookup id {}", q.name, m.lookup_id);
      auto cr = LoadConv(t, m.conversation_handle);
      if (!cr.ok() || !*cr || (*cr)->qid != qid) {
        problem(where + ": its conversation is not in the queue");
        return;
      }
      const ConvRecord& cv = **cr;
      conv_count[m.conversation_handle]++;
      group_count[{qid, cv.group}]++;
      if (m.priority != cv.priority)
        problem(where + ": priority differs from its conversation's");
      if (m.message_sequence_number >= cv.next_seq)
        problem(where + ": sequence number not below the conversation's next");
      std::string key = OrderKeyFor(q, m);
      bool is_locked = msgs.IsLocked(t, key);
      if (is_locked) group_locked[{qid, cv.group}]++;
      if (m.status == 0) {
        ++kept;
        retained[qid]++;
        auto v = t.Get(conv_kept, KeptKey(m.conversation_handle, m.message_sequence_number));
        if (!v || v->size() != 8 || GetU64BE(*v, 0) != m.lookup_id)
          problem(where + ": retained message missing from conv_kept");
      } else if (!is_locked) {
        ++ready;
        auto v = t.Get(conv_msgs, ConvMsgKeyOf(q, cv, m));
        if (!v || v->size() != 8 || GetU64BE(*v, 0) != m.lookup_id)
          problem(where + ": ready conversation message missing from conv_msgs");
      }
  });
  if (t.Count(conv_msgs) != ready)
    problem(fmt::format("conv_msgs has {} entries for {} ready conversation messages",
                        t.Count(conv_msgs), ready));
  if (t.Count(conv_kept) != kept)
    problem(fmt::format("conv_kept has {} entries for {} retained messages",
                        t.Count(conv_kept), kept));
  for (const auto& [qid, q] : by_qid)
    if (q.retained != (retained.count(qid) ? retained[qid] : 0))
      problem(fmt::format("queue {}: counter says {} retained, found {}", q.name, q.retained,
                          retained.count(qid) ? retained[qid] : 0));
  {
    lmdb::Cursor c(t, convs);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      ConvRecord r;
      if (c.key().size() != 16 || !DecodeConv(c.value(), r)) {
        problem("convs: malformed record");
        continue;
      }
      Guid h = GuidFromBytes(c.key());
      std::string where = fmt::format("conversation {}", FormatGuid(h));
      uint64_t found = conv_count.count(h) ? conv_count[h] : 0;
      if (r.count != found)
        problem(fmt::format("{}: counter says {} messages, found {}", where, r.count, found));
      if (!by_qid.count(r.qid)) problem(where + ": its queue does not exist");
      if (!t.Get(conv_q, ConvQKey(r.qid, h))) problem(where + ": missing from conv_q");
      group_convs[{r.qid, r.group}]++;
    }
    if (t.Count(conv_q) != n)
      problem(fmt::format("conv_q has {} entries for {} conversations", t.Count(conv_q), n));
  }
  uint64_t with_sel = 0;
  {
    lmdb::Cursor c(t, groups);
    for (bool on = c.First(); on; on = c.Next()) {
      GroupRecord g;
      if (c.key().size() != 20 || !DecodeGroup(c.value(), g)) {
        problem("groups: malformed record");
        continue;
      }
      uint32_t qid = GetU32BE(c.key(), 0);
      Guid group = GuidFromBytes(c.key().substr(4));
      std::pair<uint32_t, Guid> id{qid, group};
      std::string where = fmt::format("group {}", FormatGuid(group));
      auto get = [](auto& m, const auto& k) -> uint64_t { return m.count(k) ? m[k] : 0; };
      if (g.count != get(group_count, id))
        problem(fmt::format("{}: counter says {} messages, found {}", where, g.count,
                            get(group_count, id)));
      if (g.locked != get(group_locked, id))
        problem(fmt::format("{}: counter says {} locked, found {}", where, g.locked,
                            get(group_locked, id)));
      if (g.convs != get(group_convs, id))
        problem(fmt::format("{}: counter says {} conversations, found {}", where, g.convs,
                            get(group_convs, id)));
      std::string want;
      if (g.locked == 0) {
        std::string prefix = ConvMsgGroupPrefix(qid, group);
        lmdb::Cursor h(t, conv_msgs);
        if (h.SeekGe(prefix) && HasPrefix(h.key(), prefix) && h.value().size() == 8)
          want = GroupSelKey(qid, static_cast<uint8_t>(7 - static_cast<uint8_t>(h.key()[20])),
                             GetU64BE(h.value(), 0), group);
      }
      if (g.sel_key != want) problem(where + ": group_sel entry is not its head");
      if (!g.sel_key.empty()) {
        ++with_sel;
        if (!t.Get(group_sel, g.sel_key)) problem(where + ": its group_sel entry is missing");
      }
    }
  }
  if (t.Count(group_sel) != with_sel)
    problem(fmt::format("group_sel has {} entries for {} receivable groups",
                        t.Count(group_sel), with_sel));
}

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
  auto format = t.Get(impl_->meta, "format");
  if (!format || format->size() != 4) problem("meta: no format record");
  if (!t.Get(impl_->meta, "guid")) problem("meta: no store GUID");

  std::map<uint32_t, QueueInfo> by_qid;
  {
    lmdb::Cursor c(t, impl_->queues);
    for (bool on = c.First(); on; on = c.Next()) {
      QueueInfo q;
      q.name = std::string(c.key());
      Status s = DecodeQueue(c.value(), q);
      if (!s.ok()) {
        problem(fmt::format("queue {}: {}", q.name, s.text()));
        continue;
      }
      if (!ParseQueueRef(q.name).ok()) problem(fmt::format("queue {}: invalid name", q.name));
      auto back = t.Get(impl_->queue_ids, QueueIdKey(q.id));
      if (!back || *back != q.name)
        problem(fmt::format("queue {}: id {} is not mapped back to it", q.name, q.id));
      if (!by_qid.emplace(q.id, q).second)
        problem(fmt::format("queue {}: id {} is used twice", q.name, q.id));
    }
  }
  if (t.Count(impl_->queue_ids) != by_qid.size())
    problem(fmt::format("queue_ids has {} entries for {} queues", t.Count(impl_->queue_ids),
                        by_qid.size()));

  // Each queue's id source: no message may carry an id it has not given out yet (the next
  // send would then make that id again).
  std::map<std::string, const QueueInfo*> id_sources;
  for (auto& [qid, q] : by_qid)
    if (q.id_guid.size() == 16 && !id_sources.emplace(q.id_guid, &q).second)
      problem(fmt::format("queue {}: its message id GUID is another queue's too", q.name));

  impl_->msgs.Check(t, by_qid, id_sources, problem);
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
      return Status(Code::kInvalidArg, "backup target exists and is not an empty directory", dir);
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

Result<CompactReport> Store::Compact() {
  if (!impl_->alone || impl_->compacted)
    return Status(Code::kTransactionUsage, "compact needs the store opened alone", impl_->dir);
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
  return z;
}

Status Store::ShareWithGroup(const std::string& group_name) {
  struct group* g = getgrnam(group_name.c_str());
  if (!g) return Status(Code::kInvalidArg, fmt::format("no such group '{}'", group_name));
  gid_t gid = g->gr_gid;
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
