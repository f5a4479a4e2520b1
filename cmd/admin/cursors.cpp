// mq-admin cursors [--json]: the named cursors of the store: queue, name, position (priority
//   and lookup id of the message it stands on, or "unset"), and whether a process holds it.
// mq-admin delete-cursor QUEUE NAME: forget a cursor.
// mq-admin sweep: make due delayed messages visible in every queue (safe from cron; readers
//   do it too whenever they meet one).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"

namespace mq::admin {

Command SetupCursors(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("cursors", "List the named cursors");
  AddJsonOption(*sub, *json, "One JSON object per cursor");
  return {sub, [json](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            auto list = (*store)->ListCursors();
            if (!list.ok()) return cli::Fail(list.status());
            FdWriter out(1, "stdout");
            for (const CursorInfo& c : *list) {
              if (*json) {
                nlohmann::ordered_json j = {
                    {"queue", c.queue},
                    {"cursor", c.name},
                    {"positioned", c.positioned},
                    {"lookup_id", c.positioned ? nlohmann::ordered_json(c.lookup_id)
                                               : nlohmann::ordered_json(nullptr)},
                    {"priority", c.positioned ? nlohmann::ordered_json(c.priority)
                                              : nlohmann::ordered_json(nullptr)},
                    {"in_use", c.holder}};
                out.Append(j.dump() + "\n");
              } else {
                out.Append(fmt::format("{}\t{}\t{}\t{}\n", c.queue, c.name,
                                       c.positioned ? fmt::format("{}", c.lookup_id) : "unset",
                                       c.holder ? "in-use" : "idle"));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

Command SetupDeleteCursor(CLI::App& app, Context&) {
  struct Args {
    std::string queue, name;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("delete-cursor", "Forget a named cursor");
  sub->add_option("QUEUE", args->queue, "Queue of the cursor")->required();
  sub->add_option("NAME", args->name, "Cursor name")->required();
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->DeleteCursor(*ref, args->name);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(ref->Full()));
          }};
}

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
