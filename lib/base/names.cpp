// names.cpp: parsing of queue references; see names.hpp for the grammar.
#include "base/names.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace mq {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool IStartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && IEquals(s.substr(0, prefix.size()), prefix);
}

Status Bad(std::string_view text, const std::string& why) {
  std::string shown;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    shown += (u < 0x20 || u == 0x7F) ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return Status::IllegalQueuePathname("invalid queue name: " + why, shown.empty() ? "\"\"" : shown);
}

}  // namespace

bool IsValidQueueName(std::string_view name) {
  if (name.empty() || name.size() > kMaxQueueName || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

Status CheckCursorName(std::string_view name) {
  if (IsValidQueueName(name)) return {};
  Status s = Bad(name, "");
  return Status::InvalidArg(
      fmt::format("invalid cursor name: use 1 to {} of A-Z a-z 0-9 _ . -, not starting "
                  "with '.'",
                  kMaxQueueName),
      s.subject());
}

Result<std::optional<RemoteRef>> ParseRemoteRef(std::string_view text) {
  std::string_view s = text;
  RemoteRef r;
  if (IStartsWith(s, "DIRECT=OS:")) {
    s.remove_prefix(10);
    if (IStartsWith(s, ".\\")) return std::optional<RemoteRef>();
    auto slash = s.find('\\');
    if (slash == std::string_view::npos)
      return Bad(text, "expected DIRECT=OS:LINK\\private$\\QUEUE");
    r.link = std::string(s.substr(0, slash));
    s.remove_prefix(slash + 1);
    if (!IStartsWith(s, "private$\\"))
      return Bad(text, "only private queues (DIRECT=OS:LINK\\private$\\QUEUE) are supported");
    s.remove_prefix(9);
    r.queue = std::string(s);
  } else {
    auto colon = s.find(':');
    if (colon == std::string_view::npos) return std::optional<RemoteRef>();
    r.link = std::string(s.substr(0, colon));
    r.queue = std::string(s.substr(colon + 1));
  }
  if (!IsValidQueueName(r.link))
    return Bad(text, "invalid link name before the queue (LINK:QUEUE)");
  if (!IsValidQueueName(r.queue) || r.queue == "system" || r.queue == kOutgoingBase)
    return Bad(text, "a remote queue is a plain queue name (LINK:QUEUE)");
  return std::optional<RemoteRef>(std::move(r));
}

Result<QueueRef> ParseQueueRef(std::string_view text) {
  std::string_view s = text;
  if (IStartsWith(s, "DIRECT=OS:")) {
    s.remove_prefix(10);
    if (!IStartsWith(s, ".\\private$\\"))
      return Bad(text, "only local private queues (DIRECT=OS:.\\private$\\NAME) here; mq-send "
                       "sends to DIRECT=OS:LINK\\private$\\NAME through a link");
  }
  if (IStartsWith(s, ".\\private$\\")) s.remove_prefix(11);
  QueueRef ref;
  auto semi = s.find(';');
  ref.base = std::string(s.substr(0, semi));
  if (semi != std::string_view::npos) ref.sub = std::string(s.substr(semi + 1));
  if (ref.base.empty()) return Bad(text, "empty name");
  if (!IsValidQueueName(ref.base))
    return Bad(text, fmt::format("use 1 to {} of A-Z a-z 0-9 _ . -, not starting with '.'",
                                 kMaxQueueName));
  if (semi != std::string_view::npos && !IsValidQueueName(ref.sub))
    return Bad(text, "invalid subqueue name after ';'");
  if (ref.base == "system") {
    if (ref.sub != "deadletter" && ref.sub != "deadxact" && ref.sub != "journal")
      return Bad(text, "'system' is reserved: system;deadletter, system;deadxact, system;journal");
  }
  return ref;
}

Result<std::vector<Destination>> ParseDestinations(std::string_view text) {
  std::string_view s = text;
  if (IStartsWith(s, "FormatName:")) s.remove_prefix(11);
  std::vector<Destination> out;
  for (;;) {
    auto comma = s.find(',');
    std::string_view element = s.substr(0, comma);
    if (element.empty()) return Bad(text, "an empty element in a list of queues (a,b,LINK:c)");
    Destination d;
    auto remote = ParseRemoteRef(element);
    if (!remote.ok()) return remote.status();
    if (*remote) {
      d.ref = QueueRef{std::string(kOutgoingBase), (*remote)->link};
      d.remote_queue = std::move((*remote)->queue);
    } else {
      auto ref = ParseQueueRef(element);
      if (!ref.ok()) return ref.status();
      d.ref = std::move(*ref);
    }
    for (const Destination& e : out)
      if (e.ref.Full() == d.ref.Full() && e.remote_queue == d.remote_queue)
        return Bad(text, fmt::format("{} is named twice", element));
    out.push_back(std::move(d));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace mq
