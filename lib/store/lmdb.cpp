// lmdb.cpp: the only file that includes <lmdb.h>. See lmdb.hpp for the contracts.
#include "store/lmdb.hpp"

#include <lmdb.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace mq::lmdb {

namespace {

MDB_val Val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view View(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

// Damage reporting: see lmdb.hpp. Everything the signal handler touches is set up before.
volatile sig_atomic_t g_txn_depth = 0;  // transactions open in this process
std::vector<std::string>* g_recorded = nullptr;
char g_context[200] = "";

void WriteAll(const char* s, size_t n) {
  while (n) {
    ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}
void WriteStr(const char* s) { WriteAll(s, std::strlen(s)); }

// Reports damage and ends the process with exit 10. Async-signal-safe (write, _exit).
[[noreturn]] void DieDamaged(const char* what) {
  if (g_recorded)
    for (const std::string& p : *g_recorded) {
      WriteAll(p.data(), p.size());
      WriteStr("\n");
    }
  WriteStr(program_invocation_short_name);
  WriteStr(": store damaged (");
  WriteStr(what);
  WriteStr(")");
  if (g_context[0]) {
    WriteStr(" while ");
    WriteStr(g_context);
  }
  WriteStr(
      ": run mq-admin check; mq(7) DAMAGE AND RECOVERY says what to do (MQ_CORRUPTED_STORE)\n");
  ::_exit(10);
}

void OnFault(int sig, siginfo_t*, void*) {
  if (sig == SIGBUS) DieDamaged("a page of data.mdb is past the end of the file");
  if (g_txn_depth > 0) DieDamaged("a page of data.mdb points outside the store");
  // Not a store access: the default action (SA_RESETHAND restored it).
  ::raise(sig);
}

void OnAssert(MDB_env*, const char* msg) { DieDamaged(msg ? msg : "LMDB assertion"); }

void InstallFaultHandlers() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction sa {};
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
  sigaction(SIGSEGV, &sa, nullptr);
  // Past the file-size limit (ulimit -f) write(2) is to fail with EFBIG, which the store
  // reports as a resource error, rather than kill the process mid-commit.
  ::signal(SIGXFSZ, SIG_IGN);
}

// A read that failed because a page is damaged (other failures stay "not found").
void ReadDamage(int rc, const char* op) {
  if (rc != MDB_CORRUPTED && rc != MDB_PAGE_NOTFOUND && rc != MDB_INVALID && rc != EIO) return;
  std::string what = fmt::format("{}: {}", op, mdb_strerror(rc));
  if (!g_recorded) DieDamaged(what.c_str());
  g_recorded->push_back(g_context[0] ? fmt::format("{} while {}", what, g_context) : what);
}

uint64_t Le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint32_t Le32(const unsigned char* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24;
}

// An exclusive flock of the store's directory while LMDB opens or closes an environment
// there, so that opens and closes of one store happen one at a time.
//
// LMDB's first opener (re)makes lock.mdb while it holds an fcntl lock of its own; an opener
// that waits for that lock and gets it after the maker died does not make it again, and the
// last one to close destroys its mutexes the same way. A process killed in between (SIGKILL
// is everyday use for mq) left the next opener a lock.mdb whose last transaction id was 0:
// its write transaction started from the older of the two meta pages, and its commit
// went to the slot readers do not pick: the last transaction committed before, and what
// was written after, were lost without an error (test_open_kill; test_kill_random saw a
// message lost and another delivered twice). Under this lock an opener that finds the maker
// of lock.mdb gone gets LMDB's exclusive lock itself and makes it again.
//
// The lock is best effort where the directory cannot be opened for reading (LMDB opens its
// files by name all the same). A process stopped while it holds the lock (SIGSTOP inside
// an open) makes others wait, at most kWaitMs, before they say so.
class OpenCloseLock {
 public:
  static constexpr int64_t kWaitMs = 30'000;

  explicit OpenCloseLock(const std::string& dir) {
    if (dir.empty()) return;
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) return;
    for (int64_t waited_us = 0;; waited_us += 1000) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK || waited_us >= kWaitMs * 1000) {
        status_ = errno == EWOULDBLOCK
                      ? Status::IoTimeout(
                            fmt::format("another process has been opening or closing the store "
                                        "for {} s (stopped?)",
                                        kWaitMs / 1000),
                            dir)
                      : ErrnoStatus(errno, dir, "cannot lock the store directory");
        ::close(fd_);
        fd_ = -1;
        return;
      }
      ::usleep(1000);
    }
  }
  ~OpenCloseLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the description drops the lock
  }
  OpenCloseLock(const OpenCloseLock&) = delete;
  OpenCloseLock& operator=(const OpenCloseLock&) = delete;
  const Status& status() const { return status_; }

 private:
  int fd_ = -1;
  Status status_;
};

}  // namespace

void RecordDamage(std::vector<std::string>* sink) { g_recorded = sink; }

void SetDamageContext(const std::string& context) {
  size_t n = std::min(context.size(), sizeof g_context - 1);
  std::memcpy(g_context, context.data(), n);
  g_context[n] = 0;
}

Status CheckDataFile(int fd, const std::string& path, DataTail* tail) {
  struct stat st;
  // The meta pages of LMDB 0.9 (mdb.c, MDB_meta after a 16-byte page header): magic at 16,
  // version at 20, the free DB's md_pad (the page size) at 40 and md_root at 80, the main
  // DB's md_root at 128, mm_txnid at 144. Meta page 0 is at 0, meta page 1 one page further;
  // the current one has the larger txnid. The file must hold the current roots: pages that
  // every later read starts from, always written. Not mm_last_pg (136): a page a transaction
  // took and freed again before its commit counts there but is never written, so a sound
  // file can end before it.
  constexpr uint32_t kMagic = 0xBEEFC0DE;
  constexpr uint64_t kNoPage = ~uint64_t{0};  // P_INVALID: an empty database
  Status bad = Status::Corrupted("data.mdb is damaged: no valid LMDB meta page", path);
  unsigned char page[160];
  uint64_t best_txn = 0, need = 0, last_pg = 0;
  bool any = false;
  uint32_t psize = 0;
  for (int i = 0; i < 2; ++i) {
    off_t at = i == 0 ? 0 : static_cast<off_t>(psize ? psize : 4096);
    ssize_t got = ::pread(fd, page, sizeof page, at);
    if (i == 0 && got == 0) return {};  // empty: a new environment
    if (got != static_cast<ssize_t>(sizeof page)) continue;
    if (Le32(page + 16) != kMagic) continue;
    uint32_t ps = Le32(page + 40);
    if (ps < 512 || ps > 65536 || (ps & (ps - 1))) continue;
    if (i == 0) psize = ps;
    if (i == 1 && psize && ps != psize) continue;
    uint64_t txn = Le64(page + 144);
    if (!any || txn > best_txn) {
      best_txn = txn;
      uint64_t pages = 2;  // the meta pages
      for (uint64_t root : {Le64(page + 80), Le64(page + 128)})
        if (root != kNoPage) pages = std::max(pages, root + 1);
      need = pages * ps;
      last_pg = Le64(page + 136);
      psize = ps;
    }
    any = true;
  }
  if (!any) return bad;
  // The size after the meta pages were read: a commit writes its pages before its meta page,
  // so every page the meta read names was in the file by then (a size taken before could
  // predate a concurrent commit's pages and look truncated).
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, path, "cannot stat");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < need)
    return Status::Corrupted(
        fmt::format("data.mdb is truncated: {} bytes, its root pages end at {}", size, need), path);
  if (tail) {
    *tail = DataTail();
    if (size < (last_pg + 1) * psize) {
      tail->first = (size + psize - 1) / psize;
      tail->last = last_pg;
      tail->page_size = psize;
    }
  }
  return {};
}

Status FromRc(int rc, const std::string& what) {
  if (rc == MDB_SUCCESS) return {};
  switch (rc) {
    case MDB_MAP_FULL:  // Txn::map_full() tells the store to grow the map and run it again
      return Status::InsufficientResources("store map is full", what);
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID: return Status::Corrupted(mdb_strerror(rc), what);
    case MDB_VERSION_MISMATCH:
      return Status::Error(fmt::format("{} (the store was written by another LMDB version)",
                                       mdb_strerror(rc)),
                           what);
    case MDB_READERS_FULL:
    case MDB_TXN_FULL:
    case MDB_DBS_FULL: return Status::InsufficientResources(mdb_strerror(rc), what);
    default:
      if (rc > 0) return ErrnoStatus(rc, what, "");
      return Status::Error(mdb_strerror(rc), what);
  }
}

Env::~Env() { Close(); }

void Env::Close() {
  if (!env_) return;
  OpenCloseLock lock(dir_);  // closed even when the lock cannot be had
  mdb_env_close(env_);
  env_ = nullptr;
}

Env& Env::operator=(Env&& o) noexcept {
  if (this != &o) {
    Close();
    env_ = std::exchange(o.env_, nullptr);
    dir_ = std::move(o.dir_);
  }
  return *this;
}

Status Env::Open(const std::string& dir, unsigned mode, uint64_t map_size, unsigned max_dbs,
                 unsigned extra_flags) {
  MDB_env* env = nullptr;
  int rc = mdb_env_create(&env);
  if (rc) return FromRc(rc, dir);
  InstallFaultHandlers();
  mdb_env_set_assert(env, OnAssert);
  mdb_env_set_maxdbs(env, max_dbs);
  mdb_env_set_maxreaders(env, 1022);
  mdb_env_set_mapsize(env, map_size);
  Close();
  {
    OpenCloseLock lock(dir);
    if (!lock.status().ok()) {
      mdb_env_close(env);
      return lock.status();
    }
    rc = mdb_env_open(env, dir.c_str(), MDB_NOTLS | extra_flags, static_cast<mdb_mode_t>(mode));
    if (rc) {
      mdb_env_close(env);
      return FromRc(rc, dir);
    }
  }
  // LMDB opens data.mdb without O_CLOEXEC; a command run by --exec must not inherit it.
  mdb_filehandle_t fd;
  if (mdb_env_get_fd(env, &fd) == MDB_SUCCESS && fd >= 0)
    ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
  env_ = env;
  dir_ = dir;
  return {};
}

int Env::DataFd() const {
  mdb_filehandle_t fd = -1;
  if (!env_ || mdb_env_get_fd(env_, &fd) != MDB_SUCCESS) return -1;
  return fd;
}

Status Env::SetMapSize(uint64_t size) { return FromRc(mdb_env_set_mapsize(env_, size), "map"); }

uint64_t Env::MapSize() const {
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  return info.me_mapsize;
}

uint64_t Env::UsedBytes() const {
  MDB_envinfo info;
  MDB_stat st;
  mdb_env_info(env_, &info);
  mdb_env_stat(env_, &st);
  return (static_cast<uint64_t>(info.me_last_pgno) + 1) * st.ms_psize;
}

Result<uint64_t> Env::FreeBytes() {
  auto txn = Txn::Begin(*this, false);
  if (!txn.ok()) return txn.status();
  auto pages = txn->FreePages();
  if (!pages.ok()) return pages.status();
  MDB_stat st;
  mdb_env_stat(env_, &st);
  return *pages * st.ms_psize;
}

Status Env::SetNoMetaSync(bool on) {
  return FromRc(mdb_env_set_flags(env_, MDB_NOMETASYNC, on ? 1 : 0), "env");
}

Status Env::CopyTo(const std::string& dir) {
  return FromRc(mdb_env_copy2(env_, dir.c_str(), MDB_CP_COMPACT), dir);
}

void Env::ReaderCheck() {
  int dead = 0;
  mdb_reader_check(env_, &dead);
}

Txn::~Txn() { Abort(); }

Txn::Txn(Txn&& o) noexcept
    : txn_(std::exchange(o.txn_, nullptr)),
      write_(o.write_),
      map_full_(o.map_full_),
      cursors_(std::move(o.cursors_)),
      seq_(std::exchange(o.seq_, {})) {
  for (Cursor* c : cursors_) c->txn_ = this;
}

Txn& Txn::operator=(Txn&& o) noexcept {
  if (this != &o) {
    Abort();
    txn_ = std::exchange(o.txn_, nullptr);
    write_ = o.write_;
    map_full_ = o.map_full_;
    cursors_ = std::move(o.cursors_);
    seq_ = std::exchange(o.seq_, {});
    for (Cursor* c : cursors_) c->txn_ = this;
  }
  return *this;
}

Result<Txn> Txn::Begin(Env& env, bool write) {
  Txn t;
  // Other processes may grow the map again between our adoption and our retry (a store filling
  // fast under several writers): a few rounds, each adopting the size the file has now.
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    int rc = mdb_txn_begin(env.raw(), nullptr, write ? 0 : MDB_RDONLY, &t.txn_);
    if (rc == MDB_MAP_RESIZED) {
      // Another process grew the map: adopt its size (0: the size the file has now). This
      // fails only while this process has a transaction open, which would be a bug here.
      rc = mdb_env_set_mapsize(env.raw(), 0);
      if (rc) return FromRc(rc, "cannot adopt the map size another process set");
      continue;
    }
    if (rc) return FromRc(rc, "transaction");
    t.write_ = write;
    g_txn_depth = g_txn_depth + 1;
    return t;
  }
  return Status::Error("map size keeps changing", "transaction");
}

Status Txn::Check(int rc, const char* what) {
  if (rc == MDB_MAP_FULL) map_full_ = true;
  return FromRc(rc, what);
}

void Txn::CloseCursors() {
  for (MDB_cursor*& c : seq_) {
    if (c) mdb_cursor_close(c);
    c = nullptr;
  }
  for (Cursor* c : cursors_) {
    if (c->cur_) mdb_cursor_close(c->cur_);
    c->cur_ = nullptr;
    c->txn_ = nullptr;
  }
  cursors_.clear();
}

Status Txn::Commit() {
  if (!txn_) return Status::Error("commit of a finished transaction");
  CloseCursors();
  int rc = mdb_txn_commit(std::exchange(txn_, nullptr));
  g_txn_depth = g_txn_depth - 1;
  return Check(rc, "");
}

void Txn::Abort() {
  if (!txn_) return;
  CloseCursors();
  mdb_txn_abort(std::exchange(txn_, nullptr));
  g_txn_depth = g_txn_depth - 1;
}

Result<Dbi> Txn::OpenDb(const char* name, bool create) {
  MDB_dbi dbi = 0;
  int rc = mdb_dbi_open(txn_, name, create ? MDB_CREATE : 0, &dbi);
  if (rc) return Check(rc, name ? name : "the main database");
  return Dbi{dbi};
}

std::optional<std::string_view> Txn::Get(Dbi dbi, std::string_view key) const {
  MDB_val k = Val(key), v;
  int rc = mdb_get(txn_, dbi, &k, &v);
  if (rc == MDB_SUCCESS) return View(v);
  if (rc != MDB_NOTFOUND) ReadDamage(rc, "get");
  return std::nullopt;
}

Status Txn::Put(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = Val(key), v = Val(value);
  return Check(mdb_put(txn_, dbi, &k, &v, 0), "put");
}

Status Txn::PutAppend(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = Val(key), v = Val(value);
  // Through the sequential cursor: mdb_put would open and close a cursor for each key.
  MDB_cursor* c = SeqCursor(dbi);
  int rc = c ? mdb_cursor_put(c, &k, &v, MDB_APPEND) : mdb_put(txn_, dbi, &k, &v, MDB_APPEND);
  if (rc == MDB_KEYEXIST) return Put(dbi, key, value);
  return Check(rc, "put");
}

Result<bool> Txn::PutNew(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = Val(key), v = Val(value);
  int rc = mdb_put(txn_, dbi, &k, &v, MDB_NOOVERWRITE);
  if (rc == MDB_KEYEXIST) return false;
  if (rc) return Check(rc, "put");
  return true;
}

Result<uint64_t> Txn::FreePages() {
  MDB_cursor* c = nullptr;
  int rc = mdb_cursor_open(txn_, 0, &c);  // FREE_DBI, as in PagesAreFree
  if (rc) return Check(rc, "free list");
  uint64_t pages = 0;
  MDB_val k, v;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    if (v.mv_size < sizeof(size_t)) continue;
    size_t n;
    std::memcpy(&n, v.mv_data, sizeof n);
    pages += std::min(n, v.mv_size / sizeof(size_t) - 1);
  }
  mdb_cursor_close(c);
  if (rc != MDB_NOTFOUND) return Check(rc, "free list");
  return pages;
}

Result<bool> Txn::PagesAreFree(uint64_t first, uint64_t last) {
  if (last < first) return true;
  // More than 64 GiB missing: not a tail of loose pages.
  if (last - first > (1u << 24)) return false;
  std::vector<bool> seen(last - first + 1);
  uint64_t left = seen.size();
  MDB_cursor* c = nullptr;
  int rc = mdb_cursor_open(txn_, 0, &c);  // FREE_DBI: txn id -> IDL of freed page numbers
  if (rc) return Check(rc, "free list");
  MDB_val k, v;
  for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == MDB_SUCCESS && left;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    // An IDL: a count, then that many page numbers (size_t each).
    if (v.mv_size < sizeof(size_t)) continue;
    size_t n;
    std::memcpy(&n, v.mv_data, sizeof n);
    n = std::min(n, v.mv_size / sizeof(size_t) - 1);
    for (size_t i = 1; i <= n; ++i) {
      size_t pg;
      std::memcpy(&pg, static_cast<const char*>(v.mv_data) + i * sizeof(size_t), sizeof pg);
      if (pg >= first && pg <= last && !seen[pg - first]) {
        seen[pg - first] = true;
        --left;
      }
    }
  }
  mdb_cursor_close(c);
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return Check(rc, "free list");
  return left == 0;
}

Status Txn::PutSeq(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_cursor* c = SeqCursor(dbi);
  if (!c) return Put(dbi, key, value);
  MDB_val k = Val(key), v = Val(value);
  return Check(mdb_cursor_put(c, &k, &v, 0), "put");
}

Result<bool> Txn::PutNewSeq(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_cursor* c = SeqCursor(dbi);
  if (!c) return PutNew(dbi, key, value);
  MDB_val k = Val(key), v = Val(value);
  int rc = mdb_cursor_put(c, &k, &v, MDB_NOOVERWRITE);
  if (rc == MDB_KEYEXIST) return false;
  if (rc) return Check(rc, "put");
  return true;
}

Result<bool> Txn::Del(Dbi dbi, std::string_view key) {
  MDB_val k = Val(key);
  int rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc) return Check(rc, "delete");
  return true;
}

MDB_cursor* Txn::SeqCursor(Dbi dbi) {
  if (dbi >= seq_.size()) return nullptr;
  if (!seq_[dbi] && mdb_cursor_open(txn_, dbi, &seq_[dbi]) != MDB_SUCCESS) seq_[dbi] = nullptr;
  return seq_[dbi];
}

int Txn::SeqSeek(MDB_cursor* c, std::string_view key) {
  MDB_val k, v;
  // LMDB fixes up every cursor of a write transaction after changes made through others, so
  // where this one stands is still an entry of the database; the key decides.
  int rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
  if (rc == MDB_SUCCESS && View(k) == key) return 1;
  // A walk in increasing order (each key the one after the last): one step, not a search.
  // Keys compare as LMDB's default comparator does (memcmp, then length).
  if (rc == MDB_SUCCESS && View(k) < key) {
    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    if (rc == MDB_SUCCESS && View(k) == key) return 1;
  }
  k = Val(key);
  rc = mdb_cursor_get(c, &k, &v, MDB_SET);
  if (rc == MDB_SUCCESS) return 1;
  if (rc == MDB_NOTFOUND) return 0;
  return rc > 0 ? -rc : rc;
}

Result<bool> Txn::DelSeq(Dbi dbi, std::string_view key) {
  MDB_cursor* c = SeqCursor(dbi);
  if (!c) return Del(dbi, key);
  int at = SeqSeek(c, key);
  if (at < 0) return Check(at < -1000 ? at : -at, "delete");
  if (at == 0) return false;
  int rc = mdb_cursor_del(c, 0);
  if (rc) return Check(rc, "delete");
  return true;
}

std::optional<std::string_view> Txn::GetSeq(Dbi dbi, std::string_view key) {
  MDB_cursor* c = SeqCursor(dbi);
  if (!c) return Get(dbi, key);
  int at = SeqSeek(c, key);
  if (at <= 0) {
    if (at < 0) ReadDamage(at < -1000 ? at : -at, "get");
    return std::nullopt;
  }
  MDB_val k, v;
  if (mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT) != MDB_SUCCESS) return std::nullopt;
  return View(v);
}

uint64_t Txn::Count(Dbi dbi) const {
  MDB_stat st;
  if (mdb_stat(txn_, dbi, &st) != MDB_SUCCESS) return 0;
  return st.ms_entries;
}

Status Txn::Clear(Dbi dbi) { return Check(mdb_drop(txn_, dbi, 0), "clear"); }

Status Txn::Drop(Dbi dbi) {
  // The handle is closed with the database: forget its sequential cursor.
  if (dbi < seq_.size() && seq_[dbi]) {
    mdb_cursor_close(seq_[dbi]);
    seq_[dbi] = nullptr;
  }
  return Check(mdb_drop(txn_, dbi, 1), "drop");
}

Cursor::Cursor(Txn& txn, Dbi dbi) : txn_(&txn) {
  if (mdb_cursor_open(txn.txn_, dbi, &cur_) != MDB_SUCCESS) {
    cur_ = nullptr;
    txn_ = nullptr;
    return;
  }
  txn.cursors_.push_back(this);
}

Cursor::~Cursor() {
  if (!txn_) return;
  auto& v = txn_->cursors_;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
  if (cur_) mdb_cursor_close(cur_);
}

bool Cursor::Op(int op, std::string_view key) {
  if (!cur_) return false;
  MDB_val k = Val(key), v;
  int rc = mdb_cursor_get(cur_, &k, &v, static_cast<MDB_cursor_op>(op));
  if (rc != MDB_SUCCESS) {
    if (rc != MDB_NOTFOUND) ReadDamage(rc, "cursor");
    key_ = value_ = {};
    return false;
  }
  key_ = View(k);
  value_ = View(v);
  return true;
}

bool Cursor::First() { return Op(MDB_FIRST); }
bool Cursor::Last() { return Op(MDB_LAST); }
bool Cursor::Next() { return Op(MDB_NEXT); }
bool Cursor::Prev() { return Op(MDB_PREV); }
bool Cursor::SeekGe(std::string_view key) { return Op(MDB_SET_RANGE, key); }
bool Cursor::Seek(std::string_view key) { return Op(MDB_SET_KEY, key); }

bool Cursor::SeekLt(std::string_view key) {
  if (SeekGe(key)) return Prev();
  return Last();
}

Status Cursor::Del() {
  if (!cur_) return Status::Error("cursor closed");
  int rc = mdb_cursor_del(cur_, 0);
  key_ = value_ = {};
  return txn_->Check(rc, "delete");
}

}  // namespace mq::lmdb
