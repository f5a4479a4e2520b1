// mq-admin ack TOKEN: commit a --lease (its messages are removed).
// mq-admin nack TOKEN [--delay D]: roll it back (the messages return, after D if given).
//   An unknown or expired token is exit 5 and changes nothing.
#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

namespace {

Command SetupEnd(CLI::App& app, bool commit) {
  struct Args {
    std::string token;
    std::string delay;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(commit ? "ack" : "nack",
                                 commit ? "Commit a lease: remove its messages"
                                        : "Roll back a lease: return its messages");
  sub->add_option("TOKEN", args->token, "Lease token printed by mq-receive --lease")->required();
  if (!commit)
    sub->add_option("--delay", args->delay, "Return the messages after DURATION")
        ->type_name("DURATION");
  return {sub, [args, commit](Context& ctx) {
            int64_t delay = 0;
            if (!args->delay.empty()) {
              auto d = ParseDuration(args->delay);
              if (!d.ok()) return cli::Fail(d.status());
              if (*d < 0) return cli::Fail(Status(Code::kInvalidArg, "--delay must be finite"));
              delay = *d;
            }
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            FinishReport report;
            Status s = (*store)->FinishToken(args->token, commit, delay, &report);
            for (const auto& note : report.notes) cli::Note("", note);
            return s.ok() ? 0 : cli::Fail(s);
          }};
}

}  // namespace

Command SetupAck(CLI::App& app, Context&) { return SetupEnd(app, true); }
Command SetupNack(CLI::App& app, Context&) { return SetupEnd(app, false); }

}  // namespace mq::admin
