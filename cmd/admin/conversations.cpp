// mq-admin conversations [--json]
//   Each conversation: handle, queue, group, state, priority, messages in the queue, next
//   sequence number, and who holds its group's lock (lease and pid) if anyone.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupConversations(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("conversations", "List conversations and their groups");
  AddJsonOption(*sub, *json, "One JSON object per conversation");
  return {sub, [json](Context& ctx) {
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            auto list = (*store)->ListConversations();
            if (!list.ok()) return cli::Fail(list.status());
            FdWriter out(1, "stdout");
            for (const ConversationInfo& c : *list) {
              std::string holder =
                  !c.locked         ? std::string("-")
                  : c.holder_pid != 0 ? fmt::format("lease {} pid {}", c.holder_lease, c.holder_pid)
                                      : fmt::format("lease {} token", c.holder_lease);
              if (*json) {
                nlohmann::ordered_json j = {
                    {"conversation_handle", FormatGuid(c.handle)},
                    {"conversation_group_id", FormatGuid(c.group)},
                    {"queue", c.queue},
                    {"state", c.state},
                    {"priority", c.priority},
                    {"messages", c.messages},
                    {"next_sequence_number", c.next_seq},
                    {"service_name", c.service},
                    {"service_contract_name", c.contract},
                    {"created", FormatTime(c.created)},
                    {"locked", c.locked},
                    {"lock_lease", c.locked ? nlohmann::ordered_json(c.holder_lease)
                                            : nlohmann::ordered_json(nullptr)},
                    {"lock_pid", c.locked && c.holder_pid
                                     ? nlohmann::ordered_json(c.holder_pid)
                                     : nlohmann::ordered_json(nullptr)}};
                out.Append(j.dump() + "\n");
              } else {
                out.Append(fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", FormatGuid(c.handle),
                                       c.queue, FormatGuid(c.group), c.state, c.messages,
                                       holder));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
