// mq-admin end-conversation HANDLE [--error CODE --description TEXT]
//   END CONVERSATION: queues Service Broker's EndDialog message (or, with --error, its Error
//   message with an XML body) for the conversation, after which sends on it fail (exit 5),
//   and removes the messages RETENTION kept for it. On an ended conversation it only removes
//   retained messages.
// mq-admin conversations [--json]
//   Each conversation: handle, queue, group, state, priority, messages in the queue, next
//   sequence number, and who holds its group's lock (lease and pid) if anyone.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/codec.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupEndConversation(CLI::App& app, Context&) {
  struct Args {
    std::string handle;
    int64_t code = 0;
    std::string description;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("end-conversation",
                                 "End a conversation: queue EndDialog (or Error) for it");
  sub->add_option("HANDLE", args->handle, "Conversation handle (UUID)")->required();
  auto* code = sub->add_option("--error", args->code,
                               "End with an error: queue the Error system message with CODE")
                   ->type_name("CODE");
  auto* desc = sub->add_option("--description", args->description,
                               "The error's description (with --error)")
                   ->type_name("TEXT");
  code->needs(desc);
  desc->needs(code);
  return {sub, [args, sub](Context& ctx) {
            auto h = ParseGuid(args->handle);
            if (!h || IsNil(*h))
              return cli::Fail(Status(Code::kInvalidArg,
                                      fmt::format("invalid conversation handle '{}': expected "
                                                  "a UUID",
                                                  args->handle)));
            // The Error body is XML 1.0: no control characters but tab and newlines, UTF-8.
            for (unsigned char c : args->description)
              if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                return cli::Fail(Status(
                    Code::kInvalidArg,
                    fmt::format("--description has control character 0x{:02X}, which XML "
                                "cannot carry",
                                c)));
            if (!IsValidUtf8(args->description))
              return cli::Fail(Status(Code::kInvalidArg, "--description is not valid UTF-8"));
            EndOptions o;
            o.error = sub->count("--error") > 0;
            o.code = args->code;
            o.description = args->description;
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            auto n = (*store)->EndConversation(*h, o);
            if (!n.ok()) return cli::Fail(n.status());
            return 0;
          }};
}

Command SetupConversations(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("conversations", "List conversations and their groups");
  AddJsonOption(*sub, *json, "One JSON object per conversation");
  return {sub, [json](Context& ctx) {
            auto store = ctx.Open();
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
