// mq-admin end-conversation HANDLE [--error CODE --description TEXT]
//   END CONVERSATION: queues Service Broker's EndDialog message (or, with --error, its Error
//   message with an XML body) for the conversation, after which sends on it fail (exit 5),
//   and removes the messages RETENTION kept for it. On an ended conversation it only removes
//   retained messages.
#include <fmt/format.h>

#include "admin.hpp"
#include "base/codec.hpp"

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
              return cli::Fail(
                  Status::InvalidArg(fmt::format("invalid conversation handle '{}': expected "
                                                 "a UUID",
                                                 args->handle)));
            // The Error body is XML 1.0: no control characters but tab and newlines, UTF-8.
            for (unsigned char c : args->description)
              if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                return cli::Fail(Status::InvalidArg(
                    fmt::format("--description has control character 0x{:02X}, which XML "
                                "cannot carry",
                                c)));
            if (!IsValidUtf8(args->description))
              return cli::Fail(Status::InvalidArg("--description is not valid UTF-8"));
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

}  // namespace mq::admin
