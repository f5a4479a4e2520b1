// mq-admin set QUEUE [the options of create but --transactional and --exist-ok] [--status on|off]
//   [--no-journal]: change a queue's settings.
#include "admin.hpp"

namespace mq::admin {

Command SetupSet(CLI::App& app, Context&) {
  struct Args {
    std::string queue;
    QueueOptions opts;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("set", "Change a queue's settings");
  sub->add_option("QUEUE", args->queue, "Queue name")->required();
  AddQueueOptions(*sub, args->opts, false);
  return {sub, [args, sub](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto settings = MakeSettings(*sub, args->opts);
            if (!settings.ok()) return cli::Fail(settings.status().WithSubject(ref->Full()));
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->UpdateQueue(*ref, *settings);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(ref->Full()));
          }};
}

}  // namespace mq::admin
