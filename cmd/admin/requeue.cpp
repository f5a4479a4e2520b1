// mq-admin requeue QUEUE [--id MSGID | --all] [--ttbr DURATION]: move messages of a poison subqueue
//   (QUEUE;poison) or a dead-letter queue back to the queue they were going to.
#include "admin.hpp"
#include "base/ids.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupRequeue(CLI::App& app, Context&) {
  struct Args {
    std::string queue, id, ttbr;
    bool all = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "requeue", "Move poison or dead-letter messages back to the queue they were going to");
  sub->add_option("QUEUE", args->queue, "QUEUE;poison, system;deadletter or system;deadxact")
      ->required();
  auto* id = sub->add_option("--id", args->id, "Only this message")->type_name("MSGID");
  sub->add_flag("--all", args->all, "Every message (the default)")->excludes(id);
  sub->add_option("--ttbr", args->ttbr,
                  "New time to be received, from now (default: the one each was sent with; "
                  "infinite: none)")
      ->type_name("DURATION");
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            std::string raw;
            if (!args->id.empty()) {
              auto id = ParseMessageId(args->id);
              if (!id) return cli::Fail(Status::InvalidArg("invalid message id", args->id));
              raw = *id;
            }
            std::optional<int64_t> ttbr;
            if (!args->ttbr.empty()) {
              auto d = ParseDuration(args->ttbr);
              if (!d.ok()) return cli::Fail(d.status());
              ttbr = *d == kInfinite ? -1 : *d;
            }
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            auto n = (*store)->Requeue(*ref, raw, ttbr);
            if (!n.ok()) return cli::Fail(n.status().WithSubject(ref->Full()));
            return 0;
          }};
}

}  // namespace mq::admin
