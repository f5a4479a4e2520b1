// messages.cpp: one message and its indexes. Storing a message writes its record
// and every index entry (order or delays, by_id, by_corr, deadlines, the conversation
// indexes) in the caller's transaction; removing it takes them all away again; Collect walks
// the indexes for a peek or receive.
#include "store/store_impl.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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

Status Store::Impl::RemoveMessage(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t size,
                                  Held held) {
  bool is_locked = held != Held::kAnywhere;
  // DelSeq: a batch from the head removes its messages in increasing key order in each index.
  auto r = txn.DelSeq(messages, MsgKey(q.id, m.lookup_id));
  if (!r.ok()) return r.status();
  r = is_locked ? Result<bool>(false) : txn.DelSeq(order, OrderKeyFor(q, m));
  if (!r.ok()) return r.status();
  bool was_locked = false;
  if (!*r && m.visible_time && !is_locked) {
    r = txn.Del(delays, DelayKey(q.id, m.visible_time, m.lookup_id));
    if (!r.ok()) return r.status();
    if (*r) q.delayed -= std::min<uint64_t>(q.delayed, 1);
  }
  if (!*r && held == Held::kLockedCleared) {
    q.locked -= std::min<uint64_t>(q.locked, 1);
    was_locked = true;
  } else if (!*r) {
    // Locked: the lease that holds it skips it when it ends.
    r = txn.DelSeq(locked, OrderKeyFor(q, m));
    if (!r.ok()) return r.status();
    if (*r) q.locked -= std::min<uint64_t>(q.locked, 1);
    was_locked = *r;
  }
  if (IsConvMessage(q, m)) MQ_RETURN_IF_ERROR(ConvOnRemove(txn, q, m, was_locked));
  else if (m.status == 0) q.retained -= std::min<uint64_t>(q.retained, 1);  // RETENTION ON
  if (!m.id.empty()) {
    r = txn.DelSeq(by_id, IdKey(q, m.id));
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

Status Store::Impl::LoadMessage(lmdb::Txn& txn, const QueueInfo& q, uint64_t lookup, Found& f) {
  // Through the sequential cursor: a walk of the head loads messages in increasing lookup
  // order, mostly each the next record, which is then one step rather than a search.
  auto rec = txn.GetSeq(messages, MsgKey(q.id, lookup));
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
bool Store::Impl::Visible(lmdb::Txn& txn, const QueueInfo& q, const Message& m,
                          bool include_locked) {
  std::string key = OrderKeyFor(q, m);
  return txn.Get(order, key) || (include_locked && txn.Get(locked, key));
}

// Collects up to `max_count` messages (and about `max_bytes`) chosen by `sel`, resuming
// after `resume` if it is not empty.
Status Store::Impl::Collect(lmdb::Txn& txn, const QueueInfo& q, const Selection& sel,
                            const std::string& resume, size_t max_count, std::vector<Found>& out) {
  out.clear();
  if (q.id == 0 || max_count == 0) return {};
  out.reserve(std::min<size_t>(max_count, kLockBatchCount));
  size_t bytes = 0;
  int64_t now = NowMs();
  auto full = [&] { return out.size() >= max_count || bytes >= kBatchBytes; };

  if (sel.plain_only && sel.refuse_conversation && resume.empty()) {
    // A receive aimed at one message (--id, --lookup-id, --last): a conversation message is
    // received with its conversation, in order, never alone; say so rather than pass it by.
    Selection probe = sel;
    probe.plain_only = false;
    probe.refuse_conversation = false;
    MQ_RETURN_IF_ERROR(Collect(txn, q, probe, resume, 1, out));
    if (!out.empty() && IsConvMessage(q, out[0].msg) && out[0].msg.status != 0)
      return Status(Code::kConversationMessage,
                    fmt::format("message {} belongs to conversation {}: receive it with "
                                "--conversation {} (a conversation is received in order)",
                                out[0].msg.lookup_id, FormatGuid(out[0].msg.conversation_handle),
                                FormatGuid(out[0].msg.conversation_handle)),
                    q.name);
    out.clear();
  }

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

  // The head order (CLI.md: priority, then arrival) over the bands of `order` (schema.hpp):
  // plain messages (bands 0-7) and ready conversation messages (8-15) as one, by priority
  // and then lookup id; retained messages (16-23) after them all. Each stream below is one
  // band range of `order` (or, with include_locked, of `locked`, where Locked messages keep
  // their keys), already in that order; the walk merges them, taking the least head (going
  // backwards, the greatest). A plain receive walks the plain bands alone.
  std::string prefix = QueueIdKey(q.id);
  bool backward = sel.anchor == Anchor::kLast || sel.anchor == Anchor::kBefore;
  enum class From { kBegin, kEnd, kKey };
  From from = From::kBegin;
  std::string start;  // kKey: a key of `order` or `locked`, whether or not it is there now
  bool inclusive = true;
  if (!resume.empty()) {
    from = From::kKey;
    start = resume;
    inclusive = false;
  } else {
    switch (sel.anchor) {
      case Anchor::kHead:
        break;
      case Anchor::kLast:
        from = From::kEnd;
        break;
      case Anchor::kAt:
      case Anchor::kAfter:
      case Anchor::kBefore: {
        Found anchor;
        if (!txn.Get(messages, MsgKey(q.id, sel.lookup_id))) return {};
        MQ_RETURN_IF_ERROR(LoadMessage(txn, q, sel.lookup_id, anchor));
        from = From::kKey;
        start = OrderKeyFor(q, anchor.msg);
        inclusive = sel.anchor == Anchor::kAt;
        break;
      }
      default:
        return {};
    }
  }
  if (from == From::kKey && (start.size() != 13 || !HasPrefix(start, prefix))) return {};
  // A key's place in the head order: ready bands by priority alone, retained ones after.
  auto rank = [](std::string_view k) {
    auto band = static_cast<uint8_t>(k[4]);
    return std::pair<uint8_t, std::string_view>(band < 16 ? band & 7 : band, k.substr(5));
  };
  struct Stream {
    std::optional<lmdb::Cursor> c;
    uint8_t lo = 0, hi = 0;  // its bands: [lo, hi)
    bool on = false;
  };
  std::array<Stream, 5> streams;
  size_t n_streams = 0;
  auto add = [&](lmdb::Dbi dbi, uint8_t lo, uint8_t hi) {
    Stream& s = streams[n_streams++];
    s.c.emplace(txn, dbi);
    s.lo = lo;
    s.hi = hi;
  };
  add(order, 0, 8);
  if (!sel.plain_only) {
    add(order, 8, 16);
    add(order, 16, 24);
    if (sel.include_locked) {
      add(locked, 0, 8);
      add(locked, 8, 16);
    }
  }
  auto band_key = [&](uint8_t band) {
    std::string k = prefix;
    k.push_back(static_cast<char>(band));
    return k;
  };
  auto in_stream = [&](const Stream& s) {
    std::string_view k = s.c->key();
    return HasPrefix(k, prefix) && k.size() > 4 && static_cast<uint8_t>(k[4]) >= s.lo &&
           static_cast<uint8_t>(k[4]) < s.hi;
  };
  for (size_t i = 0; i < n_streams; ++i) {
    Stream& s = streams[i];
    lmdb::Cursor& c = *s.c;
    // The start, in this stream's terms: its ranks are lo..lo+7 mapped to bands lo..hi-1
    // (rank r of a ready band is band lo + r).
    uint8_t rank_lo = s.lo < 16 ? 0 : 16;
    bool on = false;
    if (from == From::kBegin) {
      on = c.SeekGe(band_key(s.lo));
    } else if (from == From::kEnd) {
      on = c.SeekLt(band_key(s.hi));
    } else {
      auto [r, tail] = rank(start);
      if (r < rank_lo) {
        on = !backward && c.SeekGe(band_key(s.lo));
      } else if (r >= rank_lo + 8) {
        on = backward && c.SeekLt(band_key(s.hi));
      } else {
        std::string k = band_key(static_cast<uint8_t>(s.lo + r - rank_lo));
        k.append(tail);
        if (backward) {
          on = c.SeekLt(k);
        } else {
          on = c.SeekGe(k);
          if (on && !inclusive && c.key() == k) on = c.Next();
        }
      }
    }
    s.on = on && in_stream(s);
  }
  for (;;) {
    Stream* pick = nullptr;
    for (size_t i = 0; i < n_streams; ++i) {
      Stream& s = streams[i];
      if (!s.on) continue;
      if (!pick || (backward ? rank(s.c->key()) > rank(pick->c->key())
                             : rank(s.c->key()) < rank(pick->c->key())))
        pick = &s;
    }
    if (!pick || full()) break;
    lmdb::Cursor& c = *pick->c;
    if (c.key().size() != 13) return Status(Code::kCorrupted, "bad order index key", q.name);
    // Decoded in its place in `out` (a Message is some twenty strings: moving one in costs
    // as much as a look-up), and dropped again if it expired.
    Found& f = out.emplace_back();
    f.walk_key.assign(c.key());
    MQ_RETURN_IF_ERROR(LoadMessage(txn, q, GetU64BE(c.key(), 5), f));
    if (Expired(q, f.msg, now))
      out.pop_back();
    else
      bytes += f.size;
    bool on = backward ? c.Prev() : c.Next();
    pick->on = on && in_stream(*pick);
  }
  return {};
}

// Stores `m` as a new message of `q`: its record, the delivery order (or `delays`), the id,
// correlation and deadline indexes, and the counters. The lookup id is `lookup` if not 0 (a
// move that keeps it), else the queue's next; a `promoted` message goes to the delivery
// order even though it keeps its visible time. With `quota` not 0, a message that would take
// the queue's bytes above it is refused (MQ_ERROR_INSUFFICIENT_RESOURCES) before anything
// changes. The caller saves `q`.
Status Store::Impl::InsertMessage(lmdb::Txn& txn, QueueInfo& q, Message& m, uint64_t quota,
                                  uint64_t lookup, bool promoted) {
  m.lookup_id = lookup ? lookup : q.next_lookup;
  m.queuing_order = m.lookup_id;
  m.queue = q.name;
  // Reused from one insert to the next (a batch of sends inserts thousands).
  thread_local std::string rec;
  thread_local std::string id_key;
  EncodeRecordInto(m, rec);
  if (quota && q.bytes + rec.size() > quota)
    return Status(Code::kInsufficientResources,
                  fmt::format("queue quota of {} bytes would be exceeded ({} used, {} more)",
                              quota, q.bytes, rec.size()),
                  q.name);
  std::string loc = MsgKey(q.id, m.lookup_id);
  // The Seq puts: a batch of sends puts increasing keys in each of these indexes.
  id_key.assign(m.id);
  if (IsJournalName(q.name)) PutU32BE(id_key, q.id);  // as IdKey
  auto fresh = txn.PutNewSeq(by_id, id_key, loc);
  if (!fresh.ok()) return fresh.status();
  if (!*fresh)
    return Status(Code::kIllegalPropertyValue,
                  fmt::format("message id {} is already in the store", FormatMessageId(m.id)),
                  q.name);
  q.next_lookup = std::max(q.next_lookup, m.lookup_id + 1);
  MQ_RETURN_IF_ERROR(txn.PutSeq(messages, loc, rec));
  if (m.visible_time && !promoted) {
    MQ_RETURN_IF_ERROR(txn.Put(delays, DelayKey(q.id, m.visible_time, m.lookup_id), {}));
    q.delayed++;
  } else {
    if (IsConvMessage(q, m))
      MQ_RETURN_IF_ERROR(ConvOnAdd(txn, q, m));
    else
      MQ_RETURN_IF_ERROR(txn.PutSeq(order, OrderKeyFor(q, m), {}));
    if (!IsConvMessage(q, m) && m.status == 0) q.retained++;  // kept by RETENTION ON
    to_notify.insert(q.id);
  }
  if (!m.correlation_id.empty())
    MQ_RETURN_IF_ERROR(
        txn.Put(by_corr, CorrKey(m.correlation_id, q.id, m.priority, m.lookup_id), {}));
  if (int64_t at = ExpiryOf(m); at && IsLive(q) && m.status != 0)
    MQ_RETURN_IF_ERROR(txn.Put(deadlines, DeadlineKey(q.id, at, m.lookup_id), {}));
  q.count++;
  q.bytes += rec.size();
  if (!promoted) q.sent_total++;
  return {};
}

// Moves a message of `q` (in any state) to the queue `to_name` (created if missing, as
// subqueues and system queues are), keeping its lookup id if `keep_lookup` and it is free
// there (MSMQ MoveMessage), else giving it the target's next one.
Status Store::Impl::MoveMessage(lmdb::Txn& txn, QueueInfo& q, Found& f, const std::string& to_name,
                                bool keep_lookup, int64_t now, bool awaiting_arrival) {
  MQ_RETURN_IF_ERROR(RemoveMessage(txn, q, f.msg, f.size));
  auto to_r = LoadOrCreate(txn, to_name);
  if (!to_r.ok()) return to_r.status();
  QueueInfo& to = to_r.value();
  Message& m = f.msg;
  m.move_count++;
  m.last_move_time = now;
  m.visible_time = 0;
  m.awaiting_arrival = awaiting_arrival;
  uint64_t lookup = m.lookup_id;
  if (!keep_lookup || txn.Get(messages, MsgKey(to.id, lookup))) lookup = 0;
  MQ_RETURN_IF_ERROR(InsertMessage(txn, to, m, 0, lookup));
  return PutQueue(txn, to);
}

// Rewrites a message's record in place; keeps the queue's byte counter right.
Status Store::Impl::Rewrite(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t old_size,
                            uint64_t* new_size) {
  std::string rec = EncodeRecord(m);
  MQ_RETURN_IF_ERROR(txn.Put(messages, MsgKey(q.id, m.lookup_id), rec));
  q.bytes = q.bytes - std::min(q.bytes, old_size) + rec.size();
  if (new_size) *new_size = rec.size();
  return {};
}

}  // namespace mq
