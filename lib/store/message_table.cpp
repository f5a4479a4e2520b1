// message_table.cpp: the message table (message_table.hpp): a message's record and its six
// indexes, and the walks over them for peek, receive, expiry and check.
#include "store/message_table.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/units.hpp"
#include "store/conversation.hpp"

namespace mq {

namespace {

bool Has(lmdb::Txn& txn, lmdb::Dbi dbi, std::string_view key) {
  return txn.Get(dbi, key).has_value();
}

}  // namespace

Status MessageTable::Open(lmdb::Txn& txn, bool create) {
  for (auto [name, slot] : {std::pair<const char*, lmdb::Dbi*>{"messages", &messages_},
                            {"order", &order_},
                            {"by_id", &by_id_},
                            {"by_corr", &by_corr_},
                            {"delays", &delays_},
                            {"locked", &locked_},
                            {"deadlines", &deadlines_}}) {
    auto dbi = txn.OpenDb(name, create);
    if (!dbi.ok()) return dbi.status();
    *slot = *dbi;
  }
  return {};
}

void MessageTable::ForEachDb(
    const std::function<void(const char* name, lmdb::Dbi dbi)>& fn) const {
  fn("messages", messages_);
  fn("order", order_);
  fn("by_id", by_id_);
  fn("by_corr", by_corr_);
  fn("delays", delays_);
  fn("locked", locked_);
  fn("deadlines", deadlines_);
}

void MessageTable::Encode(uint32_t qid, const Message& m, std::string& out) const {
  uint32_t implied = 0;
  if (lean_) {
    if (IsNative(qid, m.id, m.lookup_id)) implied |= kImpliedNativeId;
    if (!IsNil(m.source_qm_guid) && m.source_qm_guid == store_guid_) implied |= kImpliedSourceQm;
    if (m.message_enqueue_time && m.message_enqueue_time == m.arrived_time)
      implied |= kImpliedEnqueueTime;
    if (m.queuing_order && m.queuing_order == m.lookup_id) implied |= kImpliedQueuingOrder;
  }
  EncodeRecordInto(m, out, implied);
}

Status MessageTable::Decode(std::string_view rec, uint32_t qid, uint64_t lookup, Message& m) const {
  m.lookup_id = lookup;
  uint32_t implied = 0;
  MQ_RETURN_IF_ERROR(DecodeRecord(rec, m, &implied));
  if (!implied) return {};
  if (implied & kImpliedNativeId) {
    if (id_prefix_.size() != 12 || lookup > UINT32_MAX)
      return Status::Corrupted("message record leaves out an id the store cannot say");
    m.id.assign(id_prefix_);
    m.id.resize(kIdSize);
    StoreU32BE(m.id.data() + 12, qid);
    StoreU32BE(m.id.data() + 16, static_cast<uint32_t>(lookup));
  }
  if (implied & kImpliedSourceQm) m.source_qm_guid = store_guid_;
  if (implied & kImpliedEnqueueTime) m.message_enqueue_time = m.arrived_time;
  if (implied & kImpliedQueuingOrder) m.queuing_order = lookup;
  return {};
}

Status MessageTable::Load(lmdb::Txn& txn, const QueueInfo& q, uint64_t lookup,
                          FoundMessage& f) const {
  auto rec = txn.GetSeq(messages_, MsgKey(q.id, lookup));
  if (!rec)
    return Status::Corrupted(fmt::format("index names lookup id {} but the message is missing",
                                         lookup),
                             q.name);
  f.msg.queue = q.name;
  f.size = rec->size();
  Status s = Decode(*rec, q.id, lookup, f.msg);
  if (!s.ok()) return s.WithSubject(q.name);
  return {};
}

bool MessageTable::IsNative(uint32_t qid, std::string_view id, uint64_t lookup) const {
  // The counters first: they differ for most ids that are not native.
  return id.size() == kIdSize && lookup <= UINT32_MAX && GetU32BE(id, 16) == lookup &&
         GetU32BE(id, 12) == qid && id_prefix_.size() == 12 &&
         std::memcmp(id.data(), id_prefix_.data(), 12) == 0;
}

std::optional<std::pair<uint32_t, uint64_t>> MessageTable::NativeWhere(lmdb::Txn& txn,
                                                                       std::string_view id) const {
  if (id_prefix_.size() != 12 || id.size() != kIdSize || id.substr(0, 12) != id_prefix_)
    return std::nullopt;
  uint32_t qid = GetU32BE(id, 12);
  uint64_t lookup = GetU32BE(id, 16);
  // The record at that lookup id is this message only if it carries the id: a message whose
  // counter missed its lookup id has a by_id entry, and another message may sit there.
  auto rec = txn.Get(messages_, MsgKey(qid, lookup));
  if (!rec) return std::nullopt;
  uint32_t implied = 0;
  std::string_view has = RecordId(*rec, &implied);
  // A lean record leaves out exactly this id: the native id of where it is.
  if (!(implied & kImpliedNativeId) && has != id) return std::nullopt;
  if ((implied & kImpliedNativeId) && !has.empty()) return std::nullopt;
  return std::pair<uint32_t, uint64_t>(qid, lookup);
}

bool MessageTable::Exists(lmdb::Txn& txn, uint32_t qid, uint64_t lookup) const {
  return Has(txn, messages_, MsgKey(qid, lookup));
}

std::optional<uint64_t> MessageTable::RecordSize(lmdb::Txn& txn, uint32_t qid,
                                                 uint64_t lookup) const {
  auto rec = txn.Get(messages_, MsgKey(qid, lookup));
  if (!rec) return std::nullopt;
  return rec->size();
}

Status MessageTable::Batch(lmdb::Txn& txn, const QueueInfo& q, uint64_t from_lookup, size_t max,
                           std::vector<FoundMessage>& out) const {
  out.clear();
  std::string prefix = QueueIdKey(q.id);
  lmdb::Cursor c(txn, messages_);
  for (bool on = c.SeekGe(MsgKey(q.id, from_lookup));
       on && HasPrefix(c.key(), prefix) && out.size() < max; on = c.Next()) {
    FoundMessage& f = out.emplace_back();
    f.msg.queue = q.name;
    f.size = c.value().size();
    MQ_RETURN_IF_ERROR(Decode(c.value(), q.id, GetU64BE(c.key(), 4), f.msg));
  }
  return {};
}

Result<std::optional<int64_t>> MessageTable::OldestArrival(lmdb::Txn& txn, uint32_t qid) const {
  // The oldest message has the smallest lookup id: one seek.
  lmdb::Cursor c(txn, messages_);
  std::string prefix = QueueIdKey(qid);
  if (!c.SeekGe(prefix) || !HasPrefix(c.key(), prefix)) return std::optional<int64_t>();
  Message m;
  MQ_RETURN_IF_ERROR(Decode(c.value(), qid, GetU64BE(c.key(), 4), m));
  return std::optional<int64_t>(m.arrived_time);
}

Status MessageTable::Rewrite(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t old_size,
                             uint64_t* new_size) {
  std::string rec;
  Encode(q.id, m, rec);
  MQ_RETURN_IF_ERROR(txn.Put(messages_, MsgKey(q.id, m.lookup_id), rec));
  q.bytes = q.bytes - std::min(q.bytes, old_size) + rec.size();
  if (new_size) *new_size = rec.size();
  return {};
}

Status MessageTable::Insert(lmdb::Txn& txn, QueueInfo& q, const Message& m, std::string_view rec,
                            bool delayed) {
  // Reused from one insert to the next (a batch of sends inserts thousands).
  thread_local std::string id_key;
  std::string loc = MsgKey(q.id, m.lookup_id);
  // The Seq puts: a batch of sends puts increasing keys in each of these indexes.
  id_key.assign(m.id);
  if (IsJournalName(q.name)) PutU32BE(id_key, q.id);  // as IdKey
  auto taken = [&] {
    return Status::IllegalPropertyValue(fmt::format("message id {} is already in the store",
                                                    FormatMessageId(m.id)),
                                        q.name);
  };
  if (IsNative(q.id, m.id, m.lookup_id)) {
    // No by_id entry. An id made just now for this message (its counter is the queue's
    // latest) is nowhere else; one given (a message moved back to its own queue) is checked.
    bool fresh = q.id_guid.size() == 16 && m.id.compare(0, 16, q.id_guid) == 0 &&
                 GetU32BE(m.id, 16) == q.id_counter;
    if (!fresh && Has(txn, by_id_, id_key)) return taken();
  } else {
    // (A journal copy shares the id of the message it copies: its key has the journal's id.)
    if (!IsJournalName(q.name) && NativeWhere(txn, m.id)) return taken();
    auto fresh = txn.PutNewSeq(by_id_, id_key, loc);
    if (!fresh.ok()) return fresh.status();
    if (!*fresh) return taken();
  }
  MQ_RETURN_IF_ERROR(txn.PutSeq(messages_, loc, rec));
  if (delayed) MQ_RETURN_IF_ERROR(Delay(txn, q, m));
  if (!m.correlation_id.empty())
    MQ_RETURN_IF_ERROR(
        txn.Put(by_corr_, CorrKey(m.correlation_id, q.id, m.priority, m.lookup_id), {}));
  if (int64_t at = ExpiryOf(m); at && IsLive(q) && m.status != 0)
    MQ_RETURN_IF_ERROR(txn.Put(deadlines_, DeadlineKey(q.id, at, m.lookup_id), {}));
  q.count++;
  q.bytes += rec.size();
  return {};
}

Result<bool> MessageTable::Remove(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t size,
                                  Held held) {
  bool is_locked = held != Held::kAnywhere;
  // DelSeq: a batch from the head removes its messages in increasing key order in each index.
  auto r = txn.DelSeq(messages_, MsgKey(q.id, m.lookup_id));
  if (!r.ok()) return r.status();
  r = is_locked ? Result<bool>(false) : txn.DelSeq(order_, OrderKeyOf(q, m));
  if (!r.ok()) return r.status();
  bool was_locked = false;
  if (!*r && m.visible_time && !is_locked) {
    r = Undelay(txn, q, m);
    if (!r.ok()) return r.status();
  }
  if (!*r && held == Held::kLockedCleared) {
    q.locked -= std::min<uint64_t>(q.locked, 1);
    was_locked = true;
  } else if (!*r) {
    // Locked: the lease that holds it skips it when it ends.
    r = txn.DelSeq(locked_, OrderKeyOf(q, m));
    if (!r.ok()) return r.status();
    if (*r) q.locked -= std::min<uint64_t>(q.locked, 1);
    was_locked = *r;
  }
  if (!m.id.empty() && !IsNative(q.id, m.id, m.lookup_id)) {
    r = txn.DelSeq(by_id_, IdKey(q, m.id));
    if (!r.ok()) return r.status();
  }
  if (!m.correlation_id.empty()) {
    r = txn.Del(by_corr_, CorrKey(m.correlation_id, q.id, m.priority, m.lookup_id));
    if (!r.ok()) return r.status();
  }
  if (int64_t at = ExpiryOf(m)) {
    r = txn.Del(deadlines_, DeadlineKey(q.id, at, m.lookup_id));
    if (!r.ok()) return r.status();
  }
  q.count -= std::min<uint64_t>(q.count, 1);
  q.bytes -= std::min(q.bytes, size);
  return was_locked;
}

bool MessageTable::IsReady(lmdb::Txn& txn, std::string_view okey) const {
  return Has(txn, order_, okey);
}

bool MessageTable::IsLocked(lmdb::Txn& txn, std::string_view okey) const {
  return Has(txn, locked_, okey);
}

bool MessageTable::Visible(lmdb::Txn& txn, const QueueInfo& q, const Message& m,
                           bool include_locked) const {
  std::string key = OrderKeyOf(q, m);
  return IsReady(txn, key) || (include_locked && IsLocked(txn, key));
}

Status MessageTable::PutReady(lmdb::Txn& txn, std::string_view okey, bool seq) {
  return seq ? txn.PutSeq(order_, okey, {}) : txn.Put(order_, okey, {});
}

Result<bool> MessageTable::DelReady(lmdb::Txn& txn, std::string_view okey) {
  return txn.Del(order_, okey);
}

Status MessageTable::Lock(lmdb::Txn& txn, QueueInfo& q, const std::string& okey,
                          uint64_t lease_id) {
  auto r = txn.DelSeq(order_, okey);
  if (!r.ok()) return r.status();
  char holder[8];
  StoreU64BE(holder, lease_id);
  // A batch Locks keys in increasing order, usually above every key Locked before.
  MQ_RETURN_IF_ERROR(txn.PutAppend(locked_, okey, std::string_view(holder, 8)));
  q.locked++;
  return {};
}

std::optional<uint64_t> MessageTable::Holder(lmdb::Txn& txn, std::string_view okey,
                                             bool seq) const {
  auto v = seq ? txn.GetSeq(locked_, okey) : txn.Get(locked_, okey);
  if (!v || v->size() != 8) return std::nullopt;
  return GetU64BE(*v, 0);
}

Result<bool> MessageTable::Unlock(lmdb::Txn& txn, QueueInfo& q, std::string_view okey) {
  auto r = txn.Del(locked_, okey);
  if (r.ok() && *r) q.locked -= std::min<uint64_t>(q.locked, 1);
  return r;
}

uint64_t MessageTable::LockedCount(lmdb::Txn& txn) const { return txn.Count(locked_); }

Status MessageTable::ClearLocked(lmdb::Txn& txn) { return txn.Clear(locked_); }

Status MessageTable::Delay(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
  MQ_RETURN_IF_ERROR(txn.Put(delays_, DelayKey(q.id, m.visible_time, m.lookup_id), {}));
  q.delayed++;
  return {};
}

Result<bool> MessageTable::Undelay(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
  auto r = txn.Del(delays_, DelayKey(q.id, m.visible_time, m.lookup_id));
  if (r.ok() && *r) q.delayed -= std::min<uint64_t>(q.delayed, 1);
  return r;
}

Status MessageTable::DropDeadline(lmdb::Txn& txn, const QueueInfo& q, const Message& m) {
  if (int64_t at = ExpiryOf(m)) {
    auto d = txn.Del(deadlines_, DeadlineKey(q.id, at, m.lookup_id));
    if (!d.ok()) return d.status();
  }
  return {};
}

namespace {

// The time in the first key of `qid` in a delays-shaped index; 0 if none.
int64_t FirstTime(lmdb::Txn& txn, lmdb::Dbi dbi, uint32_t qid) {
  if (qid == 0) return 0;
  std::string prefix = QueueIdKey(qid);
  lmdb::Cursor c(txn, dbi);
  if (!c.SeekGe(prefix) || !HasPrefix(c.key(), prefix)) return 0;
  return static_cast<int64_t>(GetU64BE(c.key(), 4));
}

}  // namespace

int64_t MessageTable::FirstDelay(lmdb::Txn& txn, uint32_t qid) const {
  return FirstTime(txn, delays_, qid);
}

int64_t MessageTable::FirstExpiry(lmdb::Txn& txn, uint32_t qid) const {
  return FirstTime(txn, deadlines_, qid);
}

std::vector<uint64_t> MessageTable::DueDelays(lmdb::Txn& txn, uint32_t qid, int64_t now,
                                              size_t max) const {
  std::vector<uint64_t> due;
  std::string prefix = QueueIdKey(qid);
  lmdb::Cursor c(txn, delays_);
  for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix) &&
                                   static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now &&
                                   due.size() < max;
       on = c.Next())
    due.push_back(GetU64BE(c.key(), 12));
  return due;
}

std::vector<MessageTable::Due> MessageTable::DueExpiries(lmdb::Txn& txn, uint32_t qid,
                                                         int64_t now, const std::string& resume,
                                                         size_t max) const {
  std::vector<Due> out;
  std::string prefix = QueueIdKey(qid);
  lmdb::Cursor c(txn, deadlines_);
  bool on = resume.empty() ? c.SeekGe(prefix) : c.SeekGe(resume);
  if (on && !resume.empty() && c.key() == resume) on = c.Next();
  for (; on && HasPrefix(c.key(), prefix) && static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now &&
         out.size() < max;
       on = c.Next())
    out.push_back(Due{std::string(c.key()), GetU64BE(c.key(), 12)});
  return out;
}

void QueuesWithEntries(lmdb::Txn& txn, lmdb::Dbi dbi, int64_t due_by, std::set<uint32_t>& out) {
  lmdb::Cursor c(txn, dbi);
  for (bool on = c.First(); on && c.key().size() >= 12;) {
    uint32_t qid = GetU32BE(c.key(), 0);
    if (due_by < 0 || static_cast<int64_t>(GetU64BE(c.key(), 4)) <= due_by) out.insert(qid);
    if (qid == UINT32_MAX) break;
    on = c.SeekGe(QueueIdKey(qid + 1));
  }
}

void MessageTable::QueuesDue(lmdb::Txn& txn, int64_t now, std::set<uint32_t>& out) const {
  QueuesWithEntries(txn, delays_, now, out);
  QueuesWithEntries(txn, deadlines_, now, out);
}

std::optional<std::pair<uint32_t, uint64_t>> MessageTable::FindId(lmdb::Txn& txn,
                                                                  std::string_view id_key,
                                                                  bool prefix) const {
  auto where = [](std::string_view v) -> std::optional<std::pair<uint32_t, uint64_t>> {
    if (v.size() != 12) return std::nullopt;
    return std::pair<uint32_t, uint64_t>(GetU32BE(v, 0), GetU64BE(v, 4));
  };
  if (prefix) {
    // The message itself (its entry, or its native id), else its first journal copy.
    lmdb::Cursor c(txn, by_id_);
    bool on = c.SeekGe(id_key);
    if (on && c.key() == id_key) return where(c.value());
    if (auto n = NativeWhere(txn, id_key)) return n;
    if (on && HasPrefix(c.key(), id_key)) return where(c.value());
    return std::nullopt;
  }
  if (auto v = txn.Get(by_id_, id_key)) return where(*v);
  return NativeWhere(txn, id_key);
}

bool MessageTable::HasId(lmdb::Txn& txn, std::string_view id_key) const {
  return Has(txn, by_id_, id_key) || NativeWhere(txn, id_key).has_value();
}

std::optional<std::string> MessageTable::FirstPlainReady(lmdb::Txn& txn, uint32_t qid) const {
  // The plain head: the first `order` entry below the conversation bands.
  std::string prefix = QueueIdKey(qid);
  lmdb::Cursor c(txn, order_);
  if (c.SeekGe(prefix) && HasPrefix(c.key(), prefix) && c.key().size() == 13 &&
      static_cast<uint8_t>(c.key()[4]) < 8)
    return std::string(c.key());
  return std::nullopt;
}

Status MessageTable::ForEachArrival(
    lmdb::Txn& txn, const QueueInfo& q, uint64_t after,
    const std::function<Result<bool>(Message& m, bool ready, bool locked)>& fn) const {
  lmdb::Cursor c(txn, messages_);
  std::string prefix = QueueIdKey(q.id);
  for (bool on = c.SeekGe(MsgKey(q.id, after + 1)); on && HasPrefix(c.key(), prefix);
       on = c.Next()) {
    Message m;
    m.queue = q.name;
    MQ_RETURN_IF_ERROR(Decode(c.value(), q.id, GetU64BE(c.key(), 4), m));
    std::string okey = OrderKeyOf(q, m);
    bool ready = IsReady(txn, okey);
    bool locked = !ready && IsLocked(txn, okey);
    auto more = fn(m, ready, locked);
    if (!more.ok()) return more.status();
    if (!*more) return {};
  }
  return {};
}

// Collects up to `max_count` messages (and about `max_bytes`) chosen by `sel`, resuming
// after `resume` if it is not empty.
Status MessageTable::Collect(lmdb::Txn& txn, const QueueInfo& q, const Selection& sel,
                             const std::string& resume, size_t max_count,
                             std::vector<FoundMessage>& out) const {
  // The elements `out` holds from an earlier call are decoded into again, and only those
  // left over are destroyed on the way out: a drain's batches reuse a few thousand Messages
  // (some twenty strings each) instead of making and freeing them for every message.
  size_t used = 0;
  struct Trim {
    std::vector<FoundMessage>& v;
    const size_t& n;
    ~Trim() {
      if (v.size() > n) v.erase(v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
    }
  } trim{out, used};
  auto next = [&]() -> FoundMessage& {
    return used < out.size() ? out[used++] : (++used, out.emplace_back());
  };
  if (q.id == 0 || max_count == 0) return {};
  out.reserve(std::min<size_t>(max_count, kLockBatchCount));
  size_t bytes = 0;
  int64_t now = NowMs();
  auto full = [&] { return used >= max_count || bytes >= kBatchBytes; };

  if (sel.plain_only && sel.refuse_conversation && resume.empty()) {
    // A receive aimed at one message (--id, --lookup-id, --last): a conversation message is
    // received with its conversation, in order, never alone; say so rather than pass it by.
    Selection probe = sel;
    probe.plain_only = false;
    probe.refuse_conversation = false;
    std::vector<FoundMessage> one;
    MQ_RETURN_IF_ERROR(Collect(txn, q, probe, resume, 1, one));
    if (!one.empty() && IsConvMessageOf(q, one[0].msg) && one[0].msg.status != 0)
      return Status::ConversationMessage(
          fmt::format("message {} belongs to conversation {}: receive it with "
                      "--conversation {} (a conversation is received in order)",
                      one[0].msg.lookup_id, FormatGuid(one[0].msg.conversation_handle),
                      FormatGuid(one[0].msg.conversation_handle)),
          q.name);
  }

  if (sel.anchor == Anchor::kId) {
    if (!resume.empty()) return {};
    auto where = FindId(txn, IdKey(q, sel.id));
    if (!where || where->first != q.id) return {};
    FoundMessage f;
    f.walk_key = "id";
    MQ_RETURN_IF_ERROR(Load(txn, q, where->second, f));
    if (!Visible(txn, q, f.msg, sel.include_locked) || ExpiredAt(q, f.msg, now)) return {};
    if (sel.plain_only && IsConvMessageOf(q, f.msg)) return {};
    next() = std::move(f);
    return {};
  }

  if (sel.anchor == Anchor::kArrival) {
    std::string prefix = QueueIdKey(q.id);
    lmdb::Cursor c(txn, messages_);
    bool on = resume.empty() ? c.SeekGe(prefix) : c.SeekGe(resume);
    if (on && !resume.empty() && c.key() == resume) on = c.Next();
    for (; on && HasPrefix(c.key(), prefix) && !full(); on = c.Next()) {
      FoundMessage f;
      f.walk_key = std::string(c.key());
      f.msg.queue = q.name;
      f.size = c.value().size();
      MQ_RETURN_IF_ERROR(Decode(c.value(), q.id, GetU64BE(c.key(), 4), f.msg));
      bytes += f.size;
      next() = std::move(f);
    }
    return {};
  }

  if (sel.anchor == Anchor::kCorrelation) {
    std::string prefix = CorrPrefix(sel.correlation, q.id);
    lmdb::Cursor c(txn, by_corr_);
    bool on = resume.empty() ? c.SeekGe(prefix) : c.SeekGe(resume);
    if (on && !resume.empty() && c.key() == resume) on = c.Next();
    for (; on && HasPrefix(c.key(), prefix) && !full(); on = c.Next()) {
      if (c.key().size() != prefix.size() + 9)
        return Status::Corrupted("bad correlation index key", q.name);
      FoundMessage f;
      f.walk_key = std::string(c.key());
      MQ_RETURN_IF_ERROR(Load(txn, q, GetU64BE(c.key(), prefix.size() + 1), f));
      if (!Visible(txn, q, f.msg, sel.include_locked) || ExpiredAt(q, f.msg, now)) continue;
      if (sel.plain_only && IsConvMessageOf(q, f.msg)) continue;
      bytes += f.size;
      next() = std::move(f);
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
        FoundMessage anchor;
        if (!txn.Get(messages_, MsgKey(q.id, sel.lookup_id))) return {};
        MQ_RETURN_IF_ERROR(Load(txn, q, sel.lookup_id, anchor));
        from = From::kKey;
        start = OrderKeyOf(q, anchor.msg);
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
  add(order_, 0, 8);
  if (!sel.plain_only) {
    add(order_, 8, 16);
    add(order_, 16, 24);
    if (sel.include_locked) {
      add(locked_, 0, 8);
      add(locked_, 8, 16);
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
    if (c.key().size() != 13) return Status::Corrupted("bad order index key", q.name);
    // Decoded in its place in `out` (a Message is some twenty strings: moving one in costs
    // as much as a look-up), and dropped again if it expired.
    FoundMessage& f = next();
    f.walk_key.assign(c.key());
    MQ_RETURN_IF_ERROR(Load(txn, q, GetU64BE(c.key(), 5), f));
    if (ExpiredAt(q, f.msg, now))
      --used;
    else
      bytes += f.size;
    bool on = backward ? c.Prev() : c.Next();
    pick->on = on && in_stream(*pick);
  }
  return {};
}

void MessageTable::ForEachRecord(
    lmdb::Txn& txn, const std::function<void(uint32_t qid, const Message& m)>& fn) const {
  lmdb::Cursor c(txn, messages_);
  Message m;
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() != 12) continue;
    uint32_t qid = GetU32BE(c.key(), 0);
    if (Decode(c.value(), qid, GetU64BE(c.key(), 4), m).ok()) fn(qid, m);
  }
}

void MessageTable::ForEachLocked(
    lmdb::Txn& txn, const std::function<void(std::string_view okey, uint64_t lease)>& fn) const {
  lmdb::Cursor c(txn, locked_);
  for (bool on = c.First(); on; on = c.Next())
    fn(c.key(), c.value().size() == 8 ? GetU64BE(c.value(), 0) : 0);
}

void MessageTable::Check(lmdb::Txn& txn, const std::map<uint32_t, QueueInfo>& by_qid,
                         const std::map<std::string, const QueueInfo*>& id_sources,
                         const std::function<void(std::string)>& problem) const {
  struct Tally {
    uint64_t count = 0, bytes = 0, max_lookup = 0, delayed = 0, locked = 0;
  };
  std::map<uint32_t, Tally> tally;
  uint64_t messages = 0, with_corr = 0, with_deadline = 0, natives = 0;
  {
    lmdb::Cursor c(txn, messages_);
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
      Status s = Decode(c.value(), qid, lookup, m);
      if (!s.ok()) {
        problem(fmt::format("{}: {}", where, s.text()));
        continue;
      }
      Tally& ty = tally[qid];
      ty.count++;
      ty.bytes += c.value().size();
      ty.max_lookup = std::max(ty.max_lookup, lookup);
      if (m.priority > 7) problem(where + ": priority out of range");
      std::string okey = qit == by_qid.end() ? OrderKey(qid, m.priority, lookup)
                                             : OrderKeyOf(qit->second, m);
      bool in_order = txn.Get(order_, okey).has_value();
      bool delayed = m.visible_time && txn.Get(delays_, DelayKey(qid, m.visible_time, lookup));
      bool is_locked = txn.Get(locked_, okey).has_value();
      if (delayed) ty.delayed++;
      if (is_locked) ty.locked++;
      int states = in_order + delayed + is_locked;
      if (states == 0) problem(where + ": missing from the delivery order index");
      if (states > 1) problem(where + ": in more than one of order, delays and locked");
      QueueInfo owner;
      owner.name = qname;
      owner.id = qid;
      auto loc = txn.Get(by_id_, IdKey(owner, m.id));
      if (m.id.size() != kIdSize) {
        problem(where + ": bad message id");
      } else if (IsNative(qid, m.id, lookup)) {
        ++natives;
        if (loc) problem(where + ": its id says where it is, but the id index has an entry too");
      } else if (!loc || *loc != MsgKey(qid, lookup)) {
        problem(where + ": message id index does not point to it");
      }
      if (m.id.size() == kIdSize) {
        auto src = id_sources.find(m.id.substr(0, 16));
        if (src != id_sources.end() && GetU32BE(m.id, 16) > src->second->id_counter)
          problem(fmt::format("{}: message id {} is beyond queue {}'s id counter {}", where,
                              FormatMessageId(m.id), src->second->name,
                              src->second->id_counter));
      }
      if (int64_t at = ExpiryOf(m); at && IsLive(owner) && m.status != 0) {
        ++with_deadline;
        if (!txn.Get(deadlines_, DeadlineKey(qid, at, lookup)))
          problem(where + ": missing from the deadline index");
      }
      if (!m.correlation_id.empty()) {
        ++with_corr;
        if (!txn.Get(by_corr_, CorrKey(m.correlation_id, qid, m.priority, lookup)))
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
    lmdb::Cursor c(txn, order_);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.key().size() != 13) {
        problem("order: bad key size");
        continue;
      }
      uint32_t oqid = GetU32BE(c.key(), 0);
      auto rec = txn.Get(messages_, MsgKey(oqid, GetU64BE(c.key(), 5)));
      Message m;
      bool decoded = rec && Decode(*rec, oqid, GetU64BE(c.key(), 5), m).ok();
      m.lookup_id = GetU64BE(c.key(), 5);
      auto oq = by_qid.find(oqid);
      uint8_t band = !decoded || oq == by_qid.end()
                         ? static_cast<uint8_t>(7 - m.priority)
                         : static_cast<uint8_t>(OrderKeyOf(oq->second, m)[4]);
      if (!decoded || band != static_cast<uint8_t>(c.key()[4]))
        problem(fmt::format("order: entry for queue #{} lookup id {} has no matching message",
                            GetU32BE(c.key(), 0), GetU64BE(c.key(), 5)));
    }
    uint64_t delayed = txn.Count(delays_);
    uint64_t locked = txn.Count(locked_);
    if (n + delayed + locked != messages)
      problem(fmt::format("order has {}, delays {} and locked {} entries for {} messages", n,
                          delayed, locked, messages));
  }
  {
    lmdb::Cursor c(txn, by_id_);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.value().size() != 12 || !txn.Get(messages_, c.value()))
        problem(fmt::format("by_id: {} points to no message",
                            FormatMessageId(c.key().substr(0, kIdSize))));
    }
    if (n + natives != messages)
      problem(fmt::format("by_id has {} entries for {} messages ({} with native ids)", n, messages,
                          natives));
  }
  {
    lmdb::Cursor c(txn, by_corr_);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.key().size() != 33) {
        problem("by_corr: bad key size");
        continue;
      }
      auto rec = txn.Get(messages_, MsgKey(GetU32BE(c.key(), 20), GetU64BE(c.key(), 25)));
      Message m;
      if (!rec || !Decode(*rec, GetU32BE(c.key(), 20), GetU64BE(c.key(), 25), m).ok() ||
          m.correlation_id != c.key().substr(0, 20))
        problem(fmt::format("by_corr: entry for lookup id {} has no matching message",
                            GetU64BE(c.key(), 25)));
    }
    if (n != with_corr)
      problem(fmt::format("by_corr has {} entries for {} messages with a correlation id", n,
                          with_corr));
  }
  if (uint64_t n = txn.Count(deadlines_); n != with_deadline)
    problem(fmt::format("deadlines has {} entries for {} messages with a deadline", n,
                        with_deadline));
}

}  // namespace mq
