// mq-admin accept
//   The far end of a link: reads a forward's stream on stdin, stores its messages, answers on
//   stdout. The engine: lib/link/accept.hpp; the session: lib/link/forward.hpp.
#include <signal.h>

#include "admin.hpp"
#include "base/units.hpp"
#include "link/accept.hpp"

namespace mq::admin {

Command SetupAccept(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand(
      "accept",
      "The far end of a link: read a forward's stream on stdin, store its messages, answer on "
      "stdout (run by the link's command, e.g. over ssh)");
  auto idle = std::make_shared<std::string>("5m");
  sub->add_option("--idle-timeout", *idle,
                  "End the session when the sender says nothing for DURATION (default 5m; "
                  "forward writes a keepalive every 30s); infinite: never")
      ->type_name("DURATION");
  return {sub, [idle](Context& ctx) {
            auto ms = ParseDuration(*idle);
            if (!ms.ok()) return cli::Fail(ms.status());
            if (*ms == 0)
              return cli::Fail(Status::InvalidArg("--idle-timeout 0 would end every session at "
                                                  "once: give a duration, or infinite"));
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            ::signal(SIGPIPE, SIG_IGN);  // a forward that went away is EPIPE
            link::Acceptor acc(**store, 0, 1);
            acc.SetIdleTimeout(*ms);  // kInfinite (-1): never
            link::AcceptResult r = acc.Run();
            if (r.status.ok()) return 0;
            // Shown once: by forward, with the link's name, when it reports it.
            return r.reported_by_sender ? ExitCode(r.status) : cli::Fail(r.status);
          }};
}

}  // namespace mq::admin
