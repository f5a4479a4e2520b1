// mq-admin upgrade [--wait DURATION]: brings an older store to this mq's format (issue 25).
//
// Format 2 gives the store an id prefix and each queue a native id source, so that the id of
// a message sent from then on says where it is and needs no index entry
// (lib/store/message_table.hpp). An mq that knows only format 1 refuses the store afterwards,
// so upgrade, like compact, takes the store alone: no older mq may still have it open.
// Format 4 keys each record by its place in the delivery order (lib/store/schema.hpp): the
// upgrade moves every record, in one transaction; an mq of format 4 opens an older store
// only for this.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "admin.hpp"
#include "base/units.hpp"
#include "progress.hpp"

namespace mq::admin {
namespace {

// What the upgrade changed: " (5 queues, 1,000 messages moved)", or nothing.
std::string Counts(const Store::UpgradeReport& r) {
  std::vector<std::string> parts;
  if (r.queues) parts.push_back(fmt::format("{} queues", r.queues));
  if (r.messages) parts.push_back(fmt::format("{} messages moved", r.messages));
  return parts.empty() ? std::string() : fmt::format(" ({})", fmt::join(parts, ", "));
}

}  // namespace

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
                                            r->before, r->after, Counts(*r)));
            return 0;
          }};
}

}  // namespace mq::admin
