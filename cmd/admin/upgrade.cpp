// mq-admin upgrade [--wait DURATION]: brings an older store to this mq's format (issue 25).
//
// Format 2 gives the store an id prefix and each queue a native id source, so that the id of
// a message sent from then on says where it is and needs no index entry
// (lib/store/message_table.hpp). An mq that knows only format 1 refuses the store afterwards,
// so upgrade, like compact, takes the store alone: no older mq may still have it open.
#include <fmt/format.h>

#include "admin.hpp"
#include "base/units.hpp"
#include "progress.hpp"

namespace mq::admin {

Command SetupUpgrade(CLI::App& app, Context& ctx) {
  auto* sub =
      app.add_subcommand("upgrade",
                         "Bring the store to this mq's format (when no other process has it open)");
  auto wait = AddAloneOptions(*sub, ctx);
  return {sub, [wait, &ctx](Context&) {
            Progress progress("upgrade", ctx.quiet);
            auto store = OpenAlone(ctx, *wait);
            if (!store.ok()) return cli::Fail(store.status());
            auto r = (*store)->Upgrade();
            if (!r.ok()) return cli::Fail(r.status());
            progress.Done((*store)->dir(),
                          r->before == r->after
                              ? fmt::format("already format {}: nothing to do", r->after)
                              : fmt::format("upgraded: format {} -> {}{}; an mq older than "
                                            "this one no longer opens it",
                                            r->before, r->after,
                                            r->queues ? fmt::format(" ({} queues)", r->queues)
                                                      : std::string()));
            return 0;
          }};
}

}  // namespace mq::admin
