// mq-admin delete QUEUE: remove a queue with its messages, journal and subqueues.
#include "admin.hpp"

namespace mq::admin {

Command SetupDelete(CLI::App& app, Context&) {
  auto queue = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("delete", "Delete a queue and everything in it");
  sub->add_option("QUEUE", *queue, "Queue name")->required();
  return {sub, [queue](Context& ctx) {
            auto ref = cli::ParseQueueArg(*queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->DeleteQueue(*ref);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(ref->Full()));
          }};
}

}  // namespace mq::admin
