// lmdb.hpp: move-only RAII wrappers over LMDB's env, txn and cursor.
//
// lmdb.cpp is the only file that includes <lmdb.h>; everything else sees these types.
// Contracts, after lmdbxx:
//  - A Txn aborts in its destructor unless Commit() was called.
//  - Cursors register with their Txn; the Txn closes every open cursor before it commits or
//    aborts (LMDB frees write-txn cursors itself, so closing one afterwards would be a double
//    free). A Cursor outliving its Txn is inert.
//  - "Not found" is std::nullopt / false, never an error.
//  - MDB_MAP_FULL comes back as MQ_ERROR_INSUFFICIENT_RESOURCES, and the Txn remembers it
//    (map_full()) so that the store can grow the map and run the transaction again;
//    MDB_MAP_RESIZED (another process grew it) is handled inside Begin().
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.hpp"

struct MDB_env;
struct MDB_txn;
struct MDB_cursor;

namespace mq::lmdb {

using Dbi = unsigned int;

// Translates an LMDB return code into a Status about `what`.
Status FromRc(int rc, const std::string& what);

// Damage (issue 12). A damaged store must never kill a tool with a signal or an LMDB
// assertion, nor read as an empty queue:
//  - Every Env installs, once per process, handlers that turn SIGBUS (a page past the end of
//    a truncated data.mdb) and a SIGSEGV while a transaction is open (a page that points
//    nowhere) into "PROG: store damaged ...: run mq-admin check" on stderr and exit 10; LMDB's
//    assertion callback does the same. Nothing is half-written by that: LMDB's commit is its
//    only write, and a process that dies before it leaves the store as it was.
//  - An LMDB error other than "not found" from a read (Get, a cursor move), which the
//    wrappers below report as "not found", is damage too: by default it ends the process the
//    same way; in recording mode (mq-admin check) it is noted and the read returns "not
//    found", so that the walk goes on and reports everything it can.
//  - `context` (what is being walked) is named in the report.
void RecordDamage(std::vector<std::string>* sink);  // nullptr: exit on damage (the default)
void SetDamageContext(const std::string& context);

// What a data.mdb's meta pages require of it, read with pread(2) from `fd` before LMDB maps
// it: a file shorter than its last page would be a SIGBUS later. An empty file is ok (LMDB
// makes a new environment of it; the caller decides whether that may happen).
// Pages missing at the end of data.mdb, if any (first > last: none). A transaction that
// takes new pages from the end of the file and gives some back before its commit leaves
// them out of the file, though the meta page counts them: sound if they are all free.
struct DataTail {
  uint64_t first = 1, last = 0, page_size = 0;
};
Status CheckDataFile(int fd, const std::string& path, DataTail* tail = nullptr);

class Env {
 public:
  Env() = default;
  ~Env();
  Env(Env&& o) noexcept : env_(std::exchange(o.env_, nullptr)), dir_(std::move(o.dir_)) {}
  Env& operator=(Env&& o) noexcept;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // Opens the environment in directory `dir` with file mode `mode` and map size `map_size`.
  // `read_only` opens with MDB_RDONLY. Always uses MDB_NOTLS (read txns are not tied to a
  // thread) and never MDB_WRITEMAP (a full disk must be an error from write(), not SIGBUS).
  // extra_flags: MDB_RDONLY (and MDB_NOLOCK) for a store opened read-only.
  // LMDB opens and closes an environment under an exclusive flock of `dir` (OpenCloseLock in
  // lmdb.cpp says why).
  Status Open(const std::string& dir, unsigned mode, uint64_t map_size, unsigned max_dbs,
              unsigned extra_flags = 0);
  // Grows (or adopts another process's) map size. Only with no transaction open in this
  // process. 0 adopts the size currently in the file.
  Status SetMapSize(uint64_t size);
  uint64_t MapSize() const;
  // Bytes of the map in use (up to the last page written).
  uint64_t UsedBytes() const;
  // Bytes of the pages in the free list (Txn::FreePages), in a read transaction of its own.
  Result<uint64_t> FreeBytes();
  // Makes this process's later commits skip the second of LMDB's two syncs (the meta page,
  // MDB_NOMETASYNC) or not. Integrity is kept either way; without the meta sync a power
  // loss may undo the last commits. (MDB_NOSYNC is never used: it can corrupt the whole
  // store on power loss, as the meta page may reach the disk before the data.)
  Status SetNoMetaSync(bool on);
  // A consistent, compacted copy of the environment into the existing empty directory `dir`,
  // taken under a read transaction so writers continue meanwhile.
  Status CopyTo(const std::string& dir);
  // Releases reader slots left behind by dead processes.
  void ReaderCheck();
  // LMDB's descriptor of data.mdb (-1 if not open); never to be closed.
  int DataFd() const;
  MDB_env* raw() const { return env_; }

  // Closes the environment (under the same lock as Open), if it is open.
  void Close();

 private:
  MDB_env* env_ = nullptr;
  std::string dir_;  // where it was opened
};

class Cursor;

class Txn {
 public:
  Txn() = default;
  ~Txn();
  Txn(Txn&& o) noexcept;
  Txn& operator=(Txn&& o) noexcept;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  static Result<Txn> Begin(Env& env, bool write);
  Status Commit();
  void Abort();
  bool active() const { return txn_ != nullptr; }
  bool writable() const { return write_; }
  // Whether a write or the commit of this transaction found the map full (MDB_MAP_FULL): the
  // store grows the map and runs the transaction again.
  bool map_full() const { return map_full_; }

  // Opens (creating in a write txn) the named database.
  Result<Dbi> OpenDb(const char* name, bool create);

  std::optional<std::string_view> Get(Dbi dbi, std::string_view key) const;
  // Stores key -> value, replacing any value.
  Status Put(Dbi dbi, std::string_view key, std::string_view value);
  // Put() for a key that is usually above every key of the database (MDB_APPEND: no search,
  // pages filled whole; through DelSeq's cursor); falls back to Put() when it is not.
  Status PutAppend(Dbi dbi, std::string_view key, std::string_view value);
  // Stores key -> value only if key is absent; false if it was present.
  Result<bool> PutNew(Dbi dbi, std::string_view key, std::string_view value);
  // Put() and PutNew() for keys put in increasing order (a batch of sends): through DelSeq's
  // cursor, which stands on the last key put, so that LMDB looks for the next one in that
  // leaf page before it searches from the root (mdb_cursor_set's "already on the right page").
  Status PutSeq(Dbi dbi, std::string_view key, std::string_view value);
  Result<bool> PutNewSeq(Dbi dbi, std::string_view key, std::string_view value);
  // Deletes key; false if it was absent.
  Result<bool> Del(Dbi dbi, std::string_view key);
  // Del() for keys deleted in increasing order (a batch drained from the head of a queue):
  // keeps one cursor per database, which after a delete stands on the next entry, so a key
  // that is the next one needs no search. Any other key is found with a search, as by Del().
  Result<bool> DelSeq(Dbi dbi, std::string_view key);
  // Get() through DelSeq's cursor: a key looked up just before its DelSeq() is found there
  // without a search, and the delete that follows needs none either.
  std::optional<std::string_view> GetSeq(Dbi dbi, std::string_view key);
  // Whether pages first..last are all in LMDB's free list (DataTail).
  Result<bool> PagesAreFree(uint64_t first, uint64_t last);
  // Pages in LMDB's free list: a count per freeing transaction, so linear in those
  // transactions (a handful unless a reader pins old ones), not in the pages.
  Result<uint64_t> FreePages();
  // Number of entries of a database.
  uint64_t Count(Dbi dbi) const;
  // Empties a database without dropping it.
  Status Clear(Dbi dbi);
  // Deletes a database and closes its handle (a store upgrade's leftovers).
  Status Drop(Dbi dbi);

  MDB_txn* raw() const { return txn_; }

 private:
  friend class Cursor;
  void CloseCursors();
  // FromRc(), noting MDB_MAP_FULL.
  Status Check(int rc, const char* what);
  MDB_txn* txn_ = nullptr;
  bool write_ = false;
  bool map_full_ = false;
  std::vector<Cursor*> cursors_;
  // DelSeq's cursors, by database handle (LMDB numbers them from 0; a store opens 32 named
  // databases): found at once, as a drain asks for them several times a message.
  std::array<MDB_cursor*, 64> seq_{};
  // Null for a handle beyond seq_ or a cursor LMDB would not open: the callers then do without.
  MDB_cursor* SeqCursor(Dbi dbi);
  // Puts DelSeq's cursor of `dbi` on `key`: 1 there, 0 absent, < 0 an error (LMDB's, negated).
  int SeqSeek(MDB_cursor* c, std::string_view key);
};

class Cursor {
 public:
  Cursor(Txn& txn, Dbi dbi);
  ~Cursor();
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  bool ok() const { return cur_ != nullptr; }
  // Positioning: true when the cursor stands on an entry afterwards.
  bool First();
  bool Last();
  bool Next();
  bool Prev();
  // First entry whose key is >= `key`.
  bool SeekGe(std::string_view key);
  // Exact key.
  bool Seek(std::string_view key);
  // Last entry whose key is < `key` (for backward scans).
  bool SeekLt(std::string_view key);
  std::string_view key() const { return key_; }
  std::string_view value() const { return value_; }
  // Deletes the entry under the cursor. Its position is then unspecified: seek again.
  Status Del();

 private:
  friend class Txn;
  bool Op(int op, std::string_view key = {});
  MDB_cursor* cur_ = nullptr;
  Txn* txn_ = nullptr;
  std::string_view key_;
  std::string_view value_;
};

}  // namespace mq::lmdb
