// mq-admin ack TOKEN: commit a --lease (its messages are removed). An unknown or expired token
//   is exit 5 and changes nothing.
#include "admin.hpp"

namespace mq::admin {

Command SetupAck(CLI::App& app, Context&) {
  auto token = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("ack", "Commit a lease: remove its messages");
  sub->add_option("TOKEN", *token, "Lease token printed by mq-receive --lease")->required();
  return {sub, [token](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            FinishReport report;
            Status s = (*store)->FinishToken(*token, true, 0, &report);
            for (const auto& note : report.notes) cli::Note("", note);
            return s.ok() ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
