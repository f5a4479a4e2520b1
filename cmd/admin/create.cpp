// mq-admin create QUEUE [--exist-ok] [--label TEXT] [--quota SIZE] [--max-message-size SIZE]
//   [--transactional] [--max-retries N] [--poison subqueue|deadletter|disable]
//   [--dedup-window DURATION] [--journal] [--journal-quota SIZE] [--retention on|off]
#include "admin.hpp"

namespace mq::admin {

Command SetupCreate(CLI::App& app, Context&) {
  struct Args {
    std::string queue;
    QueueOptions opts;
    bool exist_ok = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("create", "Create a queue");
  sub->add_option("QUEUE", args->queue, "Queue name")->required();
  AddQueueOptions(*sub, args->opts, true);
  sub->add_flag("--exist-ok", args->exist_ok,
                "Succeed if the queue exists with the settings given (as mkdir -p); a setting "
                "that differs is an error (exit 5)");
  return {sub, [args, sub](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto settings = MakeSettings(*sub, args->opts);
            if (!settings.ok()) return cli::Fail(settings.status().WithSubject(ref->Full()));
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->CreateQueue(*ref, *settings, args->exist_ok);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(ref->Full()));
          }};
}

}  // namespace mq::admin
