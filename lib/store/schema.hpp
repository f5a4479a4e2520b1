// schema.hpp: every named database of a store, every meta key, and the encoding of every key
// and of the lease record, in one place: a reader who changes a key changes it here (the
// conversation keys are encoded in conversation.hpp, records in message.hpp, queue.hpp and
// conversation.hpp). Internal to libmq (lib/store/).
//
// Owner, in brackets: the message table's seven databases are private to MessageTable
// (message_table.hpp): no other code can reach them. The others are still Store::Impl
// members (store_impl.hpp): the file named defines their operations, but other store files
// still read or write some of them directly (meta, queue_ids, leases, cursors).
//
// Named databases (keys big-endian, so byte order is numeric order):
//   meta       store-wide records, by key (the meta keys below)           [open.cpp and others]
//   queues     name -> queue record (queue.hpp)                                   [queues.cpp]
//   queue_ids  queue id (u32) -> name                                             [queues.cpp]
//   messages   (format 4) the record (message.hpp; lean: message_table.hpp) by its order key:
//              queue id (u32), band (u8), lookup id (u64). The bands: 7 - priority for plain
//              messages (0-7), the conversation bands (8-15) and retained ones (16-23)
//              (conversation.hpp OrderBand), and kDelayedBand for messages not yet visible.
//              Key order is delivery order: the head of a queue is one seek, and a drain
//              deletes one entry a message. (Formats 1-3 kept the record under queue id,
//              lookup id, and the delivery order in a database `order` of its own; mq-admin
//              upgrade moves them.)                                            [message table]
//   by_id      message id (20) [+ journal queue id] -> queue id, lookup id (12 bytes); a
//              native id (message_table.hpp) has no entry                    [message table]
//   by_corr    correlation id (20), queue id, 7 - priority, lookup id -> ""      [message table]
//   delays     queue id, visible time (u64 ms), lookup id -> "": messages sent with --delay or
//              --at, whose records are in kDelayedBand until a reader (or sweep) finds them
//              due and promotes them: a new lookup id (the arrival in the queue proper) in
//              their ready band, in one write transaction.                     [message table]
//   deadlines  queue id, expiry (u64 ms), lookup id -> "": when each message of a live queue
//              expires (message.hpp ExpiryOf: ttrq until it reaches the queue, then ttbr).
//              Readers and sweep walk it from its start, so finding what expired is a seek.
//                                                                              [message table]
//   locked     first order key -> last order key (13), lease id (u64): the Locked messages,
//              a range of records of one queue and band that a transactional receive holds
//              (a range of one for a single message). Readers seek past a range; the records
//              stay where they are, so a rollback leaves them in the same place.
//                                                                              [message table]
//   cursors    queue id, cursor name -> state byte (0 never moved, 1 positioned), order key
//                                                                                [cursors.cpp]
//   leases     queue id, lease id -> lease record (LeaseRecord below): kind (a process holding
//              the lease's lock file, or an expiring --lease token), pid, times, secret, the
//              order keys held                                                  [leases.cpp]
//   dedup      queue id, key -> expiry (u64 ms), message id: mq-send --dedup  [send.cpp,
//   dedup_exp  queue id, expiry, key -> "": expired dedup keys in order     lifecycle.cpp]
//   convs      handle (16) -> conversation record (ConvRecord)          [conversations.cpp]
//   conv_q     queue id, handle -> "": the conversations of a queue     [conversations.cpp]
//   groups     queue id, group id (16) -> group record (GroupRecord)    [conversations.cpp]
//   conv_msgs  queue id, group (16), 7 - priority, conversation rank (u64), handle (16),
//              class (0 Error, 1 other), sequence number (u64) -> lookup id (u64): the ready
//              messages of each group in RECEIVE order (conversation.hpp) [conversations.cpp]
//   group_sel  queue id, 7 - priority, head lookup id (u64), group (16) -> "": the free groups
//              with ready messages, best first                           [conversations.cpp]
//   conv_kept  handle (16), sequence number (u64) -> lookup id (u64): the retained (received,
//              status 0) messages of each conversation                  [conversations.cpp]
//   msg_types  name -> message type record (validation)                 [conversations.cpp]
//
// Meta keys (in `meta`):
//   "format"          u32: the store's format version (checked at open)
//   "guid"            16 bytes: the store's GUID
//   "id_guid", "id_counter"  where message ids came from before each queue had its own
//                     source (QueueInfo::id_guid); still written at init, for older mq
//   "next_queue_id"   u32
//   "max_size"        u64: the store's size limit (mq-admin set --max-size; 0: none)
//   "conv_rank"       u64: the next conversation's creation rank (ties between priorities)
//   links and transfer streams (mq-admin link, forward, accept; mq(7) "Transfer between
//   machines"), in meta so that stores made before them open unchanged:
//   "link:" NAME      -> link record (LinkRecord below)
//   "stream:" STREAM-ID  -> u64 last accepted TxSequenceNumber of that incoming stream, then
//                     u64 ms of the last accept on it (stores made before: no time), then
//                     for an SRMP stream (mq-admin serve) the URL its receipts go to
//                     (written in the transaction that stores the message)
//   "snack:" STREAM-ID "\0" u64 seq  -> u16 class: a message of the stream refused here (its
//                     NACK is answered again when the message is replayed), forgotten once the
//                     sender's stream has moved past it, or by sweep once the sender has been
//                     silent for kForgetStreamRefusalsMs
//   "rconv:" LINK "\0" HANDLE (16)  -> u64 next message sequence number (the high bit set
//                     once its EndDialog or Error was sent), far queue name: a conversation
//                     begun here through a link (mq-send LINK:QUEUE --conversation new), whose
//                     record lives at the far store; dropped with the link
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/codec.hpp"
#include "base/names.hpp"
#include "store/queue.hpp"

namespace mq {

inline constexpr uint64_t kInitialMapSize = 256ULL << 20;
inline constexpr uint64_t kMaxMapSize = 1ULL << 40;
inline constexpr size_t kBatchCount = 1000;
// A receive's batch (Locked, written, then removed: two commits a batch): larger, as it
// costs a second commit; kBatchBytes still bounds it.
inline constexpr size_t kLockBatchCount = 4000;
inline constexpr size_t kBatchBytes = 4 << 20;

inline std::string QueueIdKey(uint32_t qid) {
  std::string k;
  PutU32BE(k, qid);
  return k;
}

inline std::string MsgKey(uint32_t qid, uint64_t lookup) {
  std::string k(12, '\0');
  StoreU32BE(k.data(), qid);
  StoreU64BE(k.data() + 4, lookup);
  return k;
}

// The band of the messages not yet visible (--delay, --at, a rollback's retry delay), above
// every band of the delivery order.
inline constexpr uint8_t kDelayedBand = 32;

// An order key: queue id, band, lookup id.
inline std::string BandKey(uint32_t qid, uint8_t band, uint64_t lookup) {
  std::string k(13, '\0');
  StoreU32BE(k.data(), qid);
  k[4] = static_cast<char>(band);
  StoreU64BE(k.data() + 5, lookup);
  return k;
}

inline std::string OrderKey(uint32_t qid, uint8_t priority, uint64_t lookup) {
  return BandKey(qid, static_cast<uint8_t>(7 - priority), lookup);
}

inline std::string CorrPrefix(std::string_view corr, uint32_t qid) {
  std::string k(corr);
  PutU32BE(k, qid);
  return k;
}

inline std::string CorrKey(std::string_view corr, uint32_t qid, uint8_t priority, uint64_t lookup) {
  std::string k = CorrPrefix(corr, qid);
  k.push_back(static_cast<char>(7 - priority));
  PutU64BE(k, lookup);
  return k;
}

inline bool HasPrefix(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

inline size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}


inline std::string LeaseKey(uint32_t qid, uint64_t lease_id) {
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
  int64_t length = 0;  // an expiring lease's length as asked (touch extends by it); 0: older
                       // records, whose length is expires - since
};

inline std::string EncodeLease(const LeaseRecord& r) {
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
  w.UintIfNot(7, static_cast<uint64_t>(r.length), 0);
  return out;
}

// Without `keys`, the order keys are skipped (r.keys stays empty): what a look at a lease's
// holder and expiry needs, at no cost per message it holds.
inline bool DecodeLease(std::string_view v, LeaseRecord& r, bool keys = true) {
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
        if (!keys) break;
        for (size_t i = 0; i + 13 <= rd.bytes().size(); i += 13)
          r.keys.emplace_back(rd.bytes().substr(i, 13));
        break;
      case 7: r.length = static_cast<int64_t>(rd.uint()); break;
      default: break;
    }
  }
  return !rd.error();
}

inline std::string DedupKey(uint32_t qid, std::string_view key) {
  std::string k = QueueIdKey(qid);
  k += key;
  return k;
}

inline std::string DedupExpKey(uint32_t qid, int64_t expiry, std::string_view key) {
  std::string k = QueueIdKey(qid);
  PutU64BE(k, static_cast<uint64_t>(expiry));
  k += key;
  return k;
}

inline std::string DelayKey(uint32_t qid, int64_t visible, uint64_t lookup) {
  std::string k;
  k.reserve(20);
  PutU32BE(k, qid);
  PutU64BE(k, static_cast<uint64_t>(visible));
  PutU64BE(k, lookup);
  return k;
}

// deadlines: queue id, expiry (u64 ms), lookup id.
inline std::string DeadlineKey(uint32_t qid, int64_t at, uint64_t lookup) {
  return DelayKey(qid, at, lookup);
}

// Journals (QUEUE;journal, system;journal) hold copies; dead-letter queues hold messages that
// already failed. Neither expires, acknowledges or dead-letters again: only messages in
// other queues are "live".
inline bool IsJournalName(std::string_view name) {
  constexpr std::string_view kSuffix = ";journal";
  return name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix;
}

inline bool IsDeadLetterName(std::string_view name) {
  return name == "system;deadletter" || name == "system;deadxact";
}

inline bool IsLive(const QueueInfo& q) {
  return !IsJournalName(q.name) && !IsDeadLetterName(q.name);
}

// The by_id key of a message of `q`: its id, or for a journal copy (which shares the id of
// the message it copies) the id and the journal's queue id.
inline std::string IdKey(const QueueInfo& q, std::string_view id) {
  std::string k(id);
  if (IsJournalName(q.name)) PutU32BE(k, q.id);
  return k;
}

// The outgoing queue of a link: "out;LINK" (kOutgoingBase, names.hpp). Its delivery order is
// arrival order (FIFO, whatever the priority): its lookup ids are the link stream's
// TxSequenceNumbers.
inline bool IsOutgoingName(std::string_view name) {
  return name.size() > 4 && name.substr(0, 4) == "out;" &&
         name.find(';', 4) == std::string_view::npos;
}

inline std::string LinkKey(std::string_view name) { return "link:" + std::string(name); }
inline std::string StreamKey(std::string_view stream) { return "stream:" + std::string(stream); }
// The high bit of a remote conversation's next sequence number: its EndDialog (or Error)
// message has been sent, so no message may follow.
constexpr uint64_t kRemoteConvEnded = uint64_t{1} << 63;
inline std::string RemoteConvPrefix(std::string_view link) {
  std::string k = "rconv:" + std::string(link);
  k.push_back('\0');
  return k;
}
inline std::string StreamNackPrefix(std::string_view stream) {
  std::string k = "snack:" + std::string(stream);
  k.push_back('\0');
  return k;
}
inline std::string StreamNackKey(std::string_view stream, uint64_t seq) {
  std::string k = StreamNackPrefix(stream);
  PutU64BE(k, seq);
  return k;
}

// A link record (the value of "link:NAME" in meta): TLV, tags never reused.
struct LinkRecord {
  std::string via;            // the command, run with /bin/sh -c
  std::string return_link;    // the far side's link back here: qualifies reply queues
  int64_t created = 0;
  // Kept by mq-admin forward:
  int64_t connected_since = 0;  // 0: not connected
  int64_t last_ack = 0;         // when the far side last acknowledged messages
  uint64_t acked = 0;           // messages acknowledged in all (delivered or refused there)
  uint64_t refused = 0;         // of `acked`: refused there (NACKed, dead-lettered here)
  std::string last_error;
  int64_t last_error_time = 0;
  std::string peer;             // the far store's GUID, as last seen
  int64_t forward_pid = 0;      // the forward connected now (with connected_since)
  int64_t via_uid = -1;         // who last set `via` (-1: set before mq recorded it)
  // An HTTP link (MSMQ's HTTP transport) has a url instead of a command:
  std::string url;           // http[s]://HOST[:PORT]/msmq (MsmqBaseUrl's form)
  std::string receipts_url;  // where the far side posts stream receipts (this store's serve)
  // The last ordinal of the link's stream that a stream receipt covers (mq-admin serve
  // records it; forward ends the messages it covers), and the stream it is of.
  uint64_t receipted = 0;
  std::string receipted_stream;
};

inline std::string EncodeLink(const LinkRecord& r) {
  std::string out(1, '\x01');
  TlvWriter w(out);
  w.Bytes(1, r.via);
  w.BytesIfNotEmpty(2, r.return_link);
  w.Uint(3, static_cast<uint64_t>(r.created));
  w.UintIfNot(4, static_cast<uint64_t>(r.connected_since), 0);
  w.UintIfNot(5, static_cast<uint64_t>(r.last_ack), 0);
  w.UintIfNot(6, r.acked, 0);
  w.UintIfNot(7, r.refused, 0);
  w.BytesIfNotEmpty(8, r.last_error);
  w.UintIfNot(9, static_cast<uint64_t>(r.last_error_time), 0);
  w.BytesIfNotEmpty(10, r.peer);
  w.UintIfNot(11, static_cast<uint64_t>(r.forward_pid), 0);
  if (r.via_uid >= 0) w.Uint(12, static_cast<uint64_t>(r.via_uid));
  w.BytesIfNotEmpty(13, r.url);
  w.BytesIfNotEmpty(14, r.receipts_url);
  w.UintIfNot(15, r.receipted, 0);
  w.BytesIfNotEmpty(16, r.receipted_stream);
  return out;
}

inline bool DecodeLink(std::string_view v, LinkRecord& r) {
  if (v.empty() || v[0] != 1) return false;
  TlvReader rd(v.substr(1));
  while (rd.Next()) {
    switch (rd.tag()) {
      case 1: r.via = rd.bytes(); break;
      case 2: r.return_link = rd.bytes(); break;
      case 3: r.created = static_cast<int64_t>(rd.uint()); break;
      case 4: r.connected_since = static_cast<int64_t>(rd.uint()); break;
      case 5: r.last_ack = static_cast<int64_t>(rd.uint()); break;
      case 6: r.acked = rd.uint(); break;
      case 7: r.refused = rd.uint(); break;
      case 8: r.last_error = rd.bytes(); break;
      case 9: r.last_error_time = static_cast<int64_t>(rd.uint()); break;
      case 10: r.peer = rd.bytes(); break;
      case 11: r.forward_pid = static_cast<int64_t>(rd.uint()); break;
      case 12: r.via_uid = static_cast<int64_t>(rd.uint()); break;
      case 13: r.url = rd.bytes(); break;
      case 14: r.receipts_url = rd.bytes(); break;
      case 15: r.receipted = rd.uint(); break;
      case 16: r.receipted_stream = rd.bytes(); break;
      default: break;
    }
  }
  return !rd.error();
}

inline std::string CursorKey(uint32_t qid, std::string_view name) {
  std::string k = QueueIdKey(qid);
  k += name;
  return k;
}

}  // namespace mq
