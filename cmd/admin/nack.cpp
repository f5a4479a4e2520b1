// mq-admin nack TOKEN [--delay D]: roll a --lease back (the messages return, after D if
//   given). An unknown or expired token is exit 5 and changes nothing.
#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupNack(CLI::App& app, Context&) {
  struct Args {
    std::string token;
    std::string delay;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("nack", "Roll back a lease: return its messages");
  sub->add_option("TOKEN", args->token, "Lease token printed by mq-receive --lease")->required();
  sub->add_option("--delay", args->delay, "Return the messages after DURATION")
      ->type_name("DURATION");
  return {sub, [args](Context& ctx) {
            int64_t delay = 0;
            if (!args->delay.empty()) {
              auto d = ParseDuration(args->delay);
              if (!d.ok()) return cli::Fail(d.status());
              if (*d < 0) return cli::Fail(Status::InvalidArg("--delay must be finite"));
              delay = *d;
            }
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            FinishReport report;
            Status s = (*store)->FinishToken(args->token, false, delay, &report);
            for (const auto& note : report.notes) cli::Note("", note);
            return s.ok() ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
