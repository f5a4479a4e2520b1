// mq-admin compact [--wait DURATION]: rewrites the store to its live size (issue 12).
//
// LMDB never gives pages back to the file system: after a purge or a drained backlog the
// file stays at its peak size. compact takes the store lock (paths.hpp) exclusively, so it
// runs only when no other process has the store open; processes that start meanwhile wait
// for it and then open the new file. It copies the live pages into compact.tmp/ with LMDB's
// compacting copy, syncs the copy, renames it over data.mdb and removes lock.mdb. A crash
// leaves the old file or the new one, whole; either way nothing is lost.
#include <fmt/format.h>

#include "admin.hpp"
#include "progress.hpp"
#include "base/units.hpp"

namespace mq::admin {

std::shared_ptr<std::string> AddAloneOptions(CLI::App& sub, Context& ctx) {
  auto wait = std::make_shared<std::string>("10s");
  sub.add_option("-w,--wait", *wait,
                 "How long to wait for the store's other users to leave (default 10s)")
      ->type_name("DURATION");
  AddQuietOption(sub, ctx.quiet);
  return wait;
}

Result<std::unique_ptr<Store>> OpenAlone(const Context& ctx, const std::string& wait) {
  auto ms = ParseDuration(wait);
  if (!ms.ok()) return ms.status();
  OpenOptions o;
  o.dir = ctx.store.dir;
  o.exclusive_wait_ms = *ms < 0 ? INT64_MAX / 2 : *ms;
  o.older_format_ok = true;  // upgrade's purpose; compact copies whatever format it finds
  return Store::Open(o);
}

Command SetupCompact(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand(
      "compact", "Rewrite the store to its live size (when no other process has it open)");
  auto wait = AddAloneOptions(*sub, ctx);
  return {sub, [wait, &ctx](Context&) {
            Progress progress("compact", ctx.quiet);
            auto store = OpenAlone(ctx, *wait);
            if (!store.ok()) return cli::Fail(store.status());
            auto r = (*store)->Compact();
            if (!r.ok()) return cli::Fail(r.status());
            progress.Done((*store)->dir(), fmt::format("compacted: data.mdb {} -> {} bytes",
                                                       r->before, r->after));
            return 0;
          }};
}

}  // namespace mq::admin
