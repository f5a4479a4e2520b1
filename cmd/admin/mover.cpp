// The options shared by forward, bridge out and bridge in (admin.hpp).
#include <cstdint>

#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

void AddMoverOptions(CLI::App& sub, MoverArgs& a, const std::string& source) {
  auto* once = sub.add_flag("--once", a.once, "Stop when " + source + " is empty (default)");
  sub.add_flag("--follow", a.follow,
               "Keep moving messages as they arrive until SIGTERM or SIGINT; reconnect with "
               "backoff when the connection is lost")
      ->excludes(once);
  sub.add_option("--retry", a.retry,
                 "How long to keep reconnecting after a lost connection (default: 30s with "
                 "--once, infinite with --follow)")
      ->type_name("DURATION");
  sub.add_option("--timeout", a.timeout,
                 "Connecting, and waiting for the far side's answers (default 30s)")
      ->type_name("DURATION");
}

Result<MoverSpec> ParseMoverOptions(const MoverArgs& a) {
  MoverSpec m;
  m.follow = a.follow;
  auto t = ParseDuration(a.timeout);
  if (!t.ok()) return t.status();
  if (*t <= 0 || *t > INT32_MAX) return Status::InvalidArg("--timeout must be a positive duration");
  m.timeout_ms = static_cast<int>(*t);
  m.retry_ms = a.follow ? kInfinite : 30000;
  if (!a.retry.empty()) {
    auto r = ParseDuration(a.retry);
    if (!r.ok()) return r.status();
    m.retry_ms = *r;
  }
  return m;
}

}  // namespace mq::admin
