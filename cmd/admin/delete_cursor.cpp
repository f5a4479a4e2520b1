// mq-admin delete-cursor QUEUE NAME: forget a cursor.
#include "admin.hpp"

namespace mq::admin {

Command SetupDeleteCursor(CLI::App& app, Context&) {
  struct Args {
    std::string queue, name;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("delete-cursor", "Forget a named cursor");
  sub->add_option("QUEUE", args->queue, "Queue of the cursor")->required();
  sub->add_option("NAME", args->name, "Cursor name")->required();
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->DeleteCursor(*ref, args->name);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(ref->Full()));
          }};
}

}  // namespace mq::admin
