// names.cpp: parsing of queue references; see names.hpp for the grammar.
#include "base/names.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cstring>

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
    if (ref.sub != "deadletter" && ref.sub != "deadxact" && ref.sub != "journal" &&
        ref.sub != "receipts")
      return Bad(text, "'system' is reserved: system;deadletter, system;deadxact, system;journal, "
                       "system;receipts");
  }
  return ref;
}

Result<std::string> MsmqBaseUrl(std::string_view url) {
  auto bad = [&](const std::string& why) {
    return Status::IllegalFormatname(
        fmt::format("'{}' is not an MSMQ HTTP address (http[s]://HOST[:PORT]/msmq): {}", url, why));
  };
  std::string_view s = url;
  std::string scheme;
  if (IStartsWith(s, "http://")) {
    scheme = "http";
  } else if (IStartsWith(s, "https://")) {
    scheme = "https";
  } else {
    return bad("it begins with neither http:// nor https://");
  }
  s.remove_prefix(scheme.size() + 3);
  size_t slash = s.find('/');
  std::string_view authority = s.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : s.substr(slash);
  if (authority.empty()) return bad("no host");
  for (char c : authority)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr(".-_:[]", c))
      return bad("the host may hold letters, digits and . - _ : [ ] only");
  std::string host;
  for (char c : authority) host += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t colon = host.rfind(':');
  if (colon != std::string::npos && host.find(']', colon) == std::string::npos) {
    std::string_view port = std::string_view(host).substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(std::string(port)) == 0 || std::stoul(std::string(port)) > 65535)
      return bad("the port is not a number from 1 to 65535");
    if ((scheme == "http" && port == "80") || (scheme == "https" && port == "443"))
      host.resize(colon);
  }
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (!IEquals(path, "/msmq")) return bad("the path is not /msmq");
  return fmt::format("{}://{}/msmq", scheme, host);
}

namespace {

// DIRECT=HTTP://HOST[:PORT]/msmq/private$/QUEUE (HTTPS too, any case): null if `element` is
// no HTTP format name.
Result<std::optional<Destination>> ParseHttpFormatName(std::string_view element) {
  std::string_view s = element;
  if (!IStartsWith(s, "DIRECT=HTTP://") && !IStartsWith(s, "DIRECT=HTTPS://"))
    return std::optional<Destination>();
  s.remove_prefix(7);
  size_t host_end = s.find('/', s.find("//") + 2);
  size_t queue_at = std::string_view::npos;
  if (host_end != std::string_view::npos) {
    std::string_view rest = s.substr(host_end);
    if (rest.size() > 15 && IStartsWith(rest, "/msmq/private$/")) queue_at = host_end + 15;
  }
  if (queue_at == std::string_view::npos)
    return Bad(element, "an HTTP format name is DIRECT=HTTP://HOST[:PORT]/msmq/private$/QUEUE "
                        "(mq sends to private queues only)");
  auto base = MsmqBaseUrl(s.substr(0, host_end + 5));
  if (!base.ok()) return Bad(element, base.status().text());
  Destination d;
  d.ref = QueueRef{std::string(kOutgoingBase), ""};
  d.remote_queue = std::string(s.substr(queue_at));
  d.url = std::move(*base);
  if (!IsValidQueueName(d.remote_queue))
    return Bad(element, "the queue after private$/ is a plain queue name");
  return std::optional<Destination>(std::move(d));
}

}  // namespace

Result<std::vector<Destination>> ParseDestinations(std::string_view text) {
  std::string_view s = text;
  if (IStartsWith(s, "FormatName:")) s.remove_prefix(11);
  std::vector<Destination> out;
  for (;;) {
    auto comma = s.find(',');
    std::string_view element = s.substr(0, comma);
    if (element.empty()) return Bad(text, "an empty element in a list of queues (a,b,LINK:c)");
    Destination d;
    auto http = ParseHttpFormatName(element);
    if (!http.ok()) return http.status();
    auto remote = *http ? Result<std::optional<RemoteRef>>(std::optional<RemoteRef>())
                        : ParseRemoteRef(element);
    if (!remote.ok()) return remote.status();
    if (*http) {
      d = std::move(**http);
    } else if (*remote) {
      d.ref = QueueRef{std::string(kOutgoingBase), (*remote)->link};
      d.remote_queue = std::move((*remote)->queue);
    } else {
      auto ref = ParseQueueRef(element);
      if (!ref.ok()) return ref.status();
      d.ref = std::move(*ref);
    }
    for (const Destination& e : out)
      if (e.ref.Full() == d.ref.Full() && e.remote_queue == d.remote_queue && e.url == d.url)
        return Bad(text, fmt::format("{} is named twice", element));
    out.push_back(std::move(d));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace mq
