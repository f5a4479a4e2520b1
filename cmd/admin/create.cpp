// mq-admin create QUEUE [--exist-ok] [--label TEXT] [--quota SIZE] [--max-message-size SIZE]
//   [--transactional] [--max-retries N] [--poison subqueue|deadletter|disable]
//   [--dedup-window DURATION] [--journal] [--journal-quota SIZE] [--retention on|off]
// mq-admin set QUEUE [the same but --transactional] [--status on|off] [--no-journal]
#include "admin.hpp"

namespace mq::admin {

namespace {

struct Args {
  std::string queue;
  QueueOptions opts;
  bool exist_ok = false;
};

Command Setup(CLI::App& app, bool create) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(create ? "create" : "set",
                                 create ? "Create a queue" : "Change a queue's settings");
  sub->add_option("QUEUE", args->queue, "Queue name")->required();
  AddQueueOptions(*sub, args->opts, create);
  if (create)
    sub->add_flag("--exist-ok", args->exist_ok,
                  "Succeed if the queue exists with the settings given (as mkdir -p); a setting "
                  "that differs is an error (exit 5)");
  return {sub, [args, sub, create](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto settings = MakeSettings(*sub, args->opts);
            if (!settings.ok()) return cli::Fail(settings.status().WithSubject(ref->Full()));
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = create ? (*store)->CreateQueue(*ref, *settings, args->exist_ok)
                              : (*store)->UpdateQueue(*ref, *settings);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(ref->Full()));
          }};
}

}  // namespace

Command SetupCreate(CLI::App& app, Context&) { return Setup(app, true); }
Command SetupSet(CLI::App& app, Context&) { return Setup(app, false); }

}  // namespace mq::admin
