// message_table.cpp: the message table (message_table.hpp): a message's record and its
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

// Puts `c` on the first key after `last`: past a range of Locked records, forwards.
bool SkipPast(lmdb::Cursor& c, const std::string& last) {
  if (!c.SeekGe(last)) return false;
  return c.key() == last ? c.Next() : true;
}

}  // namespace

Status MessageTable::Open(lmdb::Txn& txn, bool create, uint32_t format) {
  order_ = 0;
  if (format < 4) {
    auto dbi = txn.OpenDb("order", create);
    if (!dbi.ok()) return dbi.status();
    order_ = *dbi;
  }
  for (auto [name, slot] : {std::pair<const char*, lmdb::Dbi*>{"messages", &messages_},
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
  if (order_) fn("order", order_);
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

std::optional<std::string> MessageTable::Locate(lmdb::Txn& txn, uint32_t qid,
                                                uint64_t lookup) const {
  // A seek in each band that holds messages of the queue, in band order: one that finds a
  // later band goes on there, so the empty bands cost nothing.
  lmdb::Cursor c(txn, messages_);
  std::string k = BandKey(qid, 0, lookup);
  for (unsigned band = 0; band <= kDelayedBand;) {
    k[4] = static_cast<char>(band);
    if (!c.SeekGe(k)) return std::nullopt;
    std::string_view at = c.key();
    if (at.size() != 13 || GetU32BE(at, 0) != qid) return std::nullopt;
    auto found = static_cast<uint8_t>(at[4]);
    if (found == band && GetU64BE(at, 5) == lookup) return std::string(at);
    band = found == band ? band + 1 : found;
  }
  return std::nullopt;
}

Status MessageTable::Load(lmdb::Txn& txn, const QueueInfo& q, uint64_t lookup,
                          FoundMessage& f) const {
  auto okey = Locate(txn, q.id, lookup);
  if (!okey)
    return Status::Corrupted(fmt::format("index names lookup id {} but the message is missing",
                                         lookup),
                             q.name);
  return LoadAt(txn, q, *okey, f);
}

Status MessageTable::LoadAt(lmdb::Txn& txn, const QueueInfo& q, std::string_view okey,
                            FoundMessage& f) const {
  auto rec = okey.size() == 13 ? txn.GetSeq(messages_, okey) : std::nullopt;
  if (!rec)
    return Status::Corrupted(fmt::format("index names lookup id {} but the message is missing",
                                         okey.size() == 13 ? OrderKeyLookup(okey) : 0),
                             q.name);
  f.msg.queue = q.name;
  f.size = rec->size();
  Status s = Decode(*rec, q.id, OrderKeyLookup(okey), f.msg);
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
  auto okey = Locate(txn, qid, lookup);
  if (!okey) return std::nullopt;
  auto rec = txn.Get(messages_, *okey);
  if (!rec) return std::nullopt;
  uint32_t implied = 0;
  std::string_view has = RecordId(*rec, &implied);
  // A lean record leaves out exactly this id: the native id of where it is.
  if (!(implied & kImpliedNativeId) && has != id) return std::nullopt;
  if ((implied & kImpliedNativeId) && !has.empty()) return std::nullopt;
  return std::pair<uint32_t, uint64_t>(qid, lookup);
}

bool MessageTable::Exists(lmdb::Txn& txn, uint32_t qid, uint64_t lookup) const {
  return Locate(txn, qid, lookup).has_value();
}

std::optional<uint64_t> MessageTable::RecordSize(lmdb::Txn& txn, uint32_t qid,
                                                 uint64_t lookup) const {
  auto okey = Locate(txn, qid, lookup);
  auto rec = okey ? txn.Get(messages_, *okey) : std::nullopt;
  if (!rec) return std::nullopt;
  return rec->size();
}

Status MessageTable::Arrivals(
    lmdb::Txn& txn, uint32_t qid, uint64_t from,
    const std::function<Result<bool>(std::string_view okey, std::string_view rec)>& fn) const {
  // One cursor on each band that holds messages of the queue (a queue has a few: its
  // priorities, conversations, retained, delayed), merged by lookup id.
  std::vector<std::unique_ptr<lmdb::Cursor>> bands;
  std::string k = BandKey(qid, 0, 0);
  for (unsigned band = 0; band <= 255;) {
    k[4] = static_cast<char>(band);
    StoreU64BE(k.data() + 5, 0);
    auto c = std::make_unique<lmdb::Cursor>(txn, messages_);
    if (!c->SeekGe(k) || c->key().size() != 13 || GetU32BE(c->key(), 0) != qid) break;
    band = static_cast<uint8_t>(c->key()[4]);
    k[4] = static_cast<char>(band);
    StoreU64BE(k.data() + 5, from);
    if (c->SeekGe(k) && HasPrefix(c->key(), std::string_view(k).substr(0, 5)))
      bands.push_back(std::move(c));
    ++band;
  }
  for (;;) {
    lmdb::Cursor* pick = nullptr;
    for (auto& c : bands)
      if (c && (!pick || GetU64BE(c->key(), 5) < GetU64BE(pick->key(), 5))) pick = c.get();
    if (!pick) return {};
    auto more = fn(pick->key(), pick->value());
    if (!more.ok()) return more.status();
    if (!*more) return {};
    std::string band(pick->key().substr(0, 5));
    if (!pick->Next() || !HasPrefix(pick->key(), band))
      for (auto& c : bands)
        if (c.get() == pick) c.reset();
  }
}

Status MessageTable::Batch(lmdb::Txn& txn, const QueueInfo& q, uint64_t from_lookup, size_t max,
                           std::vector<FoundMessage>& out) const {
  out.clear();
  if (max == 0) return {};
  return Arrivals(txn, q.id, from_lookup,
                  [&](std::string_view okey, std::string_view rec) -> Result<bool> {
                    FoundMessage& f = out.emplace_back();
                    f.msg.queue = q.name;
                    f.size = rec.size();
                    MQ_RETURN_IF_ERROR(Decode(rec, q.id, OrderKeyLookup(okey), f.msg));
                    return out.size() < max;
                  });
}

Result<std::optional<int64_t>> MessageTable::OldestArrival(lmdb::Txn& txn, uint32_t qid) const {
  // The oldest message has the smallest lookup id: the least of the bands' first.
  std::optional<int64_t> oldest;
  MQ_RETURN_IF_ERROR(
      Arrivals(txn, qid, 0, [&](std::string_view okey, std::string_view rec) -> Result<bool> {
        Message m;
        MQ_RETURN_IF_ERROR(Decode(rec, qid, OrderKeyLookup(okey), m));
        oldest = m.arrived_time;
        return false;
      }));
  return oldest;
}

Status MessageTable::Rewrite(lmdb::Txn& txn, QueueInfo& q, const Message& m, uint64_t old_size,
                             uint64_t* new_size) {
  auto okey = Locate(txn, q.id, m.lookup_id);
  if (!okey)
    return Status::Corrupted(fmt::format("message {} to rewrite is missing", m.lookup_id), q.name);
  std::string rec;
  Encode(q.id, m, rec);
  MQ_RETURN_IF_ERROR(txn.Put(messages_, *okey, rec));
  q.bytes = q.bytes - std::min(q.bytes, old_size) + rec.size();
  if (new_size) *new_size = rec.size();
  return {};
}

Status MessageTable::Rekey(lmdb::Txn& txn, QueueInfo& q, std::string_view old_okey,
                           const Message& m, uint64_t old_size, uint64_t* new_size) {
  auto r = txn.Del(messages_, old_okey);
  if (!r.ok()) return r.status();
  if (!*r)
    return Status::Corrupted(fmt::format("message {} to move is missing", m.lookup_id), q.name);
  std::string rec;
  Encode(q.id, m, rec);
  MQ_RETURN_IF_ERROR(txn.Put(messages_, OrderKeyOf(q, m), rec));
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
  if (delayed) {
    MQ_RETURN_IF_ERROR(txn.Put(messages_, BandKey(q.id, kDelayedBand, m.lookup_id), rec));
    MQ_RETURN_IF_ERROR(txn.Put(delays_, DelayKey(q.id, m.visible_time, m.lookup_id), {}));
    q.delayed++;
  } else {
    std::string okey = OrderKeyOf(q, m);
    // A lookup id used before (a move that keeps it) may fall between the records of a
    // Locked range: the range splits around it, as the new message is ready.
    if (m.lookup_id < q.next_lookup)
      if (auto r = Covering(txn, okey)) MQ_RETURN_IF_ERROR(Split(txn, *r, okey));
    MQ_RETURN_IF_ERROR(txn.PutSeq(messages_, okey, rec));
  }
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
  // DelSeq: a batch from the head removes its messages in increasing key order.
  std::string okey = OrderKeyOf(q, m);
  auto r = txn.DelSeq(messages_, okey);
  if (!r.ok()) return r.status();
  bool was_locked = false;
  if (!*r && held == Held::kAnywhere) {
    // Not at its order key: delayed.
    r = txn.Del(messages_, BandKey(q.id, kDelayedBand, m.lookup_id));
    if (!r.ok()) return r.status();
    if (*r) {
      r = Undelay(txn, q, m);
      if (!r.ok()) return r.status();
    }
  } else if (held == Held::kLockedCleared) {
    q.locked -= std::min<uint64_t>(q.locked, 1);
    was_locked = true;
  } else if (*r) {
    // Locked, perhaps: the lease that holds it skips it when it ends.
    auto u = Unlock(txn, q, okey);
    if (!u.ok()) return u.status();
    was_locked = *u;
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

std::optional<MessageTable::Range> MessageTable::Covering(lmdb::Txn& txn,
                                                          std::string_view okey) const {
  // The range that starts at `okey`, else the one before it if it reaches `okey`.
  auto range = [&](std::string_view v) -> std::optional<Range> {
    if (v.size() != 21) return std::nullopt;
    return Range{std::string(), std::string(v.substr(0, 13)), GetU64BE(v, 13)};
  };
  if (auto v = txn.GetSeq(locked_, okey)) {
    auto r = range(*v);
    if (r) r->first = okey;
    return r;
  }
  lmdb::Cursor c(txn, locked_);
  if (!c.SeekLt(okey) || c.key().size() != 13 || c.key().substr(0, 5) != okey.substr(0, 5))
    return std::nullopt;
  auto r = range(c.value());
  if (r) r->first = c.key();
  if (!r || r->last < okey) return std::nullopt;
  return r;
}

bool MessageTable::IsReady(lmdb::Txn& txn, std::string_view okey) const {
  return okey.size() == 13 && static_cast<uint8_t>(okey[4]) < kDelayedBand &&
         Has(txn, messages_, okey) && !Covering(txn, okey);
}

bool MessageTable::IsLocked(lmdb::Txn& txn, std::string_view okey) const {
  return okey.size() == 13 && Has(txn, messages_, okey) && Covering(txn, okey).has_value();
}

bool MessageTable::Visible(lmdb::Txn& txn, const QueueInfo& q, const Message& m,
                           bool include_locked) const {
  std::string key = OrderKeyOf(q, m);
  if (!Has(txn, messages_, key)) return false;
  return include_locked || !Covering(txn, key);
}

namespace {

// The value of a range of `locked`: its last key and its lease.
std::string RangeValue(std::string_view last, uint64_t lease_id) {
  std::string v(last);
  PutU64BE(v, lease_id);
  return v;
}

}  // namespace

Status MessageTable::LockRange(lmdb::Txn& txn, QueueInfo& q, std::string_view first,
                               std::string_view last, uint64_t n, uint64_t lease_id) {
  // The records stay where they are. A drain Locks ranges in increasing order, usually above
  // every one Locked before.
  MQ_RETURN_IF_ERROR(txn.PutAppend(locked_, first, RangeValue(last, lease_id)));
  q.locked += n;
  return {};
}

Status MessageTable::Split(lmdb::Txn& txn, const Range& r, std::string_view okey) {
  auto gone = txn.Del(locked_, r.first);
  if (!gone.ok()) return gone.status();
  lmdb::Cursor c(txn, messages_);
  if (okey > r.first) {
    if (!c.SeekLt(okey) || c.key() < r.first)
      return Status::Corrupted("a Locked range lost its first message");
    std::string prev(c.key());
    MQ_RETURN_IF_ERROR(txn.Put(locked_, r.first, RangeValue(prev, r.lease)));
  }
  if (okey < r.last) {
    bool on = c.SeekGe(okey);
    if (on && c.key() == okey) on = c.Next();
    if (!on || c.key() > r.last) return Status::Corrupted("a Locked range lost its last message");
    std::string next(c.key());
    MQ_RETURN_IF_ERROR(txn.Put(locked_, next, RangeValue(r.last, r.lease)));
  }
  return {};
}

Result<std::vector<char>> MessageTable::Release(lmdb::Txn& txn, QueueInfo& q, uint64_t lease_id,
                                                const std::vector<std::string>& keys, bool count) {
  std::vector<char> held(keys.size(), 0);
  // The lease's ranges deleted so far, by first key: a drain's batch is one.
  std::map<std::string, std::string, std::less<>> gone;
  uint64_t n = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    auto it = gone.upper_bound(key);
    bool in = it != gone.begin() && key <= std::prev(it)->second;
    if (!in) {
      auto r = Covering(txn, key);
      if (r && r->lease == lease_id) {
        auto d = txn.DelSeq(locked_, r->first);
        if (!d.ok()) return d.status();
        gone.emplace(r->first, r->last);
        in = true;
      }
    }
    if (in) {
      held[i] = 1;
      ++n;
    }
  }
  if (count) q.locked -= std::min(q.locked, n);
  return held;
}

std::optional<uint64_t> MessageTable::Holder(lmdb::Txn& txn, std::string_view okey) const {
  auto r = Covering(txn, okey);
  if (!r) return std::nullopt;
  return r->lease;
}

Result<bool> MessageTable::Unlock(lmdb::Txn& txn, QueueInfo& q, std::string_view okey) {
  auto r = Covering(txn, okey);
  if (!r) return false;
  MQ_RETURN_IF_ERROR(Split(txn, *r, okey));
  q.locked -= std::min<uint64_t>(q.locked, 1);
  return true;
}

Status MessageTable::Delay(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
  std::string okey = OrderKeyOf(q, m);
  auto rec = txn.Get(messages_, okey);
  if (!rec)
    return Status::Corrupted(fmt::format("message {} to delay is missing", m.lookup_id), q.name);
  std::string copy(*rec);
  auto r = txn.Del(messages_, okey);
  if (!r.ok()) return r.status();
  MQ_RETURN_IF_ERROR(txn.Put(messages_, BandKey(q.id, kDelayedBand, m.lookup_id), copy));
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
  // The plain head: the first record below the conversation bands under no range.
  std::string prefix = QueueIdKey(qid);
  lmdb::Cursor c(txn, messages_);
  for (bool on = c.SeekGe(prefix); on && HasPrefix(c.key(), prefix) && c.key().size() == 13 &&
                                   static_cast<uint8_t>(c.key()[4]) < 8;) {
    auto r = Covering(txn, c.key());
    if (!r) return std::string(c.key());
    on = SkipPast(c, r->last);
  }
  return std::nullopt;
}

Status MessageTable::ForEachArrival(
    lmdb::Txn& txn, const QueueInfo& q, uint64_t after,
    const std::function<Result<bool>(Message& m, bool ready, bool locked)>& fn) const {
  return Arrivals(txn, q.id, after + 1,
                  [&](std::string_view okey, std::string_view rec) -> Result<bool> {
                    Message m;
                    m.queue = q.name;
                    MQ_RETURN_IF_ERROR(Decode(rec, q.id, OrderKeyLookup(okey), m));
                    bool delayed = static_cast<uint8_t>(okey[4]) == kDelayedBand;
                    bool locked = !delayed && Covering(txn, okey).has_value();
                    return fn(m, !delayed && !locked, locked);
                  });
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
    // Resumed after the lookup id in `resume` (a MsgKey: the walk is by lookup id).
    uint64_t from = resume.size() == 12 ? GetU64BE(resume, 4) + 1 : 0;
    if (full()) return {};
    return Arrivals(txn, q.id, from,
                    [&](std::string_view okey, std::string_view rec) -> Result<bool> {
                      FoundMessage f;
                      f.walk_key = MsgKey(q.id, OrderKeyLookup(okey));
                      f.msg.queue = q.name;
                      f.size = rec.size();
                      MQ_RETURN_IF_ERROR(Decode(rec, q.id, OrderKeyLookup(okey), f.msg));
                      bytes += f.size;
                      next() = std::move(f);
                      return !full();
                    });
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

  // The head order (CLI.md: priority, then arrival) over the bands of `messages` (schema.hpp):
  // plain messages (bands 0-7) and ready conversation messages (8-15) as one, by priority
  // and then lookup id; retained messages (16-23) after them all. Each stream below is one
  // band range, already in that order; the walk merges them, taking the least head (going
  // backwards, the greatest), and passes each range of Locked records with one seek (unless
  // `include_locked`). A plain receive walks the plain bands alone.
  std::string prefix = QueueIdKey(q.id);
  bool backward = sel.anchor == Anchor::kLast || sel.anchor == Anchor::kBefore;
  enum class From { kBegin, kEnd, kKey };
  From from = From::kBegin;
  std::string start;  // kKey: an order key, whether or not a record is there now
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
        auto at = Locate(txn, q.id, sel.lookup_id);
        if (!at) return {};
        MQ_RETURN_IF_ERROR(LoadAt(txn, q, *at, anchor));
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
    bool stepped = false;  // on the record after the one taken last, nothing passed between
  };
  std::array<Stream, 3> streams;
  size_t n_streams = 0;
  auto add = [&](lmdb::Dbi dbi, uint8_t lo, uint8_t hi) {
    Stream& s = streams[n_streams++];
    s.c.emplace(txn, dbi);
    s.lo = lo;
    s.hi = hi;
  };
  add(messages_, 0, 8);
  if (!sel.plain_only) {
    add(messages_, 8, 16);
    add(messages_, 16, 24);
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
  // Ranges to pass (none for most walks: then no look for one at each record).
  bool ranges = !sel.include_locked && txn.Count(locked_) > 0;
  const Stream* took = nullptr;  // the stream of the message taken last
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
    if (c.key().size() != 13) return Status::Corrupted("bad message key", q.name);
    if (ranges) {
      if (auto r = Covering(txn, c.key())) {
        bool on = backward ? c.SeekLt(r->first) : SkipPast(c, r->last);
        pick->on = on && in_stream(*pick);
        pick->stepped = false;
        continue;
      }
    }
    // Decoded in its place in `out` (a Message is some twenty strings: moving one in costs
    // as much as a look-up), and dropped again if it expired.
    FoundMessage& f = next();
    f.follows = !backward && pick == took && pick->stepped && used > 1 &&
                HasPrefix(c.key(), std::string_view(out[used - 2].walk_key).substr(0, 5));
    f.walk_key.assign(c.key());
    f.msg.queue = q.name;
    f.size = c.value().size();
    if (Status s = Decode(c.value(), q.id, GetU64BE(c.key(), 5), f.msg); !s.ok())
      return s.WithSubject(q.name);
    bool expired = ExpiredAt(q, f.msg, now);
    if (expired)
      --used;
    else
      bytes += f.size;
    bool on = backward ? c.Prev() : c.Next();
    pick->on = on && in_stream(*pick);
    // An expired record stays where it is: the next one does not follow the last taken.
    pick->stepped = !expired;
    if (!expired) took = pick;
  }
  return {};
}

void MessageTable::ForEachRecord(
    lmdb::Txn& txn, const std::function<void(uint32_t qid, const Message& m)>& fn) const {
  lmdb::Cursor c(txn, messages_);
  Message m;
  for (bool on = c.First(); on; on = c.Next()) {
    if (c.key().size() != 13) continue;
    uint32_t qid = GetU32BE(c.key(), 0);
    if (Decode(c.value(), qid, GetU64BE(c.key(), 5), m).ok()) fn(qid, m);
  }
}

void MessageTable::ForEachLocked(
    lmdb::Txn& txn, const std::function<void(std::string_view okey, uint64_t lease)>& fn) const {
  lmdb::Cursor c(txn, locked_);
  for (bool on = c.First(); on; on = c.Next())
    fn(c.key(), c.value().size() == 21 ? GetU64BE(c.value(), 13) : 0);
}

}  // namespace mq
