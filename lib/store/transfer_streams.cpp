// transfer_streams.cpp: links to other stores and the store's side of a transfer (mq(7)
// "Transfer between machines"): the link records, ending a forward's lease with the far
// side's answers (acknowledgements, NACKs, dead letters), accepting an incoming stream
// exactly once (the stream's last sequence number is written with the messages it covers),
// and the two ends of a conversation through a link.
#include "store/store_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "store/conversation.hpp"
#include "base/names.hpp"
#include "base/units.hpp"

namespace mq {

namespace {

Status CheckLinkName(const std::string& name) {
  // out;journal would read as the journal of a queue 'out'.
  if (name == "journal")
    return Status::InvalidArg("'journal' is reserved: a link cannot be named so", name);
  if (IsValidQueueName(name)) return {};
  return Status::InvalidArg(
      fmt::format("invalid link name: use 1 to {} of A-Z a-z 0-9 _ . -, not starting "
                  "with '.'",
                  kMaxQueueName),
      name);
}

Status NoLink(const std::string& name) {
  return Status::QueueNotFound("no such link (mq-admin link add makes it)", name);
}

// Whether a message may enter `q` here, or the NACK class that refuses it ([MS-MQMQ]
// 2.2.18.1.6; the table is in mq(7) "Acknowledgements"). MSMQ has no class for a message
// whose content the receiving side refuses (properties out of range, a failed message-type
// check): RECEIVE_REJECTED, the class of a receiver that rejects a message, is the one
// that says so.
uint16_t Refusal(const QueueInfo& q, const Message& m, int64_t now) {
  if (!q.enabled) return kClassNackBadDstQ;  // disabled: the queue cannot be reached
  if (q.transactional && m.xact_id.empty()) return kClassNackNotTransactionalMsg;
  if (!q.transactional && !m.xact_id.empty()) return kClassNackNotTransactionalQ;
  if (m.ttrq && m.ttrq <= now) return kClassNackReachQueueTimeout;
  if (m.body.size() > q.max_message_size) return kClassNackMessageTooLarge;
  if (m.priority > 7 || !IsValidUtf8(m.label) || Utf8Length(m.label) > kMaxLabel ||
      (!m.correlation_id.empty() && m.correlation_id.size() != kIdSize) ||
      m.id.size() != kIdSize)
    return kClassNackReceiveRejected;
  return 0;
}

}  // namespace

Result<std::optional<QueueInfo>> Store::Impl::LoadOutgoing(lmdb::Txn& txn,
                                                           const std::string& link) {
  if (!GetMeta(txn, LinkKey(link))) return std::optional<QueueInfo>();
  std::string name = std::string(kOutgoingBase) + ";" + link;
  auto q = LoadQueue(txn, name);
  if (!q.ok() || *q) return q;
  auto made = NewQueue(txn, name);
  if (!made.ok()) return made.status();
  made->max_retries = 0;  // a forward that dies returns its batch: never poison
  MQ_RETURN_IF_ERROR(PutQueue(txn, *made));
  return std::optional<QueueInfo>(std::move(*made));
}

// The link of this store that leads back to the store `m` came from: the link its admin or
// response queue names (LINK:QUEUE, as a link's --return writes them), else the link whose
// far side was last seen to be its source. Only a link whose outgoing queue takes messages.
Result<std::optional<std::string>> Store::Impl::LinkBackTo(lmdb::Txn& txn, const Message& m) {
  using Found = std::optional<std::string>;
  auto usable = [&](const std::string& link) -> Result<bool> {
    if (!GetMeta(txn, LinkKey(link))) return false;
    auto oq = LoadOutgoing(txn, link);
    if (!oq.ok()) return oq.status();
    return *oq && (*oq)->enabled;
  };
  for (const std::string* named : {&m.admin_queue, &m.response_queue}) {
    auto remote = ParseRemoteRef(*named);
    if (!remote.ok() || !*remote) continue;
    auto ok = usable((*remote)->link);
    if (!ok.ok()) return ok.status();
    if (*ok) return Found((*remote)->link);
  }
  std::string by_peer = LinkWithPeer(txn, FormatGuid(m.source_qm_guid));
  if (by_peer.empty()) return Found();
  auto ok = usable(by_peer);
  if (!ok.ok()) return ok.status();
  return *ok ? Found(by_peer) : Found();
}

// The link whose far side was last seen (by a forward) to be the store `peer` (a GUID as
// FormatGuid writes it); empty if none.
std::string Store::Impl::LinkWithPeer(lmdb::Txn& txn, const std::string& peer) {
  const std::string prefix = LinkKey("");
  std::string name;
  ScanMeta(txn, prefix, [&](std::string_view key, std::string_view value) {
    LinkRecord r;
    if (DecodeLink(value, r) && r.peer == peer) {
      name = std::string(key.substr(prefix.size()));
      return false;
    }
    return true;
  });
  return name;
}

// The sending end keeps, per link and handle, the far queue and the next sequence number; the
// far store keeps the conversation itself, begun by the message of sequence number 0 (see
// AcceptConvMessage). The group of a new conversation travels with its messages; a
// conversation's group at the far side is that store's to move.
Status Store::Impl::RemoteConvPrepare(lmdb::Txn& txn, const std::string& link,
                                      const std::string& queue, Message& m, bool may_create,
                                      std::set<Guid>& created) {
  std::string key = RemoteConvPrefix(link) + std::string(GuidBytes(m.conversation_handle));
  std::string handle_text = FormatGuid(m.conversation_handle);
  std::string where = link + ":" + queue;
  bool made_here = created.count(m.conversation_handle) > 0;
  auto v = GetMeta(txn, key);
  if (v && may_create && !made_here)
    return Status::ConversationClosed(fmt::format("conversation {} already exists", handle_text),
                                      where);
  if (!v && !may_create)
    return Status::ConversationNotFound(
        fmt::format("no conversation {} through link {} (mq-send {} --conversation "
                    "new begins one)",
                    handle_text, link, where),
        where);
  uint64_t next = 0;
  if (v) {
    if (v->size() < 8) return Status::Corrupted("malformed conversation record", where);
    next = GetU64BE(*v, 0);
    std::string_view far = v->substr(8);
    if (far != queue)
      return Status::ConversationNotFound(fmt::format("conversation {} goes to {}:{}", handle_text,
                                                      link, far),
                                          where);
    if (next & kRemoteConvEnded)
      return Status::ConversationClosed(
          fmt::format("conversation {} has ended here (its EndDialog went to {}): no "
                      "more sends",
                      handle_text, where),
          where);
  } else {
    created.insert(m.conversation_handle);
  }
  if (next > 0) {
    if (!made_here && !IsNil(m.conversation_group_id))
      return Status::InvalidArg(
          fmt::format("conversation {} goes through a link: --group sets the group "
                      "of a new one only",
                      handle_text),
          where);
    m.conversation_group_id = Guid{};
  }
  m.message_sequence_number = next;
  // EndDialog or Error ends the conversation at this end: nothing may follow it.
  bool ends = m.message_type_name == kEndDialogType || m.message_type_name == kErrorType;
  std::string value;
  PutU64BE(value, (next + 1) | (ends ? kRemoteConvEnded : 0));
  value += queue;
  return PutMeta(txn, key, value);
}

// The link and far queue of a conversation begun here through a link, if `handle` is one.
Result<std::optional<std::pair<std::string, std::string>>> Store::Impl::FindRemoteConv(
    lmdb::Txn& txn, const Guid& handle) {
  using Found = std::optional<std::pair<std::string, std::string>>;
  const std::string links = LinkKey("");
  std::vector<std::string> names;
  ScanMeta(txn, links, [&](std::string_view key, std::string_view) {
    names.emplace_back(key.substr(links.size()));
    return true;
  });
  for (std::string& link : names) {
    auto v = GetMeta(txn, RemoteConvPrefix(link) + std::string(GuidBytes(handle)));
    if (!v) continue;
    if (v->size() < 8) return Status::Corrupted("malformed conversation record", link);
    return Found(std::make_pair(std::move(link), std::string(v->substr(8))));
  }
  return Found();
}

// Sequence number 0 begins the conversation in `q` (the handle must be new here); the others
// find it there, open. Their numbers are the sender's: a link delivers in order.
Result<uint16_t> Store::Impl::AcceptConvMessage(lmdb::Txn& txn, QueueInfo& q, Message& m,
                                                std::set<Guid>& created, int64_t now,
                                                std::pair<char, bool> checked) {
  if (!m.message_type_name.empty()) {
    auto validation = TypeValidation(txn, m.message_type_name);
    if (!validation.ok() && validation.status().code() == Code::kMessageTypeNotFound)
      return kClassNackReceiveRejected;
    if (!validation.ok()) return validation.status();
    bool valid = checked.first == *validation
                     ? checked.second
                     : ValidateBody(*validation, m.body, m.message_type_name).ok();
    if (!valid) return kClassNackReceiveRejected;
    m.validation = *validation;
  }
  if (IsNil(m.conversation_handle)) return uint16_t{0};
  if (m.visible_time > now) return kClassNackReceiveRejected;  // mq-send never delays one
  m.visible_time = 0;
  auto c = LoadConv(txn, m.conversation_handle);
  if (!c.ok()) return c.status();
  bool begins = m.message_sequence_number == 0;
  if (*c) {
    if (begins || (*c)->qid != q.id || (*c)->state != ConvState::kOpen)
      return kClassNackBadDstQ;
  } else if (!begins) {
    return kClassNackBadDstQ;
  } else if (q.quota) {
    // Its quota checked before the conversation is begun, so that a refused first message
    // leaves none: the record as InsertMessage will write it.
    Message probe = m;
    if (IsNil(probe.conversation_group_id)) probe.conversation_group_id = m.conversation_handle;
    probe.lookup_id = probe.queuing_order = q.next_lookup;
    std::string rec;
    msgs.Encode(q.id, probe, rec);
    if (q.bytes + rec.size() > q.quota) return kClassNackQExceedQuota;
  }
  MQ_RETURN_IF_ERROR(ConvPrepare(txn, q, m, true, true, created, now));
  if (m.message_type_name == kEndDialogType || m.message_type_name == kErrorType) {
    // The sending end ended it (mq-admin end-conversation there): ended here too, as a local
    // END CONVERSATION leaves it, its EndDialog or Error message the last one to receive.
    auto ended = LoadConv(txn, m.conversation_handle);
    if (!ended.ok()) return ended.status();
    if (*ended) {
      (*ended)->state =
          m.message_type_name == kErrorType ? ConvState::kError : ConvState::kEnded;
      MQ_RETURN_IF_ERROR(SaveConv(txn, m.conversation_handle, **ended));
    }
  }
  return uint16_t{0};
}

namespace {

// A link's command runs as whoever runs mq-admin forward (a service, root perhaps): only the
// store's owner (or root) may set it, never another member of a group store.
Status MaySetCommand(uid_t owner, const std::string& link) {
  uid_t me = ::geteuid();
  if (me == owner || me == 0) return {};
  return Status::AccessDenied(
      fmt::format("a link's command runs as whoever runs mq-admin forward: only the store's "
                  "owner (uid {}) may set it, not uid {}",
                  owner, me),
      link);
}

}  // namespace

namespace {

// A link has a command (--via) or a URL (--url, an HTTP link), never both; a receipts URL
// belongs to an HTTP link.
Status CheckLinkKind(const LinkRecord& r, const std::string& name) {
  if (r.via.empty() == r.url.empty())
    return Status::InvalidArg(r.via.empty() ? "a link needs --via COMMAND or --url URL"
                                            : "a link has --via or --url, not both",
                              name);
  if (!r.receipts_url.empty() && r.url.empty())
    return Status::InvalidArg("--receipts-url belongs to an HTTP link (--url)", name);
  return {};
}

// Applies `s` to `r`, checking the URLs.
Status ApplyLinkSettings(const LinkSettings& s, LinkRecord& r, const std::string& name) {
  if (s.via) {
    r.via = *s.via;
    r.via_uid = ::geteuid();
  }
  if (s.return_link) r.return_link = *s.return_link;
  if (s.url) {
    r.url.clear();
    if (!s.url->empty()) {
      auto base = MsmqBaseUrl(*s.url);
      if (!base.ok()) return base.status().WithSubject(name);
      r.url = std::move(*base);
      r.via_uid = ::geteuid();
    }
  }
  if (s.receipts_url) {
    r.receipts_url = *s.receipts_url;
    std::string_view u = r.receipts_url;
    if (!u.empty() && u.substr(0, 7) != "http://" && u.substr(0, 8) != "https://")
      return Status::InvalidArg(fmt::format("--receipts-url '{}' is not an http:// or https:// URL",
                                            u),
                                name);
  }
  return CheckLinkKind(r, name);
}

}  // namespace

Status Store::AddLink(const std::string& name, const LinkSettings& settings) {
  MQ_RETURN_IF_ERROR(CheckLinkName(name));
  if ((!settings.via || settings.via->empty()) && (!settings.url || settings.url->empty()))
    return Status::InvalidArg("a link needs --via COMMAND or --url URL", name);
  MQ_RETURN_IF_ERROR(MaySetCommand(impl_->owner_uid, name));
  LinkRecord r;
  MQ_RETURN_IF_ERROR(ApplyLinkSettings(settings, r, name));
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    if (impl_->GetMeta(txn, LinkKey(name)))
      return Status::QueueExists("the link exists (mq-admin link set changes it)", name);
    if (!r.url.empty()) MQ_RETURN_IF_ERROR(impl_->CheckUrlFree(txn, r.url, name));
    r.created = NowMs();
    MQ_RETURN_IF_ERROR(impl_->PutMeta(txn, LinkKey(name), EncodeLink(r)));
    // An out;LINK kept from an earlier link of that name is its again: its stream goes on.
    auto q = impl_->LoadOutgoing(txn, name);
    return q.ok() ? Status() : q.status();
  });
}

Status Store::SetLink(const std::string& name, const LinkSettings& settings) {
  if (settings.via || settings.url || settings.receipts_url)
    MQ_RETURN_IF_ERROR(MaySetCommand(impl_->owner_uid, name));
  if (settings.via && settings.via->empty())
    return Status::InvalidArg("--via cannot be empty", name);
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto v = impl_->GetMeta(txn, LinkKey(name));
    if (!v) return NoLink(name);
    LinkRecord r;
    if (!DecodeLink(*v, r)) return Status::Corrupted("malformed link record", name);
    LinkSettings s = settings;
    // --via makes it a command's link again, --url an HTTP link.
    if (s.via && !s.url) s.url = "";
    if (s.url && !s.url->empty() && !s.via) r.via.clear();
    if (s.url && s.url->empty() && !s.receipts_url) s.receipts_url = "";
    MQ_RETURN_IF_ERROR(ApplyLinkSettings(s, r, name));
    if (!r.url.empty()) MQ_RETURN_IF_ERROR(impl_->CheckUrlFree(txn, r.url, name));
    return impl_->PutMeta(txn, LinkKey(name), EncodeLink(r));
  });
}

std::string Store::Impl::LinkOfUrl(lmdb::Txn& txn, std::string_view url, std::string_view except) {
  std::string found;
  ScanMeta(txn, LinkKey(""), [&](std::string_view key, std::string_view value) {
    LinkRecord r;
    if (key.substr(5) != except && DecodeLink(value, r) && r.url == url) found = key.substr(5);
    return found.empty();
  });
  return found;
}

Status Store::Impl::CheckUrlFree(lmdb::Txn& txn, const std::string& url, const std::string& name) {
  std::string other = LinkOfUrl(txn, url, name);
  if (other.empty()) return {};
  return Status::QueueExists(fmt::format("link {} has that --url already: one link per machine",
                                         other),
                             name);
}

Status Store::ResolveLinkUrls(std::vector<Destination>& dests) {
  bool any = std::any_of(dests.begin(), dests.end(), [](auto& d) { return !d.url.empty(); });
  if (!any) return {};
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  for (Destination& d : dests) {
    if (d.url.empty()) continue;
    d.ref.sub = impl_->LinkOfUrl(*txn, d.url);
    if (d.ref.sub.empty())
      return Status::QueueNotFound(
          fmt::format("no link reaches {}: add one with mq-admin link add NAME --url {} "
                      "--receipts-url URL-OF-THIS-STORE'S-SERVE",
                      d.url, d.url),
          fmt::format("DIRECT={}/private$/{}", d.url, d.remote_queue));
  }
  return {};
}

Result<std::string> Store::LinkOfUrl(std::string_view url) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  return impl_->LinkOfUrl(*txn, url);
}

Result<std::string> Store::NoteStreamReceipt(std::string_view stream, uint64_t last_ordinal) {
  // uid:GUID\QUEUE-ID, GUID this store's (forward.cpp names its streams so).
  std::string own = "uid:" + FormatGuid(impl_->guid) + "\\";
  if (stream.size() <= own.size() || stream.substr(0, own.size()) != own) return std::string();
  std::string_view digits = stream.substr(own.size());
  uint32_t qid = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), qid);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::string();
  std::string name;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    name.clear();
    std::string found;
    LinkRecord r;
    impl_->ScanMeta(txn, LinkKey(""), [&](std::string_view key, std::string_view value) {
      LinkRecord l;
      if (!DecodeLink(value, l) || l.url.empty()) return true;
      auto q = impl_->LoadQueue(txn, std::string(kOutgoingBase) + ";" + std::string(key.substr(5)));
      if (q.ok() && *q && (*q)->id == qid) {
        found = key.substr(5);
        r = std::move(l);
      }
      return found.empty();
    });
    if (found.empty()) return {};
    name = found;
    if (r.receipted_stream != stream) {
      r.receipted_stream = stream;
      r.receipted = 0;
    }
    if (last_ordinal <= r.receipted) return {};
    r.receipted = last_ordinal;
    return impl_->PutMeta(txn, LinkKey(found), EncodeLink(r));
  });
  if (!s.ok()) return s;
  return name;
}

Status Store::DeleteLink(const std::string& name, bool force) {
  uint32_t qid = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    qid = 0;
    if (!impl_->GetMeta(txn, LinkKey(name))) return NoLink(name);
    std::string out = std::string(kOutgoingBase) + ";" + name;
    auto q = impl_->LoadQueue(txn, out);
    if (!q.ok()) return q.status();
    if (*q) {
      QueueInfo& oq = **q;
      if (oq.count && !force)
        return Status::TransactionUsage(
            fmt::format("{} messages wait in {}: forward them first, or pass --force "
                        "(they fail as purged: NACK_PURGED, dead-lettered if asked)",
                        oq.count, out),
            name);
      if (oq.locked)
        return Status::SharingViolation("a forward is sending messages of this link: stop it first",
                                        name);
      MQ_RETURN_IF_ERROR(impl_->DrainQueue(txn, oq, kClassNackPurged, kClassNackPurged, NowMs()));
      MQ_RETURN_IF_ERROR(impl_->DropQueueRecord(txn, oq));
      qid = oq.id;
    }
    // The conversations begun through it.
    std::vector<std::string> convs;
    {
      impl_->ScanMeta(txn, RemoteConvPrefix(name), [&](std::string_view key, std::string_view) {
        convs.emplace_back(key);
        return true;
      });
    }
    for (const std::string& k : convs) {
      auto d = impl_->DelMeta(txn, k);
      if (!d.ok()) return d.status();
    }
    auto r = impl_->DelMeta(txn, LinkKey(name));
    return r.ok() ? Status() : r.status();
  });
  if (s.ok() && qid) ::unlink(impl_->paths.notify(qid).c_str());
  return s;
}

namespace {

LinkInfo ToInfo(const std::string& name, const LinkRecord& r) {
  LinkInfo i;
  i.name = name;
  i.via = r.via;
  i.return_link = r.return_link;
  i.created = r.created;
  i.connected_since = r.connected_since;
  i.forward_pid = r.forward_pid;
  i.last_ack = r.last_ack;
  i.acked = r.acked;
  i.refused = r.refused;
  i.last_error = r.last_error;
  i.last_error_time = r.last_error_time;
  i.peer = r.peer;
  i.via_uid = r.via_uid;
  i.url = r.url;
  i.receipts_url = r.receipts_url;
  i.receipted = r.receipted;
  i.receipted_stream = r.receipted_stream;
  return i;
}

}  // namespace

Result<std::vector<LinkInfo>> Store::ListLinks() {
  std::vector<LinkInfo> out;
  {
    auto txn = lmdb::Txn::Begin(impl_->env, false);
    if (!txn.ok()) return txn.status();
    Status bad;
    impl_->ScanMeta(*txn, LinkKey(""), [&](std::string_view key, std::string_view value) {
      std::string name(key.substr(5));
      LinkRecord r;
      if (!DecodeLink(value, r)) {
        bad = Status::Corrupted("malformed link record", name);
        return false;
      }
      out.push_back(ToInfo(name, r));
      return true;
    });
    MQ_RETURN_IF_ERROR(bad);
    for (LinkInfo& i : out) {
      auto q = impl_->LoadQueue(*txn, std::string(kOutgoingBase) + ";" + i.name);
      if (!q.ok()) return q.status();
      if (*q) {
        i.backlog = (*q)->count;
        i.backlog_bytes = (*q)->bytes;
        i.in_flight = (*q)->locked;
      }
    }
  }
  // A forward that died leaves its record saying connected: its lock file tells.
  for (LinkInfo& i : out) {
    if (!i.connected_since) continue;
    auto held = FileLock::IsHeld(impl_->paths.link_lock(i.name));
    if (held.ok() && !*held) {
      i.connected_since = 0;
      i.forward_pid = 0;
    }
  }
  return out;
}

Result<LinkInfo> Store::GetLink(const std::string& name) {
  auto all = ListLinks();
  if (!all.ok()) return all.status();
  for (LinkInfo& i : *all)
    if (i.name == name) return std::move(i);
  return NoLink(name);
}

namespace {

struct HeldFileLock : HeldLock {
  explicit HeldFileLock(FileLock l) : lock(std::move(l)) {}
  FileLock lock;
};

}  // namespace

Result<std::unique_ptr<HeldLock>> Store::LockLink(const std::string& name) {
  auto l = FileLock::Acquire(impl_->paths.link_lock(name), impl_->file_mode, false);
  if (!l.ok() && l.status().code() == Code::kSharingViolation)
    return Status::SharingViolation("another mq-admin forward is running for this link", name);
  if (!l.ok()) return l.status();
  return std::unique_ptr<HeldLock>(std::make_unique<HeldFileLock>(std::move(*l)));
}

Status Store::NoteLink(const std::string& name, const LinkEvent& event) {
  return impl_->Write([&](lmdb::Txn& txn) -> Status {
    auto v = impl_->GetMeta(txn, LinkKey(name));
    if (!v) return NoLink(name);
    LinkRecord r;
    if (!DecodeLink(*v, r)) return Status::Corrupted("malformed link record", name);
    int64_t now = NowMs();
    switch (event.kind) {
      case LinkEvent::kConnected:
        r.connected_since = now;
        r.forward_pid = ::getpid();
        r.peer = event.peer;
        break;
      case LinkEvent::kDisconnected:
        r.connected_since = 0;
        r.forward_pid = 0;
        break;
      case LinkEvent::kError:
        r.connected_since = 0;
        r.forward_pid = 0;
        r.last_error = PeerText(event.error, 1000);
        r.last_error_time = now;
        break;
    }
    return impl_->PutMeta(txn, LinkKey(name), EncodeLink(r));
  });
}

Status Store::FinishForwarded(const std::vector<Lease*>& leases,
                              const std::vector<std::vector<uint16_t>>& outcomes,
                              const std::string& link) {
  if (leases.empty()) return {};
  if (outcomes.size() != leases.size())
    return Status::InvalidArg("one list of outcomes per lease", leases[0]->queue_);
  for (size_t l = 0; l < leases.size(); ++l) {
    const Lease& lease = *leases[l];
    if (lease.finished_) return Status::TransactionUsage("lease already ended", lease.queue_);
    if (outcomes[l].size() != lease.held_.size())
      return Status::InvalidArg("one outcome per message", lease.queue_);
    if (lease.queue_ != leases[0]->queue_)
      return Status::InvalidArg("leases of one queue only", lease.queue_);
  }
  // Without the meta sync, as a receive's removal: a power loss may undo it, and the far side
  // then answers the replay as before (stored, or the same refusal).
  Status s = impl_->WriteLight([&](lmdb::Txn& txn) -> Status {
    auto q = impl_->LoadQueue(txn, leases[0]->queue_);
    if (!q.ok()) return q.status();
    if (!*q) return {};  // the queue was deleted: nothing to do
    QueueInfo& oq = **q;
    int64_t now = NowMs();
    uint64_t acked = 0, refused = 0;
    for (size_t l = 0; l < leases.size(); ++l) {
      Lease& lease = *leases[l];
      if (oq.id != lease.qid_) continue;  // deleted and made anew: nothing of it is here
      LeaseRecord rec;
      if (!impl_->LoadLease(txn, lease.qid_, lease.lease_id_, &rec))
        return Status::TransactionUsage("the lease is gone (expired or returned)", lease.queue_);
      if (rec.keys.size() != lease.held_.size())
        return Status::Corrupted("the lease does not match its record", lease.queue_);
      // Every message of the lease ends here: its ranges go at once.
      auto holds = impl_->msgs.Release(txn, oq, lease.lease_id_, rec.keys, true);
      if (!holds.ok()) return holds.status();
      for (size_t i = 0; i < rec.keys.size(); ++i) {
        if (!(*holds)[i]) continue;
        Store::Impl::Found f;
        f.msg = lease.held_[i].msg;
        f.size = lease.held_[i].size;
        ++acked;
        if (outcomes[l][i] == 0) {
          // It reached its queue: ACK_REACH_QUEUE and source journaling, as an arrival here.
          MQ_RETURN_IF_ERROR(impl_->Arrived(txn, oq, f.msg, now));
          MQ_RETURN_IF_ERROR(impl_->RemoveMessage(txn, oq, f.msg, f.size, Impl::Held::kLocked));
        } else {
          ++refused;
          MQ_RETURN_IF_ERROR(impl_->DeadLetterOrDrop(txn, oq, f, outcomes[l][i], now));
        }
      }
      MQ_RETURN_IF_ERROR(impl_->DropLease(txn, oq.id, lease.lease_id_));
    }
    MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, oq));
    auto lv = impl_->GetMeta(txn, LinkKey(link));
    if (!lv) return {};
    LinkRecord lr;
    if (!DecodeLink(*lv, lr)) return Status::Corrupted("malformed link record", link);
    lr.acked += acked;
    lr.refused += refused;
    lr.last_ack = now;
    return impl_->PutMeta(txn, LinkKey(link), EncodeLink(lr));
  }, true);
  Status closed = s;
  for (Lease* lease : leases) {
    Status c = impl_->CloseLease(*lease, s);
    if (closed.ok()) closed = c;
  }
  return closed;
}

Result<uint64_t> Store::AcceptTransfer(const std::string& stream, std::vector<TransferItem>& items,
                                       uint64_t forget_below, std::string_view receipts_to) {
  // The bodies are checked against their message types before the write transaction (a
  // peer's bodies must not hold the store's write lock while libxml2 reads them; Append does
  // the same): per item, the validation checked against and whether the body passed.
  std::vector<std::pair<char, bool>> checked(items.size(), {0, false});
  {
    std::map<std::string, char> kinds;
    for (size_t i = 0; i < items.size(); ++i) {
      const Message& m = items[i].msg;
      if (m.message_type_name.empty()) continue;
      char v = impl_->PrecheckValidation(kinds, m.message_type_name);
      if (v) checked[i] = {v, ValidateBody(v, m.body, m.message_type_name).ok()};
    }
  }
  uint64_t last = 0;
  Status s = impl_->Write([&](lmdb::Txn& txn) -> Status {
    const bool streamed = !stream.empty();
    auto v = streamed ? impl_->GetMeta(txn, StreamKey(stream)) : std::nullopt;
    last = v && v->size() >= 8 ? GetU64BE(*v, 0) : 0;
    // After the position and its time: where the stream's receipts go, kept until another
    // place is given.
    std::string receipts(receipts_to.empty() && v && v->size() > 16 ? v->substr(16) : receipts_to);
    // Refusals the sender has moved past are answered already: forget them.
    if (forget_below && streamed) {
      std::vector<std::string> old;
      std::string prefix = StreamNackPrefix(stream);
      impl_->ScanMeta(txn, prefix, [&](std::string_view key, std::string_view) {
        if (key.size() != prefix.size() + 8 || GetU64BE(key, prefix.size()) >= forget_below)
          return false;
        old.emplace_back(key);
        return true;
      });
      for (const std::string& k : old) {
        auto r = impl_->DelMeta(txn, k);
        if (!r.ok()) return r.status();
      }
    }
    std::map<std::string, QueueInfo> queues;  // loaded once, saved at the end
    std::set<Guid> conversations_made;
    std::optional<std::string> sender_link;  // this store's link to the stream's source
    int64_t now = NowMs();
    // A refusal is recorded, so that a replay of the message is answered the same.
    auto refuse = [&](TransferItem& it, uint16_t cls) -> Status {
      it.outcome = cls;
      if (!streamed) return Status();
      std::string v;
      v.push_back(static_cast<char>(cls >> 8));
      v.push_back(static_cast<char>(cls & 0xFF));
      return impl_->PutMeta(txn, StreamNackKey(stream, it.seq), v);
    };
    for (size_t index = 0; index < items.size(); ++index) {
      TransferItem& it = items[index];
      it.outcome = 0;
      it.duplicate = false;
      it.gap = false;
      if (streamed && it.seq <= last) {
        it.duplicate = true;
        auto n = impl_->GetMeta(txn, StreamNackKey(stream, it.seq));
        if (n && n->size() == 2)
          it.outcome = static_cast<uint16_t>((static_cast<uint8_t>((*n)[0]) << 8) |
                                             static_cast<uint8_t>((*n)[1]));
        continue;
      }
      if (streamed && it.previous && *it.previous > last) {
        it.gap = true;
        continue;
      }
      if (streamed) last = it.seq;
      if (it.refuse) {
        MQ_RETURN_IF_ERROR(refuse(it, it.refuse));
        continue;
      }
      Message m = it.msg;
      const std::string dest = m.destination_queue;
      // One of this store's own transactional messages, dead-lettered at the far side and sent
      // back (DeadLetterOrDrop there): into system;deadxact here, named LINK:QUEUE after the
      // link that leads to the store that sent it back, as a dead letter of out;LINK is.
      if (m.source_qm_guid == impl_->guid && (m.msg_class & 0x8000) && !m.xact_id.empty()) {
        if (impl_->msgs.HasId(txn, m.id)) {
          it.duplicate = true;
          continue;
        }
        const std::string dx = "system;deadxact";
        auto found = queues.find(dx);
        if (found == queues.end()) {
          auto made = impl_->LoadOrCreate(txn, dx);
          if (!made.ok()) return made.status();
          found = queues.emplace(dx, std::move(*made)).first;
        }
        if (!sender_link) {
          // The stream is "uid:GUID\\QUEUE" (forward.cpp), GUID the sending store's.
          std::string_view sender = std::string_view(stream).substr(0, stream.find('\\'));
          sender_link = sender.substr(0, 4) == "uid:"
                            ? impl_->LinkWithPeer(txn, std::string(sender.substr(4)))
                            : std::string();
        }
        if (!sender_link->empty()) m.destination_queue = *sender_link + ":" + dest;
        m.lookup_id = 0;
        m.arrived_time = now;
        m.message_enqueue_time = now;
        m.visible_time = 0;
        m.awaiting_arrival = false;
        MQ_RETURN_IF_ERROR(impl_->InsertMessage(txn, found->second, m, 0));
        continue;
      }
      QueueInfo* q = nullptr;
      auto ref = ParseQueueRef(dest);
      if (ref.ok() && !ref->IsSub() && !ref->IsSystem()) {
        auto found = queues.find(dest);
        if (found == queues.end()) {
          auto loaded = impl_->LoadQueue(txn, dest);
          if (!loaded.ok()) return loaded.status();
          if (*loaded) found = queues.emplace(dest, std::move(**loaded)).first;
        }
        if (found != queues.end()) q = &found->second;
      }
      uint16_t refusal = q ? Refusal(*q, m, it.keep_late ? 0 : now) : kClassNackBadDstQ;
      // Its id is here already. From the same source store, it is that message, stored by an
      // earlier stream of the same link (a link made again): a replay, acknowledged and not
      // stored twice. Another message with its id is refused, never silently dropped.
      // (Refusal checked the id's size; this also finds one stored earlier in this batch.)
      if (!refusal) {
        if (auto where = impl_->msgs.FindId(txn, m.id, true)) {
          QueueInfo holder;
          holder.id = where->first;
          holder.name = impl_->QueueNameOf(txn, where->first).value_or("");
          Impl::Found f;
          MQ_RETURN_IF_ERROR(impl_->LoadMessage(txn, holder, where->second, f));
          if (f.msg.source_qm_guid == m.source_qm_guid && !it.new_id_if_taken) {
            it.duplicate = true;
            continue;
          }
          if (it.new_id_if_taken)
            m.id = MakeMessageId(NewGuid(), 1);
          else
            refusal = kClassNackReceiveRejected;
        }
      }
      if (!refusal) {
        // A new message of this store: its arrival here, its place, no receive history.
        m.lookup_id = 0;
        m.arrived_time = now;
        m.message_enqueue_time = now;
        m.status = 1;
        m.delivery_count = 0;
        m.abort_count = 0;
        m.queuing_order = 0;
        if (m.visible_time && m.visible_time <= now) m.visible_time = 0;
        m.awaiting_arrival = m.visible_time != 0;
        auto conv =
            impl_->AcceptConvMessage(txn, *q, m, conversations_made, now, checked[index]);
        if (!conv.ok()) return conv.status();
        refusal = *conv;
      }
      if (!refusal) {
        Status ins = impl_->InsertMessage(txn, *q, m, q->quota);
        if (ins.code() == Code::kInsufficientResources) {
          refusal = kClassNackQExceedQuota;
        } else {
          MQ_RETURN_IF_ERROR(ins);
          // A message from MSMQ over HTTP that asks for a delivery receipt: its
          // ACK_REACH_QUEUE, to its admin queue's machine through the link there (EmitAck).
          // A message of an mq link has had it from its sender's forward.
          if (!m.awaiting_arrival && m.admin_queue.find("://") != std::string::npos)
            MQ_RETURN_IF_ERROR(impl_->EmitAck(txn, *q, m, kClassAckReachQueue, now));
        }
      }
      if (refusal) MQ_RETURN_IF_ERROR(refuse(it, refusal));
    }
    for (auto& [name, q] : queues) MQ_RETURN_IF_ERROR(impl_->PutQueue(txn, q));
    if (!streamed) return Status();
    std::string pos;
    PutU64BE(pos, last);
    PutU64BE(pos, static_cast<uint64_t>(now));  // when the sender was last heard (Sweep)
    pos += receipts;
    return impl_->PutMeta(txn, StreamKey(stream), pos);
  });
  if (!s.ok()) return s;
  return last;
}

Result<uint64_t> Store::StreamPosition(const std::string& stream) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto v = impl_->GetMeta(*txn, StreamKey(stream));
  return v && v->size() >= 8 ? GetU64BE(*v, 0) : 0;
}

Result<std::string> Store::StreamReceiptsTo(const std::string& stream) {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  auto v = impl_->GetMeta(*txn, StreamKey(stream));
  return v && v->size() > 16 ? std::string(v->substr(16)) : std::string();
}

Result<StreamStats> Store::AcceptedStreams() {
  auto txn = lmdb::Txn::Begin(impl_->env, false);
  if (!txn.ok()) return txn.status();
  StreamStats st;
  impl_->ScanMeta(*txn, StreamKey(""), [&](std::string_view, std::string_view) {
    ++st.streams;
    return true;
  });
  impl_->ScanMeta(*txn, "snack:", [&](std::string_view k, std::string_view v) {
    ++st.refusals;
    st.refusal_bytes += k.size() + v.size();
    return true;
  });
  return st;
}

// The refusals kept for a sender are answers to its replays: it forgets them itself once it
// moves past them (AcceptTransfer's forget_below). A sender not heard from for
// kForgetStreamRefusalsMs is taken to be gone (its link deleted, its store lost): its
// refusals are forgotten, its position kept (a replay is still known as one). A stream
// recorded before positions had a time gets one now, and is forgotten that much later.
Result<uint64_t> Store::ForgetAbandonedRefusals(int64_t now) {
  Impl& im = *impl_;
  std::vector<std::string> stale, untimed;
  {
    auto txn = lmdb::Txn::Begin(im.env, false);
    if (!txn.ok()) return txn.status();
    const std::string streams = StreamKey("");
    im.ScanMeta(*txn, streams, [&](std::string_view k, std::string_view v) {
      std::string stream(k.substr(streams.size()));
      bool has_refusals = false;
      std::string prefix = StreamNackPrefix(stream);
      im.ScanMeta(*txn, prefix, [&](std::string_view, std::string_view) {
        has_refusals = true;
        return false;
      });
      if (!has_refusals) return true;
      if (v.size() < 16) untimed.push_back(stream);
      else if (static_cast<int64_t>(GetU64BE(v, 8)) + kForgetStreamRefusalsMs <= now)
        stale.push_back(stream);
      return true;
    });
  }
  if (stale.empty() && untimed.empty()) return uint64_t{0};
  uint64_t forgotten = 0;
  MQ_RETURN_IF_ERROR(im.Write([&](lmdb::Txn& txn) -> Status {
    forgotten = 0;
    for (const std::string& stream : untimed) {
      auto v = im.GetMeta(txn, StreamKey(stream));
      if (!v || v->size() != 8) continue;
      std::string pos(*v);
      PutU64BE(pos, static_cast<uint64_t>(now));
      MQ_RETURN_IF_ERROR(im.PutMeta(txn, StreamKey(stream), pos));
    }
    for (const std::string& stream : stale) {
      std::vector<std::string> keys;
      im.ScanMeta(txn, StreamNackPrefix(stream), [&](std::string_view k, std::string_view) {
        keys.emplace_back(k);
        return true;
      });
      for (const std::string& k : keys) {
        auto r = im.DelMeta(txn, k);
        if (!r.ok()) return r.status();
        ++forgotten;
      }
    }
    return {};
  }));
  return forgotten;
}

}  // namespace mq
