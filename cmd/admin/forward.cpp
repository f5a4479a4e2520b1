// mq-admin forward LINK [--once|--follow] [--window N] [--compress WHEN] [--retry DURATION]
//                       [--timeout DURATION]
//   Moves the messages of the link's outgoing queue out;LINK to the store at its far end,
//   exactly once and in order. The engine, and the session it runs: lib/link/forward.hpp.
#include <signal.h>

#include <cerrno>

#include "admin.hpp"
#include "base/units.hpp"
#include "link/forward.hpp"

namespace mq::admin {

namespace {

struct ForwardArgs {
  std::string link;
  bool once = false, follow = false;
  uint32_t window = 10000;
  std::string retry;
  std::string timeout = "30s";
  std::string compress = "auto";  // auto, always, never
};

int RunForward(Store& store, const ForwardArgs& a) {
  link::ForwardOptions o;
  o.link = a.link;
  o.window = a.window;
  o.follow = a.follow;
  o.compress = a.compress == "always"  ? link::Compress::kAlways
               : a.compress == "never" ? link::Compress::kNever
                                       : link::Compress::kAuto;
  auto t = ParseDuration(a.timeout);
  if (!t.ok()) return cli::Fail(t.status());
  if (*t <= 0 || *t > INT32_MAX)
    return cli::Fail(Status::InvalidArg("--timeout must be a positive duration"));
  o.timeout_ms = *t;
  o.retry_ms = a.follow ? -1 : 30000;
  if (!a.retry.empty()) {
    auto r = ParseDuration(a.retry);
    if (!r.ok()) return cli::Fail(r.status());
    o.retry_ms = *r == kInfinite ? -1 : *r;
  }
  if (cli::StopOnSignals() < 0)
    return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  ::signal(SIGPIPE, SIG_IGN);  // a link's command that ends is EPIPE, and a session error
  link::Forwarder f(store, o, cli::Stop(),
                    [&](const link::ForwardNote& n) { cli::Note(a.link, n.text); });
  Status s = f.Run();
  return s.ok() ? 0 : cli::Fail(s);
}

}  // namespace

Command SetupForward(CLI::App& app, Context&) {
  auto a = std::make_shared<ForwardArgs>();
  auto* sub = app.add_subcommand(
      "forward", "Move the messages waiting for LINK to the store at its far end, exactly once "
                 "and in order");
  sub->add_option("LINK", a->link, "The link (mq-admin link add)")->required();
  auto* once = sub->add_flag("--once", a->once, "Stop when out;LINK is empty (default)");
  sub->add_flag("--follow", a->follow,
                "Keep forwarding (woken by new messages) until SIGTERM or SIGINT; reconnect "
                "with backoff when the link's command ends")
      ->excludes(once);
  sub->add_option("--window", a->window,
                  "Messages sent and not yet acknowledged, at most (default 10000)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 1000000));
  sub->add_option("--compress", a->compress,
                  "Compress the messages (zstd) when the far side can decompress them: auto "
                  "(while that is faster, the default), always, or never")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_option("--retry", a->retry,
                  "With --once: how long to keep retrying a failing link (default 30s); "
                  "--follow retries forever")
      ->type_name("DURATION");
  sub->add_option("--timeout", a->timeout,
                  "Waiting for the far side's answers (default 30s)")
      ->type_name("DURATION");
  return {sub, [a](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            return RunForward(**store, *a);
          }};
}

}  // namespace mq::admin
