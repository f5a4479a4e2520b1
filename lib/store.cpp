// store.cpp: the store: opening, the catalog, appends, peeks, receives, checks and backups.
// See store.hpp for the databases and their keys.
#include "store.hpp"

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

namespace {

constexpr uint64_t kInitialMapSize = 256ULL << 20;
constexpr uint64_t kMaxMapSize = 1ULL << 40;
constexpr size_t kBatchCount = 1000;
constexpr size_t kBatchBytes = 4 << 20;

std::string QueueIdKey(uint32_t qid) {
  std::string k;
  PutU32BE(k, qid);
  return k;
}

std::string MsgKey(uint32_t qid, uint64_t lookup) {
  std::string k;
  k.reserve(12);
  PutU32BE(k, qid);
  PutU64BE(k, lookup);
  return k;
}

std::string OrderKey(uint32_t qid, uint8_t priority, uint64_t lookup) {
  std::string k;
  k.reserve(13);
  PutU32BE(k, qid);
  k.push_back(static_cast<char>(7 - priority));
  PutU64BE(k, lookup);
  return k;
}

std::string CorrPrefix(std::string_view corr, uint32_t qid) {
  std::string k(corr);
  PutU32BE(k, qid);
  return k;
}

std::string CorrKey(std::string_view corr, uint32_t qid, uint8_t priority, uint64_t lookup) {
  std::string k = CorrPrefix(corr, qid);
  k.push_back(static_cast<char>(7 - priority));
  PutU64BE(k, lookup);
  return k;
}

bool HasPrefix(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

std::mutex g_open_mu;
std::set<std::string> g_open_dirs;  // one env per directory per process

const char* kDbNames[] = {"meta",    "queues", "queue_ids", "messages", "order",
                          "by_id",   "by_corr", "delays",   "cursors",  "locked",
                          "leases",  "dedup",   "dedup_exp", "deadlines",
                          // conversations (issue 5)
                          "convs", "conv_q", "groups", "conv_msgs", "group_sel", "conv_kept",
                          "msg_types"};

std::string LeaseKey(uint32_t qid, uint64_t lease_id) {
  std::string k = QueueIdKey(qid);
  PutU64BE(k, lease_id);
  return k;
}

// A lease record (the value in `leases`): TLV, tags never reused.
struct LeaseRecord {
  bool process = true;
  int64_t pid = 0;
  int64_t since = 0;
  int64_t expires = 0;
  std::string secret;             // 16 bytes, part of the token of an expiring lease
  std::vector<std::string> keys;  // order keys of the Locked messages
};

std::string EncodeLease(const LeaseRecord& r) {
  std::string out(1, '\x01');
  TlvWriter w(out);
  w.Uint(1, r.process ? 1 : 2);
  w.Uint(2, static_cast<uint64_t>(r.pid));
  w.Uint(3, static_cast<uint64_t>(r.since));
  w.UintIfNot(4, static_cast<uint64_t>(r.expires), 0);
  w.BytesIfNotEmpty(5, r.secret);
  std::string keys;
  for (const auto& k : r.keys) keys += k;
  w.Bytes(6, keys);
  return out;
}

bool DecodeLease(std::string_view v, LeaseRecord& r) {
  if (v.empty() || v[0] != 1) return false;
  TlvReader rd(v.substr(1));
  while (rd.Next()) {
    switch (rd.tag()) {
      case 1: r.process = rd.uint() == 1; break;
      case 2: r.pid = static_cast<int64_t>(rd.uint()); break;
      case 3: r.since = static_cast<int64_t>(rd.uint()); break;
      case 4: r.expires = static_cast<int64_t>(rd.uint()); break;
      case 5: r.secret = rd.bytes(); break;
      case 6:
        for (size_t i = 0; i + 13 <= rd.bytes().size(); i += 13)
          r.keys.emplace_back(rd.bytes().substr(i, 13));
        break;
      default: break;
    }
  }
  return !rd.error();
}

std::string DedupKey(uint32_t qid, std::string_view key) {
  std::string k = QueueIdKey(qid);
  k += key;
  return k;
}

std::string DedupExpKey(uint32_t qid, int64_t expiry, std::string_view key) {
  std::string k = QueueIdKey(qid);
  PutU64BE(k, static_cast<uint64_t>(expiry));
  k += key;
  return k;
}

std::string DelayKey(uint32_t qid, int64_t visible, uint64_t lookup) {
  std::string k;
  k.reserve(20);
  PutU32BE(k, qid);
  PutU64BE(k, static_cast<uint64_t>(visible));
  PutU64BE(k, lookup);
  return k;
}

// deadlines: queue id, expiry (u64 ms), lookup id.
std::string DeadlineKey(uint32_t qid, int64_t at, uint64_t lookup) {
  return DelayKey(qid, at, lookup);
}

// Journals (QUEUE;journal, system;journal) hold copies; dead-letter queues hold messages that
// already failed. Neither expires, acknowledges or dead-letters again: only messages in
// other queues are "live".
bool IsJournalName(std::string_view name) {
  constexpr std::string_view kSuffix = ";journal";
  return name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix;
}

bool IsDeadLetterName(std::string_view name) {
  return name == "system;deadletter" || name == "system;deadxact";
}

bool IsLive(const QueueInfo& q) { return !IsJournalName(q.name) && !IsDeadLetterName(q.name); }

// The by_id key of a message of `q`: its id, or for a journal copy (which shares the id of
// the message it copies) the id and the journal's queue id.
std::string IdKey(const QueueInfo& q, std::string_view id) {
  std::string k(id);
  if (IsJournalName(q.name)) PutU32BE(k, q.id);
  return k;
}

std::string CursorKey(uint32_t qid, std::string_view name) {
  std::string k = QueueIdKey(qid);
  k += name;
  return k;
}

}  // namespace

struct Store::Impl {
  std::string dir;
  std::string real_dir;
  StorePaths paths{""};
  lmdb::Env env;
  Guid guid{};
  unsigned file_mode = 0600;
  std::set<uint32_t> to_notify;  // doorbells to ring after the current write commits
  bool express = false;          // SetExpress: every commit skips the meta sync
  lmdb::Dbi meta = 0, queues = 0, queue_ids = 0, messages = 0, order = 0, by_id = 0, by_corr = 0,
            delays = 0, cursors = 0, locked = 0, leases = 0, dedup = 0, dedup_exp = 0,
            deadlines = 0;
  lmdb::Dbi convs = 0, conv_q = 0, groups = 0, conv_msgs = 0, group_sel = 0, conv_kept = 0,
            msg_types = 0;

  lmdb::Dbi* DbSlots[21] = {&meta,    &queues,  &queue_ids, &messages, &order,
                            &by_id,   &by_corr, &delays,    &cursors,  &locked,
                            &leases,  &dedup,   &dedup_exp, &deadlines,
                            &convs,   &conv_q,  &groups,    &conv_msgs, &group_sel, &conv_kept,
                            &msg_types};

  // The source of message ids in the current write transaction: loaded from `meta` on first
  // use, written back once before the commit (Write does it).
  struct IdSource {
    bool loaded = false;
    bool dirty = false;
    Guid guid{};
    uint32_t counter = 0;
  } id_source;

  Result<std::string> NewMessageId(lmdb::Txn& txn) {
    if (!id_source.loaded) {
      auto g = txn.Get(meta, "id_guid");
      if (!g || g->size() != 16) return Status(Code::kCorrupted, "store has no id GUID", dir);
      id_source.guid = GuidFromBytes(*g);
      auto c = MetaU32(txn, "id_counter", 0);
      if (!c.ok()) return c.status();
      id_source.counter = *c;
      id_source.loaded = true;
    }
    if (id_source.counter == UINT32_MAX) {
      // The 4-byte counter is spent: continue under a fresh GUID, as ids stay unique.
      id_source.guid = NewGuid();
      MQ_RETURN_IF_ERROR(txn.Put(meta, "id_guid", GuidBytes(id_source.guid)));
      id_source.counter = 0;
    }
    id_source.dirty = true;
    return MakeMessageId(id_source.guid, ++id_source.counter);
  }

  Status SaveIdSource(lmdb::Txn& txn) {
    if (!id_source.dirty) return {};
    id_source.dirty = false;
    return PutMetaU32(txn, "id_counter", id_source.counter);
  }

  ~Impl() {
    std::lock_guard<std::mutex> lock(g_open_mu);
    g_open_dirs.erase(real_dir);
  }

  // Runs `fn` in a write transaction and commits. A full map is grown and `fn` runs again;
  // `rerun_after_commit` says whether that is allowed when the commit itself hit the limit
  // (not when `fn` has written output that must not be written twice).
  // A commit that need not reach the disk before the next one (locking for a transactional
  // receive: losing it to a power cut only means a redelivery). The next durable commit's
  // fdatasync takes its pages along.
  Status WriteLight(const std::function<Status(lmdb::Txn&)>& fn, bool rerun_after_commit) {
    if (express) return Write(fn, rerun_after_commit);
    MQ_RETURN_IF_ERROR(env.SetNoMetaSync(true));
    Status s = Write(fn, rerun_after_commit);
    Status restored = env.SetNoMetaSync(false);
    return s.ok() ? restored : s;
  }

  Status Write(const std::function<Status(lmdb::Txn&)>& fn, bool rerun_after_commit = true) {
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
      id_source = IdSource();
      Status s = fn(*txn);
      if (s.ok() && !txn->active()) return s;  // fn committed itself
      if (s.ok()) s = SaveIdSource(*txn);
      bool from_commit = false;
      if (s.ok()) {
        s = txn->Commit();
        from_commit = true;
        if (s.code() == Code::kIo && DiskFull())
          // LMDB reports a short write as EIO ("filesystem full?"): say what it was.
          return Status(Code::kInsufficientResources, "no space left on the store's disk; "
                        "nothing was written", dir);
        if (!s.ok() && s.code() != Code::kMapFull) return s.WithSubject(dir);
        if (s.ok()) {
          for (uint32_t qid : to_notify) Notify(qid);
          to_notify.clear();
        }
      }
      if (s.code() != Code::kMapFull) return s;
      txn->Abort();
      Status grown = Grow();
      if (!grown.ok()) return grown;
      if (from_commit && !rerun_after_commit)
        return Status(Code::kInsufficientResources, "store map full at commit; retry", dir);
      if (attempt > 40) return Status(Code::kInsufficientResources, "store is full", dir);
    }
  }

  bool DiskFull() {
    struct statvfs vfs;
    if (::statvfs(dir.c_str(), &vfs) != 0) return false;
    return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < (1u << 20);
  }

  // The size limit of the store (SetMaxSize), read when needed: another process may set it.
  uint64_t MaxMapSize() {
    auto txn = lmdb::Txn::Begin(env, false);
    if (!txn.ok()) return kMaxMapSize;
    auto v = txn->Get(meta, "max_size");
    if (!v || v->size() != 8) return kMaxMapSize;
    uint64_t limit = GetU64BE(*v, 0);
    return limit ? std::min(limit, kMaxMapSize) : kMaxMapSize;
  }

  Status ApplyMaxMapSize() {
    uint64_t limit = MaxMapSize();
    if (env.MapSize() <= limit) return {};
    return env.SetMapSize(std::max(limit, env.UsedBytes()));
  }

  Status Grow() {
    uint64_t cur = env.MapSize();
    uint64_t limit = MaxMapSize();
    if (cur >= limit)
      return Status(Code::kInsufficientResources,
                    fmt::format("store is full: it reached its maximum size of {} bytes "
                                "(mq-admin init --max-store-size raises it)",
                                limit),
                    dir);
    return env.SetMapSize(std::min(cur * 2, limit));
  }

  void Notify(uint32_t qid) {
    // The doorbell: after the commit, so that a woken reader sees the new state.
    std::string path = paths.notify(qid);
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) {
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, file_mode);
      // The umask may have taken the group's write bit from a group-shared store's file.
      if (fd >= 0) (void)::fchmod(fd, file_mode);
    }
    if (fd < 0) return;
    char b = 0;
    ssize_t ignored = ::pwrite(fd, &b, 1, 0);
    (void)ignored;
    ::close(fd);
  }

  Result<std::optional<QueueInfo>> LoadQueue(lmdb::Txn& txn, const std::string& name) {
    auto v = txn.Get(queues, name);
    if (!v) return std::optional<QueueInfo>();
    QueueInfo q;
    q.name = name;
    Status s = DecodeQueue(*v, q);
    if (!s.ok()) return s.WithSubject(name);
    return std::optional<QueueInfo>(std::move(q));
  }

  // The queue a reference names. A subqueue or journal of an existing queue that was never
  // written reads as an empty queue with id 0.
  Result<QueueInfo> FindQueue(lmdb::Txn& txn, const QueueRef& ref) {
    auto q = LoadQueue(txn, ref.Full());
    if (!q.ok()) return q.status();
    if (*q) return std::move(**q);
    if (ref.IsSub() && !ref.IsSystem()) {
      auto base = LoadQueue(txn, ref.base);
      if (!base.ok()) return base.status();
      if (*base) {
        QueueInfo empty;
        empty.name = ref.Full();
        return empty;
      }
    }
    return Status(Code::kQueueNotFound, "no such queue", ref.Full());
  }

  Status PutQueue(lmdb::Txn& txn, const QueueInfo& q) {
    return txn.Put(queues, q.name, EncodeQueue(q));
  }

  Result<uint32_t> MetaU32(lmdb::Txn& txn, std::string_view key, uint32_t dflt) {
    auto v = txn.Get(meta, key);
    if (!v) return dflt;
    if (v->size() != 4) return Status(Code::kCorrupted, fmt::format("bad meta record {}", key));
    return GetU32BE(*v, 0);
  }

  Status PutMetaU32(lmdb::Txn& txn, std::string_view key, uint32_t v) {
    std::string b;
    PutU32BE(b, v);
    return txn.Put(meta, key, b);
  }

  Result<QueueInfo> NewQueue(lmdb::Txn& txn, const std::string& name) {
    auto next = MetaU32(txn, "next_queue_id", 1);
    if (!next.ok()) return next.status();
    QueueInfo q;
    q.name = name;
    q.id = *next;
    q.created_time = q.modified_time = NowMs();
    MQ_RETURN_IF_ERROR(PutMetaU32(txn, "next_queue_id", *next + 1));
    MQ_RETURN_IF_ERROR(txn.Put(queue_ids, QueueIdKey(q.id), name));
    MQ_RETURN_IF_ERROR(PutQueue(txn, q));
    return q;
  }

  Status RemoveMessage(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t size) {
    auto r = txn.Del(messages, MsgKey(q.id, m.lookup_id));
    if (!r.ok()) return r.status();
    r = txn.Del(order, OrderKeyFor(q, m));
    if (!r.ok()) return r.status();
    bool was_locked = false;
    if (!*r && m.visible_time) {
      r = txn.Del(delays, DelayKey(q.id, m.visible_time, m.lookup_id));
      if (!r.ok()) return r.status();
      if (*r) q.delayed -= std::min<uint64_t>(q.delayed, 1);
    }
    if (!*r) {
      // Locked: the lease that holds it skips it when it ends.
      r = txn.Del(locked, OrderKeyFor(q, m));
      if (!r.ok()) return r.status();
      if (*r) q.locked -= std::min<uint64_t>(q.locked, 1);
      was_locked = *r;
    }
    if (IsConvMessage(q, m)) MQ_RETURN_IF_ERROR(ConvOnRemove(txn, q, m, was_locked));
    if (!m.id.empty()) {
      r = txn.Del(by_id, IdKey(q, m.id));
      if (!r.ok()) return r.status();
    }
    if (!m.correlation_id.empty()) {
      r = txn.Del(by_corr, CorrKey(m.correlation_id, q.id, m.priority, m.lookup_id));
      if (!r.ok()) return r.status();
    }
    if (int64_t at = ExpiryOf(m)) {
      r = txn.Del(deadlines, DeadlineKey(q.id, at, m.lookup_id));
      if (!r.ok()) return r.status();
    }
    q.count -= std::min<uint64_t>(q.count, 1);
    q.bytes -= std::min(q.bytes, size);
    return {};
  }

  struct Found {
    std::string walk_key;  // where the walk stood: resume after it
    Message msg;
    uint64_t size = 0;
  };

  Status LoadMessage(lmdb::Txn& txn, const QueueInfo& q, uint64_t lookup, Found& f) {
    auto rec = txn.Get(messages, MsgKey(q.id, lookup));
    if (!rec)
      return Status(Code::kCorrupted,
                    fmt::format("index names lookup id {} but the message is missing", lookup),
                    q.name);
    f.msg.lookup_id = lookup;
    f.msg.queue = q.name;
    f.size = rec->size();
    Status s = DecodeRecord(*rec, f.msg);
    if (!s.ok()) return s.WithSubject(q.name);
    return {};
  }

  // Whether a message is visible to readers: in `order` (not delayed, not Locked), or
  // Locked when `include_locked`.
  bool Visible(lmdb::Txn& txn, const QueueInfo& q, const Message& m, bool include_locked) {
    std::string key = OrderKeyFor(q, m);
    return txn.Get(order, key) || (include_locked && txn.Get(locked, key));
  }

  // Collects up to `max_count` messages (and about `max_bytes`) chosen by `sel`, resuming
  // after `resume` if it is not empty.
  Status Collect(lmdb::Txn& txn, const QueueInfo& q, const Selection& sel,
                 const std::string& resume, size_t max_count, std::vector<Found>& out) {
    out.clear();
    if (q.id == 0 || max_count == 0) return {};
    size_t bytes = 0;
    int64_t now = NowMs();
    auto full = [&] { return out.size() >= max_count || bytes >= kBatchBytes; };

    if (sel.anchor == Anchor::kId) {
      if (!resume.empty()) return {};
      auto v = txn.Get(by_id, IdKey(q, sel.id));
      if (!v || v->size() != 12 || GetU32BE(*v, 0) != q.id) return {};
      Found f;
      f.walk_key = "id";
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(*v, 4), f));
      if (!Visible(txn, q, f.msg, sel.include_locked) || Expired(q, f.msg, now)) return {};
      if (sel.plain_only && IsConvMessage(q, f.msg)) return {};
      out.push_back(std::move(f));
      return {};
    }

    if (sel.anchor == Anchor::kArrival) {
      std::string prefix = QueueIdKey(q.id);
      lmdb::Cursor c(txn, messages);
      bool on = resume.empty() ? c.SeekGe(prefix) : c.SeekGe(resume);
      if (on && !resume.empty() && c.key() == resume) on = c.Next();
      for (; on && HasPrefix(c.key(), prefix) && !full(); on = c.Next()) {
        Found f;
        f.walk_key = std::string(c.key());
        f.msg.lookup_id = GetU64BE(c.key(), 4);
        f.msg.queue = q.name;
        f.size = c.value().size();
        MQ_RETURN_IF_ERROR(DecodeRecord(c.value(), f.msg));
        bytes += f.size;
        out.push_back(std::move(f));
      }
      return {};
    }

    if (sel.anchor == Anchor::kCorrelation) {
      std::string prefix = CorrPrefix(sel.correlation, q.id);
      lmdb::Cursor c(txn, by_corr);
      bool on = resume.empty() ? c.SeekGe(prefix) : c.SeekGe(resume);
      if (on && !resume.empty() && c.key() == resume) on = c.Next();
      for (; on && HasPrefix(c.key(), prefix) && !full(); on = c.Next()) {
        if (c.key().size() != prefix.size() + 9)
          return Status(Code::kCorrupted, "bad correlation index key", q.name);
        Found f;
        f.walk_key = std::string(c.key());
        MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(c.key(), prefix.size() + 1), f));
        if (!Visible(txn, q, f.msg, sel.include_locked) || Expired(q, f.msg, now)) continue;
        if (sel.plain_only && IsConvMessage(q, f.msg)) continue;
        bytes += f.size;
        out.push_back(std::move(f));
      }
      return {};
    }

    std::string prefix = QueueIdKey(q.id);
    bool backward = sel.anchor == Anchor::kLast || sel.anchor == Anchor::kBefore;
    // Where the walk starts: forwards from `start` (inclusive or not), backwards from before
    // `start` (the end of the queue if empty).
    std::string start;
    bool inclusive = true;
    if (!resume.empty()) {
      start = resume;
      inclusive = false;
    } else {
      switch (sel.anchor) {
        case Anchor::kHead:
          start = prefix;
          break;
        case Anchor::kLast:
          start = QueueIdKey(q.id + 1);
          // Plain receives stop below the conversation bands of `order`.
          if (sel.plain_only) start = QueueIdKey(q.id) + '\x08';
          break;
        case Anchor::kAt:
        case Anchor::kAfter:
        case Anchor::kBefore: {
          Found anchor;
          if (!txn.Get(messages, MsgKey(q.id, sel.lookup_id))) return {};
          MQ_RETURN_IF_ERROR(LoadMessage(txn, q, sel.lookup_id, anchor));
          start = OrderKeyFor(q, anchor.msg);
          inclusive = sel.anchor == Anchor::kAt;
          break;
        }
        default:
          return {};
      }
    }
    // Visible messages are in `order`; with include_locked, Locked ones (in `locked`, under
    // the same keys) are merged in, in their places.
    lmdb::Cursor co(txn, order);
    std::optional<lmdb::Cursor> cl;
    if (sel.include_locked) cl.emplace(txn, locked);
    auto position = [&](lmdb::Cursor& c) -> bool {
      if (backward) return c.SeekLt(start);
      bool on = c.SeekGe(start);
      if (on && !inclusive && c.key() == start) on = c.Next();
      return on;
    };
    // The conversation bands (priority byte 8 and up) end a plain receive's walk.
    auto plain_end = [&](lmdb::Cursor& c) {
      return sel.plain_only && c.key().size() > 4 && static_cast<uint8_t>(c.key()[4]) >= 8;
    };
    bool on_o = position(co) && HasPrefix(co.key(), prefix) && !plain_end(co);
    bool on_l = cl && position(*cl) && HasPrefix(cl->key(), prefix);
    while ((on_o || on_l) && !full()) {
      bool take_o = on_o && (!on_l || (backward ? co.key() > cl->key() : co.key() < cl->key()));
      lmdb::Cursor& c = take_o ? co : *cl;
      if (c.key().size() != 13) return Status(Code::kCorrupted, "bad order index key", q.name);
      Found f;
      f.walk_key = std::string(c.key());
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(c.key(), 5), f));
      if (!Expired(q, f.msg, now)) {
        bytes += f.size;
        out.push_back(std::move(f));
      }
      bool on = backward ? c.Prev() : c.Next();
      on = on && HasPrefix(c.key(), prefix) && !plain_end(c);
      (take_o ? on_o : on_l) = on;
    }
    return {};
  }

  // Stores `m` as a new message of `q`: its record, the delivery order (or `delays`), the id,
  // correlation and deadline indexes, and the counters. The lookup id is `lookup` if not 0 (a
  // move that keeps it), else the queue's next; a `promoted` message goes to the delivery
  // order even though it keeps its visible time. With `quota` not 0, a message that would take
  // the queue's bytes above it is refused (MQ_ERROR_INSUFFICIENT_RESOURCES) before anything
  // changes. The caller saves `q`.
  Status InsertMessage(lmdb::Txn& txn, QueueInfo& q, Message& m, uint64_t quota,
                       uint64_t lookup = 0, bool promoted = false) {
    m.lookup_id = lookup ? lookup : q.next_lookup;
    m.queuing_order = m.lookup_id;
    m.queue = q.name;
    std::string rec = EncodeRecord(m);
    if (quota && q.bytes + rec.size() > quota)
      return Status(Code::kInsufficientResources,
                    fmt::format("queue quota of {} bytes would be exceeded ({} used, {} more)",
                                quota, q.bytes, rec.size()),
                    q.name);
    std::string loc = MsgKey(q.id, m.lookup_id);
    auto fresh = txn.PutNew(by_id, IdKey(q, m.id), loc);
    if (!fresh.ok()) return fresh.status();
    if (!*fresh)
      return Status(Code::kIllegalPropertyValue,
                    fmt::format("message id {} is already in the store", FormatMessageId(m.id)),
                    q.name);
    q.next_lookup = std::max(q.next_lookup, m.lookup_id + 1);
    MQ_RETURN_IF_ERROR(txn.Put(messages, loc, rec));
    if (m.visible_time && !promoted) {
      MQ_RETURN_IF_ERROR(txn.Put(delays, DelayKey(q.id, m.visible_time, m.lookup_id), {}));
      q.delayed++;
    } else {
      if (IsConvMessage(q, m))
        MQ_RETURN_IF_ERROR(ConvOnAdd(txn, q, m));
      else
        MQ_RETURN_IF_ERROR(txn.Put(order, OrderKey(q.id, m.priority, m.lookup_id), {}));
      to_notify.insert(q.id);
    }
    if (!m.correlation_id.empty())
      MQ_RETURN_IF_ERROR(
          txn.Put(by_corr, CorrKey(m.correlation_id, q.id, m.priority, m.lookup_id), {}));
    if (int64_t at = ExpiryOf(m); at && IsLive(q) && m.status != 0)
      MQ_RETURN_IF_ERROR(txn.Put(deadlines, DeadlineKey(q.id, at, m.lookup_id), {}));
    q.count++;
    q.bytes += rec.size();
    return {};
  }

  // Sends the acknowledgement of class `cls` for `orig`, a message of `cur`, to its admin
  // queue if it asked for that class (MSMQ: the ack has no body, the original's label, and
  // correlation id = the original's id). An admin queue that is missing, disabled or full
  // gets nothing: the operation that caused the ack never fails because of it.
  Status EmitAck(lmdb::Txn& txn, QueueInfo& cur, const Message& orig, uint16_t cls, int64_t now) {
    if (orig.admin_queue.empty() || !AckWanted(orig.ack, cls) || !IsLive(cur)) return {};
    Message a;
    a.msg_class = cls;
    a.label = orig.label;
    a.correlation_id = orig.id;
    a.priority = orig.priority;
    a.destination_queue = orig.admin_queue;
    a.sent_time = a.arrived_time = a.message_enqueue_time = now;
    a.source_qm_guid = guid;
    auto id = NewMessageId(txn);
    if (!id.ok()) return id.status();
    a.id = *id;
    if (orig.admin_queue == cur.name) {
      Status s = InsertMessage(txn, cur, a, cur.quota);
      return s.code() == Code::kInsufficientResources ? Status() : s;
    }
    auto aq = LoadQueue(txn, orig.admin_queue);
    if (!aq.ok()) return aq.status();
    if (!*aq || !(*aq)->enabled) return {};
    Status s = InsertMessage(txn, **aq, a, (*aq)->quota);
    if (s.code() == Code::kInsufficientResources) return {};
    MQ_RETURN_IF_ERROR(s);
    return PutQueue(txn, **aq);
  }

  // Puts a copy of `m` in the journal `jname` (made on first use). With `own_quota` the
  // journal's own quota applies (system;journal), else `quota`. A full journal takes nothing
  // and sets `*dropped`.
  Status JournalCopy(lmdb::Txn& txn, const std::string& jname, const Message& m, bool own_quota,
                     uint64_t quota, bool* dropped) {
    auto jq = LoadOrCreate(txn, jname);
    if (!jq.ok()) return jq.status();
    Message c = m;
    c.visible_time = 0;
    c.awaiting_arrival = false;
    Status s = InsertMessage(txn, *jq, c, own_quota ? jq->quota : quota);
    if (s.code() == Code::kInsufficientResources) {
      *dropped = true;
      if (own_quota) {
        jq->journal_dropped++;
        return PutQueue(txn, *jq);
      }
      return {};
    }
    MQ_RETURN_IF_ERROR(s);
    return PutQueue(txn, *jq);
  }

  // `m` has reached `q` (sent, or a delayed message made visible): ACK_REACH_QUEUE if asked
  // for, and source journaling (a copy in system;journal) if the message asked for it.
  Status Arrived(lmdb::Txn& txn, QueueInfo& q, const Message& m, int64_t now) {
    MQ_RETURN_IF_ERROR(EmitAck(txn, q, m, kClassAckReachQueue, now));
    if (!m.journal || !IsLive(q)) return {};
    bool dropped = false;
    return JournalCopy(txn, "system;journal", m, true, 0, &dropped);
  }

  // `m` was received from `q` (and is removed in this transaction): ACK_RECEIVE if asked for,
  // and target journaling (a copy in QUEUE;journal) if the queue keeps a journal. The caller
  // saves `q`.
  Status Received(lmdb::Txn& txn, QueueInfo& q, const Message& m, int64_t now) {
    MQ_RETURN_IF_ERROR(EmitAck(txn, q, m, kClassAckReceive, now));
    if (!q.journal || !IsLive(q)) return {};
    bool dropped = false;
    MQ_RETURN_IF_ERROR(JournalCopy(txn, q.name + ";journal", m, false, q.journal_quota, &dropped));
    if (dropped) q.journal_dropped++;
    return {};
  }

  // A message of `q` that failed for the reason `cls` (expiry, purge, deletion): the NACK if
  // asked for, then to the dead-letter queue (system;deadxact for a transactional message)
  // with the reason as its class if it asked for dead-lettering, else discarded.
  Status DeadLetterOrDrop(lmdb::Txn& txn, QueueInfo& q, Found& f, uint16_t cls, int64_t now) {
    MQ_RETURN_IF_ERROR(EmitAck(txn, q, f.msg, cls, now));
    if (!f.msg.deadletter || !IsLive(q)) return RemoveMessage(txn, q, f.msg, f.size);
    std::string to =
        f.msg.xact_id.empty() && !q.transactional ? "system;deadletter" : "system;deadxact";
    f.msg.msg_class = cls;
    if (f.msg.destination_queue.empty()) f.msg.destination_queue = q.name;
    return MoveMessage(txn, q, f, to, false, now);
  }

  // The earliest expiry among `q`'s messages; 0 if none.
  int64_t FirstExpiry(lmdb::Txn& txn, uint32_t qid) {
    if (qid == 0) return 0;
    std::string prefix = QueueIdKey(qid);
    lmdb::Cursor c(txn, deadlines);
    if (!c.SeekGe(prefix) || !HasPrefix(c.key(), prefix)) return 0;
    return static_cast<int64_t>(GetU64BE(c.key(), 4));
  }

  // Handles the messages of `q` whose deadline is past by `now`, walking the deadline index
  // from its start: never the queue. A Locked message waits for its transaction to end.
  Result<uint64_t> ExpireDue(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
    uint64_t n = 0;
    if (q.id == 0 || !IsLive(q)) return n;
    std::string prefix = QueueIdKey(q.id);
    std::string resume;
    for (;;) {
      std::vector<std::string> keys;
      {
        lmdb::Cursor c(txn, deadlines);
        bool on = resume.empty() ? c.SeekGe(prefix) : c.SeekGe(resume);
        if (on && !resume.empty() && c.key() == resume) on = c.Next();
        for (; on && HasPrefix(c.key(), prefix) &&
               static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now && keys.size() < kBatchCount;
             on = c.Next())
          keys.emplace_back(c.key());
      }
      if (keys.empty()) return n;
      for (const std::string& key : keys) {
        Found f;
        MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(key, 12), f));
        if (txn.Get(locked, OrderKeyFor(q, f.msg))) continue;
        MQ_RETURN_IF_ERROR(DeadLetterOrDrop(txn, q, f, ExpiryClass(f.msg), now));
        ++n;
      }
      resume = keys.back();
    }
  }

  // Whether `m`, a message of `q`, is past its deadline at `now` (and so never delivered,
  // even before a writer removes it).
  static bool Expired(const QueueInfo& q, const Message& m, int64_t now) {
    int64_t at = ExpiryOf(m);
    return at && at <= now && IsLive(q) && m.status != 0;
  }

  // Removes every message of `q` for the reason `reached` (`awaiting`: for delayed messages
  // that had not reached it yet), with NACKs and dead-lettering as the messages asked.
  Status DrainQueue(lmdb::Txn& txn, QueueInfo& q, uint16_t reached, uint16_t awaiting,
                    int64_t now) {
    if (q.id == 0) return {};
    if (!IsLive(q)) return RemoveAll(txn, q);
    std::string prefix = QueueIdKey(q.id);
    for (;;) {
      std::vector<Found> batch;
      {
        lmdb::Cursor c(txn, messages);
        for (bool on = c.SeekGe(prefix);
             on && HasPrefix(c.key(), prefix) && batch.size() < kBatchCount; on = c.Next()) {
          Found f;
          f.msg.lookup_id = GetU64BE(c.key(), 4);
          f.msg.queue = q.name;
          f.size = c.value().size();
          MQ_RETURN_IF_ERROR(DecodeRecord(c.value(), f.msg));
          batch.push_back(std::move(f));
        }
      }
      if (batch.empty()) return {};
      for (auto& f : batch)
        MQ_RETURN_IF_ERROR(
            DeadLetterOrDrop(txn, q, f, f.msg.awaiting_arrival ? awaiting : reached, now));
    }
  }

  // Removes every message of `q`, visible or delayed.
  Status RemoveAll(lmdb::Txn& txn, QueueInfo& q) {
    if (q.id == 0) return {};
    std::string prefix = QueueIdKey(q.id);
    for (;;) {
      std::vector<Found> batch;
      {
        lmdb::Cursor c(txn, messages);
        for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix) &&
                                          batch.size() < kBatchCount;
             on = c.Next()) {
          Found f;
          f.msg.lookup_id = GetU64BE(c.key(), 4);
          f.size = c.value().size();
          MQ_RETURN_IF_ERROR(DecodeRecord(c.value(), f.msg));
          batch.push_back(std::move(f));
        }
      }
      if (batch.empty()) return {};
      for (auto& f : batch) MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size));
    }
  }

  // The earliest visible time among `q`'s delayed messages; 0 if none.
  int64_t FirstDelay(lmdb::Txn& txn, uint32_t qid) {
    if (qid == 0) return 0;
    std::string prefix = QueueIdKey(qid);
    lmdb::Cursor c(txn, delays);
    if (!c.SeekGe(prefix) || !HasPrefix(c.key(), prefix)) return 0;
    return static_cast<int64_t>(GetU64BE(c.key(), 4));
  }

  // Makes the delayed messages of `q` that are due by `now` visible: each gets a new lookup
  // id (its arrival in the queue proper) and an order entry. Returns how many.
  Result<uint64_t> PromoteDue(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
    uint64_t n = 0;
    for (;;) {
      int64_t first = FirstDelay(txn, q.id);
      if (first == 0 || first > now) return n;
      std::vector<uint64_t> due;
      {
        std::string prefix = QueueIdKey(q.id);
        lmdb::Cursor c(txn, delays);
        for (bool on = c.SeekGe(prefix);
             on && HasPrefix(c.key(), prefix) &&
             static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now && due.size() < kBatchCount;
             on = c.Next())
          due.push_back(GetU64BE(c.key(), 12));
      }
      for (uint64_t lookup : due) {
        Found f;
        MQ_RETURN_IF_ERROR(LoadMessage(txn, q, lookup, f));
        Message& m = f.msg;
        bool arriving = m.awaiting_arrival;
        if (arriving && Expired(q, m, m.visible_time)) {
          // Its ttrq (or ttbr) ran out before it could become visible: it never arrives.
          MQ_RETURN_IF_ERROR(DeadLetterOrDrop(txn, q, f, ExpiryClass(m), now));
          continue;
        }
        MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, m, f.size));
        m.awaiting_arrival = false;  // it keeps its visible time: when it became visible
        MQ_RETURN_IF_ERROR(InsertMessage(txn, q, m, 0, 0, true));
        if (arriving) MQ_RETURN_IF_ERROR(Arrived(txn, q, m, now));
        ++n;
      }
      MQ_RETURN_IF_ERROR(PutQueue(txn, q));
    }
  }

  std::string LeaseLockPath(uint32_t qid, uint64_t lease_id) {
    return paths.locks_dir() + "/lease." + std::to_string(qid) + "." + std::to_string(lease_id);
  }

  Result<QueueInfo> LoadOrCreate(lmdb::Txn& txn, const std::string& name) {
    auto q = LoadQueue(txn, name);
    if (!q.ok()) return q.status();
    if (*q) return std::move(**q);
    return NewQueue(txn, name);
  }

  // Moves a message of `q` (in any state) to the queue `to_name` (created if missing, as
  // subqueues and system queues are), keeping its lookup id if `keep_lookup` and it is free
  // there (MSMQ MoveMessage), else giving it the target's next one.
  Status MoveMessage(lmdb::Txn& txn, QueueInfo& q, Found& f, const std::string& to_name,
                     bool keep_lookup, int64_t now) {
    MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size));
    auto to_r = LoadOrCreate(txn, to_name);
    if (!to_r.ok()) return to_r.status();
    QueueInfo& to = to_r.value();
    Message& m = f.msg;
    m.move_count++;
    m.last_move_time = now;
    m.visible_time = 0;
    m.awaiting_arrival = false;
    uint64_t lookup = m.lookup_id;
    if (!keep_lookup || txn.Get(messages, MsgKey(to.id, lookup))) lookup = 0;
    MQ_RETURN_IF_ERROR(InsertMessage(txn, to, m, 0, lookup));
    return PutQueue(txn, to);
  }

  // Rewrites a message's record in place; keeps the queue's byte counter right.
  Status Rewrite(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t old_size,
                 uint64_t* new_size = nullptr) {
    std::string rec = EncodeRecord(m);
    MQ_RETURN_IF_ERROR(txn.Put(messages, MsgKey(q.id, m.lookup_id), rec));
    q.bytes = q.bytes - std::min(q.bytes, old_size) + rec.size();
    if (new_size) *new_size = rec.size();
    return {};
  }

  // Ends a lease by removing its messages.
  Status CommitLease(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id, const LeaseRecord& rec) {
    for (const std::string& key : rec.keys) {
      auto holder = txn.Get(locked, key);
      if (!holder || holder->size() != 8 || GetU64BE(*holder, 0) != lease_id) continue;
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(key, 5), f));
      MQ_RETURN_IF_ERROR(Received(txn, q, f.msg, NowMs()));
      if (IsConvMessage(q, f.msg) && q.retention)
        MQ_RETURN_IF_ERROR(Retain(txn, q, f, true));
      else
        MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size));
    }
    auto r = txn.Del(leases, LeaseKey(q.id, lease_id));
    if (!r.ok()) return r.status();
    return PutQueue(txn, q);
  }

  // Ends a lease by returning its messages to their places (after `delay_ms`), abort count
  // + 1; a message rolled back max_retries times meets the queue's poison action.
  Status RollbackLease(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id, const LeaseRecord& rec,
                       int64_t delay_ms, int64_t now, FinishReport* report) {
    for (const std::string& key : rec.keys) {
      auto holder = txn.Get(locked, key);
      if (!holder || holder->size() != 8 || GetU64BE(*holder, 0) != lease_id) continue;
      auto r = txn.Del(locked, key);
      if (!r.ok()) return r.status();
      q.locked -= std::min<uint64_t>(q.locked, 1);
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(key, 5), f));
      Message& m = f.msg;
      m.abort_count++;
      bool poison = q.max_retries && m.abort_count >= q.max_retries;
      // A conversation message returns at once: its group's order is its sequence.
      if (!poison && delay_ms > 0 && !IsConvMessage(q, m)) {
        m.visible_time = now + delay_ms;
        MQ_RETURN_IF_ERROR(Rewrite(txn, q, m, f.size, &f.size));
        MQ_RETURN_IF_ERROR(txn.Put(delays, DelayKey(q.id, m.visible_time, m.lookup_id), {}));
        q.delayed++;
        continue;
      }
      m.visible_time = 0;
      MQ_RETURN_IF_ERROR(Rewrite(txn, q, m, f.size, &f.size));
      MQ_RETURN_IF_ERROR(txn.Put(order, key, {}));  // the same key: the same place
      if (IsConvMessage(q, m)) MQ_RETURN_IF_ERROR(ConvOnRestore(txn, q, m));
      to_notify.insert(q.id);
      if (!poison) continue;
      switch (q.poison) {
        case PoisonAction::kSubqueue: {
          std::string to = q.name + ";poison";
          MQ_RETURN_IF_ERROR(MoveMessage(txn, q, f, to, true, now));
          if (report)
            report->notes.push_back(fmt::format("message {} rolled back {} times: moved to {}",
                                                m.lookup_id, m.abort_count, to));
          break;
        }
        case PoisonAction::kDeadletter: {
          std::string to = q.transactional ? "system;deadxact" : "system;deadletter";
          uint64_t lookup = m.lookup_id;
          MQ_RETURN_IF_ERROR(EmitAck(txn, q, m, kClassNackReceiveRejected, now));
          m.msg_class = kClassNackReceiveRejected;
          m.destination_queue = q.name;
          MQ_RETURN_IF_ERROR(MoveMessage(txn, q, f, to, false, now));
          if (report)
            report->notes.push_back(fmt::format("message {} rolled back {} times: moved to {}",
                                                lookup, m.abort_count, to));
          break;
        }
        case PoisonAction::kDisable:
          q.enabled = false;
          q.modified_time = now;
          if (report)
            report->notes.push_back(fmt::format(
                "message {} rolled back {} times: queue disabled (status OFF)", m.lookup_id,
                m.abort_count));
          break;
      }
    }
    auto r = txn.Del(leases, LeaseKey(q.id, lease_id));
    if (!r.ok()) return r.status();
    to_notify.insert(q.id);
    return PutQueue(txn, q);
  }

  // Forgets a dedup key, given its dedup_exp key.
  Status DropDedup(lmdb::Txn& txn, uint32_t qid, const std::string& exp_key) {
    std::string key = exp_key.substr(12);
    auto v = txn.Get(dedup, DedupKey(qid, key));
    // Only if the dedup entry still has this expiry (a later send may have renewed it).
    if (v && v->size() >= 8 && GetU64BE(*v, 0) == GetU64BE(exp_key, 4)) {
      auto r = txn.Del(dedup, DedupKey(qid, key));
      if (!r.ok()) return r.status();
    }
    auto r = txn.Del(dedup_exp, exp_key);
    return r.ok() ? Status() : r.status();
  }

  struct LeaseEntry {
    uint64_t id;
    LeaseRecord rec;
  };

  Result<std::vector<LeaseEntry>> LeasesOf(lmdb::Txn& txn, uint32_t qid) {
    std::vector<LeaseEntry> out;
    if (qid == 0) return out;
    std::string prefix = QueueIdKey(qid);
    lmdb::Cursor c(txn, leases);
    for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next()) {
      LeaseEntry e;
      e.id = GetU64BE(c.key(), 4);
      if (!DecodeLease(c.value(), e.rec))
        return Status(Code::kCorrupted, "malformed lease record", fmt::format("#{}", qid));
      out.push_back(std::move(e));
    }
    return out;
  }

  // Whether a lease's holder is gone: its lock file is not locked (process lease), or it
  // expired by `now` (token lease).
  bool LeaseIsOver(uint32_t qid, const LeaseEntry& e, int64_t now) {
    if (!e.rec.process) return e.rec.expires <= now;
    auto held = FileLock::IsHeld(LeaseLockPath(qid, e.id));
    return held.ok() && !*held;
  }

  // Returns the messages of dead or expired leases of `q`.
  Result<uint64_t> RecoverLeases(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
    auto list = LeasesOf(txn, q.id);
    if (!list.ok()) return list.status();
    uint64_t n = 0;
    for (const LeaseEntry& e : *list) {
      if (!LeaseIsOver(q.id, e, now)) continue;
      MQ_RETURN_IF_ERROR(RollbackLease(txn, q, e.id, e.rec, 0, now, nullptr));
      if (e.rec.process) ::unlink(LeaseLockPath(q.id, e.id).c_str());
      ++n;
    }
    return n;
  }

  // Promotes due delayed messages and returns what dead or expired leases hold.
  Result<uint64_t> Maintain(lmdb::Txn& txn, QueueInfo& q, int64_t now) {
    auto p = PromoteDue(txn, q, now);
    if (!p.ok()) return p.status();
    auto r = RecoverLeases(txn, q, now);
    if (!r.ok()) return r.status();
    auto e = ExpireDue(txn, q, now);
    if (!e.ok()) return e.status();
    if (*p || *r) to_notify.insert(q.id);
    if (*p || *r || *e) MQ_RETURN_IF_ERROR(PutQueue(txn, q));
    return *p + *r + *e;
  }

  // The next time something in `q` changes by itself: a delayed message becomes visible or a
  // lease expires. 0: none.
  int64_t NextDeadline(lmdb::Txn& txn, uint32_t qid) {
    int64_t d = FirstDelay(txn, qid);
    auto list = LeasesOf(txn, qid);
    if (list.ok())
      for (const LeaseEntry& e : *list)
        if (!e.rec.process && e.rec.expires && (d == 0 || e.rec.expires < d)) d = e.rec.expires;
    return d;
  }

  // For read-only paths: runs Maintain in a write transaction of its own if the queue `ref`
  // names has anything due. Cheap when it has not: a seek and a look at its leases.
  Status MaintainIfNeeded(const QueueRef& ref) {
    int64_t now = NowMs();
    {
      auto txn = lmdb::Txn::Begin(env, false);
      if (!txn.ok()) return txn.status();
      auto q = LoadQueue(*txn, ref.Full());
      if (!q.ok()) return q.status();
      if (!*q) return {};
      uint32_t qid = (*q)->id;
      int64_t first = FirstDelay(*txn, qid);
      int64_t expiry = FirstExpiry(*txn, qid);
      bool due = (first != 0 && first <= now) || (expiry != 0 && expiry <= now);
      if (!due) {
        auto list = LeasesOf(*txn, qid);
        if (!list.ok()) return list.status();
        for (const LeaseEntry& e : *list) due = due || LeaseIsOver(qid, e, now);
      }
      if (!due) return {};
    }
    // Promotions and recoveries redo themselves if a power loss undoes them: a light commit.
    return WriteLight(
        [&](lmdb::Txn& txn) -> Status {
          auto q = LoadQueue(txn, ref.Full());
          if (!q.ok()) return q.status();
          if (!*q) return {};
          auto n = Maintain(txn, **q, now);
          return n.ok() ? Status() : n.status();
        },
        true);
  }

  // The id of the queue a wait is about, giving a subqueue that was never written a catalog
  // entry (and so a doorbell). A missing or (with `need_enabled`) disabled queue is an error.
  Result<uint32_t> QueueIdForWait(const QueueRef& ref, bool need_enabled) {
    uint32_t qid = 0;
    {
      // Usually the queue exists: a read transaction is enough.
      auto txn = lmdb::Txn::Begin(env, false);
      if (!txn.ok()) return txn.status();
      auto q = FindQueue(*txn, ref);
      if (!q.ok()) return q.status();
      if (need_enabled && !q->enabled)
        return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
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
        return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
      qid = q->id;
      return {};
    });
    if (!s.ok()) return s;
    return qid;
  }

  // The wait protocol of waiter.hpp around `attempt`, which looks once and returns ok (found),
  // MQ_ERROR_MESSAGE_NOT_FOUND (look again later; it may set the store's next deadline), or
  // another error (give up). Without waiting, `attempt` runs once.
  std::map<uint32_t, Waiter> armed;  // the watches of WaitLoop, by queue id
  Status WaitLoop(const QueueRef& ref, const ReadOptions& ro,
                  const std::function<Status(bool waiting, int64_t& next_deadline)>& attempt) {
    int64_t deadline = 0;
    // The first look needs no watch: most reads find something. Only then arm, and look
    // again before sleeping, so that nothing committed in between is missed.
    Status first = attempt(ro.wait_ms != 0, deadline);
    if (ro.wait_ms == 0 || first.code() != Code::kMessageNotFound) return first;
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
    int64_t until = ro.wait_ms < 0 ? -1 : MonotonicMs() + ro.wait_ms;
    for (;;) {
      deadline = 0;
      Status s = attempt(true, deadline);
      if (s.code() == Code::kQueueNotFound)
        return Status(Code::kQueueDeleted, "queue was deleted while waiting", ref.Full());
      if (s.code() != Code::kMessageNotFound) return s;
      auto wake = w->Wait(deadline, until, ro.stop_fd);
      if (!wake.ok()) return wake.status();
      if (*wake == Waiter::Wake::kTimeout)
        return Status(Code::kIoTimeout, "timed out waiting for a message", ref.Full());
      if (*wake == Waiter::Wake::kStop)
        return Status(Code::kOperationCancelled, "stopped by a signal", ref.Full());
    }
  }

  std::string CursorLockPath(uint32_t qid, const std::string& name) {
    return paths.locks_dir() + "/cursor." + std::to_string(qid) + "." + name;
  }

  // Takes a named cursor's lock, waiting at most `wait_ms` (0: not at all; -1: as long as it
  // takes). A cursor is stored once it has moved.
  Result<FileLock> LockCursor(const QueueRef& ref, uint32_t qid, const std::string& name,
                              bool wait_lock, int64_t wait_ms) {
    auto l = FileLock::Acquire(CursorLockPath(qid, name), file_mode, wait_lock, wait_ms);
    if (!l.ok()) {
      Status s = l.status();
      if (s.code() == Code::kIoTimeout)
        return Status(s.code(), fmt::format("timed out waiting for cursor {}, in use by another "
                                            "process", name), ref.Full());
      if (s.code() == Code::kSharingViolation)
        return Status(s.code(), fmt::format("cursor {} is in use by another process", name),
                      ref.Full());
      return s;
    }
    return l;
  }

  struct CursorState {
    bool positioned = false;
    std::string key;  // order key of the position
  };

  CursorState LoadCursor(lmdb::Txn& txn, uint32_t qid, const std::string& name) {
    CursorState st;
    auto v = txn.Get(cursors, CursorKey(qid, name));
    if (v && v->size() == 14 && (*v)[0] == 1) {
      st.positioned = true;
      st.key = std::string(v->substr(1));
    }
    return st;
  }

  Status SaveCursor(lmdb::Txn& txn, uint32_t qid, const std::string& name, const std::string& key) {
    std::string v(1, '\x01');
    v += key;
    return txn.Put(cursors, CursorKey(qid, name), v);
  }

  // The first visible message of `q` strictly after order key `after` (or from the head if
  // `after` is empty).
  Result<std::optional<Found>> NextVisible(lmdb::Txn& txn, const QueueInfo& q,
                                           const std::string& after) {
    std::string prefix = QueueIdKey(q.id);
    int64_t now = NowMs();
    lmdb::Cursor c(txn, order);
    bool on = after.empty() ? c.SeekGe(prefix) : c.SeekGe(after);
    if (on && !after.empty() && c.key() == after) on = c.Next();
    for (; on && HasPrefix(c.key(), prefix); on = c.Next()) {
      Found f;
      f.walk_key = std::string(c.key());
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(c.key(), 5), f));
      if (!Expired(q, f.msg, now)) return std::optional<Found>(std::move(f));
    }
    return std::optional<Found>();
  }

  // Moves a named cursor of `q` as MSMQ does and saves its new position: kFirst to the head;
  // kNext past its message; kCurrent stays. kCurrent and kNext on a cursor never moved are
  // illegal. kCurrent on a message gone since is MQ_ERROR_MESSAGE_ALREADY_RECEIVED, or, for
  // a notification (`notify`, seed 000), a move to the next suitable message. Nothing there:
  // MQ_ERROR_MESSAGE_NOT_FOUND (the caller may wait).
  Result<Found> MoveCursor(lmdb::Txn& txn, const QueueInfo& q, const std::string& name,
                           CursorAction action, bool notify) {
    CursorState st = LoadCursor(txn, q.id, name);
    std::optional<Found> found;
    if (action != CursorAction::kFirst && !st.positioned)
      return Status(Code::kIllegalCursorAction,
                    fmt::format("cursor {} was never moved: move it to the first message first",
                                name),
                    q.name);
    if (action == CursorAction::kCurrent && txn.Get(order, st.key)) {
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(st.key, 5), f));
      f.walk_key = st.key;
      found = std::move(f);
    } else if (action == CursorAction::kCurrent && !notify) {
      return Status(Code::kMessageAlreadyReceived,
                    fmt::format("the message at cursor {} was received or moved", name), q.name);
    } else {
      auto f = NextVisible(txn, q, action == CursorAction::kFirst ? std::string() : st.key);
      if (!f.ok()) return f.status();
      found = std::move(*f);
    }
    if (!found) return Status(Code::kMessageNotFound, "no message", q.name);
    MQ_RETURN_IF_ERROR(SaveCursor(txn, q.id, name, found->walk_key));
    return std::move(*found);
  }

  // ---- Conversations (conversation.hpp): records, indexes and group selection. ----

  // Conversation messages are indexed only in a queue proper: moved to a poison subqueue or a
  // dead-letter queue they are plain messages there.
  static bool IsConvQueue(const QueueInfo& q) { return q.name.find(';') == std::string::npos; }
  static bool IsConvMessage(const QueueInfo& q, const Message& m) {
    return !IsNil(m.conversation_handle) && IsConvQueue(q);
  }
  static std::string OrderKeyFor(const QueueInfo& q, const Message& m) {
    std::string k;
    k.reserve(13);
    PutU32BE(k, q.id);
    bool conv = IsConvMessage(q, m);
    k.push_back(static_cast<char>(OrderBand(m.priority, conv, conv && m.status == 0)));
    PutU64BE(k, m.lookup_id);
    return k;
  }

  Result<std::optional<ConvRecord>> LoadConv(lmdb::Txn& txn, const Guid& handle) {
    auto v = txn.Get(convs, GuidBytes(handle));
    if (!v) return std::optional<ConvRecord>();
    ConvRecord r;
    if (!DecodeConv(*v, r))
      return Status(Code::kCorrupted, "malformed conversation record", FormatGuid(handle));
    return std::optional<ConvRecord>(std::move(r));
  }

  Result<ConvRecord> ConvOf(lmdb::Txn& txn, const QueueInfo& q, const Message& m) {
    auto c = LoadConv(txn, m.conversation_handle);
    if (!c.ok()) return c.status();
    if (!*c || (*c)->qid != q.id)
      return Status(Code::kCorrupted,
                    fmt::format("message {} names conversation {}, which is not in the queue",
                                m.lookup_id, FormatGuid(m.conversation_handle)),
                    q.name);
    return std::move(**c);
  }

  Result<GroupRecord> LoadGroup(lmdb::Txn& txn, uint32_t qid, const Guid& group) {
    GroupRecord g;
    auto v = txn.Get(groups, GroupKey(qid, group));
    if (v && !DecodeGroup(*v, g))
      return Status(Code::kCorrupted, "malformed group record", FormatGuid(group));
    return g;
  }

  std::string ConvMsgKeyOf(const QueueInfo& q, const ConvRecord& c, const Message& m) {
    return ConvMsgKey(q.id, c.group, c.priority, c.rank, m.conversation_handle,
                      m.message_type_name == kErrorType, m.message_sequence_number);
  }

  static std::string KeptKey(const Guid& handle, uint64_t seq) {
    std::string k(GuidBytes(handle));
    PutU64BE(k, seq);
    return k;
  }

  // Changes a group's record with `fn`, then puts its group_sel entry right: the head of its
  // available messages, or none while it is locked or has nothing available. A group with
  // no conversations and no messages is forgotten.
  Status TouchGroup(lmdb::Txn& txn, const QueueInfo& q, const Guid& group,
                    const std::function<void(GroupRecord&)>& fn) {
    auto g = LoadGroup(txn, q.id, group);
    if (!g.ok()) return g.status();
    fn(*g);
    if (g->locked == 0) g->holder = 0;
    std::string want;
    if (g->locked == 0) {
      std::string prefix = ConvMsgGroupPrefix(q.id, group);
      lmdb::Cursor c(txn, conv_msgs);
      if (c.SeekGe(prefix) && HasPrefix(c.key(), prefix) && c.value().size() == 8)
        want = GroupSelKey(q.id, static_cast<uint8_t>(7 - static_cast<uint8_t>(c.key()[20])),
                           GetU64BE(c.value(), 0), group);
    }
    if (want != g->sel_key) {
      if (!g->sel_key.empty()) {
        auto r = txn.Del(group_sel, g->sel_key);
        if (!r.ok()) return r.status();
      }
      if (!want.empty()) {
        MQ_RETURN_IF_ERROR(txn.Put(group_sel, want, {}));
        to_notify.insert(q.id);  // a group became receivable
      }
      g->sel_key = want;
    }
    if (g->convs == 0 && g->count == 0 && g->sel_key.empty()) {
      auto r = txn.Del(groups, GroupKey(q.id, group));
      return r.ok() ? Status() : r.status();
    }
    return txn.Put(groups, GroupKey(q.id, group), EncodeGroup(*g));
  }

  // A conversation message enters queue `q` (a send, an import, a requeue): its `order`
  // entry in the conversation band, and its group index entry, or its retained entry.
  Status ConvOnAdd(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
    auto c = ConvOf(txn, q, m);
    if (!c.ok()) return c.status();
    MQ_RETURN_IF_ERROR(txn.Put(order, OrderKeyFor(q, m), {}));
    if (m.status == 0) {
      std::string loc;
      PutU64BE(loc, m.lookup_id);
      MQ_RETURN_IF_ERROR(txn.Put(conv_kept, KeptKey(m.conversation_handle,
                                                    m.message_sequence_number), loc));
      q.retained++;
    } else {
      std::string loc;
      PutU64BE(loc, m.lookup_id);
      MQ_RETURN_IF_ERROR(txn.Put(conv_msgs, ConvMsgKeyOf(q, *c, m), loc));
    }
    c->count++;
    MQ_RETURN_IF_ERROR(txn.Put(convs, GuidBytes(m.conversation_handle), EncodeConv(*c)));
    return TouchGroup(txn, q, c->group, [](GroupRecord& g) { g.count++; });
  }

  // A conversation message leaves the queue (RemoveMessage did the common indexes).
  Status ConvOnRemove(lmdb::Txn& txn, QueueInfo& q, const Message& m, bool was_locked) {
    auto cr = LoadConv(txn, m.conversation_handle);
    if (!cr.ok()) return cr.status();
    if (!*cr || (*cr)->qid != q.id) return {};  // nothing indexed for it
    ConvRecord& c = **cr;
    if (m.status == 0) {
      auto r = txn.Del(conv_kept, KeptKey(m.conversation_handle, m.message_sequence_number));
      if (!r.ok()) return r.status();
      if (*r) q.retained -= std::min<uint64_t>(q.retained, 1);
    } else {
      auto r = txn.Del(conv_msgs, ConvMsgKeyOf(q, c, m));
      if (!r.ok()) return r.status();
    }
    c.count -= std::min<uint64_t>(c.count, 1);
    MQ_RETURN_IF_ERROR(txn.Put(convs, GuidBytes(m.conversation_handle), EncodeConv(c)));
    return TouchGroup(txn, q, c.group, [&](GroupRecord& g) {
      g.count -= std::min<uint64_t>(g.count, 1);
      if (was_locked) g.locked -= std::min<uint64_t>(g.locked, 1);
    });
  }

  // A Locked conversation message returns (rollback): available again, one fewer Locked.
  Status ConvOnRestore(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
    auto c = ConvOf(txn, q, m);
    if (!c.ok()) return c.status();
    std::string loc;
    PutU64BE(loc, m.lookup_id);
    MQ_RETURN_IF_ERROR(txn.Put(conv_msgs, ConvMsgKeyOf(q, *c, m), loc));
    return TouchGroup(txn, q, c->group,
                      [](GroupRecord& g) { g.locked -= std::min<uint64_t>(g.locked, 1); });
  }

  // RETENTION ON: a received conversation message stays, status 0, in the retained band of
  // `order`, never to be received again.
  Status Retain(lmdb::Txn& txn, QueueInfo& q, Found& f, bool from_locked) {
    Message& m = f.msg;
    auto c = ConvOf(txn, q, m);
    if (!c.ok()) return c.status();
    std::string old_key = OrderKeyFor(q, m);
    auto r = txn.Del(from_locked ? locked : order, old_key);
    if (!r.ok()) return r.status();
    if (from_locked) q.locked -= std::min<uint64_t>(q.locked, 1);
    r = txn.Del(conv_msgs, ConvMsgKeyOf(q, *c, m));
    if (!r.ok()) return r.status();
    m.status = 0;
    // Received: a retained row no longer expires.
    if (int64_t at = ExpiryOf(m)) {
      auto d = txn.Del(deadlines, DeadlineKey(q.id, at, m.lookup_id));
      if (!d.ok()) return d.status();
    }
    MQ_RETURN_IF_ERROR(Rewrite(txn, q, m, f.size, &f.size));
    MQ_RETURN_IF_ERROR(txn.Put(order, OrderKeyFor(q, m), {}));
    std::string loc;
    PutU64BE(loc, m.lookup_id);
    MQ_RETURN_IF_ERROR(
        txn.Put(conv_kept, KeptKey(m.conversation_handle, m.message_sequence_number), loc));
    q.retained++;
    return TouchGroup(txn, q, c->group, [&](GroupRecord& g) {
      if (from_locked) g.locked -= std::min<uint64_t>(g.locked, 1);
    });
  }

  // A received (not Locked) conversation message: removed, or retained.
  Status ConsumeAvailable(lmdb::Txn& txn, QueueInfo& q, Found& f) {
    MQ_RETURN_IF_ERROR(Received(txn, q, f.msg, NowMs()));
    if (q.retention) return Retain(txn, q, f, false);
    return RemoveMessage(txn, q, f.msg, f.size);
  }

  // Prepares a message with a conversation handle for Append to queue `q`: checks or makes
  // the conversation (moving it to another group if the message names one), assigns its
  // sequence number and takes the conversation's group, priority, service and contract.
  Status ConvPrepare(lmdb::Txn& txn, QueueInfo& q, Message& m, bool may_create,
                     bool keep_identity, std::set<Guid>& created, int64_t now) {
    if (!IsConvQueue(q))
      return Status(Code::kUnsupportedFormatnameOperation,
                    "conversation messages go to a queue, not a subqueue", q.name);
    if (m.visible_time)
      return Status(Code::kInvalidArg,
                    "a conversation message cannot be delayed (its sequence is its order)",
                    q.name);
    auto cr = LoadConv(txn, m.conversation_handle);
    if (!cr.ok()) return cr.status();
    std::string handle_text = FormatGuid(m.conversation_handle);
    bool made_here = created.count(m.conversation_handle) > 0;
    if (*cr && may_create && !made_here && !keep_identity)
      return Status(Code::kConversationClosed,
                    fmt::format("conversation {} already exists", handle_text), q.name);
    if (!*cr) {
      if (!may_create && !keep_identity)
        return Status(Code::kConversationNotFound,
                      fmt::format("no conversation {} (mq-send --conversation new begins one)",
                                  handle_text),
                      q.name);
      ConvRecord c;
      c.qid = q.id;
      c.group = IsNil(m.conversation_group_id) ? m.conversation_handle : m.conversation_group_id;
      c.priority = m.priority;
      c.service = m.service_name;
      c.contract = m.service_contract_name;
      c.created = now;
      c.next_seq = keep_identity ? m.message_sequence_number : 0;
      auto rank = txn.Get(meta, "conv_rank");
      c.rank = rank && rank->size() == 8 ? GetU64BE(*rank, 0) : 0;
      std::string next;
      PutU64BE(next, c.rank + 1);
      MQ_RETURN_IF_ERROR(txn.Put(meta, "conv_rank", next));
      MQ_RETURN_IF_ERROR(txn.Put(convs, GuidBytes(m.conversation_handle), EncodeConv(c)));
      MQ_RETURN_IF_ERROR(txn.Put(conv_q, ConvQKey(q.id, m.conversation_handle), {}));
      MQ_RETURN_IF_ERROR(TouchGroup(txn, q, c.group, [](GroupRecord& g) { g.convs++; }));
      created.insert(m.conversation_handle);
      cr = std::optional<ConvRecord>(std::move(c));
    }
    ConvRecord& c = **cr;
    if (c.qid != q.id)
      return Status(Code::kConversationNotFound,
                    fmt::format("conversation {} belongs to another queue", handle_text), q.name);
    if (c.state != ConvState::kOpen && !keep_identity)
      return Status(Code::kConversationClosed,
                    fmt::format("conversation {} has ended ({}): no more sends", handle_text,
                                ConvStateName(c.state)),
                    q.name);
    if (!IsNil(m.conversation_group_id) && m.conversation_group_id != c.group) {
      MQ_RETURN_IF_ERROR(MoveConversation(txn, q, m.conversation_handle, c,
                                          m.conversation_group_id));
    }
    m.conversation_group_id = c.group;
    m.priority = c.priority;
    if (m.service_name.empty()) m.service_name = c.service;
    if (m.service_contract_name.empty()) m.service_contract_name = c.contract;
    if (keep_identity) {
      c.next_seq = std::max(c.next_seq, m.message_sequence_number + 1);
    } else {
      m.message_sequence_number = c.next_seq++;
      m.status = 1;
    }
    return txn.Put(convs, GuidBytes(m.conversation_handle), EncodeConv(c));
  }

  // MOVE CONVERSATION: the conversation and its available messages go to group `to`. Not
  // while either group is held by a receive (its order would change under the receiver).
  Status MoveConversation(lmdb::Txn& txn, QueueInfo& q, const Guid& handle, ConvRecord& c,
                          const Guid& to) {
    auto from_g = LoadGroup(txn, q.id, c.group);
    if (!from_g.ok()) return from_g.status();
    auto to_g = LoadGroup(txn, q.id, to);
    if (!to_g.ok()) return to_g.status();
    if (from_g->locked || to_g->locked)
      return Status(Code::kSharingViolation,
                    fmt::format("conversation group {} is locked by a receive; move the "
                                "conversation when it is free",
                                FormatGuid(from_g->locked ? c.group : to)),
                    q.name);
    std::string prefix = ConvMsgConvPrefix(q.id, c.group, c.priority, c.rank, handle);
    std::vector<std::pair<std::string, std::string>> moved;
    {
      lmdb::Cursor cur(txn, conv_msgs);
      for (bool on = cur.SeekGe(prefix); on && HasPrefix(cur.key(), prefix); on = cur.Next())
        moved.emplace_back(std::string(cur.key()), std::string(cur.value()));
    }
    std::string new_prefix = ConvMsgConvPrefix(q.id, to, c.priority, c.rank, handle);
    for (auto& [k, v] : moved) {
      auto r = txn.Del(conv_msgs, k);
      if (!r.ok()) return r.status();
      MQ_RETURN_IF_ERROR(txn.Put(conv_msgs, new_prefix + k.substr(prefix.size()), v));
    }
    // Their conversation_group_id column follows, retained messages' too (none is Locked).
    std::vector<uint64_t> lookups;
    for (auto& kv : moved)
      if (kv.second.size() == 8) lookups.push_back(GetU64BE(kv.second, 0));
    {
      std::string kept_prefix(GuidBytes(handle));
      lmdb::Cursor cur(txn, conv_kept);
      for (bool on = cur.SeekGe(kept_prefix); on && HasPrefix(cur.key(), kept_prefix);
           on = cur.Next())
        if (cur.value().size() == 8) lookups.push_back(GetU64BE(cur.value(), 0));
    }
    for (uint64_t lookup : lookups) {
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, lookup, f));
      f.msg.conversation_group_id = to;
      MQ_RETURN_IF_ERROR(Rewrite(txn, q, f.msg, f.size));
    }
    uint64_t n = c.count;
    Guid from = c.group;
    c.group = to;
    MQ_RETURN_IF_ERROR(txn.Put(convs, GuidBytes(handle), EncodeConv(c)));
    MQ_RETURN_IF_ERROR(TouchGroup(txn, q, from, [&](GroupRecord& g) {
      g.convs -= std::min<uint64_t>(g.convs, 1);
      g.count -= std::min(g.count, n);
    }));
    return TouchGroup(txn, q, to, [&](GroupRecord& g) {
      g.convs++;
      g.count += n;
    });
  }

  // Where a receive from the head goes: the group to take, or plain messages, or nothing.
  struct GroupPick {
    enum Kind { kNone, kPlain, kGroup } kind = kNone;
    Guid group{};
    std::string prefix;  // of conv_msgs: the group's, or one conversation's
  };

  Result<GroupPick> PickGroup(lmdb::Txn& txn, const QueueInfo& q, const Selection& sel) {
    GroupPick p;
    if (!IsNil(sel.conversation)) {
      auto cr = LoadConv(txn, sel.conversation);
      if (!cr.ok()) return cr.status();
      if (!*cr || (*cr)->qid != q.id)
        return Status(Code::kConversationNotFound,
                      fmt::format("no conversation {} in this queue", FormatGuid(sel.conversation)),
                      q.name);
      auto g = LoadGroup(txn, q.id, (*cr)->group);
      if (!g.ok()) return g.status();
      if (g->locked) return p;  // held by another receive: nothing for us yet
      p.kind = GroupPick::kGroup;
      p.group = (*cr)->group;
      p.prefix = ConvMsgConvPrefix(q.id, p.group, (*cr)->priority, (*cr)->rank, sel.conversation);
      return p;
    }
    if (!IsNil(sel.group)) {
      if (!txn.Get(groups, GroupKey(q.id, sel.group)))
        return Status(Code::kConversationNotFound,
                      fmt::format("no conversation group {} in this queue", FormatGuid(sel.group)),
                      q.name);
      auto g = LoadGroup(txn, q.id, sel.group);
      if (!g.ok()) return g.status();
      if (g->locked) return p;
      p.kind = GroupPick::kGroup;
      p.group = sel.group;
      p.prefix = ConvMsgGroupPrefix(q.id, p.group);
      return p;
    }
    std::string qprefix = QueueIdKey(q.id);
    std::optional<std::string> best;
    {
      lmdb::Cursor c(txn, group_sel);
      if (c.SeekGe(qprefix) && HasPrefix(c.key(), qprefix)) best = std::string(c.key());
    }
    {
      // The plain head: the first `order` entry below the conversation bands.
      lmdb::Cursor c(txn, order);
      if (c.SeekGe(qprefix) && HasPrefix(c.key(), qprefix) && c.key().size() == 13 &&
          static_cast<uint8_t>(c.key()[4]) < 8) {
        // Whichever comes first in delivery order: priority, then arrival.
        if (!best || c.key().substr(4, 9) < std::string_view(*best).substr(4, 9)) {
          p.kind = GroupPick::kPlain;
          return p;
        }
      }
    }
    if (!best) return p;
    if (best->size() != kGroupSelKeySize)
      return Status(Code::kCorrupted, "bad group_sel key", q.name);
    p.kind = GroupPick::kGroup;
    p.group = GuidFromBytes(std::string_view(*best).substr(13, 16));
    p.prefix = ConvMsgGroupPrefix(q.id, p.group);
    return p;
  }

  // The available messages under a conv_msgs prefix, in RECEIVE order; `limit` 0: all.
  Status CollectGroup(lmdb::Txn& txn, const QueueInfo& q, const std::string& prefix,
                      uint64_t limit, std::vector<Found>& out) {
    out.clear();
    std::vector<uint64_t> lookups;
    {
      lmdb::Cursor c(txn, conv_msgs);
      for (bool on = c.SeekGe(prefix);
           on && HasPrefix(c.key(), prefix) && (limit == 0 || lookups.size() < limit);
           on = c.Next()) {
        if (c.value().size() != 8) return Status(Code::kCorrupted, "bad conv_msgs entry", q.name);
        lookups.push_back(GetU64BE(c.value(), 0));
      }
    }
    for (uint64_t lookup : lookups) {
      Found f;
      MQ_RETURN_IF_ERROR(LoadMessage(txn, q, lookup, f));
      out.push_back(std::move(f));
    }
    return {};
  }

  // Whether a receive from the head should look at conversation groups at all: not when the
  // queue has no free group (one seek), unless it names one.
  bool MayHaveGroups(const QueueRef& ref, const Selection& sel) {
    if (!IsNil(sel.conversation) || !IsNil(sel.group)) return true;
    auto txn = lmdb::Txn::Begin(env, false);
    if (!txn.ok()) return true;
    auto q = LoadQueue(*txn, ref.Full());
    if (!q.ok() || !*q) return true;
    std::string prefix = QueueIdKey((*q)->id);
    lmdb::Cursor c(*txn, group_sel);
    return c.SeekGe(prefix) && HasPrefix(c.key(), prefix);
  }

  static bool GroupCandidate(const Selection& sel) {
    return sel.anchor == Anchor::kHead && !sel.include_locked && !sel.plain_only;
  }

  // Assigns a new message id (the Append scheme) for a message made by the store itself.
  Status NewMessageId(lmdb::Txn& txn, Message& m) {
    auto id = NewMessageId(txn);
    if (!id.ok()) return id.status();
    m.id = std::move(*id);
    return {};
  }

  // The validation of message type `name`: built in, or made by mq-admin message-type.
  Result<char> TypeValidation(lmdb::Txn& txn, const std::string& name) {
    if (char v = BuiltinValidation(name)) return v;
    auto rec = txn.Get(msg_types, name);
    if (!rec || rec->empty())
      return Status(Code::kMessageTypeNotFound,
                    fmt::format("no message type '{}' (mq-admin message-type create makes it)",
                                name));
    return (*rec)[0];
  }

  // Removes what a deleted queue leaves of its conversations and groups.
  Status DropConversations(lmdb::Txn& txn, uint32_t qid) {
    std::string prefix = QueueIdKey(qid);
    for (lmdb::Dbi dbi : {conv_q, groups, group_sel, conv_msgs}) {
      std::vector<std::string> keys;
      {
        lmdb::Cursor c(txn, dbi);
        for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next())
          keys.emplace_back(c.key());
      }
      for (const std::string& k : keys) {
        if (dbi == conv_q) {
          Guid handle = GuidFromBytes(std::string_view(k).substr(4, 16));
          std::string kept_prefix(GuidBytes(handle));
          std::vector<std::string> kept;
          {
            lmdb::Cursor c(txn, conv_kept);
            for (bool on = c.SeekGe(kept_prefix); on && HasPrefix(c.key(), kept_prefix);
                 on = c.Next())
              kept.emplace_back(c.key());
          }
          for (const std::string& kk : kept) {
            auto r = txn.Del(conv_kept, kk);
            if (!r.ok()) return r.status();
          }
          auto r = txn.Del(convs, GuidBytes(handle));
          if (!r.ok()) return r.status();
        }
        auto r = txn.Del(dbi, k);
        if (!r.ok()) return r.status();
      }
    }
    return {};
  }

  // Store::Check for the conversation indexes: every conversation message of a queue is in
  // conv_msgs (ready), conv_kept (retained) or locked; counts of conversations, groups and
  // queues agree; each free group with ready messages has the group_sel entry of its head.
  void CheckConversations(lmdb::Txn& t, const std::map<uint32_t, QueueInfo>& by_qid,
                          const std::function<void(std::string)>& problem) {
    std::map<Guid, uint64_t> conv_count;
    std::map<std::pair<uint32_t, Guid>, uint64_t> group_count, group_locked, group_convs;
    std::map<uint32_t, uint64_t> retained;
    uint64_t ready = 0, kept = 0;
    {
      lmdb::Cursor c(t, messages);
      for (bool on = c.First(); on; on = c.Next()) {
        if (c.key().size() != 12) continue;
        uint32_t qid = GetU32BE(c.key(), 0);
        auto qit = by_qid.find(qid);
        if (qit == by_qid.end()) continue;
        const QueueInfo& q = qit->second;
        Message m;
        m.lookup_id = GetU64BE(c.key(), 4);
        if (!DecodeRecord(c.value(), m).ok() || !IsConvMessage(q, m)) continue;
        std::string where = fmt::format("queue {} lookup id {}", q.name, m.lookup_id);
        auto cr = LoadConv(t, m.conversation_handle);
        if (!cr.ok() || !*cr || (*cr)->qid != qid) {
          problem(where + ": its conversation is not in the queue");
          continue;
        }
        const ConvRecord& cv = **cr;
        conv_count[m.conversation_handle]++;
        group_count[{qid, cv.group}]++;
        if (m.priority != cv.priority)
          problem(where + ": priority differs from its conversation's");
        if (m.message_sequence_number >= cv.next_seq)
          problem(where + ": sequence number not below the conversation's next");
        std::string key = OrderKeyFor(q, m);
        bool is_locked = t.Get(locked, key).has_value();
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
      }
    }
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

  Status OpenDbs(lmdb::Txn& txn, bool create) {
    for (size_t i = 0; i < std::size(kDbNames); ++i) {
      auto dbi = txn.OpenDb(kDbNames[i], create);
      if (!dbi.ok()) return dbi.status();
      *DbSlots[i] = *dbi;
    }
    return {};
  }
};

namespace {

Status MakeDir(const std::string& dir, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    return ErrnoStatus(errno, dir, "cannot create directory");
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

Status CheckAccess(const std::string& path, int mode, const char* what) {
  if (::access(path.c_str(), mode) == 0) return {};
  int err = errno;
  if (err == ENOENT) return {};
  return Status(err == EACCES || err == EPERM || err == EROFS ? Code::kAccessDenied : Code::kIo,
                fmt::format("{}: {}", what, std::strerror(err)), path);
}

}  // namespace

namespace {

void ApplySettings(QueueInfo& q, const QueueSettings& s) {
  if (s.label) q.label = *s.label;
  if (s.quota) q.quota = *s.quota;
  if (s.max_message_size) q.max_message_size = *s.max_message_size;
  if (s.enabled) q.enabled = *s.enabled;
  if (s.max_retries) q.max_retries = *s.max_retries;
  if (s.poison) q.poison = *s.poison;
  if (s.dedup_window) q.dedup_window = *s.dedup_window;
  if (s.journal) q.journal = *s.journal;
  if (s.journal_quota) q.journal_quota = *s.journal_quota;
  if (s.retention) q.retention = *s.retention;
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

const std::string& Store::dir() const { return impl_->dir; }
const Guid& Store::guid() const { return impl_->guid; }
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
    return Status(Code::kServiceNotAvailable, "not a store directory", dir);
  if (exists)
    MQ_RETURN_IF_ERROR(CheckAccess(dir, R_OK | W_OK | X_OK,
                                   "permission denied on the store directory (need rwx)"));
  struct stat data_st;
  bool has_data = ::stat(paths.data().c_str(), &data_st) == 0;
  if (!has_data && errno != ENOENT) return ErrnoStatus(errno, paths.data(), "cannot open store");
  bool group = exists ? (st.st_mode & S_ISGID) != 0 : !options.group.empty();
  bool creating = false;
  if (!has_data) {
    if (!may_create)
      return Status(Code::kServiceNotAvailable,
                    "store not found; mq-admin init creates it", dir);
    if (exists && !DirIsEmpty(dir))
      return Status(Code::kServiceNotAvailable,
                    "not an mq store (no data.mdb) and not empty; refusing to create one here",
                    dir);
    creating = true;
  }
  if (exists) {
    MQ_RETURN_IF_ERROR(CheckAccess(paths.data(), R_OK | W_OK, "permission denied (need rw)"));
    MQ_RETURN_IF_ERROR(CheckAccess(paths.lock(), R_OK | W_OK, "permission denied (need rw)"));
  }

  gid_t gid = static_cast<gid_t>(-1);
  if (creating && !options.group.empty()) {
    struct group* g = getgrnam(options.group.c_str());
    if (!g) return Status(Code::kInvalidArg, fmt::format("no such group '{}'", options.group));
    gid = g->gr_gid;
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
    if (::chmod(dir.c_str(), dir_mode) != 0)
      return ErrnoStatus(errno, dir, "cannot set the store's mode");
  }
  char real[PATH_MAX];
  if (!::realpath(dir.c_str(), real)) return ErrnoStatus(errno, dir, "cannot resolve store path");
  {
    std::lock_guard<std::mutex> lock(g_open_mu);
    if (!g_open_dirs.insert(real).second)
      return Status(Code::kError, "store already open in this process", dir);
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->real_dir = real;
  impl->paths = paths;
  impl->file_mode = group ? 0660 : 0600;
  Status s = impl->env.Open(dir, impl->file_mode, kInitialMapSize, 32);
  if (!s.ok()) return s.WithSubject(dir);
  impl->env.ReaderCheck();

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
      auto format = txn->Get(impl->meta, "format");
      if (!format || format->size() != 4) return Status(Code::kCorrupted, "bad format record", dir);
      uint32_t v = GetU32BE(*format, 0);
      if (v > kFormatVersion)
        return Status(Code::kError,
                      fmt::format("store format {} is newer than this mq understands ({}); "
                                  "upgrade mq or use the mq that made it",
                                  v, kFormatVersion),
                      dir);
      auto g = txn->Get(impl->meta, "guid");
      if (!g || g->size() != 16) return Status(Code::kCorrupted, "store has no GUID", dir);
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
    return Status(Code::kCorrupted,
                  "not an mq store: data.mdb has no mq meta record (a foreign LMDB file?)", dir);
  if (found == Found::kEmpty || missing_db) {
    s = impl->Write([&](lmdb::Txn& w) -> Status {
      MQ_RETURN_IF_ERROR(impl->OpenDbs(w, true));
      if (w.Get(impl->meta, "format")) return {};  // an existing store, or another process won
      std::string v;
      PutU32BE(v, kFormatVersion);
      MQ_RETURN_IF_ERROR(w.Put(impl->meta, "format", v));
      MQ_RETURN_IF_ERROR(w.Put(impl->meta, "guid", GuidBytes(NewGuid())));
      MQ_RETURN_IF_ERROR(w.Put(impl->meta, "id_guid", GuidBytes(NewGuid())));
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
    if (!g || g->size() != 16) return Status(Code::kCorrupted, "store has no GUID", dir);
    impl->guid = GuidFromBytes(*g);
    MQ_RETURN_IF_ERROR(t2->Commit());
  }
  // A store with a size limit below the starting map: map only that much (and at least what
  // is used), so that Grow and LMDB refuse to go past it.
  MQ_RETURN_IF_ERROR(impl->ApplyMaxMapSize());
  // Only now that the directory has proved to be an mq store: its lock and doorbell dirs.
  MQ_RETURN_IF_ERROR(MakeDir(paths.locks_dir(), dir_mode));
  MQ_RETURN_IF_ERROR(MakeDir(paths.notify_dir(), dir_mode));
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Status Store::CreateQueue(const QueueRef& ref, const QueueSettings& settings) {
  if (ref.IsSub() || ref.IsSystem())
    return Status(Code::kUnsupportedFormatnameOperation,
                  "only plain queue names can be created (subqueues and journals come with "
                  "their queue)",
                  ref.Full());
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto existing = impl_->LoadQueue(txn, ref.Full());
    if (!existing.ok()) return existing.status();
    if (*existing) return Status(Code::kQueueExists, "queue already exists", ref.Full());
    auto q = impl_->NewQueue(txn, ref.Full());
    if (!q.ok()) return q.status();
    ApplySettings(*q, settings);
    if (settings.transactional) q->transactional = *settings.transactional;
    return impl_->PutQueue(txn, *q);
  });
}

Status Store::UpdateQueue(const QueueRef& ref, const QueueSettings& settings) {
  uint32_t qid = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->LoadQueue(txn, ref.Full());
    if (!q.ok()) return q.status();
    if (!*q) return Status(Code::kQueueNotFound, "no such queue", ref.Full());
    QueueInfo& info = **q;
    if (settings.transactional && *settings.transactional != info.transactional)
      return Status(Code::kTransactionUsage,
                    "whether a queue is transactional is fixed when it is created", info.name);
    ApplySettings(info, settings);
    info.modified_time = NowMs();
    qid = info.id;
    return impl_->PutQueue(txn, info);
  });
  if (s.ok()) impl_->Notify(qid);
  return s;
}

Status Store::DeleteQueue(const QueueRef& ref) {
  if (ref.IsSub() || ref.IsSystem())
    return Status(Code::kUnsupportedFormatnameOperation,
                  "only plain queues can be deleted (use purge for subqueues)", ref.Full());
  std::vector<uint32_t> ids;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    ids.clear();
    auto base = impl_->LoadQueue(txn, ref.Full());
    if (!base.ok()) return base.status();
    if (!*base) return Status(Code::kQueueNotFound, "no such queue", ref.Full());
    std::vector<QueueInfo> victims{**base};
    {
      lmdb::Cursor c(txn, impl_->queues);
      std::string prefix = ref.Full() + ";";
      for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next()) {
        QueueInfo q;
        q.name = std::string(c.key());
        MQ_RETURN_IF_ERROR(DecodeQueue(c.value(), q));
        victims.push_back(std::move(q));
      }
    }
    int64_t now = NowMs();
    for (QueueInfo& q : victims) {
      // The queue's current record: acknowledgements of an earlier victim may have gone to it.
      auto fresh = impl_->LoadQueue(txn, q.name);
      if (!fresh.ok()) return fresh.status();
      if (*fresh) q = std::move(**fresh);
      MQ_RETURN_IF_ERROR(
          impl_->DrainQueue(txn, q, kClassNackQDeleted, kClassNackBadDstQ, now));
      MQ_RETURN_IF_ERROR(impl_->DropConversations(txn, q.id));
      std::vector<std::string> cursor_keys;
      {
        lmdb::Cursor c(txn, impl_->cursors);
        std::string prefix = QueueIdKey(q.id);
        for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next())
          cursor_keys.emplace_back(c.key());
      }
      for (auto& k : cursor_keys) {
        auto d = txn.Del(impl_->cursors, k);
        if (!d.ok()) return d.status();
      }
      auto r = txn.Del(impl_->queues, q.name);
      if (!r.ok()) return r.status();
      r = txn.Del(impl_->queue_ids, QueueIdKey(q.id));
      if (!r.ok()) return r.status();
      ids.push_back(q.id);
    }
    return {};
  });
  if (!s.ok()) return s;
  for (uint32_t id : ids) {
    impl_->Notify(id);
    ::unlink(impl_->paths.notify(id).c_str());
  }
  return {};
}

Result<std::vector<QueueInfo>> Store::ListQueues() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  std::vector<QueueInfo> out;
  lmdb::Cursor c(*txn, impl_->queues);
  for (bool on = c.First(); on; on = c.Next()) {
    QueueInfo q;
    q.name = std::string(c.key());
    MQ_RETURN_IF_ERROR(DecodeQueue(c.value(), q));
    out.push_back(std::move(q));
  }
  return out;
}

Result<QueueStat> Store::StatQueue(const QueueRef& ref) {
  // Expired messages and returned leases are not counted as available.
  MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto q = impl_->FindQueue(*txn, ref);
  if (!q.ok()) return q.status();
  QueueStat st;
  st.info = *q;
  if (q->id != 0) {
    // The oldest message has the smallest lookup id: one seek.
    lmdb::Cursor c(*txn, impl_->messages);
    std::string prefix = QueueIdKey(q->id);
    if (c.SeekGe(prefix) && HasPrefix(c.key(), prefix)) {
      Message m;
      MQ_RETURN_IF_ERROR(DecodeRecord(c.value(), m));
      st.oldest_arrived = m.arrived_time;
    }
  }
  return st;
}

Result<uint64_t> Store::Purge(const QueueRef& ref) {
  uint64_t n = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    n = 0;
    auto q = impl_->FindQueue(txn, ref);
    if (!q.ok()) return q.status();
    if (q->id == 0) return {};
    n = q->count;
    int64_t now = NowMs();
    // A purged journal has room again: journaling resumes, and stat stops calling it full.
    if (IsJournalName(q->name)) {
      if (q->name == "system;journal") {
        q->journal_dropped = 0;
      } else {
        auto base = impl_->LoadQueue(txn, ref.base);
        if (!base.ok()) return base.status();
        if (*base && (*base)->journal_dropped) {
          (*base)->journal_dropped = 0;
          MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, **base));
        }
      }
    }
    // MSMQ: purged in the destination queue (NACK_Q_PURGED), or, for a delayed message that
    // had not reached it yet, before reaching it (NACK_PURGED).
    MQ_RETURN_IF_ERROR(
        impl_->DrainQueue(txn, *q, kClassNackQPurged, kClassNackPurged, now));
    q->modified_time = now;
    return impl_->PutQueue(txn, *q);
  });
  if (!s.ok()) return s;
  return n;
}

Status Store::Append(const QueueRef& ref, const AppendOptions& options, MessageSource& source,
                     std::vector<std::string>* ids, AppendReport* report) {
  if (ref.IsSub() || ref.IsSystem())
    return Status(Code::kUnsupportedFormatnameOperation,
                  "cannot send to a journal, subqueue or system queue", ref.Full());
  size_t ids_before = ids ? ids->size() : 0;
  uint32_t qid = 0;
  uint64_t appended = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    if (ids) ids->resize(ids_before);
    appended = 0;
    MQ_RETURN_IF_ERROR(source.Rewind());
    auto loaded = impl_->LoadQueue(txn, ref.Full());
    if (!loaded.ok()) return loaded.status();
    QueueInfo q;
    if (*loaded) {
      q = std::move(**loaded);
    } else if (options.create_queue) {
      auto made = impl_->NewQueue(txn, ref.Full());
      if (!made.ok()) return made.status();
      q = std::move(*made);
    } else {
      return Status(Code::kQueueNotFound, "no such queue (mq-admin create makes it, or pass --create)",
                    ref.Full());
    }
    if (!q.enabled)
      return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q.name);
    if (q.transactional && !options.transactional)
      return Status(Code::kTransactionUsage,
                    "the queue is transactional: send with --tx", q.name);
    qid = q.id;
    int64_t now = NowMs();
    if (report) *report = AppendReport();
    if (!options.dedup_key.empty()) {
      auto v = txn.Get(impl_->dedup, DedupKey(q.id, options.dedup_key));
      if (v && v->size() >= 8 && static_cast<int64_t>(GetU64BE(*v, 0)) > now) {
        if (report) {
          report->duplicate = true;
          report->original_id = std::string(v->substr(8));
        }
        return {};  // accepted and dropped: nothing changes
      }
      // Forget a few expired keys of this queue on the way: the index stays small without
      // a sweep.
      std::vector<std::string> expired;
      {
        lmdb::Cursor c(txn, impl_->dedup_exp);
        std::string prefix = QueueIdKey(q.id);
        for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix) &&
                                          static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now &&
                                          expired.size() < 16;
             on = c.Next())
          expired.emplace_back(c.key());
      }
      for (const std::string& k : expired) MQ_RETURN_IF_ERROR(impl_->DropDedup(txn, q.id, k));
    }
    std::string xact_id;
    if (options.transactional) {
      xact_id = MakeMessageId(NewGuid(), 0);
      if (q.tx_sequence_id == 0) {
        Guid g = NewGuid();
        q.tx_sequence_id = GetU64BE(GuidBytes(g), 0) | 1;
      }
    }
    std::string first_id;
    Message last;
    std::set<Guid> conversations_made;

    Message m;
    for (;;) {
      m = Message();
      auto more = source.Next(m);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (m.priority > 7)
        return Status(Code::kIllegalPropertyValue,
                      fmt::format("priority {} is out of range 0..7", m.priority), q.name);
      if (!IsValidUtf8(m.label))
        return Status(Code::kIllegalPropertyValue, "label is not valid UTF-8", q.name);
      if (Utf8Length(m.label) > kMaxLabel)
        return Status(Code::kLabelTooLong,
                      fmt::format("label longer than {} characters", kMaxLabel), q.name);
      if (m.body.size() > q.max_message_size)
        return Status(Code::kInsufficientResources,
                      fmt::format("body of {} bytes exceeds the queue's maximum message size "
                                  "of {} bytes",
                                  m.body.size(), q.max_message_size),
                      q.name);
      if (!m.correlation_id.empty() && m.correlation_id.size() != kIdSize)
        return Status(Code::kIllegalPropertyValue, "correlation id must be 20 bytes", q.name);
      if (!options.keep_identity || m.id.size() != kIdSize) {
        auto id = impl_->NewMessageId(txn);
        if (!id.ok()) return id.status();
        m.id = std::move(*id);
      }
      if (!options.keep_identity) {
        m.sent_time = m.sent_time ? m.sent_time : now;
        m.source_qm_guid = impl_->guid;
        m.destination_queue = q.name;
        m.arrived_time = now;
        m.message_enqueue_time = now;
      } else {
        if (!m.arrived_time) m.arrived_time = now;
        if (!m.message_enqueue_time) m.message_enqueue_time = now;
        if (m.destination_queue.empty()) m.destination_queue = q.name;
      }
      // A delay that is already over when the message commits is no delay: the message is
      // visible at once (so that watchers, which scan delays only up to their clock, never
      // miss one).
      if (m.visible_time && m.visible_time <= now) m.visible_time = 0;
      m.awaiting_arrival = m.visible_time != 0;
      if (!m.message_type_name.empty() && !options.keep_identity) {
        auto validation = impl_->TypeValidation(txn, m.message_type_name);
        if (!validation.ok()) {
          Status st = validation.status();
          return st.WithSubject(q.name);
        }
        Status valid = ValidateBody(*validation, m.body, m.message_type_name);
        if (!valid.ok()) return valid.WithSubject(q.name);
        m.validation = *validation;
      }
      if (!IsNil(m.conversation_handle))
        MQ_RETURN_IF_ERROR(impl_->ConvPrepare(txn, q, m, options.new_conversation,
                                              options.keep_identity, conversations_made, now));
      if (options.transactional) {
        m.xact_id = xact_id;
        m.eod_first = appended == 0;
        m.eod_last = false;  // set on the last one below
        m.tx_sequence_id = q.tx_sequence_id;
        m.tx_sequence_number = q.tx_next_seq++;
        m.tx_previous_sequence_number = m.tx_sequence_number - 1;
      }
      if (report && !m.admin_queue.empty() && m.ack && m.admin_queue != q.name &&
          !txn.Get(impl_->queues, m.admin_queue)) {
        std::string note = fmt::format(
            "admin queue {} does not exist: its acknowledgements will not be sent",
            m.admin_queue);
        if (std::find(report->notes.begin(), report->notes.end(), note) == report->notes.end())
          report->notes.push_back(std::move(note));
      }
      MQ_RETURN_IF_ERROR(impl_->InsertMessage(txn, q, m, q.quota));
      // An import restores messages that arrived once already: no acks, no journal copies.
      if (!m.awaiting_arrival && !options.keep_identity)
        MQ_RETURN_IF_ERROR(impl_->Arrived(txn, q, m, now));
      ++appended;
      if (first_id.empty()) first_id = m.id;
      if (ids) ids->push_back(m.id);
      if (options.transactional) last = std::move(m);
    }
    if (appended == 0) return {};
    if (options.transactional) {
      // Eod Last on the last message of the transaction.
      last.eod_last = true;
      auto rec = txn.Get(impl_->messages, MsgKey(q.id, last.lookup_id));
      if (!rec) return Status(Code::kCorrupted, "the last message of the transaction is gone", q.name);
      MQ_RETURN_IF_ERROR(impl_->Rewrite(txn, q, last, rec->size()));
    }
    if (!options.dedup_key.empty()) {
      int64_t expiry = now + std::max<int64_t>(q.dedup_window, 1);
      auto old = txn.Get(impl_->dedup, DedupKey(q.id, options.dedup_key));
      if (old && old->size() >= 8) {
        auto r = txn.Del(impl_->dedup_exp,
                         DedupExpKey(q.id, static_cast<int64_t>(GetU64BE(*old, 0)),
                                     options.dedup_key));
        if (!r.ok()) return r.status();
      }
      std::string v;
      PutU64BE(v, static_cast<uint64_t>(expiry));
      v += first_id;
      MQ_RETURN_IF_ERROR(txn.Put(impl_->dedup, DedupKey(q.id, options.dedup_key), v));
      MQ_RETURN_IF_ERROR(txn.Put(impl_->dedup_exp, DedupExpKey(q.id, expiry, options.dedup_key), {}));
    }
    return impl_->PutQueue(txn, q);
  });
  if (s.ok() && appended) impl_->Notify(qid);
  return s;
}

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

Status Store::CursorPeek(const QueueRef& ref, const CursorOptions& co, const ReadOptions& ro,
                         MessageSink& sink) {
  MQ_RETURN_IF_ERROR(CheckCursorName(co.name));
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  int64_t started = MonotonicMs();
  auto lock = impl_->LockCursor(ref, *qid, co.name, co.wait_lock, co.lock_wait_ms);
  if (!lock.ok()) return lock.status();
  ReadOptions left = ro;
  if (ro.wait_ms > 0) left.wait_ms = std::max<int64_t>(1, ro.wait_ms - (MonotonicMs() - started));
  return impl_->WaitLoop(ref, left, [&](bool waiting, int64_t& deadline) -> Status {
    MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
    return impl_->Write(
        [&](lmdb::Txn& txn) -> Status {
          auto q = impl_->FindQueue(txn, ref);
          if (!q.ok()) return q.status();
          if (waiting && !q->enabled)
            return Status(Code::kQueueNotActive, "queue was disabled (status OFF)", q->name);
          deadline = impl_->NextDeadline(txn, q->id);
          auto found = impl_->MoveCursor(txn, *q, co.name, co.action, false);
          if (!found.ok()) return found.status();
          MQ_RETURN_IF_ERROR(sink.Add(found->msg));
          return sink.Flush();
        },
        false);
  });
}

Status Store::CursorReceive(const QueueRef& ref, const CursorOptions& co, const ReadOptions& ro,
                            MessageSink& sink) {
  if (co.action != CursorAction::kCurrent)
    return Status(Code::kIllegalCursorAction, "a receive at a cursor takes its current message",
                  ref.Full());
  MQ_RETURN_IF_ERROR(CheckCursorName(co.name));
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  auto lock = impl_->LockCursor(ref, *qid, co.name, co.wait_lock, co.lock_wait_ms);
  if (!lock.ok()) return lock.status();
  (void)ro;  // the message at a cursor is there or not: nothing to wait for
  return impl_->Write(
      [&](lmdb::Txn& txn) -> Status {
        auto q = impl_->FindQueue(txn, ref);
        if (!q.ok()) return q.status();
        if (!q->enabled)
          return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
        int64_t now = NowMs();
        auto maintained = impl_->Maintain(txn, *q, now);
        if (!maintained.ok()) return maintained.status();
        Impl::CursorState st = impl_->LoadCursor(txn, q->id, co.name);
        if (!st.positioned)
          return Status(Code::kIllegalCursorAction,
                        fmt::format("cursor {} was never moved: use mq-peek --cursor {} --first",
                                    co.name, co.name),
                        q->name);
        if (!txn.Get(impl_->order, st.key))
          return Status(Code::kMessageAlreadyReceived,
                        fmt::format("the message at cursor {} was received or moved", co.name),
                        q->name);
        Impl::Found f;
        MQ_RETURN_IF_ERROR(impl_->LoadMessage(txn, *q, GetU64BE(st.key, 5), f));
        if (Impl::IsConvMessage(*q, f.msg))
          return Status(Code::kIllegalCursorAction,
                        fmt::format("the message at cursor {} belongs to conversation {}: "
                                    "receive it with --conversation or --group, in its order",
                                    co.name, FormatGuid(f.msg.conversation_handle)),
                        q->name);
        MQ_RETURN_IF_ERROR(impl_->Received(txn, *q, f.msg, now));
        MQ_RETURN_IF_ERROR(impl_->RemoveMessage(txn, *q, f.msg, f.size));
        MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, *q));
        MQ_RETURN_IF_ERROR(sink.Add(f.msg));
        return sink.Flush();
      },
      false);
}

Result<std::vector<CursorInfo>> Store::ListCursors() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  std::vector<CursorInfo> out;
  lmdb::Cursor c(*txn, impl_->cursors);
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() < 5) continue;
    CursorInfo ci;
    uint32_t qid = GetU32BE(c.key(), 0);
    auto name = txn->Get(impl_->queue_ids, QueueIdKey(qid));
    ci.queue = name ? std::string(*name) : fmt::format("#{}", qid);
    ci.name = std::string(c.key().substr(4));
    if (c.value().size() == 14 && c.value()[0] == 1) {  // else: never moved
      ci.positioned = true;
      ci.priority = static_cast<uint8_t>(7 - static_cast<uint8_t>(c.value()[5]));
      ci.lookup_id = GetU64BE(c.value(), 6);
    }
    auto held = FileLock::IsHeld(impl_->CursorLockPath(qid, ci.name));
    ci.holder = held.ok() && *held;
    out.push_back(std::move(ci));
  }
  // Cursors in use that have not moved yet exist only as held lock files.
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(impl_->paths.locks_dir().c_str()), closedir);
  std::vector<CursorInfo> fresh;
  while (dir) {
    dirent* e = readdir(dir.get());
    if (!e) break;
    unsigned qid = 0;
    int used = 0;
    if (std::sscanf(e->d_name, "cursor.%u.%n", &qid, &used) != 1 || used == 0) continue;
    std::string name = e->d_name + used;
    if (txn->Get(impl_->cursors, CursorKey(qid, name))) continue;
    auto held = FileLock::IsHeld(impl_->CursorLockPath(qid, name));
    if (!held.ok() || !*held) continue;
    auto qname = txn->Get(impl_->queue_ids, QueueIdKey(qid));
    if (!qname) continue;
    CursorInfo ci;
    ci.queue = std::string(*qname);
    ci.name = name;
    ci.holder = true;
    fresh.push_back(std::move(ci));
  }
  std::sort(fresh.begin(), fresh.end(),
            [](const CursorInfo& a, const CursorInfo& b) {
              return std::tie(a.queue, a.name) < std::tie(b.queue, b.name);
            });
  out.insert(out.end(), fresh.begin(), fresh.end());
  return out;
}

Status Store::DeleteCursor(const QueueRef& ref, const std::string& name) {
  MQ_RETURN_IF_ERROR(CheckCursorName(name));
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->FindQueue(txn, ref);
    if (!q.ok()) return q.status();
    auto r = txn.Del(impl_->cursors, CursorKey(q->id, name));
    if (!r.ok()) return r.status();
    if (!*r) return Status(Code::kInvalidArg, fmt::format("no cursor named {}", name), q->name);
    return {};
  });
}

Status Store::Watch(const QueueRef& ref, const WatchOptions& wo, const ReadOptions& ro,
                    const std::function<Status(const Message&)>& on_arrived) {
  bool named = !wo.cursor_name.empty();
  if (!named && wo.action != CursorAction::kFirst)
    return Status(Code::kInvalidArg, "--cursor current and next need --cursor-name");
  FileLock lock;
  if (named) {
    MQ_RETURN_IF_ERROR(CheckCursorName(wo.cursor_name));
    auto qid = impl_->QueueIdForWait(ref, false);
    if (!qid.ok()) return qid.status();
    int64_t started = MonotonicMs();
    auto l = impl_->LockCursor(ref, *qid, wo.cursor_name, wo.wait_lock, wo.lock_wait_ms);
    if (!l.ok()) return l.status();
    lock = std::move(*l);
    if (ro.wait_ms > 0) {
      ReadOptions left = ro;
      left.wait_ms = std::max<int64_t>(1, ro.wait_ms - (MonotonicMs() - started));
      return WatchLocked(ref, wo, left, on_arrived);
    }
  }
  return WatchLocked(ref, wo, ro, on_arrived);
}

Status Store::WatchLocked(const QueueRef& ref, const WatchOptions& wo, const ReadOptions& ro,
                          const std::function<Status(const Message&)>& on_arrived) {
  bool named = !wo.cursor_name.empty();
  CursorAction action = wo.action;
  uint64_t high_water = 0;  // anonymous --follow: the last lookup id reported
  for (;;) {
    Message event;
    Status s = impl_->WaitLoop(ref, ro, [&](bool waiting, int64_t& deadline) -> Status {
      MQ_RETURN_IF_ERROR(impl_->MaintainIfNeeded(ref));
      if (!named && wo.follow) {
        // Arrival order: every visible message with a lookup id above the high-water mark.
        // Promoted delayed messages get new, higher lookup ids, so none is skipped.
        auto txn = lmdb::Txn::Begin(impl_->env, false);
        if (!txn.ok()) return txn.status();
        auto q = impl_->FindQueue(*txn, ref);
        if (!q.ok()) return q.status();
        if (!q->enabled)
          return Status(Code::kQueueNotActive, "queue was disabled (status OFF)", q->name);
        deadline = impl_->NextDeadline(*txn, q->id);
        int64_t now = NowMs();
        lmdb::Cursor c(*txn, impl_->messages);
        std::string prefix = QueueIdKey(q->id);
        for (bool on = c.SeekGe(MsgKey(q->id, high_water + 1)); on && HasPrefix(c.key(), prefix);
             on = c.Next()) {
          Message m;
          m.lookup_id = GetU64BE(c.key(), 4);
          m.queue = q->name;
          MQ_RETURN_IF_ERROR(DecodeRecord(c.value(), m));
          if (!txn->Get(impl_->order, Impl::OrderKeyFor(*q, m))) continue;
          high_water = m.lookup_id;
          if (Impl::Expired(*q, m, now)) continue;  // never delivered: no event either
          event = std::move(m);
          return {};
        }
        return Status(Code::kMessageNotFound, "no message", ref.Full());
      }
      if (!named) {
        auto txn = lmdb::Txn::Begin(impl_->env, false);
        if (!txn.ok()) return txn.status();
        auto q = impl_->FindQueue(*txn, ref);
        if (!q.ok()) return q.status();
        if (waiting && !q->enabled)
          return Status(Code::kQueueNotActive, "queue was disabled (status OFF)", q->name);
        deadline = impl_->NextDeadline(*txn, q->id);
        auto f = impl_->NextVisible(*txn, *q, {});
        if (!f.ok()) return f.status();
        // Retained messages (status 0, the last band of `order`) are not arrivals.
        if (!*f || (Impl::IsConvMessage(*q, (*f)->msg) && (*f)->msg.status == 0))
          return Status(Code::kMessageNotFound, "no message", ref.Full());
        event = std::move((*f)->msg);
        return {};
      }
      // A named cursor, moved as EnableNotification moves it.
      return impl_->Write([&](lmdb::Txn& txn) -> Status {
        auto q = impl_->FindQueue(txn, ref);
        if (!q.ok()) return q.status();
        if (waiting && !q->enabled)
          return Status(Code::kQueueNotActive, "queue was disabled (status OFF)", q->name);
        deadline = impl_->NextDeadline(txn, q->id);
        auto found = impl_->MoveCursor(txn, *q, wo.cursor_name, action, true);
        if (!found.ok()) return found.status();
        event = std::move(found->msg);
        return {};
      });
    });
    if (s.code() == Code::kOperationCancelled) return {};
    if (!s.ok()) return s;
    MQ_RETURN_IF_ERROR(on_arrived(event));
    if (!wo.follow) return {};
    if (named) action = CursorAction::kNext;
  }
}

Result<Waiter> Store::ArmDoorbell(const QueueRef& ref) {
  auto qid = impl_->QueueIdForWait(ref, false);
  if (!qid.ok()) return qid.status();
  return Waiter::Arm(impl_->paths.notify(*qid), impl_->file_mode, impl_->paths.locks_dir());
}

Result<int64_t> Store::NextDeadline(const QueueRef& ref) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto q = impl_->FindQueue(*txn, ref);
  if (!q.ok()) return q.status();
  return impl_->NextDeadline(*txn, q->id);
}

Result<uint64_t> Store::Sweep() {
  // Which queues have anything due, from the delays, leases, dedup and deadline indexes alone:
  // one seek per queue that has entries there, none per message; nothing is written when
  // nothing is due.
  int64_t now = NowMs();
  std::set<uint32_t> due;
  {
    auto txn = lmdb::Txn::Begin(impl_->env, false);
    if (!txn.ok()) return txn.status();
    for (lmdb::Dbi dbi : {impl_->delays, impl_->leases, impl_->dedup_exp, impl_->deadlines}) {
      lmdb::Cursor c(*txn, dbi);
      for (bool on = c.First(); on && c.key().size() >= 12;) {
        uint32_t qid = GetU32BE(c.key(), 0);
        bool has_due = dbi == impl_->leases ||
                       static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now;
        if (has_due) due.insert(qid);
        if (qid == UINT32_MAX) break;
        on = c.SeekGe(QueueIdKey(qid + 1));
      }
    }
  }
  uint64_t total = 0;
  // Lease lock files left by a holder that died after its lease ended but before it removed
  // the file. Inside a write transaction: a Lock makes its file and commits its lease under
  // the same writer lock, so no file of a lease being made can be taken for an orphan.
  MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(impl_->paths.locks_dir().c_str()), closedir);
    while (dir) {
      dirent* e = readdir(dir.get());
      if (!e) break;
      unsigned qid = 0;
      unsigned long long lease_id = 0;
      int used = 0;
      if (std::sscanf(e->d_name, "lease.%u.%llu%n", &qid, &lease_id, &used) != 2 ||
          e->d_name[used] != '\0')
        continue;
      if (txn.Get(impl_->leases, LeaseKey(qid, lease_id))) continue;
      std::string path = impl_->LeaseLockPath(qid, lease_id);
      auto held = FileLock::IsHeld(path);
      if (held.ok() && !*held && ::unlink(path.c_str()) == 0) ++total;
    }
    return {};
  }));
  for (uint32_t qid : due) {
    MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
      auto name = txn.Get(impl_->queue_ids, QueueIdKey(qid));
      if (!name) return {};
      auto q = impl_->LoadQueue(txn, std::string(*name));
      if (!q.ok()) return q.status();
      if (!*q) return {};
      auto n = impl_->Maintain(txn, **q, now);
      if (!n.ok()) return n.status();
      total += *n;
      // Forget expired dedup keys.
      std::string prefix = QueueIdKey(qid);
      std::vector<std::string> expired;
      {
        lmdb::Cursor c(txn, impl_->dedup_exp);
        for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix) &&
                                          static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now;
             on = c.Next())
          expired.emplace_back(c.key());
      }
      for (const std::string& k : expired) {
        MQ_RETURN_IF_ERROR(impl_->DropDedup(txn, qid, k));
        ++total;
      }
      return {};
    }));
  }
  return total;
}

Result<std::unique_ptr<Lease>> Store::Lock(const QueueRef& ref, const Selection& sel_in,
                                           const ReadOptions& ro, const LockOptions& lo,
                                           MessageSink* sink) {
  if (sel_in.anchor == Anchor::kArrival || sel_in.include_locked)
    return Status(Code::kInvalidArg, "a receive takes visible messages only", ref.Full());
  if (Impl::GroupCandidate(sel_in)) return LockConversation(ref, sel_in, ro, lo, sink);
  Selection sel = sel_in;
  sel.plain_only = true;
  std::unique_ptr<Lease> lease(new Lease());
  Status s = impl_->WaitLoop(ref, ro, [&](bool, int64_t& deadline) -> Status {
    bool found = false;
    Status w = impl_->WriteLight(
        [&](lmdb::Txn& txn) -> Status {
          auto q = impl_->FindQueue(txn, ref);
          if (!q.ok()) return q.status();
          if (!q->enabled)
            return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
          int64_t now = NowMs();
          auto n = impl_->Maintain(txn, *q, now);
          if (!n.ok()) return n.status();
          std::vector<Impl::Found> batch;
          uint64_t limit = sel.limit ? sel.limit : UINT64_MAX;
          MQ_RETURN_IF_ERROR(impl_->Collect(txn, *q, sel, {}, std::min<uint64_t>(limit, kBatchCount),
                                            batch));
          if (batch.empty()) {
            deadline = impl_->NextDeadline(txn, q->id);
            return {};
          }
          uint64_t lease_id = q->next_lease++;
          LeaseRecord rec;
          rec.pid = ::getpid();
          rec.since = now;
          if (lo.lease_ms > 0) {
            rec.process = false;
            rec.expires = now + lo.lease_ms;
            Guid secret = NewGuid();
            rec.secret = std::string(GuidBytes(secret));
          } else {
            // The lock is ours before the lease is visible to anyone.
            if (lease->lock_fd_ >= 0) ::close(lease->lock_fd_);
            lease->lock_path_ = impl_->LeaseLockPath(q->id, lease_id);
            auto l = FileLock::Acquire(lease->lock_path_, impl_->file_mode, false);
            if (!l.ok()) return l.status();
            lease->lock_fd_ = l->Detach();
          }
          lease->messages_.clear();
          for (auto& f : batch) {
            std::string key = Impl::OrderKeyFor(*q, f.msg);
            auto r = txn.Del(impl_->order, key);
            if (!r.ok()) return r.status();
            std::string holder;
            PutU64BE(holder, lease_id);
            MQ_RETURN_IF_ERROR(txn.Put(impl_->locked, key, holder));
            f.msg.delivery_count++;
            MQ_RETURN_IF_ERROR(impl_->Rewrite(txn, *q, f.msg, f.size));
            q->locked++;
            rec.keys.push_back(key);
            lease->messages_.push_back(f.msg);
          }
          MQ_RETURN_IF_ERROR(txn.Put(impl_->leases, LeaseKey(q->id, lease_id), EncodeLease(rec)));
          MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, *q));
          MQ_RETURN_IF_ERROR(PublishLease(*lease, q->name, q->id, lease_id, rec.process,
                                          rec.expires, rec.secret, sink));
          found = true;
          return {};
        },
        /*rerun_after_commit=*/sink == nullptr);
    if (!w.ok()) return w;
    if (!found) return Status(Code::kMessageNotFound, "no message", ref.Full());
    return {};
  });
  if (!s.ok()) {
    if (lease->lock_fd_ >= 0) {
      ::unlink(lease->lock_path_.c_str());
      ::close(lease->lock_fd_);
      lease->lock_fd_ = -1;
    }
    return s;
  }
  return lease;
}

Status Store::PublishLease(Lease& lease, const std::string& queue, uint32_t qid,
                           uint64_t lease_id, bool process, int64_t expires,
                           const std::string& secret, MessageSink* sink) {
  lease.queue_ = queue;
  lease.qid_ = qid;
  lease.lease_id_ = lease_id;
  lease.expires_ = expires;
  if (!process) lease.token_ = fmt::format("{}.{}.{}", qid, lease_id, HexEncode(secret));
  if (!sink) return {};
  if (!process) sink->SetLease(lease.token_, lease.expires_);
  for (auto& m : lease.messages_) MQ_RETURN_IF_ERROR(sink->Add(m));
  return sink->Flush();
}

Status Store::Finish(Lease& lease, bool commit, int64_t delay_ms, FinishReport* report) {
  if (lease.finished_) return Status(Code::kTransactionUsage, "lease already ended", lease.queue_);
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->LoadQueue(txn, lease.queue_);
    if (!q.ok()) return q.status();
    if (!*q || (*q)->id != lease.qid_) return {};  // the queue was deleted: nothing to do
    auto v = txn.Get(impl_->leases, LeaseKey(lease.qid_, lease.lease_id_));
    LeaseRecord rec;
    if (!v || !DecodeLease(*v, rec))
      return Status(Code::kTransactionUsage, "the lease is gone (expired or returned)",
                    lease.queue_);
    if (commit) return impl_->CommitLease(txn, **q, lease.lease_id_, rec);
    return impl_->RollbackLease(txn, **q, lease.lease_id_, rec, delay_ms, NowMs(), report);
  });
  if (lease.lock_fd_ >= 0) {
    if (s.ok()) ::unlink(lease.lock_path_.c_str());
    ::close(lease.lock_fd_);  // after the commit: until then the lease is ours
    lease.lock_fd_ = -1;
  }
  lease.finished_ = true;
  return s;
}

Lease::~Lease() {
  // Unfinished: closing the lock file hands the messages to the next reader, as a death would.
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Store::FinishToken(const std::string& token, bool commit, int64_t delay_ms,
                          FinishReport* report) {
  Status unknown(Code::kTransactionUsage, "unknown or expired lease token", token);
  unsigned long long qid = 0, lease_id = 0;
  char hex[64] = {0};
  if (std::sscanf(token.c_str(), "%llu.%llu.%32[0-9a-f]", &qid, &lease_id, hex) != 3 ||
      std::strlen(hex) != 32 || qid > UINT32_MAX)
    return Status(Code::kInvalidArg, "invalid lease token", token);
  auto secret = HexDecode(hex);
  bool expired = false;
  std::string queue;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    expired = false;
    auto name = txn.Get(impl_->queue_ids, QueueIdKey(static_cast<uint32_t>(qid)));
    if (!name) return unknown;
    queue = std::string(*name);
    auto q = impl_->LoadQueue(txn, queue);
    if (!q.ok()) return q.status();
    if (!*q) return unknown;
    auto v = txn.Get(impl_->leases, LeaseKey(static_cast<uint32_t>(qid), lease_id));
    LeaseRecord rec;
    if (!v || !DecodeLease(*v, rec) || rec.process || rec.secret != *secret) return unknown;
    int64_t now = NowMs();
    if (rec.expires <= now) {
      // Expired: it rolls back by itself, here if no one did yet; the token changes nothing.
      expired = true;
      return impl_->RollbackLease(txn, **q, lease_id, rec, 0, now, report);
    }
    if (commit) return impl_->CommitLease(txn, **q, lease_id, rec);
    return impl_->RollbackLease(txn, **q, lease_id, rec, delay_ms, now, report);
  });
  if (!s.ok()) return s;
  if (expired)
    return Status(Code::kTransactionUsage, "the lease expired; its messages were returned", token);
  return {};
}

Result<std::vector<LeaseInfo>> Store::ListLeases() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  std::vector<LeaseInfo> out;
  int64_t now = NowMs();
  lmdb::Cursor c(*txn, impl_->leases);
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() != 12) continue;
    uint32_t qid = GetU32BE(c.key(), 0);
    Impl::LeaseEntry e;
    e.id = GetU64BE(c.key(), 4);
    if (!DecodeLease(c.value(), e.rec)) continue;
    LeaseInfo li;
    auto name = txn->Get(impl_->queue_ids, QueueIdKey(qid));
    li.queue = name ? std::string(*name) : fmt::format("#{}", qid);
    li.lease_id = e.id;
    li.process = e.rec.process;
    li.pid = e.rec.pid;
    li.since = e.rec.since;
    li.expires = e.rec.expires;
    li.alive = !impl_->LeaseIsOver(qid, e, now);
    for (const auto& k : e.rec.keys) li.lookup_ids.push_back(GetU64BE(k, 5));
    out.push_back(std::move(li));
  }
  return out;
}

Result<uint64_t> Store::Requeue(const QueueRef& from, const std::string& id,
                                std::optional<int64_t> ttbr_ms) {
  bool dead_letters = from.IsSystem() && from.sub != "journal";
  if (!dead_letters && !(from.IsSub() && from.sub != "journal"))
    return Status(Code::kUnsupportedFormatnameOperation,
                  "requeue takes a poison subqueue (QUEUE;poison) or a dead-letter queue",
                  from.Full());
  uint64_t n = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    n = 0;
    auto q = impl_->FindQueue(txn, from);
    if (!q.ok()) return q.status();
    Selection sel;
    sel.limit = 0;
    if (!id.empty()) {
      sel.anchor = Anchor::kId;
      sel.id = id;
    }
    int64_t now = NowMs();
    for (;;) {
      std::vector<Impl::Found> batch;
      MQ_RETURN_IF_ERROR(impl_->Collect(txn, *q, sel, {}, kBatchCount, batch));
      if (batch.empty()) break;
      for (auto& f : batch) {
        std::string dest = dead_letters ? f.msg.destination_queue : from.base;
        auto dq = impl_->LoadQueue(txn, dest);
        if (!dq.ok()) return dq.status();
        if (dest.empty() || !*dq || !ParseQueueRef(dest).ok() || ParseQueueRef(dest)->IsSub())
          return Status(Code::kQueueNotFound,
                        fmt::format("message {} was going to '{}', which does not exist",
                                    f.msg.lookup_id, dest),
                        from.Full());
        if (!IsNil(f.msg.conversation_handle) && !ParseQueueRef(dest)->IsSub()) {
          // Back into its conversation, which must still be there.
          auto conv = impl_->LoadConv(txn, f.msg.conversation_handle);
          if (!conv.ok()) return conv.status();
          if (!*conv || (*conv)->qid != (*dq)->id)
            return Status(Code::kConversationNotFound,
                          fmt::format("message {} belongs to conversation {}, which no longer "
                                      "exists in '{}': it cannot go back",
                                      f.msg.lookup_id, FormatGuid(f.msg.conversation_handle),
                                      dest),
                          from.Full());
        }
        f.msg.abort_count = 0;
        if (dead_letters) {
          f.msg.msg_class = kClassNormal;
          // Fresh deadlines: the one given, or the time to be received it was sent with.
          if (ttbr_ms) f.msg.ttbr = *ttbr_ms < 0 ? 0 : now + *ttbr_ms;
          else if (f.msg.ttbr) f.msg.ttbr = now + std::max<int64_t>(f.msg.ttbr - f.msg.sent_time, 0);
          f.msg.ttrq = 0;
        } else if (ttbr_ms) {
          f.msg.ttbr = *ttbr_ms < 0 ? 0 : now + *ttbr_ms;
        }
        MQ_RETURN_IF_ERROR(impl_->MoveMessage(txn, *q, f, dest, !dead_letters, now));
        ++n;
      }
      if (!id.empty()) break;
    }
    if (!id.empty() && n == 0)
      return Status(Code::kMessageNotFound, "no such message", from.Full());
    return q->id ? impl_->PutQueue(txn, *q) : Status();
  });
  if (!s.ok()) return s;
  return n;
}

Status Store::MoveToSubqueue(const QueueRef& from, uint64_t lookup_id, const QueueRef& to) {
  if (from.IsSystem() || to.IsSystem() || from.sub == "journal")
    return Status(Code::kUnsupportedFormatnameOperation,
                  "move works between a queue and its subqueues (not system queues or journals)",
                  from.Full());
  if (!to.IsSub() || to.base != from.base || to.sub == "journal" || to.sub == from.sub)
    return Status(Code::kUnsupportedFormatnameOperation,
                  fmt::format("--to must name another subqueue of {} (e.g. {};retry), not a "
                              "journal",
                              from.base, from.base),
                  to.Full());
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto base = impl_->LoadQueue(txn, from.base);
    if (!base.ok()) return base.status();
    if (!*base) return Status(Code::kQueueNotFound, "no such queue", from.base);
    auto q = impl_->FindQueue(txn, from);
    if (!q.ok()) return q.status();
    Status missing(Code::kMessageNotFound, fmt::format("no message with lookup id {}", lookup_id),
                   from.Full());
    if (q->id == 0 || !txn.Get(impl_->messages, MsgKey(q->id, lookup_id))) return missing;
    Impl::Found f;
    MQ_RETURN_IF_ERROR(impl_->LoadMessage(txn, *q, lookup_id, f));
    std::string key = Impl::OrderKeyFor(*q, f.msg);
    if (txn.Get(impl_->locked, key))
      return Status(Code::kMessageLockedUnderTransaction,
                    fmt::format("message {} is held by an open transactional receive", lookup_id),
                    from.Full());
    if (!txn.Get(impl_->order, key))
      return Status(Code::kMessageNotFound,
                    fmt::format("message {} is delayed: it can be moved once it is visible",
                                lookup_id),
                    from.Full());
    if (Impl::Expired(*q, f.msg, NowMs())) return missing;
    MQ_RETURN_IF_ERROR(impl_->MoveMessage(txn, *q, f, to.Full(), true, NowMs()));
    return impl_->PutQueue(txn, *q);
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

Status Store::SetMaxSize(uint64_t bytes) {
  if (bytes && bytes < impl_->env.UsedBytes())
    return Status(Code::kInvalidArg,
                  fmt::format("the store already uses {} bytes, more than {}",
                              impl_->env.UsedBytes(), bytes),
                  impl_->dir);
  MQ_RETURN_IF_ERROR(impl_->Write([&](lmdb::Txn& txn) -> Status {
    std::string v;
    PutU64BE(v, bytes);
    return txn.Put(impl_->meta, "max_size", v);
  }));
  return impl_->ApplyMaxMapSize();
}

Result<uint64_t> Store::MaxSize() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto v = txn->Get(impl_->meta, "max_size");
  if (!v || v->size() != 8) return uint64_t{0};
  return GetU64BE(*v, 0);
}

// ---- Service Broker conversations (issue 5) ----

Status Store::ReceiveConversation(const QueueRef& ref, const Selection& sel,
                                  const ReadOptions& ro, MessageSink& sink) {
  Selection plain = sel;
  plain.plain_only = true;
  return impl_->WaitLoop(ref, ro, [&](bool, int64_t& deadline) -> Status {
    auto plain_deadline = [&] {
      auto d = NextDeadline(ref);
      if (d.ok()) deadline = *d;
    };
    // A few rounds at most: another receiver may take what one look chose.
    for (int round = 0; round < 16; ++round) {
      if (!impl_->MayHaveGroups(ref, sel)) {
        Status s = Receive(ref, plain, ReadOptions(), sink);
        if (s.code() != Code::kMessageNotFound) return s;
        if (impl_->MayHaveGroups(ref, sel)) continue;  // its recovery freed a group
        plain_deadline();
        return s;
      }
      Impl::GroupPick::Kind kind = Impl::GroupPick::kNone;
      size_t received = 0;
      Status w = impl_->Write(
          [&](lmdb::Txn& txn) -> Status {
            kind = Impl::GroupPick::kNone;
            auto q = impl_->FindQueue(txn, ref);
            if (!q.ok()) return q.status();
            if (!q->enabled)
              return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
            auto n = impl_->Maintain(txn, *q, NowMs());
            if (!n.ok()) return n.status();
            auto pick = impl_->PickGroup(txn, *q, sel);
            if (!pick.ok()) return pick.status();
            kind = pick->kind;
            std::vector<Impl::Found> batch;
            if (kind == Impl::GroupPick::kGroup)
              MQ_RETURN_IF_ERROR(
                  impl_->CollectGroup(txn, *q, pick->prefix, sel.group_limit, batch));
            if (batch.empty()) {
              if (kind != Impl::GroupPick::kPlain) kind = Impl::GroupPick::kNone;
              deadline = impl_->NextDeadline(txn, q->id);
              return {};  // commits what Maintain did
            }
            // The whole group in this one transaction: no other receiver sees it meanwhile.
            std::vector<Message> out;
            out.reserve(batch.size());
            for (auto& f : batch) {
              out.push_back(f.msg);
              MQ_RETURN_IF_ERROR(impl_->ConsumeAvailable(txn, *q, f));
            }
            MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, *q));
            for (const Message& m : out) MQ_RETURN_IF_ERROR(sink.Add(m));
            MQ_RETURN_IF_ERROR(sink.Flush());
            received = out.size();
            return {};
          },
          /*rerun_after_commit=*/false);
      if (!w.ok()) {
        if (w.code() == Code::kBrokenPipe || w.code() == Code::kIo ||
            w.code() == Code::kInsufficientResources)
          return Status(w.code(), fmt::format("{}; nothing was removed", w.text()), w.subject());
        return w;
      }
      if (kind == Impl::GroupPick::kPlain) {
        Status s = Receive(ref, plain, ReadOptions(), sink);
        if (s.code() == Code::kMessageNotFound) continue;
        return s;
      }
      if (received) return {};
      return Status(Code::kMessageNotFound, "no message", ref.Full());
    }
    return Status(Code::kMessageNotFound, "no message", ref.Full());
  });
}

Result<std::unique_ptr<Lease>> Store::LockConversation(const QueueRef& ref, const Selection& sel,
                                                       const ReadOptions& ro,
                                                       const LockOptions& lo,
                                                       MessageSink* sink) {
  Selection plain = sel;
  plain.plain_only = true;
  std::unique_ptr<Lease> lease(new Lease());
  std::unique_ptr<Lease> plain_lease;
  Status s = impl_->WaitLoop(ref, ro, [&](bool, int64_t& deadline) -> Status {
    for (int round = 0; round < 16; ++round) {
      bool try_plain = !impl_->MayHaveGroups(ref, sel);
      bool found = false;
      if (!try_plain) {
        Status w = impl_->WriteLight(
            [&](lmdb::Txn& txn) -> Status {
              try_plain = false;
              found = false;
              auto q = impl_->FindQueue(txn, ref);
              if (!q.ok()) return q.status();
              if (!q->enabled)
                return Status(Code::kQueueNotActive, "queue is disabled (status OFF)", q->name);
              int64_t now = NowMs();
              auto n = impl_->Maintain(txn, *q, now);
              if (!n.ok()) return n.status();
              auto pick = impl_->PickGroup(txn, *q, sel);
              if (!pick.ok()) return pick.status();
              try_plain = pick->kind == Impl::GroupPick::kPlain;
              std::vector<Impl::Found> batch;
              if (pick->kind == Impl::GroupPick::kGroup)
                MQ_RETURN_IF_ERROR(
                    impl_->CollectGroup(txn, *q, pick->prefix, sel.group_limit, batch));
              if (batch.empty()) {
                deadline = impl_->NextDeadline(txn, q->id);
                return {};
              }
              uint64_t lease_id = q->next_lease++;
              LeaseRecord rec;
              rec.pid = ::getpid();
              rec.since = now;
              if (lo.lease_ms > 0) {
                rec.process = false;
                rec.expires = now + lo.lease_ms;
                rec.secret = std::string(GuidBytes(NewGuid()));
              } else {
                // The lease's lock file is the group's lock too: ours before anyone sees it.
                if (lease->lock_fd_ >= 0) ::close(lease->lock_fd_);
                lease->lock_path_ = impl_->LeaseLockPath(q->id, lease_id);
                auto l = FileLock::Acquire(lease->lock_path_, impl_->file_mode, false);
                if (!l.ok()) return l.status();
                lease->lock_fd_ = l->Detach();
              }
              lease->messages_.clear();
              std::string holder;
              PutU64BE(holder, lease_id);
              for (auto& f : batch) {
                auto conv = impl_->ConvOf(txn, *q, f.msg);
                if (!conv.ok()) return conv.status();
                auto r = txn.Del(impl_->conv_msgs, impl_->ConvMsgKeyOf(*q, *conv, f.msg));
                if (!r.ok()) return r.status();
                std::string key = Impl::OrderKeyFor(*q, f.msg);
                r = txn.Del(impl_->order, key);
                if (!r.ok()) return r.status();
                MQ_RETURN_IF_ERROR(txn.Put(impl_->locked, key, holder));
                f.msg.delivery_count++;
                MQ_RETURN_IF_ERROR(impl_->Rewrite(txn, *q, f.msg, f.size));
                q->locked++;
                rec.keys.push_back(key);
                lease->messages_.push_back(f.msg);
              }
              uint64_t n_locked = batch.size();
              MQ_RETURN_IF_ERROR(impl_->TouchGroup(txn, *q, pick->group, [&](GroupRecord& g) {
                g.locked += n_locked;
                g.holder = lease_id;
              }));
              MQ_RETURN_IF_ERROR(
                  txn.Put(impl_->leases, LeaseKey(q->id, lease_id), EncodeLease(rec)));
              MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, *q));
              MQ_RETURN_IF_ERROR(PublishLease(*lease, q->name, q->id, lease_id, rec.process,
                                              rec.expires, rec.secret, sink));
              found = true;
              return {};
            },
            /*rerun_after_commit=*/sink == nullptr);
        if (!w.ok()) return w;
        if (found) return {};
        if (!try_plain) return Status(Code::kMessageNotFound, "no message", ref.Full());
      }
      auto l = Lock(ref, plain, ReadOptions(), lo, sink);
      if (l.ok()) {
        plain_lease = std::move(*l);
        return {};
      }
      if (l.status().code() != Code::kMessageNotFound) return l.status();
      if (impl_->MayHaveGroups(ref, sel)) continue;
      auto d = NextDeadline(ref);
      if (d.ok()) deadline = *d;
      return l.status();
    }
    return Status(Code::kMessageNotFound, "no message", ref.Full());
  });
  if (!s.ok() || plain_lease) {
    if (lease->lock_fd_ >= 0) {
      ::unlink(lease->lock_path_.c_str());
      ::close(lease->lock_fd_);
      lease->lock_fd_ = -1;
    }
    if (!s.ok()) return s;
    return plain_lease;
  }
  return lease;
}

Status Store::CreateMessageType(const std::string& name, char validation) {
  if (name.empty() || !IsValidUtf8(name) || Utf8Length(name) > kMaxMessageTypeName)
    return Status(Code::kInvalidArg,
                  fmt::format("a message type name is 1 to {} characters of UTF-8",
                              kMaxMessageTypeName),
                  name);
  if (BuiltinValidation(name))
    return Status(Code::kMessageTypeExists, "a built-in message type", name);
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    if (txn.Get(impl_->msg_types, name))
      return Status(Code::kMessageTypeExists, "message type already exists", name);
    std::string rec(1, validation);
    PutU64BE(rec, static_cast<uint64_t>(NowMs()));
    return txn.Put(impl_->msg_types, name, rec);
  });
}

Status Store::DeleteMessageType(const std::string& name) {
  if (BuiltinValidation(name))
    return Status(Code::kInvalidArg, "built-in message types cannot be deleted", name);
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto r = txn.Del(impl_->msg_types, name);
    if (!r.ok()) return r.status();
    if (!*r) return Status(Code::kMessageTypeNotFound, "no such message type", name);
    return {};
  });
}

Result<std::vector<MessageTypeInfo>> Store::ListMessageTypes() {
  std::vector<MessageTypeInfo> out;
  for (std::string_view b :
       {kDefaultMessageType, std::string_view("http://schemas.microsoft.com/SQL/ServiceBroker/"
                                              "DialogTimer"),
        kEndDialogType, kErrorType}) {
    MessageTypeInfo t;
    t.name = std::string(b);
    t.validation = BuiltinValidation(b);
    t.builtin = true;
    out.push_back(std::move(t));
  }
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  lmdb::Cursor c(*txn, impl_->msg_types);
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.value().size() != 9) continue;
    MessageTypeInfo t;
    t.name = std::string(c.key());
    t.validation = c.value()[0];
    t.created = static_cast<int64_t>(GetU64BE(c.value(), 1));
    out.push_back(std::move(t));
  }
  return out;
}

Result<uint64_t> Store::EndConversation(const Guid& handle, const EndOptions& o) {
  uint64_t removed = 0;
  uint32_t qid = 0;
  std::string text = FormatGuid(handle);
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    removed = 0;
    auto cr = impl_->LoadConv(txn, handle);
    if (!cr.ok()) return cr.status();
    if (!*cr) return Status(Code::kConversationNotFound, "no such conversation", text);
    auto name = txn.Get(impl_->queue_ids, QueueIdKey((*cr)->qid));
    if (!name) return Status(Code::kConversationNotFound, "the conversation's queue is gone", text);
    auto lq = impl_->LoadQueue(txn, std::string(*name));
    if (!lq.ok()) return lq.status();
    if (!*lq) return Status(Code::kConversationNotFound, "the conversation's queue is gone", text);
    QueueInfo& q = **lq;
    qid = q.id;
    // Its retained messages go (RETENTION keeps them until the conversation ends).
    std::vector<uint64_t> kept;
    {
      std::string prefix(GuidBytes(handle));
      lmdb::Cursor c(txn, impl_->conv_kept);
      for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix); on = c.Next())
        if (c.value().size() == 8) kept.push_back(GetU64BE(c.value(), 0));
    }
    for (uint64_t lookup : kept) {
      Impl::Found f;
      MQ_RETURN_IF_ERROR(impl_->LoadMessage(txn, q, lookup, f));
      MQ_RETURN_IF_ERROR(impl_->RemoveMessage(txn, q, f.msg, f.size));
      ++removed;
    }
    cr = impl_->LoadConv(txn, handle);  // the removals changed its counts
    if (!cr.ok()) return cr.status();
    ConvRecord c = **cr;
    if (c.state == ConvState::kOpen) {
      int64_t now = NowMs();
      Message m;
      m.conversation_handle = handle;
      m.conversation_group_id = c.group;
      m.message_type_name = std::string(o.error ? kErrorType : kEndDialogType);
      m.validation = o.error ? 'X' : 'E';
      if (o.error) {
        m.body = ErrorBody(o.code, o.description);
        m.body_type = kBodyXml;
      }
      m.priority = c.priority;
      m.service_name = c.service;
      m.service_contract_name = c.contract;
      m.message_sequence_number = c.next_seq++;
      m.sent_time = m.arrived_time = m.message_enqueue_time = now;
      m.source_qm_guid = impl_->guid;
      m.destination_queue = q.name;
      c.state = o.error ? ConvState::kError : ConvState::kEnded;
      MQ_RETURN_IF_ERROR(txn.Put(impl_->convs, GuidBytes(handle), EncodeConv(c)));
      MQ_RETURN_IF_ERROR(impl_->NewMessageId(txn, m));
      MQ_RETURN_IF_ERROR(impl_->InsertMessage(txn, q, m, 0));
    } else if (o.error) {
      return Status(Code::kConversationClosed,
                    fmt::format("conversation already ended ({}); {} retained messages removed",
                                ConvStateName(c.state), removed),
                    text);
    }
    return impl_->PutQueue(txn, q);
  });
  if (!s.ok()) return s;
  return removed;
}

Result<std::vector<ConversationInfo>> Store::ListConversations() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  std::vector<ConversationInfo> out;
  lmdb::Cursor c(*txn, impl_->convs);
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() != 16) continue;
    ConvRecord r;
    if (!DecodeConv(c.value(), r)) continue;
    ConversationInfo ci;
    ci.handle = GuidFromBytes(c.key());
    ci.group = r.group;
    auto name = txn->Get(impl_->queue_ids, QueueIdKey(r.qid));
    ci.queue = name ? std::string(*name) : fmt::format("#{}", r.qid);
    ci.state = ConvStateName(r.state);
    ci.priority = r.priority;
    ci.messages = r.count;
    ci.next_seq = r.next_seq;
    ci.service = r.service;
    ci.contract = r.contract;
    ci.created = r.created;
    auto g = impl_->LoadGroup(*txn, r.qid, r.group);
    if (g.ok() && g->locked) {
      ci.locked = true;
      ci.holder_lease = g->holder;
      auto lv = txn->Get(impl_->leases, LeaseKey(r.qid, g->holder));
      LeaseRecord lr;
      if (lv && DecodeLease(*lv, lr) && lr.process) ci.holder_pid = lr.pid;
    }
    out.push_back(std::move(ci));
  }
  return out;
}

Status Store::Check(std::vector<std::string>& problems) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto& t = *txn;
  auto problem = [&](std::string s) {
    if (problems.size() < 1000) problems.push_back(std::move(s));
  };
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

  struct Tally {
    uint64_t count = 0, bytes = 0, max_lookup = 0, delayed = 0, locked = 0;
  };
  std::map<uint32_t, Tally> tally;
  uint64_t messages = 0, with_corr = 0, with_deadline = 0;
  {
    lmdb::Cursor c(t, impl_->messages);
    for (bool on = c.First(); on; on = c.Next()) {
      ++messages;
      if (c.key().size() != 12) {
        problem("messages: bad key size");
        continue;
      }
      uint32_t qid = GetU32BE(c.key(), 0);
      uint64_t lookup = GetU64BE(c.key(), 4);
      auto qit = by_qid.find(qid);
      std::string qname = qit == by_qid.end() ? fmt::format("#{}", qid) : qit->second.name;
      std::string where = fmt::format("queue {} lookup id {}", qname, lookup);
      if (qit == by_qid.end()) problem(where + ": message of an unknown queue");
      Message m;
      Status s = DecodeRecord(c.value(), m);
      if (!s.ok()) {
        problem(fmt::format("{}: {}", where, s.text()));
        continue;
      }
      Tally& ty = tally[qid];
      ty.count++;
      ty.bytes += c.value().size();
      ty.max_lookup = std::max(ty.max_lookup, lookup);
      if (m.priority > 7) problem(where + ": priority out of range");
      m.lookup_id = lookup;
      std::string okey = qit == by_qid.end() ? OrderKey(qid, m.priority, lookup)
                                             : Impl::OrderKeyFor(qit->second, m);
      bool in_order = t.Get(impl_->order, okey).has_value();
      bool delayed = m.visible_time && t.Get(impl_->delays, DelayKey(qid, m.visible_time, lookup));
      bool is_locked = t.Get(impl_->locked, okey).has_value();
      if (delayed) ty.delayed++;
      if (is_locked) ty.locked++;
      int states = in_order + delayed + is_locked;
      if (states == 0) problem(where + ": missing from the delivery order index");
      if (states > 1) problem(where + ": in more than one of order, delays and locked");
      QueueInfo owner;
      owner.name = qname;
      owner.id = qid;
      auto loc = t.Get(impl_->by_id, IdKey(owner, m.id));
      if (m.id.size() != kIdSize) problem(where + ": bad message id");
      else if (!loc || *loc != MsgKey(qid, lookup))
        problem(where + ": message id index does not point to it");
      if (int64_t at = ExpiryOf(m); at && IsLive(owner) && m.status != 0) {
        ++with_deadline;
        if (!t.Get(impl_->deadlines, DeadlineKey(qid, at, lookup)))
          problem(where + ": missing from the deadline index");
      }
      if (!m.correlation_id.empty()) {
        ++with_corr;
        if (!t.Get(impl_->by_corr, CorrKey(m.correlation_id, qid, m.priority, lookup)))
          problem(where + ": missing from the correlation index");
      }
    }
  }
  for (auto& [qid, q] : by_qid) {
    Tally ty = tally[qid];
    if (ty.count != q.count)
      problem(fmt::format("queue {}: counter says {} messages, found {}", q.name, q.count,
                          ty.count));
    if (ty.bytes != q.bytes)
      problem(fmt::format("queue {}: counter says {} bytes, found {}", q.name, q.bytes, ty.bytes));
    if (ty.locked != q.locked)
      problem(fmt::format("queue {}: counter says {} locked, found {}", q.name, q.locked,
                          ty.locked));
    if (ty.delayed != q.delayed)
      problem(fmt::format("queue {}: counter says {} delayed, found {}", q.name, q.delayed,
                          ty.delayed));
    if (ty.max_lookup >= q.next_lookup)
      problem(fmt::format("queue {}: next lookup id {} is not above {}", q.name, q.next_lookup,
                          ty.max_lookup));
  }
  // Every index entry points to a message that agrees with it.
  {
    lmdb::Cursor c(t, impl_->order);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.key().size() != 13) {
        problem("order: bad key size");
        continue;
      }
      uint32_t oqid = GetU32BE(c.key(), 0);
      auto rec = t.Get(impl_->messages, MsgKey(oqid, GetU64BE(c.key(), 5)));
      Message m;
      bool decoded = rec && DecodeRecord(*rec, m).ok();
      m.lookup_id = GetU64BE(c.key(), 5);
      auto oq = by_qid.find(oqid);
      uint8_t band = !decoded || oq == by_qid.end()
                         ? static_cast<uint8_t>(7 - m.priority)
                         : static_cast<uint8_t>(Impl::OrderKeyFor(oq->second, m)[4]);
      if (!decoded || band != static_cast<uint8_t>(c.key()[4]))
        problem(fmt::format("order: entry for queue #{} lookup id {} has no matching message",
                            GetU32BE(c.key(), 0), GetU64BE(c.key(), 5)));
    }
    uint64_t delayed = t.Count(impl_->delays);
    uint64_t locked = t.Count(impl_->locked);
    if (n + delayed + locked != messages)
      problem(fmt::format("order has {}, delays {} and locked {} entries for {} messages", n,
                          delayed, locked, messages));
  }
  {
    lmdb::Cursor c(t, impl_->by_id);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.value().size() != 12 || !t.Get(impl_->messages, c.value()))
        problem(fmt::format("by_id: {} points to no message",
                            FormatMessageId(c.key().substr(0, kIdSize))));
    }
    if (n != messages) problem(fmt::format("by_id has {} entries for {} messages", n, messages));
  }
  {
    lmdb::Cursor c(t, impl_->by_corr);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.key().size() != 33) {
        problem("by_corr: bad key size");
        continue;
      }
      auto rec = t.Get(impl_->messages, MsgKey(GetU32BE(c.key(), 20), GetU64BE(c.key(), 25)));
      Message m;
      if (!rec || !DecodeRecord(*rec, m).ok() || m.correlation_id != c.key().substr(0, 20))
        problem(fmt::format("by_corr: entry for lookup id {} has no matching message",
                            GetU64BE(c.key(), 25)));
    }
    if (n != with_corr)
      problem(fmt::format("by_corr has {} entries for {} messages with a correlation id", n,
                          with_corr));
  }
  if (uint64_t n = t.Count(impl_->deadlines); n != with_deadline)
    problem(fmt::format("deadlines has {} entries for {} messages with a deadline", n,
                        with_deadline));
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
