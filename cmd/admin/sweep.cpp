// mq-admin sweep: make due delayed messages visible in every queue (safe from cron; readers
//   do it too whenever they meet one).
#include "admin.hpp"

namespace mq::admin {

Command SetupSweep(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand(
      "sweep",
      "Expire and dead-letter, make due delayed messages visible, return stale leases");
  return {sub, [](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            auto n = (*store)->Sweep();
            if (!n.ok()) return cli::Fail(n.status());
            return 0;
          }};
}

}  // namespace mq::admin
