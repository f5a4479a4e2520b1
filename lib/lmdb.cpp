// lmdb.cpp: the only file that includes <lmdb.h>. See lmdb.hpp for the contracts.
#include "lmdb.hpp"

#include <lmdb.h>

#include <fcntl.h>

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

}  // namespace

Status FromRc(int rc, const std::string& what) {
  if (rc == MDB_SUCCESS) return {};
  switch (rc) {
    case MDB_MAP_FULL:
      return Status(Code::kMapFull, "store map is full", what);
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
      return Status(Code::kCorrupted, mdb_strerror(rc), what);
    case MDB_VERSION_MISMATCH:
      return Status(Code::kError,
                    fmt::format("{} (the store was written by another LMDB version)",
                                mdb_strerror(rc)),
                    what);
    case MDB_READERS_FULL:
    case MDB_TXN_FULL:
    case MDB_DBS_FULL:
      return Status(Code::kInsufficientResources, mdb_strerror(rc), what);
    default:
      if (rc > 0) return ErrnoStatus(rc, what, "");
      return Status(Code::kError, mdb_strerror(rc), what);
  }
}

Env::~Env() {
  if (env_) mdb_env_close(env_);
}

Env& Env::operator=(Env&& o) noexcept {
  if (this != &o) {
    if (env_) mdb_env_close(env_);
    env_ = std::exchange(o.env_, nullptr);
  }
  return *this;
}

Status Env::Open(const std::string& dir, unsigned mode, uint64_t map_size, unsigned max_dbs) {
  MDB_env* env = nullptr;
  int rc = mdb_env_create(&env);
  if (rc) return FromRc(rc, dir);
  mdb_env_set_maxdbs(env, max_dbs);
  mdb_env_set_maxreaders(env, 1022);
  mdb_env_set_mapsize(env, map_size);
  rc = mdb_env_open(env, dir.c_str(), MDB_NOTLS, static_cast<mdb_mode_t>(mode));
  if (rc) {
    mdb_env_close(env);
    return FromRc(rc, dir);
  }
  // LMDB opens data.mdb without O_CLOEXEC; a command run by --exec must not inherit it.
  mdb_filehandle_t fd;
  if (mdb_env_get_fd(env, &fd) == MDB_SUCCESS && fd >= 0)
    ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
  if (env_) mdb_env_close(env_);
  env_ = env;
  return {};
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
    : txn_(std::exchange(o.txn_, nullptr)), write_(o.write_), cursors_(std::move(o.cursors_)) {
  for (Cursor* c : cursors_) c->txn_ = this;
}

Txn& Txn::operator=(Txn&& o) noexcept {
  if (this != &o) {
    Abort();
    txn_ = std::exchange(o.txn_, nullptr);
    write_ = o.write_;
    cursors_ = std::move(o.cursors_);
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
    return t;
  }
  return Status(Code::kError, "map size keeps changing", "transaction");
}

void Txn::CloseCursors() {
  for (Cursor* c : cursors_) {
    if (c->cur_) mdb_cursor_close(c->cur_);
    c->cur_ = nullptr;
    c->txn_ = nullptr;
  }
  cursors_.clear();
}

Status Txn::Commit() {
  if (!txn_) return Status(Code::kError, "commit of a finished transaction");
  CloseCursors();
  int rc = mdb_txn_commit(std::exchange(txn_, nullptr));
  return FromRc(rc, "");
}

void Txn::Abort() {
  if (!txn_) return;
  CloseCursors();
  mdb_txn_abort(std::exchange(txn_, nullptr));
}

Result<Dbi> Txn::OpenDb(const char* name, bool create) {
  MDB_dbi dbi = 0;
  int rc = mdb_dbi_open(txn_, name, create ? MDB_CREATE : 0, &dbi);
  if (rc) return FromRc(rc, name);
  return Dbi{dbi};
}

std::optional<std::string_view> Txn::Get(Dbi dbi, std::string_view key) const {
  MDB_val k = Val(key), v;
  if (mdb_get(txn_, dbi, &k, &v) != MDB_SUCCESS) return std::nullopt;
  return View(v);
}

Status Txn::Put(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = Val(key), v = Val(value);
  return FromRc(mdb_put(txn_, dbi, &k, &v, 0), "put");
}

Result<bool> Txn::PutNew(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k = Val(key), v = Val(value);
  int rc = mdb_put(txn_, dbi, &k, &v, MDB_NOOVERWRITE);
  if (rc == MDB_KEYEXIST) return false;
  if (rc) return FromRc(rc, "put");
  return true;
}

Result<bool> Txn::Del(Dbi dbi, std::string_view key) {
  MDB_val k = Val(key);
  int rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc) return FromRc(rc, "delete");
  return true;
}

uint64_t Txn::Count(Dbi dbi) const {
  MDB_stat st;
  if (mdb_stat(txn_, dbi, &st) != MDB_SUCCESS) return 0;
  return st.ms_entries;
}

Status Txn::Clear(Dbi dbi) { return FromRc(mdb_drop(txn_, dbi, 0), "clear"); }

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
  if (!cur_) return Status(Code::kError, "cursor closed");
  int rc = mdb_cursor_del(cur_, 0);
  key_ = value_ = {};
  return FromRc(rc, "delete");
}

}  // namespace mq::lmdb
