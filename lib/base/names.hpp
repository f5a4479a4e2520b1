// names.hpp: queue references as users write them (CLI.md "Queue references").
//
//   NAME              1..124 of A-Z a-z 0-9 _ . -, case-sensitive, not starting with '.'
//   NAME;journal      the queue's journal
//   NAME;SUB          a subqueue (SUB follows the NAME rule), e.g. orders;poison
//   system;deadletter system;deadxact system;journal   the store's system queues
//   system;receipts   MSMQ receipts waiting for mq-admin serve to post them (made on first use)
//   out;LINK          the outgoing queue of link LINK (mq-admin link): 'out' is reserved, so
//                     that no queue of the user's (and no subqueue of one) is ever out;LINK
//   .\private$\NAME  DIRECT=OS:.\private$\NAME         MSMQ format names of a local queue
//   DIRECT=HTTP://HOST[:PORT]/msmq/private$/NAME (or HTTPS): a queue of a machine reached over
//                     HTTP (MSMQ's HTTP transport), through the link whose --url is
//                     http://HOST[:PORT]/msmq (mq-send only: Store::ResolveLinkUrls)
//
// A send may name several destinations (ParseDestinations): MSMQ's multiple-element format
// name, elements joined by ',' (no queue name holds one), optionally after "FormatName:".
//
// Anything else is E_INVALIDARG. A name is only ever a key in the store, never a path.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace mq {

inline constexpr size_t kMaxQueueName = 124;
// The base of the links' outgoing queues, out;LINK (mq(7) "Transfer between machines").
inline constexpr std::string_view kOutgoingBase = "out";
// The receipts of messages that came over HTTP, to a machine no link reaches: posted by
// mq-admin serve (Store::EmitAck, link/http_endpoint.hpp).
inline constexpr std::string_view kReceiptsQueue = "system;receipts";

struct QueueRef {
  std::string base;  // "orders", or "system"
  std::string sub;   // "", "journal", "poison", "deadletter", ...

  bool IsSystem() const { return base == "system"; }
  // out;LINK. A bare "out" is no name a new queue may take (Store refuses to make it), but a
  // store made before links may hold a queue of that name: it stays a plain queue, reachable.
  bool IsOutgoing() const { return base == kOutgoingBase && !sub.empty(); }
  bool IsSub() const { return !sub.empty(); }
  // The canonical reference, "base" or "base;sub"; the queue's key in the catalog.
  std::string Full() const { return sub.empty() ? base : base + ";" + sub; }
};

Result<QueueRef> ParseQueueRef(std::string_view text);

// A queue of another store, reached through a link (mq-admin link): LINK:QUEUE, or the MSMQ
// direct format name DIRECT=OS:LINK\private$\QUEUE (the link standing for the machine).
// QUEUE is a plain queue name.
struct RemoteRef {
  std::string link;
  std::string queue;
};
// Null when `text` names no remote queue (it may still be a local one).
Result<std::optional<RemoteRef>> ParseRemoteRef(std::string_view text);
// Where a send puts a message: a local queue, or for a queue of another store (remote_queue
// set) the link's outgoing queue out;LINK.
struct Destination {
  QueueRef ref;
  std::string remote_queue;
  // An HTTP format name's machine, as MsmqBaseUrl writes it: the link is the one with that
  // --url (Store::ResolveLinkUrls sets ref.sub); ref.sub is empty until then.
  std::string url{};
};
// The base URL of a machine's MSMQ HTTP endpoint, http[s]://HOST[:PORT]/msmq, in one form:
// scheme and host in lower case, the default port (80, 443) left out, no trailing '/'.
// E_INVALIDARG (MQ_ERROR_ILLEGAL_FORMATNAME) for anything else.
Result<std::string> MsmqBaseUrl(std::string_view url);
// The destinations of `text`: one queue reference, local or remote, or a list of them joined
// by ',' ("a,b,LINK:c", "FormatName:DIRECT=OS:.\private$\a,DIRECT=OS:.\private$\b"), each
// named once. An HTTP format name (DIRECT=HTTP://HOST/msmq/private$/QUEUE) leaves its link to
// be found by its url.
Result<std::vector<Destination>> ParseDestinations(std::string_view text);
// True if `name` is a valid plain queue name (the NAME rule).
bool IsValidQueueName(std::string_view name);
// Cursor names follow the NAME rule too; E_INVALIDARG otherwise.
Status CheckCursorName(std::string_view name);

}  // namespace mq
