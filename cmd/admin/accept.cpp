// mq-admin accept
//   The far end of a link: reads a forward's stream on stdin, stores its messages, answers on
//   stdout. The engine: lib/link/accept.hpp; the session: lib/link/forward.hpp.
#include <signal.h>

#include "admin.hpp"
#include "link/accept.hpp"

namespace mq::admin {

Command SetupAccept(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand(
      "accept",
      "The far end of a link: read a forward's stream on stdin, store its messages, answer on "
      "stdout (run by the link's command, e.g. over ssh)");
  return {sub, [](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            ::signal(SIGPIPE, SIG_IGN);  // a forward that went away is EPIPE
            link::Acceptor acc(**store, 0, 1);
            link::AcceptResult r = acc.Run();
            if (r.status.ok()) return 0;
            // Shown once: by forward, with the link's name, when it reports it.
            return r.reported_by_sender ? ExitCode(r.status) : cli::Fail(r.status);
          }};
}

}  // namespace mq::admin
