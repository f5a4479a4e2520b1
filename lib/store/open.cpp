// open.cpp: opening a store (directory, LMDB environment, meta record and
// format check, databases), the write path every operation runs through (map growth, the
// size limit, a full disk, doorbells after commit), the source of message ids, and the size
// limit.
#include "store/store_impl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/resource.h>
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
#include <lmdb.h>

#include "base/accounts.hpp"
#include "base/codec.hpp"
#include "base/paths.hpp"
#include "base/units.hpp"
#include "store/conversation.hpp"
#include "store/filelock.hpp"
#include "store/lmdb.hpp"
#include "store/waiter.hpp"

namespace mq {

namespace {

std::mutex g_open_mu;
// One env per directory per process, by the directory's device and inode (no realpath: it
// costs a readlink per path component at every start).
std::set<std::pair<dev_t, ino_t>> g_open_dirs;
// The process the set is of: a child of fork() has none of its parent's envs to use (LMDB:
// an env is not used after fork), so it may open each store afresh.
pid_t g_open_pid = 0;

void ForgetParentsStores() {
  if (g_open_pid == ::getpid()) return;
  g_open_dirs.clear();
  g_open_pid = ::getpid();
}

}  // namespace

const Store::Impl::NamedDb Store::Impl::kNamedDbs[14] = {
    {"meta", &Impl::meta},           {"queues", &Impl::queues},
    {"queue_ids", &Impl::queue_ids}, {"cursors", &Impl::cursors},
    {"leases", &Impl::leases},       {"dedup", &Impl::dedup},
    {"dedup_exp", &Impl::dedup_exp},
    // conversations (conversation.hpp)
    {"convs", &Impl::convs},         {"conv_q", &Impl::conv_q},
    {"groups", &Impl::groups},       {"conv_msgs", &Impl::conv_msgs},
    {"group_sel", &Impl::group_sel}, {"conv_kept", &Impl::conv_kept},
    {"msg_types", &Impl::msg_types}};

void Store::Impl::ForEachDb(
    const std::function<void(const char* name, lmdb::Dbi dbi)>& fn) const {
  for (const NamedDb& d : kNamedDbs) fn(d.name, this->*d.dbi);
  msgs.ForEachDb(fn);
}

std::string Store::Impl::NewMessageId(QueueInfo& q) const {
  std::string id;
  NewMessageIdInto(q, id);
  return id;
}

// A queue's id source is its GUID and a 4-byte counter. Its first GUID is fresh (a GUID is
// never shared by two counters, so ids stay unique without a shared write), and so is the
// next one when the counter is spent; queues of stores made before ids were per queue took
// theirs from meta's "id_guid". In a format 2 store the first GUID is the store's id prefix
// and the queue id, and the counter jumps to the queue's next lookup id when that is ahead:
// the id of a message sent then names its queue and lookup id (native ids,
// message_table.hpp).
void Store::Impl::NewMessageIdInto(QueueInfo& q, std::string& id) const {
  bool native_source = id_prefix.size() == 12 && q.id_guid.size() == 16 &&
                       q.id_guid.compare(0, 12, id_prefix) == 0 && GetU32BE(q.id_guid, 12) == q.id;
  if (q.id_guid.size() != 16 || q.id_counter == UINT32_MAX) {
    if (q.id_guid.size() != 16 && id_prefix.size() == 12) {
      q.id_guid = id_prefix;
      PutU32BE(q.id_guid, q.id);
      native_source = true;
    } else {
      q.id_guid = GuidBytes(NewGuid());
      native_source = false;
    }
    q.id_counter = 0;
  }
  uint32_t counter = q.id_counter + 1;
  if (native_source && q.next_lookup > counter && q.next_lookup <= UINT32_MAX)
    counter = static_cast<uint32_t>(q.next_lookup);
  q.id_counter = counter;
  id.assign(q.id_guid);  // the GUID's 16 bytes, then the counter big-endian (MakeMessageId)
  PutU32BE(id, counter);
}

Status Store::Impl::LoadFormat(lmdb::Txn& txn) {
  auto f = GetMeta(txn, "format");
  if (!f || f->size() != 4) return Status::Corrupted("bad format record", dir);
  format = GetU32BE(*f, 0);
  if (format > kFormatVersion)
    return Status::Error(fmt::format("store format {} is newer than this mq understands ({}); "
                                     "upgrade mq or use the mq that made it",
                                     format, kFormatVersion),
                         dir);
  id_prefix.clear();
  if (format >= 2) {
    auto p = GetMeta(txn, "id_prefix");
    if (!p || p->size() != 12)
      return Status::Corrupted("format 2 store without its id prefix", dir);
    id_prefix.assign(*p);
  }
  msgs.SetIdPrefix(id_prefix);
  Guid store_guid{};
  if (auto g = GetMeta(txn, "guid"); g && g->size() == 16) store_guid = GuidFromBytes(*g);
  // Format 3: lean records, which leave out what the store says (message_table.hpp).
  msgs.SetLean(format >= 3 && !IsNil(store_guid), store_guid);
  return {};
}

Store::Impl::~Impl() {
  std::lock_guard<std::mutex> lock(g_open_mu);
  ForgetParentsStores();
  g_open_dirs.erase(dir_key);
}

// Runs `fn` in a write transaction and commits. A full map is grown and `fn` runs again;
// `rerun_after_commit` says whether that is allowed when the commit itself hit the limit
// (not when `fn` has written output that must not be written twice).
// A commit that need not reach the disk before the next one (locking for a transactional
// receive: losing it to a power cut only means a redelivery). The next durable commit's
// fdatasync takes its pages along.
Status Store::Impl::WriteLight(const std::function<Status(lmdb::Txn&)>& fn,
                               bool rerun_after_commit) {
  if (express) return Write(fn, rerun_after_commit);
  MQ_RETURN_IF_ERROR(env.SetNoMetaSync(true));
  Status s = Write(fn, rerun_after_commit);
  Status restored = env.SetNoMetaSync(false);
  return s.ok() ? restored : s;
}

Status Store::Impl::Write(const std::function<Status(lmdb::Txn&)>& fn, bool rerun_after_commit) {
  if (!read_only.empty())
    return Status::AccessDenied(fmt::format("the store is open read-only ({})", read_only), dir);
  // Grow before the map is nearly full rather than after: a transaction that must not run
  // twice (its output is written) would otherwise fail at its commit.
  // At the store's size limit the transaction still runs: it may fit.
  if (env.UsedBytes() > env.MapSize() / 8 * 7) {
    Status grown = Grow();
    if (!grown.ok() && grown.code() != Code::kInsufficientResources) return grown;
  }
  for (int attempt = 0;; ++attempt) {
    auto txn = lmdb::Txn::Begin(env, true);
    if (!txn.ok()) return txn.status();
    to_notify.clear();
    Status s = fn(*txn);
    if (s.ok() && !txn->active()) return s;  // fn committed itself
    bool from_commit = false;
    if (s.ok()) {
      s = txn->Commit();
      from_commit = true;
      if (!s.ok() && !txn->map_full()) {
        if (s.code() == Code::kIo) {
          // LMDB reports a short write as EIO ("filesystem full?"): say what it was.
          std::string why = ResourceShortage();
          if (!why.empty())
            return Status::InsufficientResources(why + "; nothing was written", dir);
        }
        if (s.code() == Code::kInsufficientResources)  // ENOSPC, EDQUOT, EFBIG from LMDB
          return Status(s.code(), s.text() + "; nothing was written", dir);
        return s.WithSubject(dir);
      }
      if (s.ok()) {
        for (uint32_t qid : to_notify) Notify(qid);
        to_notify.clear();
      }
    }
    if (s.ok() || !txn->map_full()) return s;
    txn->Abort();
    Status grown = Grow();
    if (!grown.ok()) return grown;
    if (from_commit && !rerun_after_commit)
      return Status::InsufficientResources("store map full at commit; retry", dir);
    if (attempt > 40) return Status::InsufficientResources("store is full", dir);
  }
}

// Why a commit's write failed with EIO (LMDB's word for a short write), if it was a resource:
// a full disk, the process's file-size limit (ulimit -f; SIGXFSZ is ignored, lmdb.cpp), or a
// disk quota, which only an allocation shows (a temporary file that never gets a name).
// Empty if none of these.
std::string Store::Impl::ResourceShortage() {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) == 0 &&
      static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < (1u << 20))
    return "no space left on the store's disk";
  struct rlimit rl;
  struct stat st;
  if (::getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      ::stat(paths.data().c_str(), &st) == 0 &&
      static_cast<uint64_t>(st.st_size) + (1u << 20) >= rl.rlim_cur)
    return fmt::format("data.mdb would pass the file-size limit of {} bytes (ulimit -f)",
                       static_cast<uint64_t>(rl.rlim_cur));
  int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return {};
  int rc = ::posix_fallocate(fd, 0, 1 << 20);
  ::close(fd);
  if (rc == EDQUOT) return "the disk quota of the store's owner is exhausted";
  if (rc == ENOSPC) return "no space left on the store's disk";
  if (rc == EFBIG) return "the file-size limit (ulimit -f) is reached";
  return {};
}

// The size limit of the store (SetMaxSize), read when needed: another process may set it.
uint64_t Store::Impl::MaxMapSize() {
  auto txn = lmdb::Txn::Begin(env, false);
  if (!txn.ok()) return kMaxMapSize;
  auto v = GetMeta(*txn, "max_size");
  if (!v || v->size() != 8) return kMaxMapSize;
  uint64_t limit = GetU64BE(*v, 0);
  return limit ? std::min(limit, kMaxMapSize) : kMaxMapSize;
}

Status Store::Impl::ApplyMaxMapSize() {
  uint64_t limit = MaxMapSize();
  if (env.MapSize() <= limit) return {};
  return env.SetMapSize(std::max(limit, env.UsedBytes()));
}

Status Store::Impl::Grow() {
  uint64_t cur = env.MapSize();
  uint64_t limit = MaxMapSize();
  if (cur >= limit)
    return Status::InsufficientResources(
        fmt::format("store is full: it reached its maximum size of {} bytes "
                    "(mq-admin init --max-store-size raises it)",
                    limit),
        dir);
  return env.SetMapSize(std::min(cur * 2, limit));
}

void Store::Impl::Notify(uint32_t qid) {
  // The doorbell: after the commit, so that a woken reader sees the new state.
  auto fd = OpenStoreFile(paths.notify(qid), O_WRONLY, file_mode);
  if (!fd.ok()) return;  // a planted file gets no ring; waiters still wake on their timeouts
  char b = 0;
  ssize_t ignored = ::pwrite(*fd, &b, 1, 0);
  (void)ignored;
  ::close(*fd);
}

Status Store::Impl::OpenDbs(lmdb::Txn& txn, bool create) {
  for (const NamedDb& d : kNamedDbs) {
    auto dbi = txn.OpenDb(d.name, create);
    if (!dbi.ok()) return dbi.status();
    this->*d.dbi = *dbi;
  }
  // A store being made is of this mq's format.
  return msgs.Open(txn, create, format ? format : kFormatVersion);
}

Status MakeDir(const std::string& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) == 0) {
    AdoptPath(dir);
    return {};
  }
  if (errno != EEXIST) return ErrnoStatus(errno, dir, "cannot create directory");
  return {};
}

Status MakeParents(const std::string& dir) {
  for (size_t pos = 1; (pos = dir.find('/', pos)) != std::string::npos; ++pos) {
    std::string p = dir.substr(0, pos);
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) continue;
    MQ_RETURN_IF_ERROR(MakeDir(p, 0755));
  }
  return {};
}

bool DirIsEmpty(const std::string& dir) {
  // Cheap: a store-to-be is empty; opendir would do, but stat of the LMDB files suffices for
  // the common case and readdir catches the rest.
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return false;
  while (dirent* e = readdir(d.get())) {
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) return false;
  }
  return true;
}

namespace {

// What InspectStoreFile found.
struct StoreFile {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  lmdb::DataTail tail;  // data.mdb: pages missing at its end (CheckDataFile)
};

// data.mdb and lock.mdb are checked on a descriptor opened with O_NOFOLLOW before LMDB opens
// them (no LMDB lock exists yet that closing the descriptor could drop, paths.hpp): a
// symbolic link, a file with other hard links, anything but a regular file, or a file of
// another owner than the store directory's (in a group store: of another group) is refused.
// data.mdb must also be as long as its meta pages say (a shorter one would be a SIGBUS).
// LMDB then opens the files by name; that data.mdb is still the same file is checked on its
// descriptor afterwards.
Status InspectStoreFile(const std::string& path, const struct stat& dir_st, bool data,
                        bool read_only, StoreFile& out) {
  // Opened as LMDB will (read-write, unless the store is opened read-only): the open is also
  // the permission check.
  int fd = ::open(path.c_str(),
                  (read_only ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return {};
    // A lock file a read-only open may not read: LMDB will not use it (MDB_NOLOCK).
    if (read_only && !data && (err == EACCES || err == EPERM)) return {};
    if (err == ELOOP)
      return Status::Corrupted(
          "is a symbolic link: refusing to open it (a store's files never are)", path);
    if (err == EISDIR) return Status::Corrupted("is not a regular file: refusing to open it", path);
    if (err == EACCES || err == EPERM || err == EROFS)
      return Status::AccessDenied(fmt::format("permission denied (need rw): {}",
                                              std::strerror(err)),
                                  path);
    return ErrnoStatus(err, path, "cannot open");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, path, "cannot stat");
  if (!S_ISREG(st.st_mode))
    return Status::Corrupted("is not a regular file: refusing to open it", path);
  if (st.st_nlink != 1)
    return Status::Corrupted(
        fmt::format("has {} hard links: refusing to open it (a store's files have one)",
                    st.st_nlink),
        path);
  bool group_store = (dir_st.st_mode & S_ISGID) != 0;
  if (st.st_uid != dir_st.st_uid && !(group_store && st.st_gid == dir_st.st_gid))
    return Status::Corrupted(
        fmt::format("is owned by uid {}, not by the store's owner (uid {}): refusing "
                    "to open it",
                    st.st_uid, dir_st.st_uid),
        path);
  if (data && st.st_size > 0) MQ_RETURN_IF_ERROR(lmdb::CheckDataFile(fd, path, &out.tail));
  out.exists = true;
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.size = st.st_size;
  return {};
}

// data.mdb ends before the last page its meta page counts (CheckDataFile): sound only if those
// pages are free, taken and given back by one transaction and so never written. Then the file
// is extended to hold them (zeros, under the writer lock, so no commit is writing there), and
// later opens need not look again; else the file was cut: damaged.
Status CheckDataTail(lmdb::Env& env, const lmdb::DataTail& tail, const std::string& path) {
  {
    // The size now, taken inside the read transaction: its snapshot's pages were all written
    // before it began (a commit writes its pages before its meta page), and concurrent commits
    // may have filled the tail since the file was inspected.
    auto txn = lmdb::Txn::Begin(env, false);
    if (!txn.ok()) return txn.status();
    struct stat now;
    int data_fd = env.DataFd();
    if (data_fd < 0 || ::fstat(data_fd, &now) != 0) return Status::Io("cannot stat data.mdb", path);
    uint64_t first = (static_cast<uint64_t>(now.st_size) + tail.page_size - 1) / tail.page_size;
    if (first > tail.last) return {};
    auto free = txn->PagesAreFree(first, tail.last);
    if (!free.ok()) return free.status().WithSubject(path);
    if (!*free)
      return Status::Corrupted(fmt::format("data.mdb is truncated: pages {} to {} are missing",
                                           first, tail.last),
                               path);
  }
  auto txn = lmdb::Txn::Begin(env, true);
  if (!txn.ok()) return {};  // a reader that cannot write: the pages are free, nothing to do
  struct stat st;
  int fd = env.DataFd();
  off_t want = static_cast<off_t>((tail.last + 1) * tail.page_size);
  if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_size < want) {
    [[maybe_unused]] int rc = ::ftruncate(fd, want);  // best effort: the file is sound either way
  }
  txn->Abort();
  return {};
}

// Takes the store lock (paths.hpp) on `path`, the marker: shared (`wait_ms` < 0), waiting for
// a compaction to finish, or exclusive, waiting at most `wait_ms` for every other user to
// close it (each close is an inotify event; a look every second besides). No marker (a store
// made before markers, or being made): no lock, and no compaction can be running.
Status TakeStoreLock(const std::string& path, int64_t wait_ms, OwnedFd& lock) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT && wait_ms < 0) return {};
    if (errno == ENOENT)
      return Status::ServiceNotAvailable(
          "the store has no mq-store marker yet: run any mq tool on it once, then "
          "compact",
          path);
    if (errno == ELOOP) return Status::Corrupted("is a symbolic link: refusing it", path);
    return ErrnoStatus(errno, path, "cannot open the store lock");
  }
  lock.fd = fd;
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, path, "cannot stat");
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
    return Status::Corrupted("is not a plain file of the store: refusing it", path);
  if (wait_ms < 0) {
    while (::flock(fd, LOCK_SH) != 0)
      if (errno != EINTR) return ErrnoStatus(errno, path, "cannot take the store lock");
    return {};
  }
  int in = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  OwnedFd watch;
  watch.fd = in;
  if (in >= 0) (void)::inotify_add_watch(in, path.c_str(), IN_CLOSE_NOWRITE | IN_CLOSE_WRITE);
  int64_t until = MonotonicMs() + wait_ms;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return {};
    if (errno != EWOULDBLOCK && errno != EINTR)
      return ErrnoStatus(errno, path, "cannot take the store lock");
    int64_t left = until - MonotonicMs();
    if (left <= 0)
      return Status::SharingViolation(
          "the store is in use by other processes (waits, mq-watch, receives): "
          "this needs it alone (compact, upgrade); stop them, or give --wait longer",
          path);
    struct pollfd p = {in, POLLIN, 0};
    (void)::poll(&p, in >= 0 ? 1 : 0, static_cast<int>(std::min<int64_t>(left, 1000)));
    char buf[4096];
    while (in >= 0 && ::read(in, buf, sizeof buf) > 0) {
    }
  }
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// The marker that says this directory holds an mq store (paths.hpp).
void WriteMarker(const std::string& path, const Guid& guid, unsigned mode) {
  auto fd = OpenStoreFile(path, O_WRONLY, mode);
  if (!fd.ok()) return;
  std::string text = fmt::format("mq store {}\n", FormatGuid(guid));
  ssize_t ignored = ::pwrite(*fd, text.data(), text.size(), 0);
  (void)ignored;
  ::close(*fd);
}

Status CheckAccess(const std::string& path, int mode, const char* what) {
  if (::access(path.c_str(), mode) == 0) return {};
  int err = errno;
  if (err == ENOENT) return {};
  return Status(err == EACCES || err == EPERM || err == EROFS ? Code::kAccessDenied : Code::kIo,
                fmt::format("{}: {}", what, std::strerror(err)), path);
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() = default;

const std::string& Store::dir() const { return impl_->dir; }

const Guid& Store::guid() const { return impl_->guid; }
uid_t Store::owner_uid() const { return impl_->owner_uid; }
bool Store::group_store() const { return (impl_->file_mode & 0060) != 0; }
const std::string& Store::read_only() const { return impl_->read_only; }

Status Store::SetExpress(bool on) {
  impl_->express = on;
  return impl_->env.SetNoMetaSync(on);
}

Result<std::unique_ptr<Store>> Store::Open(const OpenOptions& options) {
  std::string dir = options.dir;
  bool may_create = options.create;
  if (dir.empty()) {
    auto d = DefaultStoreDir();
    if (!d.ok()) return d.status();
    dir = *d;
    may_create = true;
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  StorePaths paths(dir);

  struct stat st;
  bool exists = ::stat(dir.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return ErrnoStatus(errno, dir, "cannot open store");
  if (exists && !S_ISDIR(st.st_mode))
    return Status::ServiceNotAvailable("not a store directory", dir);
  // A store the caller cannot write is refused, unless the caller only reads: then it is
  // opened read-only (a backup on read-only media, a snapshot, another account's store).
  std::string read_only;
  unsigned env_flags = 0;
  if (exists) {
    Status rwx = CheckAccess(dir, R_OK | W_OK | X_OK,
                             "permission denied on the store directory (need rwx)");
    if (!rwx.ok()) {
      if (!options.read_only_ok || rwx.code() != Code::kAccessDenied || options.create)
        return rwx;
      MQ_RETURN_IF_ERROR(CheckAccess(dir, R_OK | X_OK,
                                     "permission denied on the store directory (need rx to "
                                     "read it)"));
      bool rofs = ::access(dir.c_str(), W_OK) != 0 && errno == EROFS;
      env_flags = MDB_RDONLY;
      if (rofs) {
        // LMDB takes no reader locks there (it cannot write lock.mdb): nothing writes
        // through a read-only mount.
        read_only = "a read-only file system";
      } else if (::access(paths.lock().c_str(), R_OK | W_OK) == 0) {
        read_only = "no write permission on the store";
      } else {
        // No lock.mdb this process may write: no reader slot, so a writer could reuse the
        // pages being read. Said, not hidden.
        env_flags |= MDB_NOLOCK;
        read_only =
            "no write permission on the store or its lock file, so no reader lock either: a "
            "process writing to the store meanwhile could make what is read wrong";
      }
    }
  }
  // Whose a new store is: the caller's, or the named owner's. A store belongs to its
  // directory's owner, so an empty directory someone else made (under a sticky /tmp, say)
  // would hand them everything sent to it: refused, unless its owner is named.
  std::optional<uid_t> owner;
  gid_t owner_gid = static_cast<gid_t>(-1);  // the named owner's own group
  if (!options.owner.empty()) {
    auto pw = UserByName(options.owner);
    if (!pw) return Status::InvalidArg(fmt::format("no such user '{}'", options.owner));
    if (pw->uid != ::geteuid() && ::geteuid() != 0)
      return Status::AccessDenied(
          fmt::format("only root may make a store for another account ({})", options.owner),
          dir);
    owner = pw->uid;
    owner_gid = pw->gid;
  }
  if (options.create && exists && !PathExists(paths.data())) {
    uid_t wanted = owner.value_or(::geteuid());
    if (st.st_uid != wanted) {
      auto pw = UserById(st.st_uid);
      std::string who =
          pw ? fmt::format("uid {} ({})", st.st_uid, pw->name) : fmt::format("uid {}", st.st_uid);
      if (owner)
        return Status::InvalidArg(
            fmt::format("--owner {}, but the directory belongs to {}", options.owner, who),
            dir);
      return Status::AccessDenied(
          fmt::format("the directory belongs to {}, not to you: a store made here would be "
                      "theirs, and they could read all that is sent to it (name them with "
                      "--owner if that is meant)",
                      who),
          dir);
    }
  }
  // The store lock first: a compaction that runs now replaces data.mdb, and a file looked at
  // before it ends would not be the one opened after.
  OwnedFd store_lock;
  if (exists) {
    Status locked = TakeStoreLock(paths.marker(), options.exclusive_wait_ms, store_lock);
    // A read-only open that may not even read the marker reads without the store lock, as
    // it reads without a reader lock (said in its note): a compaction could pull data.mdb
    // from under it.
    bool unlocked_reader = !read_only.empty() && (env_flags & MDB_NOLOCK) &&
                           locked.code() == Code::kAccessDenied;
    if (!locked.ok() && !unlocked_reader) return locked;
  }
  StoreFile data_file, lock_file;
  if (exists) {
    bool ro = !read_only.empty();
    MQ_RETURN_IF_ERROR(InspectStoreFile(paths.data(), st, true, ro, data_file));
    MQ_RETURN_IF_ERROR(InspectStoreFile(paths.lock(), st, false, ro, lock_file));
  }
  bool has_data = data_file.exists;
  // A directory that held a store (its marker, or the lock and doorbell directories made once
  // a store proved itself) whose data.mdb is missing or empty is damage: making a new store
  // there would silently drop every queue.
  if (exists && (!has_data || data_file.size == 0) &&
      (PathExists(paths.marker()) || PathExists(paths.locks_dir()) ||
       PathExists(paths.notify_dir())))
    return Status::Corrupted(
        fmt::format("data.mdb is {}, but this directory holds an mq store: refusing "
                    "to make a new store over it (see mq(7) DAMAGE AND RECOVERY)",
                    has_data ? "empty" : "missing"),
        dir);
  bool group = exists ? (st.st_mode & S_ISGID) != 0 : !options.group.empty();
  bool creating = false;
  if (!has_data && !read_only.empty())
    return Status::AccessDenied("permission denied on the store directory (need rwx)", dir);
  if (!has_data) {
    if (!may_create)
      return Status::ServiceNotAvailable("store not found; mq-admin init creates it", dir);
    if (exists && !DirIsEmpty(dir))
      return Status::ServiceNotAvailable(
          "not an mq store (no data.mdb) and not empty; refusing to create one here", dir);
    creating = true;
  }

  gid_t gid = static_cast<gid_t>(-1);
  if (creating && !options.group.empty()) {
    auto g = GroupByName(options.group);
    if (!g) return Status::InvalidArg(fmt::format("no such group '{}'", options.group));
    gid = *g;
  }
  mode_t dir_mode = group ? 02770 : 0700;
  mode_t old_umask = ::umask(group ? 007 : 077);
  struct UmaskRestore {
    mode_t m;
    ~UmaskRestore() { ::umask(m); }
  } restore{old_umask};

  if (creating) {
    MQ_RETURN_IF_ERROR(MakeParents(dir));
    MQ_RETURN_IF_ERROR(MakeDir(dir, dir_mode));
    if (gid != static_cast<gid_t>(-1) && ::chown(dir.c_str(), static_cast<uid_t>(-1), gid) != 0)
      return ErrnoStatus(errno, dir, "cannot set the store's group");
    // A private store of the named owner's is in their own group too; a group store keeps
    // the group it names.
    if (owner && ::chown(dir.c_str(), *owner,
                         gid == static_cast<gid_t>(-1) ? owner_gid : static_cast<gid_t>(-1)) != 0)
      return ErrnoStatus(errno, dir, "cannot give the store to its owner");
    if (::chmod(dir.c_str(), dir_mode) != 0)
      return ErrnoStatus(errno, dir, "cannot set the store's mode");
  }
  struct stat owner_st = st;  // a directory made (or given its group) just now: look again
  if ((!exists || creating) && ::stat(dir.c_str(), &owner_st) != 0)
    return ErrnoStatus(errno, dir, "cannot open store");
  std::pair<dev_t, ino_t> dir_key{owner_st.st_dev, owner_st.st_ino};
  {
    std::lock_guard<std::mutex> lock(g_open_mu);
    ForgetParentsStores();
    if (!g_open_dirs.insert(dir_key).second)
      return Status::Error("store already open in this process", dir);
  }
  auto impl = std::make_unique<Impl>();
  impl->dir_key = dir_key;
  impl->store_lock.fd = std::exchange(store_lock.fd, -1);
  impl->alone = options.exclusive_wait_ms >= 0;
  impl->read_only = read_only;
  impl->dir = dir;
  impl->paths = paths;
  impl->file_mode = group ? 0660 : 0600;
  SetStoreOwner(owner_st.st_uid, owner_st.st_gid);
  impl->owner_uid = owner_st.st_uid;
  Status s = impl->env.Open(dir, impl->file_mode, kInitialMapSize, 32, env_flags);
  if (!s.ok()) return s.WithSubject(dir);
  {
    // Still the file inspected above (nothing swapped it in between), and one LMDB made is a
    // plain file of the store's owner.
    struct stat now;
    int fd = impl->env.DataFd();
    if (fd < 0 || ::fstat(fd, &now) != 0)
      return Status::Io("cannot stat the opened data.mdb", paths.data());
    if (data_file.exists && (now.st_dev != data_file.dev || now.st_ino != data_file.ino))
      return Status::Corrupted("data.mdb was replaced while it was being opened", paths.data());
    if (!S_ISREG(now.st_mode) || now.st_nlink != 1)
      return Status::Corrupted("is not a plain file: refusing it", paths.data());
    if (!data_file.exists && read_only.empty()) AdoptPath(paths.data());
    if (!lock_file.exists && read_only.empty()) AdoptPath(paths.lock());
  }
  impl->env.ReaderCheck();
  if (data_file.exists && data_file.tail.first <= data_file.tail.last)
    MQ_RETURN_IF_ERROR(CheckDataTail(impl->env, data_file.tail, paths.data()));

  // Read the meta record; create the databases on first use, and any database a newer mq
  // added to an existing store of the same format.
  enum class Found { kStore, kEmpty, kForeign };
  Found found = Found::kForeign;
  bool missing_db = false;
  {
    auto txn = lmdb::Txn::Begin(impl->env, false);
    if (!txn.ok()) return txn.status();
    auto meta = txn->OpenDb("meta", false);
    if (meta.ok()) {
      impl->meta = *meta;
      MQ_RETURN_IF_ERROR(impl->LoadFormat(*txn));
      auto g = impl->GetMeta(*txn, "guid");
      if (!g || g->size() != 16) return Status::Corrupted("store has no GUID", dir);
      impl->guid = GuidFromBytes(*g);
      found = Found::kStore;
      missing_db = !impl->OpenDbs(*txn, false).ok();
      if (!missing_db) MQ_RETURN_IF_ERROR(txn->Commit());  // keeps the database handles
    } else {
      // An environment with nothing in it is a store whose creation was cut short.
      auto main_db = txn->OpenDb(nullptr, false);
      if (main_db.ok() && txn->Count(*main_db) == 0) found = Found::kEmpty;
    }
  }
  if (found == Found::kForeign)
    return Status::Corrupted(
        "not an mq store: data.mdb has no mq meta record (a foreign LMDB file?)", dir);
  if ((found == Found::kEmpty || missing_db) && !read_only.empty())
    return Status::AccessDenied(
        found == Found::kEmpty
            ? "the store's creation was cut short, and a read-only open cannot finish it"
            : "an older mq made this store, and a read-only open cannot add what this mq needs",
        dir);
  if (found == Found::kEmpty || missing_db) {
    s = impl->Write([&](lmdb::Txn& w) -> Status {
      MQ_RETURN_IF_ERROR(impl->OpenDbs(w, true));
      if (impl->GetMeta(w, "format")) return {};  // an existing store, or another process won
      std::string v;
      PutU32BE(v, kFormatVersion);
      MQ_RETURN_IF_ERROR(impl->PutMeta(w, "format", v));
      MQ_RETURN_IF_ERROR(impl->PutMeta(w, "guid", GuidBytes(NewGuid())));
      MQ_RETURN_IF_ERROR(impl->PutMeta(w, "id_guid", GuidBytes(NewGuid())));
      MQ_RETURN_IF_ERROR(impl->PutMeta(w, "id_prefix", GuidBytes(NewGuid()).substr(0, 12)));
      for (const char* name : {"system;deadletter", "system;deadxact", "system;journal"}) {
        auto q = impl->NewQueue(w, name);
        if (!q.ok()) return q.status();
      }
      return {};
    });
    if (!s.ok()) return s.WithSubject(dir);
    auto t2 = lmdb::Txn::Begin(impl->env, false);
    if (!t2.ok()) return t2.status();
    MQ_RETURN_IF_ERROR(impl->OpenDbs(*t2, false));
    auto g = t2->Get(impl->meta, "guid");
    if (!g || g->size() != 16) return Status::Corrupted("store has no GUID", dir);
    impl->guid = GuidFromBytes(*g);
    MQ_RETURN_IF_ERROR(impl->LoadFormat(*t2));  // this process's, or the one that won
    MQ_RETURN_IF_ERROR(t2->Commit());
  }
  // A store with a size limit below the starting map: map only that much (and at least what
  // is used), so that Grow and LMDB refuse to go past it.
  MQ_RETURN_IF_ERROR(impl->ApplyMaxMapSize());
  // A store of an older format is refused once it has its marker (an mq that made it before
  // markers existed leaves none), so that mq-admin upgrade can take it alone.
  Status older;
  if (impl->format < kFormatVersion && !options.older_format_ok)
    older = Status::Error(fmt::format("store format {} is older than this mq's ({}): run "
                                      "mq-admin upgrade (when no other process has the store "
                                      "open)",
                                      impl->format, kFormatVersion),
                          dir);
  if (!read_only.empty()) {
    MQ_RETURN_IF_ERROR(older);
    return std::unique_ptr<Store>(new Store(std::move(impl)));
  }
  // Only now that the directory has proved to be an mq store: its lock and doorbell dirs,
  // and its marker.
  MQ_RETURN_IF_ERROR(MakeDir(paths.locks_dir(), dir_mode));
  MQ_RETURN_IF_ERROR(MakeDir(paths.notify_dir(), dir_mode));
  if (impl->store_lock.fd < 0) {  // no marker when the store lock was taken: write it
    WriteMarker(paths.marker(), impl->guid, impl->file_mode);
    OwnedFd lock;
    MQ_RETURN_IF_ERROR(TakeStoreLock(paths.marker(), -1, lock));
    impl->store_lock.fd = std::exchange(lock.fd, -1);
  }
  MQ_RETURN_IF_ERROR(older);
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Status Store::SetMaxSize(uint64_t bytes) {
  if (bytes && bytes < impl_->env.UsedBytes())
    return Status::InvalidArg(fmt::format("the store already uses {} bytes, more than {}",
                                          impl_->env.UsedBytes(), bytes),
                              impl_->dir);
  MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
    std::string v;
    PutU64BE(v, bytes);
    return impl_->PutMeta(txn, "max_size", v);
  }));
  return impl_->ApplyMaxMapSize();
}

std::optional<std::string_view> Store::Impl::GetMeta(lmdb::Txn& txn, std::string_view key) {
  return txn.Get(meta, key);
}

Status Store::Impl::PutMeta(lmdb::Txn& txn, std::string_view key, std::string_view value) {
  return txn.Put(meta, key, value);
}

Result<bool> Store::Impl::DelMeta(lmdb::Txn& txn, std::string_view key) {
  return txn.Del(meta, key);
}

void Store::Impl::ScanMeta(
    lmdb::Txn& txn, std::string_view prefix,
    const std::function<bool(std::string_view key, std::string_view value)>& fn) {
  lmdb::Cursor c(txn, meta);
  for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next())
    if (!fn(c.key(), c.value())) return;
}

}  // namespace mq
