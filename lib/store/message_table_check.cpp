// message_table_check.cpp: the message table's (message_table.hpp) verification for
// mq-admin check, and the move of an older store to format 4's layout for mq-admin upgrade:
// the two walks over every record and index of the table.
#include "store/message_table.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/codec.hpp"

namespace mq {

void MessageTable::Check(lmdb::Txn& txn, const std::map<uint32_t, QueueInfo>& by_qid,
                         const std::map<std::string, const QueueInfo*>& id_sources,
                         const std::function<void(std::string)>& problem) const {
  struct Tally {
    uint64_t count = 0, bytes = 0, max_lookup = 0, delayed = 0, locked = 0;
  };
  std::map<uint32_t, Tally> tally;
  uint64_t messages = 0, delayed_records = 0, with_corr = 0, with_deadline = 0, natives = 0;
  {
    lmdb::Cursor c(txn, messages_);
    for (bool on = c.First(); on; on = c.Next()) {
      ++messages;
      if (c.key().size() != 13) {
        problem("messages: bad key size");
        continue;
      }
      std::string okey(c.key());
      uint32_t qid = GetU32BE(okey, 0);
      auto band = static_cast<uint8_t>(okey[4]);
      uint64_t lookup = GetU64BE(okey, 5);
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
      if (band == kDelayedBand) {
        ++delayed_records;
        ty.delayed++;
        if (!m.visible_time || !txn.Get(delays_, DelayKey(qid, m.visible_time, lookup)))
          problem(where + ": delayed, but missing from the delay index");
      } else {
        std::string want =
            qit == by_qid.end() ? OrderKey(qid, m.priority, lookup) : OrderKeyOf(qit->second, m);
        if (want != okey)
          problem(fmt::format("{}: in band {}, but its properties place it in band {}", where, band,
                              static_cast<uint8_t>(want[4])));
        if (Covering(txn, okey)) ty.locked++;
      }
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
                              FormatMessageId(m.id), src->second->name, src->second->id_counter));
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
      problem(
          fmt::format("queue {}: counter says {} messages, found {}", q.name, q.count, ty.count));
    if (ty.bytes != q.bytes)
      problem(fmt::format("queue {}: counter says {} bytes, found {}", q.name, q.bytes, ty.bytes));
    if (ty.locked != q.locked)
      problem(
          fmt::format("queue {}: counter says {} locked, found {}", q.name, q.locked, ty.locked));
    if (ty.delayed != q.delayed)
      problem(fmt::format("queue {}: counter says {} delayed, found {}", q.name, q.delayed,
                          ty.delayed));
    if (ty.max_lookup >= q.next_lookup)
      problem(fmt::format("queue {}: next lookup id {} is not above {}", q.name, q.next_lookup,
                          ty.max_lookup));
  }
  // Every range of `locked` lies within one queue's band, after the one before it, and
  // starts and ends at a record.
  {
    lmdb::Cursor c(txn, locked_);
    std::string prev_last;
    for (bool on = c.First(); on; on = c.Next()) {
      std::string_view first = c.key(), v = c.value();
      if (first.size() != 13 || v.size() != 21) {
        problem("locked: bad range size");
        continue;
      }
      std::string_view last = v.substr(0, 13);
      std::string what =
          fmt::format("locked: range of queue #{} lookup ids {} to {}", GetU32BE(first, 0),
                      OrderKeyLookup(first), OrderKeyLookup(last));
      if (last < first || last.substr(0, 5) != first.substr(0, 5) ||
          static_cast<uint8_t>(first[4]) >= kDelayedBand)
        problem(what + ": not within one band of one queue");
      if (!prev_last.empty() && first <= prev_last)
        problem(what + ": overlaps the range before it");
      if (!txn.Get(messages_, first) || !txn.Get(messages_, last))
        problem(what + ": does not start and end at a message");
      prev_last.assign(last);
    }
  }
  // Every delay entry has its record in the delayed band.
  {
    lmdb::Cursor c(txn, delays_);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.key().size() != 20) {
        problem("delays: bad key size");
        continue;
      }
      if (!txn.Get(messages_, BandKey(GetU32BE(c.key(), 0), kDelayedBand, GetU64BE(c.key(), 12))))
        problem(fmt::format("delays: entry for queue #{} lookup id {} has no delayed message",
                            GetU32BE(c.key(), 0), GetU64BE(c.key(), 12)));
    }
    if (n != delayed_records)
      problem(fmt::format("delays has {} entries for {} delayed messages", n, delayed_records));
  }
  {
    lmdb::Cursor c(txn, by_id_);
    uint64_t n = 0;
    for (bool on = c.First(); on; on = c.Next()) {
      ++n;
      if (c.value().size() != 12 || !Locate(txn, GetU32BE(c.value(), 0), GetU64BE(c.value(), 4)))
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
      uint32_t qid = GetU32BE(c.key(), 20);
      uint64_t lookup = GetU64BE(c.key(), 25);
      auto okey = Locate(txn, qid, lookup);
      auto rec = okey ? txn.Get(messages_, *okey) : std::nullopt;
      Message m;
      if (!rec || !Decode(*rec, qid, lookup, m).ok() || m.correlation_id != c.key().substr(0, 20))
        problem(fmt::format("by_corr: entry for lookup id {} has no matching message", lookup));
    }
    if (n != with_corr)
      problem(fmt::format("by_corr has {} entries for {} messages with a correlation id", n,
                          with_corr));
  }
  if (uint64_t n = txn.Count(deadlines_); n != with_deadline)
    problem(
        fmt::format("deadlines has {} entries for {} messages with a deadline", n, with_deadline));
}

Result<uint64_t> MessageTable::Upgrade4(lmdb::Txn& txn) {
  // Opened here, not from order_: a transaction the store runs again (after growing the map)
  // finds the database as it was before the first run.
  auto order = txn.OpenDb("order", false);
  if (!order.ok()) return uint64_t{0};  // format 4 already
  auto tmp = txn.OpenDb("upgrade4", true);
  if (!tmp.ok()) return tmp.status();
  MQ_RETURN_IF_ERROR(txn.Clear(*tmp));
  uint64_t moved = 0;
  // Each record to its new key, found from where formats 1-3 placed it.
  auto move = [&](uint32_t qid, uint64_t lookup, std::string_view to) -> Status {
    auto rec = txn.Get(messages_, MsgKey(qid, lookup));
    if (!rec)
      return Status::Corrupted(fmt::format("queue #{} lookup id {} is indexed but missing (run "
                                           "mq-admin check with the mq that made the store)",
                                           qid, lookup));
    std::string copy(*rec);
    auto fresh = txn.PutNew(*tmp, to, copy);
    if (!fresh.ok()) return fresh.status();
    if (!*fresh)
      return Status::Corrupted(fmt::format("queue #{} lookup id {} is in more than one of "
                                           "order, locked and delays",
                                           qid, lookup));
    ++moved;
    return {};
  };
  std::vector<std::pair<std::string, uint64_t>> locked;
  {
    lmdb::Cursor c(txn, *order);
    for (bool on = c.First(); on; on = c.Next())
      if (c.key().size() == 13)
        MQ_RETURN_IF_ERROR(move(GetU32BE(c.key(), 0), OrderKeyLookup(c.key()), c.key()));
  }
  {
    lmdb::Cursor c(txn, locked_);
    for (bool on = c.First(); on; on = c.Next()) {
      if (c.key().size() != 13 || c.value().size() != 8) continue;
      MQ_RETURN_IF_ERROR(move(GetU32BE(c.key(), 0), OrderKeyLookup(c.key()), c.key()));
      locked.emplace_back(std::string(c.key()), GetU64BE(c.value(), 0));
    }
  }
  {
    lmdb::Cursor c(txn, delays_);
    for (bool on = c.First(); on; on = c.Next()) {
      if (c.key().size() != 20) continue;
      uint32_t qid = GetU32BE(c.key(), 0);
      uint64_t lookup = GetU64BE(c.key(), 12);
      MQ_RETURN_IF_ERROR(move(qid, lookup, BandKey(qid, kDelayedBand, lookup)));
    }
  }
  if (uint64_t all = txn.Count(messages_); all != moved)
    return Status::Corrupted(fmt::format("{} messages, but order, locked and delays place {} "
                                         "(run mq-admin check with the mq that made the store)",
                                         all, moved));
  MQ_RETURN_IF_ERROR(txn.Clear(messages_));
  {
    lmdb::Cursor c(txn, *tmp);
    std::string k, v;
    for (bool on = c.First(); on; on = c.Next()) {
      // Copied: a value LMDB returned is valid only until the next write.
      k.assign(c.key());
      v.assign(c.value());
      MQ_RETURN_IF_ERROR(txn.PutAppend(messages_, k, v));
    }
  }
  MQ_RETURN_IF_ERROR(txn.Drop(*tmp));
  MQ_RETURN_IF_ERROR(txn.Clear(locked_));
  for (auto& [okey, lease] : locked) {
    char range[21];
    std::memcpy(range, okey.data(), 13);
    StoreU64BE(range + 13, lease);
    MQ_RETURN_IF_ERROR(txn.PutAppend(locked_, okey, std::string_view(range, sizeof range)));
  }
  MQ_RETURN_IF_ERROR(txn.Drop(*order));
  order_ = 0;
  return moved;
}

}  // namespace mq
