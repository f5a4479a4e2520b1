// mq-admin move QUEUE LOOKUP_ID --to SUBQUEUE: MSMQ MoveMessage. Moves one visible message
// from a queue (or one of its subqueues) to another subqueue of the same queue, keeping its
// lookup id, in one transaction. SUBQUEUE is a name ("retry") or a reference
// ("orders;retry"); a subqueue is made on first use.
#include <fmt/format.h>

#include "admin.hpp"

namespace mq::admin {

Command SetupMove(CLI::App& app, Context&) {
  struct Args {
    std::string queue, to;
    uint64_t lookup_id = 0;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "move", "Move a message to a subqueue, keeping its lookup id (MSMQ MoveMessage)");
  sub->add_option("QUEUE", args->queue, "The queue or subqueue the message is in")->required();
  sub->add_option("LOOKUP_ID", args->lookup_id, "The message's lookup id")
      ->required()
      ->check(cli::WholeNumber(0, cli::kNoLimit));
  sub->add_option("--to", args->to, "The subqueue: NAME or QUEUE;NAME")
      ->type_name("SUBQUEUE")
      ->required();
  return {sub, [args](Context& ctx) {
            auto from = cli::ParseQueueArg(args->queue);
            if (!from.ok()) return cli::Fail(from.status());
            if (args->to == from->base)
              return cli::Fail(Status::UnsupportedFormatnameOperation(
                  "--to names a subqueue; mq-admin requeue returns messages "
                  "to the queue",
                  args->to));
            std::string to_text = args->to.find(';') == std::string::npos
                                      ? fmt::format("{};{}", from->base, args->to)
                                      : args->to;
            auto to = cli::ParseQueueArg(to_text);
            if (!to.ok()) return cli::Fail(to.status());
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->MoveToSubqueue(*from, args->lookup_id, *to);
            return s.ok() ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
