// mq-admin purge QUEUE: remove every message of a queue (or subqueue, or journal).
#include <fmt/format.h>

#include "admin.hpp"
#include "progress.hpp"

namespace mq::admin {

Command SetupPurge(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("purge", "Remove every message of a queue");
  sub->add_option("QUEUE", *queue, "Queue, subqueue or journal")->required();
  AddQuietOption(*sub, ctx.quiet);
  return {sub, [queue](Context& ctx) {
            auto ref = cli::ParseQueueArg(*queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Progress progress("purge " + ref->Full(), ctx.quiet);
            // The bytes the purge freed: the queue's before, less what is left (a message
            // sent meanwhile is not counted).
            auto before = (*store)->StatQueue(*ref);
            auto n = (*store)->Purge(*ref);
            if (!n.ok()) return cli::Fail(n.status().WithSubject(ref->Full()));
            auto after = (*store)->StatQueue(*ref);
            uint64_t freed = before.ok() && after.ok() && before->info.bytes > after->info.bytes
                                 ? before->info.bytes - after->info.bytes
                                 : 0;
            progress.Done(ref->Full(),
                          fmt::format("purged {}, {}", Messages(*n), HumanBytes(freed)));
            return 0;
          }};
}

}  // namespace mq::admin
