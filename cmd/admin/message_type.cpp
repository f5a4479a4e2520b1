// mq-admin message-type create NAME [--validation none|empty|well-formed-xml]
// mq-admin message-type delete NAME
// mq-admin message-type list [--json]
//   Service Broker CREATE/DROP MESSAGE TYPE. A send with --message-type NAME is checked
//   against NAME's validation in its transaction: a body that fails stores nothing (exit 7).
//   DEFAULT and the Service Broker system types are built in.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "store/conversation.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupMessageType(CLI::App& app, Context&) {
  struct Args {
    std::string name;
    std::string validation = "none";
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("message-type", "Create, delete or list message types");
  sub->require_subcommand(1);
  auto* create = sub->add_subcommand("create", "Create a message type");
  create->add_option("NAME", args->name, "Message type name, up to 128 characters")->required();
  create->add_option("--validation", args->validation,
                     "What a body must be: none (default), empty, or well-formed-xml")
      ->type_name("KIND")
      ->check(CLI::IsMember({"none", "empty", "well-formed-xml"}));
  auto* del = sub->add_subcommand("delete", "Delete a message type");
  del->add_option("NAME", args->name, "Message type name")->required();
  auto* list = sub->add_subcommand("list", "List message types and their validation");
  AddJsonOption(*list, args->json, "One JSON object per message type");
  return {sub, [args, create, del, list](Context& ctx) {
            auto store = list->parsed() ? ctx.OpenForReading() : ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            if (create->parsed()) {
              auto v = ParseValidation(args->validation);
              if (!v.ok()) return cli::Fail(v.status());
              Status s = (*store)->CreateMessageType(args->name, *v);
              return s.ok() ? 0 : cli::Fail(s);
            }
            if (del->parsed()) {
              Status s = (*store)->DeleteMessageType(args->name);
              return s.ok() ? 0 : cli::Fail(s);
            }
            auto types = (*store)->ListMessageTypes();
            if (!types.ok()) return cli::Fail(types.status());
            FdWriter out(1, "stdout");
            for (const MessageTypeInfo& t : *types) {
              if (args->json) {
                nlohmann::ordered_json j = {
                    {"name", t.name},
                    {"validation", std::string(1, t.validation)},
                    {"validation_name", ValidationName(t.validation)},
                    {"builtin", t.builtin},
                    {"created", t.created ? nlohmann::ordered_json(FormatTime(t.created))
                                          : nlohmann::ordered_json(nullptr)}};
                out.Append(j.dump() + "\n");
              } else {
                out.Append(fmt::format("{}\t{}\t{}\n", t.name, t.validation,
                                       ValidationName(t.validation)));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
