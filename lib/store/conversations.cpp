// conversations.cpp: Service Broker conversations, conversation groups and
// message types (conversation.hpp has the records and keys): the indexes kept with each
// conversation message, group selection and locking, RECEIVE by group, END CONVERSATION.
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

// ---- Conversations (conversation.hpp): records, indexes and group selection. ----

Result<std::optional<ConvRecord>> Store::Impl::LoadConv(lmdb::Txn& txn, const Guid& handle) {
  auto v = txn.Get(convs, GuidBytes(handle));
  if (!v) return std::optional<ConvRecord>();
  ConvRecord r;
  if (!DecodeConv(*v, r))
    return Status::Corrupted("malformed conversation record", FormatGuid(handle));
  return std::optional<ConvRecord>(std::move(r));
}

Result<ConvRecord> Store::Impl::ConvOf(lmdb::Txn& txn, const QueueInfo& q, const Message& m) {
  auto c = LoadConv(txn, m.conversation_handle);
  if (!c.ok()) return c.status();
  if (!*c || (*c)->qid != q.id)
    return Status::Corrupted(
        fmt::format("message {} names conversation {}, which is not in the queue", m.lookup_id,
                    FormatGuid(m.conversation_handle)),
        q.name);
  return std::move(**c);
}

Result<GroupRecord> Store::Impl::LoadGroup(lmdb::Txn& txn, uint32_t qid, const Guid& group) {
  GroupRecord g;
  auto v = txn.Get(groups, GroupKey(qid, group));
  if (v && !DecodeGroup(*v, g))
    return Status::Corrupted("malformed group record", FormatGuid(group));
  return g;
}

std::string Store::Impl::ConvMsgKeyOf(const QueueInfo& q, const ConvRecord& c, const Message& m) {
  return ConvMsgKey(q.id, c.group, c.priority, c.rank, m.conversation_handle,
                    m.message_type_name == kErrorType, m.message_sequence_number);
}

// Changes a group's record with `fn`, then puts its group_sel entry right: the head of its
// available messages, or none while it is locked or has nothing available. A group with
// no conversations and no messages is forgotten.
Status Store::Impl::TouchGroup(lmdb::Txn& txn, const QueueInfo& q, const Guid& group,
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

// A conversation message enters queue `q` (a send, an import, a requeue; its record is in
// the conversation band already): its group index entry, or its retained entry.
Status Store::Impl::ConvOnAdd(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
  auto c = ConvOf(txn, q, m);
  if (!c.ok()) return c.status();
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
Status Store::Impl::ConvOnRemove(lmdb::Txn& txn, QueueInfo& q, const Message& m, bool was_locked) {
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
Status Store::Impl::ConvOnRestore(lmdb::Txn& txn, QueueInfo& q, const Message& m) {
  auto c = ConvOf(txn, q, m);
  if (!c.ok()) return c.status();
  std::string loc;
  PutU64BE(loc, m.lookup_id);
  MQ_RETURN_IF_ERROR(txn.Put(conv_msgs, ConvMsgKeyOf(q, *c, m), loc));
  return TouchGroup(txn, q, c->group,
                    [](GroupRecord& g) { g.locked -= std::min<uint64_t>(g.locked, 1); });
}

// RETENTION ON: a received message stays, status 0, in the retained band, never to be
// received again (CLI.md): a conversation's until the conversation ends, a plain one
// until a purge or the queue's deletion.
Status Store::Impl::Retain(lmdb::Txn& txn, QueueInfo& q, Found& f, bool from_locked) {
  Message& m = f.msg;
  bool conv = IsConvMessage(q, m);
  std::optional<ConvRecord> c;
  if (conv) {
    auto cr = ConvOf(txn, q, m);
    if (!cr.ok()) return cr.status();
    c = std::move(*cr);
  }
  std::string old_key = OrderKeyFor(q, m);
  Result<bool> r = false;
  if (from_locked) {
    r = msgs.Unlock(txn, q, old_key);
    if (!r.ok()) return r.status();
    // Counted out of Locked even if its mark had gone already (Unlock counts what it removes).
    if (!*r) q.locked -= std::min<uint64_t>(q.locked, 1);
  }
  if (conv) {
    r = txn.Del(conv_msgs, ConvMsgKeyOf(q, *c, m));
    if (!r.ok()) return r.status();
  }
  m.status = 0;
  // Received: a retained row no longer expires.
  MQ_RETURN_IF_ERROR(msgs.DropDeadline(txn, q, m));
  // Into the retained band.
  MQ_RETURN_IF_ERROR(msgs.Rekey(txn, q, old_key, m, f.size, &f.size));
  q.retained++;
  if (!conv) return {};
  std::string loc;
  PutU64BE(loc, m.lookup_id);
  MQ_RETURN_IF_ERROR(
      txn.Put(conv_kept, KeptKey(m.conversation_handle, m.message_sequence_number), loc));
  return TouchGroup(txn, q, c->group, [&](GroupRecord& g) {
    if (from_locked) g.locked -= std::min<uint64_t>(g.locked, 1);
  });
}

// A received (not Locked) conversation message: removed, or retained.
Status Store::Impl::ConsumeAvailable(lmdb::Txn& txn, QueueInfo& q, Found& f) {
  MQ_RETURN_IF_ERROR(Received(txn, q, f.msg, NowMs()));
  if (q.retention) return Retain(txn, q, f, false);
  return RemoveMessage(txn, q, f.msg, f.size);
}

// Prepares a message with a conversation handle for Append to queue `q`: checks or makes
// the conversation (moving it to another group if the message names one), assigns its
// sequence number and takes the conversation's group, priority, service and contract.
Status Store::Impl::ConvPrepare(lmdb::Txn& txn, QueueInfo& q, Message& m, bool may_create,
                                bool keep_identity, std::set<Guid>& created, int64_t now) {
  if (!IsConvQueue(q))
    return Status::UnsupportedFormatnameOperation(
        "conversation messages go to a queue, not a subqueue", q.name);
  if (m.visible_time)
    return Status::InvalidArg(
        "a conversation message cannot be delayed (its sequence is its order)", q.name);
  auto cr = LoadConv(txn, m.conversation_handle);
  if (!cr.ok()) return cr.status();
  std::string handle_text = FormatGuid(m.conversation_handle);
  bool made_here = created.count(m.conversation_handle) > 0;
  if (*cr && may_create && !made_here && !keep_identity)
    return Status::ConversationClosed(fmt::format("conversation {} already exists", handle_text),
                                      q.name);
  if (!*cr) {
    if (!may_create && !keep_identity)
      return Status::ConversationNotFound(
          fmt::format("no conversation {} (mq-send --conversation new begins one)", handle_text),
          q.name);
    ConvRecord c;
    c.qid = q.id;
    c.group = IsNil(m.conversation_group_id) ? m.conversation_handle : m.conversation_group_id;
    c.priority = m.priority;
    c.service = m.service_name;
    c.contract = m.service_contract_name;
    c.created = now;
    c.next_seq = keep_identity ? m.message_sequence_number : 0;
    auto rank = GetMeta(txn, "conv_rank");
    c.rank = rank && rank->size() == 8 ? GetU64BE(*rank, 0) : 0;
    std::string next;
    PutU64BE(next, c.rank + 1);
    MQ_RETURN_IF_ERROR(PutMeta(txn, "conv_rank", next));
    MQ_RETURN_IF_ERROR(txn.Put(convs, GuidBytes(m.conversation_handle), EncodeConv(c)));
    MQ_RETURN_IF_ERROR(txn.Put(conv_q, ConvQKey(q.id, m.conversation_handle), {}));
    MQ_RETURN_IF_ERROR(TouchGroup(txn, q, c.group, [](GroupRecord& g) { g.convs++; }));
    created.insert(m.conversation_handle);
    cr = std::optional<ConvRecord>(std::move(c));
  }
  ConvRecord& c = **cr;
  if (c.qid != q.id)
    return Status::ConversationNotFound(fmt::format("conversation {} belongs to another queue",
                                                    handle_text),
                                        q.name);
  if (c.state != ConvState::kOpen && !keep_identity)
    return Status::ConversationClosed(fmt::format("conversation {} has ended ({}): no more sends",
                                                  handle_text, ConvStateName(c.state)),
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
Status Store::Impl::MoveConversation(lmdb::Txn& txn, QueueInfo& q, const Guid& handle,
                                     ConvRecord& c, const Guid& to) {
  auto from_g = LoadGroup(txn, q.id, c.group);
  if (!from_g.ok()) return from_g.status();
  auto to_g = LoadGroup(txn, q.id, to);
  if (!to_g.ok()) return to_g.status();
  if (from_g->locked || to_g->locked)
    return Status::SharingViolation(
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

Result<Store::Impl::GroupPick> Store::Impl::PickGroup(lmdb::Txn& txn, const QueueInfo& q,
                                                      const Selection& sel) {
  GroupPick p;
  if (!IsNil(sel.conversation)) {
    auto cr = LoadConv(txn, sel.conversation);
    if (!cr.ok()) return cr.status();
    if (!*cr || (*cr)->qid != q.id)
      return Status::ConversationNotFound(fmt::format("no conversation {} in this queue",
                                                      FormatGuid(sel.conversation)),
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
      return Status::ConversationNotFound(fmt::format("no conversation group {} in this queue",
                                                      FormatGuid(sel.group)),
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
  if (auto plain = msgs.FirstPlainReady(txn, q.id)) {
    // Whichever comes first in delivery order: priority, then arrival.
    if (!best || std::string_view(*plain).substr(4, 9) < std::string_view(*best).substr(4, 9)) {
      p.kind = GroupPick::kPlain;
      return p;
    }
  }
  if (!best) return p;
  if (best->size() != kGroupSelKeySize) return Status::Corrupted("bad group_sel key", q.name);
  p.kind = GroupPick::kGroup;
  p.group = GuidFromBytes(std::string_view(*best).substr(13, 16));
  p.prefix = ConvMsgGroupPrefix(q.id, p.group);
  return p;
}

// The available messages under a conv_msgs prefix, in RECEIVE order; `limit` 0: all.
Status Store::Impl::CollectGroup(lmdb::Txn& txn, const QueueInfo& q, const std::string& prefix,
                                 uint64_t limit, std::vector<Found>& out) {
  out.clear();
  std::vector<uint64_t> lookups;
  {
    lmdb::Cursor c(txn, conv_msgs);
    for (bool on = c.SeekGe(prefix);
         on && HasPrefix(c.key(), prefix) && (limit == 0 || lookups.size() < limit);
         on = c.Next()) {
      if (c.value().size() != 8) return Status::Corrupted("bad conv_msgs entry", q.name);
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
bool Store::Impl::MayHaveGroups(const QueueRef& ref, const Selection& sel) {
  if (!IsNil(sel.conversation) || !IsNil(sel.group)) return true;
  auto txn = lmdb::Txn::Begin(env, false);
  if (!txn.ok()) return true;
  auto q = LoadQueue(*txn, ref.Full());
  if (!q.ok() || !*q) return true;
  std::string prefix = QueueIdKey((*q)->id);
  lmdb::Cursor c(*txn, group_sel);
  return c.SeekGe(prefix) && HasPrefix(c.key(), prefix);
}

char Store::Impl::PrecheckValidation(std::map<std::string, char>& seen,
                                     const std::string& name) {
  auto known = seen.find(name);
  if (known != seen.end()) return known->second;
  char v = 0;
  auto txn = lmdb::Txn::Begin(env, false);
  if (txn.ok()) {
    auto r = TypeValidation(*txn, name);
    if (r.ok()) v = *r;
  }
  seen.emplace(name, v);
  return v;
}

// The validation of message type `name`: built in, or made by mq-admin message-type.
Result<char> Store::Impl::TypeValidation(lmdb::Txn& txn, const std::string& name) {
  if (char v = BuiltinValidation(name)) return v;
  auto rec = txn.Get(msg_types, name);
  if (!rec || rec->empty())
    return Status::MessageTypeNotFound(
        fmt::format("no message type '{}' (mq-admin message-type create makes it)", name));
  return (*rec)[0];
}

// Removes what a deleted queue leaves of its conversations and groups.
Status Store::Impl::DropConversations(lmdb::Txn& txn, uint32_t qid) {
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

// One look at the conversation groups (LockAny decides when): Locks the messages of the best
// free group (or of the group or conversation `sel` names) under a new lease, which is also
// the group's lock. Null when there is none; `*try_plain` when plain messages come first in
// delivery order.
Result<std::unique_ptr<Lease>> Store::Impl::LockGroupOnce(const QueueRef& ref,
                                                          const Selection& sel,
                                                          const LockOptions& lo,
                                                          bool count_delivery,
                                                          int64_t& deadline, bool* try_plain) {
  std::unique_ptr<Lease> lease(new Lease());
  bool found = false, paused = false;
  std::optional<Status> limited;
  Status w = WriteLight(
      [&](lmdb::Txn& txn) -> Status {
        *try_plain = false;
        found = false;
        limited.reset();
        int64_t now_ns = NowNs(), now = now_ns / 1'000'000;
        uint64_t n = 0;
        auto q = ReceivableQueue(txn, ref, now, &n);
        if (!q.ok()) return q.status();
        paused = q->receive_paused;
        if (paused) return {};  // commits what Maintain did
        auto pick = PickGroup(txn, *q, sel);
        if (!pick.ok()) return pick.status();
        *try_plain = pick->kind == GroupPick::kPlain;
        // No more of the group than the rate limit's tokens (0 limit: the whole group).
        uint64_t tokens = RateTokens(*q, now_ns);
        uint64_t limit = sel.group_limit;
        if (tokens != UINT64_MAX)
          limit = std::max<uint64_t>(1, limit ? std::min(limit, tokens) : tokens);
        std::vector<Found> batch;
        if (pick->kind == GroupPick::kGroup)
          MQ_RETURN_IF_ERROR(CollectGroup(txn, *q, pick->prefix, limit, batch));
        if (!batch.empty() && tokens == 0) {
          *try_plain = false;
          limited = RateLimited(*q, now_ns);
          deadline = RateNextMs(*q, now_ns);
          return {};  // commits what Maintain did
        }
        if (batch.empty()) {
          deadline = NextDeadline(txn, q->id);
          return {};  // commits what Maintain did
        }
        RateTake(*q, now_ns, batch.size());
        LeaseRecord rec;
        auto lease_id = BeginLease(*q, lo, now, *lease, rec);
        if (!lease_id.ok()) return lease_id.status();
        for (auto& f : batch) {
          auto conv = ConvOf(txn, *q, f.msg);
          if (!conv.ok()) return conv.status();
          auto r = txn.Del(conv_msgs, ConvMsgKeyOf(*q, *conv, f.msg));
          if (!r.ok()) return r.status();
          MQ_RETURN_IF_ERROR(MarkLocked(txn, *q, f, *lease_id, count_delivery, rec));
          lease->held_.push_back(std::move(f));
        }
        uint64_t n_locked = batch.size();
        MQ_RETURN_IF_ERROR(TouchGroup(txn, *q, pick->group, [&](GroupRecord& g) {
          g.locked += n_locked;
          g.holder = *lease_id;
        }));
        MQ_RETURN_IF_ERROR(PutLease(txn, q->id, *lease_id, rec));
        MQ_RETURN_IF_ERROR(PutQueue(txn, *q));
        found = true;
        return {};
      },
      true);
  if (!w.ok()) return w;
  if (paused) return ReceivePaused(ref.Full());
  if (limited) return *limited;
  if (!found) return std::unique_ptr<Lease>();
  return lease;
}

Status Store::CreateMessageType(const std::string& name, char validation) {
  if (name.empty() || !IsValidUtf8(name) || Utf8Length(name) > kMaxMessageTypeName)
    return Status::InvalidArg(fmt::format("a message type name is 1 to {} characters of UTF-8",
                                          kMaxMessageTypeName),
                              name);
  if (BuiltinValidation(name)) return Status::MessageTypeExists("a built-in message type", name);
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    if (txn.Get(impl_->msg_types, name))
      return Status::MessageTypeExists("message type already exists", name);
    std::string rec(1, validation);
    PutU64BE(rec, static_cast<uint64_t>(NowMs()));
    return txn.Put(impl_->msg_types, name, rec);
  });
}

Status Store::DeleteMessageType(const std::string& name) {
  if (BuiltinValidation(name))
    return Status::InvalidArg("built-in message types cannot be deleted", name);
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto r = txn.Del(impl_->msg_types, name);
    if (!r.ok()) return r.status();
    if (!*r) return Status::MessageTypeNotFound("no such message type", name);
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
  // A conversation begun here through a link lives at the far store: its EndDialog (or
  // Error) message goes there through out;LINK, after the conversation's other messages,
  // and ends it there on arrival; here no more sends may follow it (RemoteConvPrepare).
  std::optional<std::pair<std::string, std::string>> remote;
  {
    auto txn = lmdb::Txn::Begin(impl_->env, false);
    if (!txn.ok()) return txn.status();
    if (!txn->Get(impl_->convs, GuidBytes(handle))) {
      auto r = impl_->FindRemoteConv(*txn, handle);
      if (!r.ok()) return r.status();
      remote = std::move(*r);
    }
  }
  if (remote) {
    Message m;
    m.conversation_handle = handle;
    m.message_type_name = std::string(o.error ? kErrorType : kEndDialogType);
    m.validation = o.error ? 'X' : 'E';
    if (o.error) {
      m.body = ErrorBody(o.code, o.description);
      m.body_type = kBodyXml;
    }
    AppendOptions ao;
    ao.remote_queue = remote->second;
    std::vector<Message> one{std::move(m)};
    VectorSource src(one);
    auto ref = ParseQueueRef(std::string(kOutgoingBase) + ";" + remote->first);
    if (!ref.ok()) return ref.status();
    Status sent = Append(*ref, ao, src, nullptr, nullptr);
    // Ended before: as for a local conversation, only an --error is refused then.
    if (sent.code() == Code::kConversationClosed && !o.error) return uint64_t{0};
    if (!sent.ok()) return sent;
    return uint64_t{0};
  }
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    removed = 0;
    auto cr = impl_->LoadConv(txn, handle);
    if (!cr.ok()) return cr.status();
    if (!*cr) return Status::ConversationNotFound("no such conversation", text);
    auto name = impl_->QueueNameOf(txn, (*cr)->qid);
    if (!name) return Status::ConversationNotFound("the conversation's queue is gone", text);
    auto lq = impl_->LoadQueue(txn, std::string(*name));
    if (!lq.ok()) return lq.status();
    if (!*lq) return Status::ConversationNotFound("the conversation's queue is gone", text);
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
      m.id = impl_->NewMessageId(q);
      MQ_RETURN_IF_ERROR(impl_->InsertMessage(txn, q, m, 0));
    } else if (o.error) {
      return Status::ConversationClosed(
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
    auto name = impl_->QueueNameOf(*txn, r.qid);
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
      LeaseRecord lr;
      if (impl_->LoadLease(*txn, r.qid, g->holder, &lr) && lr.process) ci.holder_pid = lr.pid;
    }
    out.push_back(std::move(ci));
  }
  return out;
}


Status Store::Impl::SaveConv(lmdb::Txn& txn, const Guid& handle, const ConvRecord& c) {
  return txn.Put(convs, GuidBytes(handle), EncodeConv(c));
}


// Store::Check for the conversation indexes: every conversation message of a queue is in
// conv_msgs (ready), conv_kept (retained) or locked; counts of conversations, groups and
// queues agree; each free group with ready messages has the group_sel entry of its head.
void Store::Impl::CheckConversations(lmdb::Txn& t, const std::map<uint32_t, QueueInfo>& by_qid,
                                     const std::function<void(std::string)>& problem) {
  std::map<Guid, uint64_t> conv_count;
  std::map<std::pair<uint32_t, Guid>, uint64_t> group_count, group_locked, group_convs;
  std::map<uint32_t, uint64_t> retained;
  uint64_t ready = 0, kept = 0;
  msgs.ForEachRecord(t, [&](uint32_t qid, const Message& m) {
    auto qit = by_qid.find(qid);
    if (qit == by_qid.end()) return;
    const QueueInfo& q = qit->second;
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
    if (m.priority != cv.priority) problem(where + ": priority differs from its conversation's");
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

}  // namespace mq
