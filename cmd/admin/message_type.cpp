// mq-admin message-type create NAME [--validation none|empty|well-formed-xml]
// mq-admin message-type delete NAME
// mq-admin message-type list [--json]
// mq-admin message-type check (NAME | --validation KIND) [--null]
//   Checks bodies read from stdin as a send of type NAME would, and sends nothing: the whole
//   input as one body, or with --null each NUL-terminated body. One line per body on stdout,
//   "ok" or "invalid: requires WHAT: WHY", written as soon as that body is checked; exit 0 if
//   every body passes, 7 if one does not. --validation needs no store. The statically linked
//   tools check XML through it (lib/store/xml_check.hpp).
//   Service Broker CREATE/DROP MESSAGE TYPE. A send with --message-type NAME is checked
//   against NAME's validation in its transaction: a body that fails stores nothing (exit 7).
//   DEFAULT and the Service Broker system types are built in.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/units.hpp"
#include "send/input.hpp"
#include "store/conversation.hpp"

namespace mq::admin {

namespace {

struct MessageTypeArgs {
  std::string name;
  std::string validation = "none";
  bool json = false;
  bool null = false;
};

// mq-admin message-type check: each body's line as soon as it is checked (a static tool waits
// for it, its body written).
int CheckBodies(Context& ctx, const MessageTypeArgs& a, bool by_kind) {
  if (!by_kind && a.name.empty())
    return cli::Fail(Status::InvalidArg("message-type check needs NAME or --validation"));
  char validation = 0;
  if (by_kind) {
    auto v = ParseValidation(a.validation);
    if (!v.ok()) return cli::Fail(v.status());
    validation = *v;
  } else {
    auto store = ctx.OpenForReading();
    if (!store.ok()) return cli::Fail(store.status());
    auto types = (*store)->ListMessageTypes();
    if (!types.ok()) return cli::Fail(types.status());
    for (const MessageTypeInfo& t : *types)
      if (t.name == a.name) validation = t.validation;
    if (!validation)
      return cli::Fail(Status::InvalidArg(fmt::format("no message type '{}'", a.name)));
  }
  FdWriter out(1, "stdout");
  bool all_ok = true;
  auto one = [&](std::string_view body) -> Status {
    auto fault = BodyFault(validation, body);
    if (!fault.ok()) return fault.status();
    std::string line = fault->empty() ? "ok" : "invalid: requires " + *fault;
    for (char& c : line)
      if (c == '\n' || c == '\r') c = ' ';
    all_ok = all_ok && fault->empty();
    out.Append(line + "\n");
    return out.Flush();
  };
  Status read;
  if (a.null) {
    read = ForEachRecord(0, '\0', one);
  } else {
    std::string body;
    read = ReadAll(0, "stdin", body);
    if (read.ok()) read = one(body);
  }
  if (read.code() == Code::kBrokenPipe) return 0;
  if (!read.ok()) return cli::Fail(read);
  if (all_ok) return 0;
  return cli::Fail(Status::ValidationFailed(
      fmt::format("a body does not pass the validation of {}",
                  by_kind ? a.validation : "message type '" + a.name + "'")));
}

}  // namespace

Command SetupMessageType(CLI::App& app, Context&) {
  using Args = MessageTypeArgs;
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("message-type", "Create, delete, list or check message types");
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
  auto* check = sub->add_subcommand(
      "check", "Check bodies from stdin against a message type's validation, sending nothing");
  auto* check_name = check->add_option("NAME", args->name, "Message type name");
  auto* check_kind =
      check
          ->add_option("--validation", args->validation,
                       "Check against this validation instead of a type's (needs no store)")
          ->type_name("KIND")
          ->check(CLI::IsMember({"none", "empty", "well-formed-xml"}));
  check_name->excludes(check_kind);
  check->add_flag("-0,--null", args->null,
                  "Bodies end with a NUL byte, each checked as it comes (default: one body)");
  return {sub, [args, create, del, list, check, check_kind](Context& ctx) {
            if (check->parsed()) return CheckBodies(ctx, *args, check_kind->count() > 0);
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
