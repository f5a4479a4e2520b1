// mq-admin locks [--json]: the open leases: queue, lease id, holder (pid, or the expiry of a
//   token), since when, whether the holder is still there, and the lookup ids it holds.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupLocks(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("locks", "List open transactional receives and leases");
  AddJsonOption(*sub, *json, "One JSON object per lease");
  return {sub, [json](Context& ctx) {
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            auto list = (*store)->ListLeases();
            if (!list.ok()) return cli::Fail(list.status());
            FdWriter out(1, "stdout");
            for (const LeaseInfo& l : *list) {
              std::string ids;
              for (uint64_t id : l.lookup_ids) {
                if (!ids.empty()) ids += ',';
                ids += std::to_string(id);
              }
              if (*json) {
                nlohmann::ordered_json j = {
                    {"queue", l.queue},
                    {"lease", l.lease_id},
                    {"kind", l.process ? "process" : "token"},
                    {"pid", l.pid},
                    {"since", FormatTime(l.since)},
                    {"expires", l.expires ? nlohmann::ordered_json(FormatTime(l.expires))
                                          : nlohmann::ordered_json(nullptr)},
                    {"alive", l.alive},
                    {"lookup_ids", l.lookup_ids}};
                out.Append(j.dump() + "\n");
              } else {
                out.Append(fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", l.queue, l.lease_id,
                                       l.process ? fmt::format("pid {}", l.pid)
                                                 : "expires " + FormatTime(l.expires),
                                       FormatTime(l.since), l.alive ? "alive" : "stale", ids));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
