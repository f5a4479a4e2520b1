// mq-admin sweep: in every queue, expire (dead-letter, NACK) messages past their deadline, make
//   due delayed messages visible (readers do that too whenever they meet one), return the
//   leases of dead holders and expired leases, and forget expired dedup keys (Store::Sweep).
//   Safe from cron (the mq-sweep.timer unit runs it every minute).
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
