// send.cpp: Append (mq-send, import): validation, ids, times, transactions (Eod,
// sequence numbers), dedup keys and conversations, all or nothing in one write transaction.
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
#include <span>
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

Status Store::Append(const QueueRef& ref, const AppendOptions& options, MessageSource& source,
                     std::vector<std::string>* ids, AppendReport* report) {
  Destination d{ref, options.remote_queue};
  return Append(std::span<const Destination>(&d, 1), options, source, ids, report);
}

Status Store::Append(std::span<const Destination> dests, const AppendOptions& options,
                     MessageSource& source, std::vector<std::string>* ids, AppendReport* report) {
  if (dests.empty()) return Status::InvalidArg("no queue to send to");
  bool any_local = false;
  for (const Destination& d : dests) {
    bool remote = !d.remote_queue.empty();
    if (remote && !IsOutgoingName(d.ref.Full()))
      return Status::InvalidArg("a remote queue is sent through an outgoing queue out;LINK",
                                d.ref.Full());
    if (!remote && (d.ref.IsSub() || d.ref.IsSystem()))
      return Status::UnsupportedFormatnameOperation(
          "cannot send to a journal, subqueue or system queue", d.ref.Full());
    any_local = any_local || !remote;
  }
  const bool several = dests.size() > 1;
  if (several && (!options.dedup_key.empty() || !options.dedup_keys.empty()))
    return Status::InvalidArg("a dedup key belongs to one queue: send to one queue with it");
  if (several && (options.keep_identity || options.new_conversation))
    return Status::InvalidArg(options.keep_identity
                                  ? "an import keeps each message's id: one queue at a time"
                                  : "a conversation belongs to one queue: send to one queue");
  const std::string first = dests.front().ref.Full();
  // Bodies are checked against their message types before the write transaction begins, so
  // that no XML check (libxml2's time, or a static tool's helper, xml_check.hpp) is ever made
  // holding the store's write lock; inside, a body whose type still has the validation it
  // passed is not checked again. A type it cannot find here, the transaction reports. A type
  // whose validation turned into well-formed XML meanwhile makes the send begin again.
  std::map<std::string, char> prechecked;  // type name -> the validation its bodies passed
  size_t ids_before = ids ? ids->size() : 0;
  // With several destinations, each one's ids apart, then interleaved; with one, straight
  // into `ids`.
  std::vector<std::vector<std::string>> each(several ? dests.size() : 0);
  for (int attempt = 0;; ++attempt) {
    prechecked.clear();
    if (!options.keep_identity && any_local && source.MayHaveTypes()) {
      if (attempt) MQ_RETURN_IF_ERROR(source.Rewind());
      std::vector<BodyCheck> batch;
      size_t batch_bytes = 0;
      auto check = [&]() -> Status {
        Status valid = ValidateBodies(batch);
        batch.clear();
        batch_bytes = 0;
        return valid.ok() ? valid : valid.WithSubject(first);
      };
      Message m;
      for (;;) {
        auto more = source.Next(m);
        if (!more.ok()) return more.status();
        if (!*more) break;
        if (m.message_type_name.empty()) continue;
        char v = impl_->PrecheckValidation(prechecked, m.message_type_name);
        if (!v || v == 'N') continue;
        batch_bytes += m.body.size();
        batch.push_back({v, std::move(m.body), m.message_type_name});
        if (batch.size() >= 1000 || batch_bytes >= (4u << 20)) MQ_RETURN_IF_ERROR(check());
      }
      MQ_RETURN_IF_ERROR(check());
    }
    bool recheck = false;
    Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
      if (report) *report = AppendReport();
      if (ids) ids->resize(ids_before);
      for (size_t i = 0; i < dests.size(); ++i) {
        std::vector<std::string>* out = ids;
        if (several && ids) {
          each[i].clear();
          out = &each[i];
        }
        MQ_RETURN_IF_ERROR(source.Rewind());
        MQ_RETURN_IF_ERROR(impl_->AppendTo(txn, dests[i], options, source, out, report, prechecked,
                                           several, &recheck));
      }
      if (several && ids) {
        // The copies of each message together, in the order of the destinations.
        for (size_t k = 0; k < each.front().size(); ++k)
          for (const auto& d : each)
            if (k < d.size()) ids->push_back(d[k]);
      }
      return {};
    });
    if (!recheck || attempt == 2) return s;
  }
}

// One destination of an append, in its write transaction (Append above).
Status Store::Impl::AppendTo(lmdb::Txn& txn, const Destination& dest, const AppendOptions& options,
                             MessageSource& source, std::vector<std::string>* ids,
                             AppendReport* report, const std::map<std::string, char>& prechecked,
                             bool several, bool* recheck) {
  const QueueRef& ref = dest.ref;
  bool remote = !dest.remote_queue.empty();
  uint64_t appended = 0;
  // A note for the sender, once per append however many messages it concerns.
  auto note = [&](std::string text) {
    if (report && std::find(report->notes.begin(), report->notes.end(), text) ==
                      report->notes.end())
      report->notes.push_back(std::move(text));
  };
  auto loaded = LoadQueue(txn, ref.Full());
  if (!loaded.ok()) return loaded.status();
  QueueInfo q;
  if (*loaded) {
    q = std::move(**loaded);
  } else if (remote) {
    auto made = LoadOutgoing(txn, ref.sub);
    if (!made.ok()) return made.status();
    if (!*made) return Status::QueueNotFound("no such link (mq-admin link add makes it)", ref.sub);
    q = std::move(**made);
  } else if (options.create_queue) {
    auto made = NewQueue(txn, ref.Full());
    if (!made.ok()) return made.status();
    q = std::move(*made);
  } else {
    return Status::QueueNotFound("no such queue (mq-admin create makes it, or pass --create)",
                                 ref.Full());
  }
  if (!q.enabled) return Status::QueueNotActive("queue is disabled (status OFF)", q.name);
  if (q.transactional && !options.transactional)
    return Status::TransactionUsage("the queue is transactional: send with --tx", q.name);
  int64_t now = NowMs();
  // The message a live dedup key belongs to, if it is live.
  auto live = [&](const std::string& key) -> std::optional<std::string> {
    auto v = txn.Get(dedup, DedupKey(q.id, key));
    if (v && v->size() >= 8 && static_cast<int64_t>(GetU64BE(*v, 0)) > now)
      return std::string(v->substr(8));
    return std::nullopt;
  };
  // Records `key` for message `id` until the window ends, replacing an expired entry.
  auto remember = [&](const std::string& key, const std::string& id) -> Status {
    int64_t window = options.dedup_window.value_or(q.dedup_window);
    int64_t expiry = now + std::max<int64_t>(window, 1);
    auto old = txn.Get(dedup, DedupKey(q.id, key));
    if (old && old->size() >= 8) {
      auto r = txn.Del(dedup_exp, DedupExpKey(q.id, static_cast<int64_t>(GetU64BE(*old, 0)), key));
      if (!r.ok()) return r.status();
    }
    std::string v;
    PutU64BE(v, static_cast<uint64_t>(expiry));
    v += id;
    MQ_RETURN_IF_ERROR(txn.Put(dedup, DedupKey(q.id, key), v));
    return txn.Put(dedup_exp, DedupExpKey(q.id, expiry, key), {});
  };
  if (!options.dedup_key.empty() || !options.dedup_keys.empty()) {
    if (!options.dedup_key.empty()) {
      if (auto original = live(options.dedup_key)) {
        if (report) {
          report->duplicate = true;
          report->original_id = std::move(*original);
        }
        return {};  // accepted and dropped: nothing changes
      }
    }
    // Forget a few expired keys of this queue on the way, twice as many as this append
    // records: the index stays as small as its window keeps it, without a sweep.
    std::vector<std::string> expired;
    const size_t forget = std::max<size_t>(16, 2 * options.dedup_keys.size());
    {
      lmdb::Cursor c(txn, dedup_exp);
      std::string prefix = QueueIdKey(q.id);
      for (bool on = c.SeekGe(prefix);
           on && HasPrefix(c.key(), prefix) && static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now &&
           expired.size() < forget;
           on = c.Next())
        expired.emplace_back(c.key());
    }
    for (const std::string& k : expired) MQ_RETURN_IF_ERROR(DropDedup(txn, q.id, k));
  }
  // A --tx batch into a plain local queue is atomic, and no more (AppendOptions).
  const bool tx = options.transactional && (q.transactional || remote);
  std::string xact_id;
  if (tx) {
    xact_id = MakeMessageId(NewGuid(), 0);
    if (q.tx_sequence_id == 0) {
      Guid g = NewGuid();
      q.tx_sequence_id = GetU64BE(GuidBytes(g), 0) | 1;
    }
  }
  std::string first_id;
  uint64_t tx_bytes = 0;  // bodies of a transaction sent over a link
  Message last;
  std::set<Guid> conversations_made;

  // One Message for the whole batch: each Next overwrites all of it, so its strings keep
  // their buffers from one message to the next.
  Message m;
  for (size_t index = 0;; ++index) {
    auto more = source.Next(m);
    if (!more.ok()) return more.status();
    if (!*more) break;
    const std::string* key = nullptr;
    if (index < options.dedup_keys.size() && !options.dedup_keys[index].empty()) {
      key = &options.dedup_keys[index];
      if (live(*key)) {
        if (report) report->dropped++;
        continue;
      }
    }
    if (m.priority > 7)
      return Status::IllegalPropertyValue(fmt::format("priority {} is out of range 0..7",
                                                      m.priority),
                                          q.name);
    if (!IsValidUtf8(m.label))
      return Status::IllegalPropertyValue("label is not valid UTF-8", q.name);
    if (Utf8Length(m.label) > kMaxLabel)
      return Status::LabelTooLong(fmt::format("label longer than {} characters", kMaxLabel),
                                  q.name);
    if (m.body.size() > q.max_message_size)
      return Status::InsufficientResources(
          fmt::format("body of {} bytes exceeds the queue's maximum message size "
                      "of {} bytes",
                      m.body.size(), q.max_message_size),
          q.name);
    if (!m.correlation_id.empty() && m.correlation_id.size() != kIdSize)
      return Status::IllegalPropertyValue("correlation id must be 20 bytes", q.name);
    if (!options.keep_identity || m.id.size() != kIdSize) {
      NewMessageIdInto(q, m.id);
    }
    if (!options.keep_identity) {
      m.sent_time = m.sent_time ? m.sent_time : now;
      m.source_qm_guid = guid;
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
    if (remote) {
      m.destination_queue = dest.remote_queue;
      m.awaiting_arrival = true;  // it reaches its queue at the far side
    }
    // A message type of another store is that store's to check (mq-admin accept).
    if (!m.message_type_name.empty() && !options.keep_identity && !remote) {
      auto validation = TypeValidation(txn, m.message_type_name);
      if (!validation.ok()) {
        Status st = validation.status();
        return st.WithSubject(q.name);
      }
      auto passed = prechecked.find(m.message_type_name);
      if (passed == prechecked.end() || passed->second != *validation) {
        // Made or changed since the bodies were checked (mq-admin message-type): no XML
        // check in a write transaction; the send begins again (Append).
        if (*validation == 'X') {
          *recheck = true;
          return Status::Error(fmt::format("message type '{}' changed while the bodies were "
                                           "checked; nothing was sent",
                                           m.message_type_name),
                               q.name);
        }
        Status valid = ValidateBody(*validation, m.body, m.message_type_name);
        if (!valid.ok()) return valid.WithSubject(q.name);
      }
      m.validation = *validation;
    }
    if (several && !IsNil(m.conversation_handle))
      return Status::InvalidArg("a conversation belongs to one queue: send to one queue", q.name);
    if (remote && !IsNil(m.conversation_handle))
      MQ_RETURN_IF_ERROR(RemoteConvPrepare(txn, ref.sub, dest.remote_queue, m,
                                           options.new_conversation, conversations_made));
    else if (!IsNil(m.conversation_handle))
      MQ_RETURN_IF_ERROR(ConvPrepare(txn, q, m, options.new_conversation, options.keep_identity,
                                     conversations_made, now));
    if (tx && remote) {
      static_assert(kMaxLinkTransactionBytes == 256ull << 20, "the text below says 256 MiB");
      tx_bytes += m.body.size();
      if (appended + 1 > kMaxLinkTransactionMessages || tx_bytes > kMaxLinkTransactionBytes)
        return Status::InsufficientResources(
            fmt::format("a transaction sent over a link holds at most {} messages and {} of "
                        "bodies (the far side holds it whole until it ends; mq(7) Quotas and "
                        "limits): send this one as several",
                        kMaxLinkTransactionMessages, "256 MiB"),
            q.name);
    }
    if (tx) {
      if (m.priority != 0 && options.priority_given)
        note("transactional messages have priority 0 here (MSMQ delivers transactions in "
             "the order they commit): -p is ignored");
      m.priority = 0;
      m.xact_id = xact_id;
      m.eod_first = appended == 0;
      m.eod_last = false;  // set on the last one below
      m.tx_sequence_id = q.tx_sequence_id;
      m.tx_sequence_number = q.tx_next_seq++;
      m.tx_previous_sequence_number = m.tx_sequence_number - 1;
    }
    if (report && !m.admin_queue.empty() && m.ack && m.admin_queue != q.name &&
        !QueueExists(txn, m.admin_queue)) {
      note(fmt::format("admin queue {} does not exist: its acknowledgements will not be sent",
                       m.admin_queue));
    }
    // The same for a local response queue (a far one, LINK:QUEUE, is not ours to know).
    if (report && !m.response_queue.empty() && m.response_queue != q.name &&
        m.response_queue.find(':') == std::string::npos && !QueueExists(txn, m.response_queue)) {
      note(fmt::format(
          "response queue {} does not exist: a reply sent there will fail until it is made",
          m.response_queue));
    }
    MQ_RETURN_IF_ERROR(InsertMessage(txn, q, m, q.quota));
    // An import restores messages that arrived once already: no acks, no journal copies.
    if (!m.awaiting_arrival && !options.keep_identity) MQ_RETURN_IF_ERROR(Arrived(txn, q, m, now));
    if (key) MQ_RETURN_IF_ERROR(remember(*key, m.id));
    ++appended;
    if (first_id.empty()) first_id = m.id;
    if (ids) ids->push_back(m.id);
    if (tx) last = std::move(m);
  }
  if (appended == 0) return {};
  if (tx) {
    // Eod Last on the last message of the transaction.
    last.eod_last = true;
    auto size = msgs.RecordSize(txn, q.id, last.lookup_id);
    if (!size) return Status::Corrupted("the last message of the transaction is gone", q.name);
    MQ_RETURN_IF_ERROR(Rewrite(txn, q, last, *size));
  }
  if (!options.dedup_key.empty()) MQ_RETURN_IF_ERROR(remember(options.dedup_key, first_id));
  // Ring after the commit even for delayed messages only (a waiter re-arms its timer for
  // them); one ring per commit, as Write rings each queue once.
  to_notify.insert(q.id);
  return PutQueue(txn, q);
}

// Forgets a dedup key, given its dedup_exp key.
Status Store::Impl::DropDedup(lmdb::Txn& txn, uint32_t qid, const std::string& exp_key) {
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

Result<uint64_t> Store::Impl::ForgetExpiredDedup(lmdb::Txn& txn, uint32_t qid, int64_t now) {
  std::string prefix = QueueIdKey(qid);
  std::vector<std::string> expired;
  {
    lmdb::Cursor c(txn, dedup_exp);
    for (bool on = c.SeekGe(prefix);
         on && HasPrefix(c.key(), prefix) && static_cast<int64_t>(GetU64BE(c.key(), 4)) <= now;
         on = c.Next())
      expired.emplace_back(c.key());
  }
  for (const std::string& k : expired) MQ_RETURN_IF_ERROR(DropDedup(txn, qid, k));
  return static_cast<uint64_t>(expired.size());
}

void Store::Impl::QueuesWithDueDedup(lmdb::Txn& txn, int64_t now, std::set<uint32_t>& out) {
  QueuesWithEntries(txn, dedup_exp, now, out);
}

}  // namespace mq
