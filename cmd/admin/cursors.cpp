// mq-admin cursors [--json]: the named cursors of the store: queue, name, position (priority
//   and lookup id of the message it stands on, "start" before the first message of a queue
//   that was empty, or "unset"), and whether a process holds it.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"

namespace mq::admin {

Command SetupCursors(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("cursors", "List the named cursors");
  AddJsonOption(*sub, *json, "One JSON object per cursor");
  return {sub, [json](Context& ctx) {
            auto store = ctx.OpenForReading();
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
                    {"lookup_id", c.positioned && !c.at_start
                                      ? nlohmann::ordered_json(c.lookup_id)
                                      : nlohmann::ordered_json(nullptr)},
                    {"priority", c.positioned && !c.at_start
                                     ? nlohmann::ordered_json(c.priority)
                                     : nlohmann::ordered_json(nullptr)},
                    {"in_use", c.holder}};
                out.Append(j.dump() + "\n");
              } else {
                out.Append(fmt::format("{}\t{}\t{}\t{}\n", c.queue, c.name,
                                       c.at_start     ? std::string("start")
                                       : c.positioned ? fmt::format("{}", c.lookup_id)
                                                      : std::string("unset"),
                                       c.holder ? "in-use" : "idle"));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
