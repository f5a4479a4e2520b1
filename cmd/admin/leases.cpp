// mq-admin ack TOKEN: commit a --lease (its messages are removed).
// mq-admin nack TOKEN [--delay D]: roll it back (the messages return, after D if given).
//   An unknown or expired token is exit 5 and changes nothing.
// mq-admin locks [--json]: the open leases: queue, lease id, holder (pid, or the expiry of a
//   token), since when, whether the holder is still there, and the lookup ids it holds.
// mq-admin requeue QUEUE [--id MSGID | --all] [--ttbr DURATION]: move messages of a poison subqueue
//   (QUEUE;poison) or a dead-letter queue back to the queue they were going to.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/ids.hpp"
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

Command SetupLocks(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("locks", "List open transactional receives and leases");
  AddJsonOption(*sub, *json, "One JSON object per lease");
  return {sub, [json](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            auto list = (*store)->ListLeases();
            if (!list.ok()) return cli::Fail(list.status());
            FdWriter out(1, "stdout");
            for (const LeaseInfo& l : *list) {
              std::string ids;
              for (uint64_t id : l.lookup_ids) {
                if (!ids.empty()) ids += ',';
                ids += std::to_string(id);
              }
              if (*json) {
                nlohmann::ordered_json j = {
                    {"queue", l.queue},
                    {"lease", l.lease_id},
                    {"kind", l.process ? "process" : "token"},
                    {"pid", l.pid},
                    {"since", FormatTime(l.since)},
                    {"expires", l.expires ? nlohmann::ordered_json(FormatTime(l.expires))
                                          : nlohmann::ordered_json(nullptr)},
                    {"alive", l.alive},
                    {"lookup_ids", l.lookup_ids}};
                out.Append(j.dump() + "\n");
              } else {
                out.Append(fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", l.queue, l.lease_id,
                                       l.process ? fmt::format("pid {}", l.pid)
                                                 : "expires " + FormatTime(l.expires),
                                       FormatTime(l.since), l.alive ? "alive" : "stale", ids));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

Command SetupRequeue(CLI::App& app, Context&) {
  struct Args {
    std::string queue, id, ttbr;
    bool all = false;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "requeue", "Move poison or dead-letter messages back to the queue they were going to");
  sub->add_option("QUEUE", args->queue, "QUEUE;poison, system;deadletter or system;deadxact")
      ->required();
  auto* id = sub->add_option("--id", args->id, "Only this message")->type_name("MSGID");
  sub->add_flag("--all", args->all, "Every message (the default)")->excludes(id);
  sub->add_option("--ttbr", args->ttbr,
                  "New time to be received, from now (default: the one each was sent with; "
                  "infinite: none)")
      ->type_name("DURATION");
  return {sub, [args](Context& ctx) {
            auto ref = cli::ParseQueueArg(args->queue);
            if (!ref.ok()) return cli::Fail(ref.status());
            std::string raw;
            if (!args->id.empty()) {
              auto id = ParseMessageId(args->id);
              if (!id)
                return cli::Fail(Status(Code::kInvalidArg, "invalid message id", args->id));
              raw = *id;
            }
            std::optional<int64_t> ttbr;
            if (!args->ttbr.empty()) {
              auto d = ParseDuration(args->ttbr);
              if (!d.ok()) return cli::Fail(d.status());
              ttbr = *d == kInfinite ? -1 : *d;
            }
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            auto n = (*store)->Requeue(*ref, raw, ttbr);
            if (!n.ok()) return cli::Fail(n.status().WithSubject(ref->Full()));
            return 0;
          }};
}

}  // namespace mq::admin
