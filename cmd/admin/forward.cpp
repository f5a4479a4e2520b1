// mq-admin forward LINK [--once|--follow] [--window N] [--compress WHEN] [--retry DURATION]
//                       [--timeout DURATION] [--connections N] [--cacert FILE]
//   Moves the messages of the link's outgoing queue out;LINK to the store at its far end,
//   exactly once and in order. The engine, and the session it runs: lib/link/forward.hpp.
#include <signal.h>

#include <cerrno>

#include "admin.hpp"
#include "base/units.hpp"
#include "link/forward.hpp"

namespace mq::admin {

namespace {

struct ForwardArgs : MoverArgs {
  std::string link;
  uint32_t window = 10000;
  std::string compress = "auto";  // auto, always, never
  unsigned connections = 16;
  std::string cacert;
};

int RunForward(Store& store, const ForwardArgs& a) {
  link::ForwardOptions o;
  o.link = a.link;
  o.window = a.window;
  o.connections = a.connections;
  o.ca_file = a.cacert;
  o.compress = a.compress == "always"  ? link::Compress::kAlways
               : a.compress == "never" ? link::Compress::kNever
                                       : link::Compress::kAuto;
  auto m = ParseMoverOptions(a);
  if (!m.ok()) return cli::Fail(m.status());
  o.follow = m->follow;
  o.timeout_ms = m->timeout_ms;
  o.retry_ms = m->retry_ms;
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
  AddMoverOptions(*sub, *a, "out;LINK");
  sub->add_option("--window", a->window,
                  "Messages sent and not yet acknowledged, at most (default 10000)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 1000000));
  sub->add_option("--compress", a->compress,
                  "Compress the messages (zstd) when the far side can decompress them: auto "
                  "(while that is faster, the default), always, or never")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_option("--connections", a->connections,
                  "An HTTP link's POSTs in flight at once, each on its own kept-alive "
                  "connection (default 16)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 256));
  sub->add_option("--cacert", a->cacert,
                  "An https:// link's far certificate is checked against these CA certificates "
                  "(PEM) instead of the system's")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  return {sub, [a](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            return RunForward(**store, *a);
          }};
}

}  // namespace mq::admin
