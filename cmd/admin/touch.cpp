// mq-admin touch TOKEN [--lease D]: extend a --lease (beanstalkd's touch, SQS's
//   ChangeMessageVisibility): it now ends D from now, or without --lease its original length
//   from now. A worker on a long job touches its token now and then instead of asking for a
//   long lease up front. Every message of the lease stays Locked under the same token. An
//   unknown or expired token is exit 5, as for ack and nack (an expired lease has rolled back).
#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupTouch(CLI::App& app, Context&) {
  struct Args {
    std::string token;
    std::string lease;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("touch", "Extend a lease: keep its messages Locked longer");
  sub->add_option("TOKEN", args->token, "Lease token printed by mq-receive --lease")->required();
  sub->add_option("--lease", args->lease,
                  "The lease now ends DURATION from now (default: its original length)")
      ->type_name("DURATION");
  return {sub, [args](Context& ctx) {
            int64_t lease = 0;
            if (!args->lease.empty()) {
              auto d = ParseDuration(args->lease);
              if (!d.ok()) return cli::Fail(d.status().WithSubject("--lease"));
              if (*d <= 0)
                return cli::Fail(
                    Status::InvalidArg("--lease must be over 0 and finite", "--lease"));
              lease = *d;
            }
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            FinishReport report;
            auto s = (*store)->TouchToken(args->token, lease, &report);
            for (const auto& note : report.notes) cli::Note("", note);
            return s.ok() ? 0 : cli::Fail(s.status());
          }};
}

}  // namespace mq::admin
