// mq-admin stat [QUEUE] [--json | --format prometheus]: message counts, bytes and the age of
// the oldest message, per queue. The prometheus form suits the node exporter's textfile
// collector: mq-admin stat --format prometheus > /var/lib/node_exporter/mq.prom.$$ && mv ...
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "units.hpp"

namespace mq::admin {

namespace {

struct Args {
  std::string queue;
  bool json = false;
  std::string format;
};

std::string PromEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Command SetupStat(CLI::App& app, Context&) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("stat", "Counts, bytes and oldest message age");
  sub->add_option("QUEUE", args->queue, "Only this queue");
  auto* json = sub->add_flag("--json", args->json, "One JSON object per queue");
  sub->add_option("--format", args->format, "Output format: json or prometheus")
      ->type_name("NAME")
      ->check(CLI::IsMember({"json", "prometheus", "text"}))
      ->excludes(json);
  return {sub, [args](Context& ctx) {
            std::vector<QueueRef> refs;
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            if (!args->queue.empty()) {
              auto ref = cli::ParseQueueArg(args->queue);
              if (!ref.ok()) return cli::Fail(ref.status());
              refs.push_back(*ref);
            } else {
              auto queues = (*store)->ListQueues();
              if (!queues.ok()) return cli::Fail(queues.status());
              for (auto& q : *queues) refs.push_back(*ParseQueueRef(q.name));
            }
            std::string format = args->json ? "json" : args->format.empty() ? "text" : args->format;
            int64_t now = NowMs();
            FdWriter out(1, "stdout");
            if (format == "text")
              out.Append(fmt::format("{:<32} {:>10} {:>8} {:>12} {:>10} {}\n", "QUEUE",
                                     "MESSAGES", "DELAYED", "BYTES", "OLDEST", "STATUS"));
            if (format == "prometheus") {
              for (auto [name, help] :
                   {std::pair{"mq_queue_messages", "Messages in the queue."},
                    std::pair{"mq_queue_delayed_messages",
                              "Messages stored but not visible yet (--delay, --at)."},
                    std::pair{"mq_queue_bytes", "Bytes of message records in the queue."},
                    std::pair{"mq_queue_oldest_message_age_seconds",
                              "Age of the oldest message; 0 when empty."},
                    std::pair{"mq_queue_enabled", "1 if the queue's status is ON."},
                    std::pair{"mq_queue_quota_bytes", "Queue quota; 0: none."}})
                out.Append(fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name));
            }
            for (const QueueRef& ref : refs) {
              auto st = (*store)->StatQueue(ref);
              if (!st.ok()) return cli::Fail(st.status().WithSubject(ref.Full()));
              const QueueInfo& q = st->info;
              int64_t age = st->oldest_arrived ? std::max<int64_t>(0, now - st->oldest_arrived) : 0;
              if (format == "json") {
                nlohmann::json j = {
                    {"queue", q.name},
                    {"messages", q.count},
                    {"delayed", q.delayed},
                    {"bytes", q.bytes},
                    {"oldest_age_ms", age},
                    {"oldest_arrived_time",
                     st->oldest_arrived ? nlohmann::json(FormatTime(st->oldest_arrived))
                                        : nlohmann::json(nullptr)},
                    {"status", q.enabled ? "on" : "off"},
                    {"quota", q.quota},
                    {"max_message_size", q.max_message_size},
                    {"label", q.label}};
                out.Append(j.dump() + "\n");
              } else if (format == "prometheus") {
                std::string labels = fmt::format("{{store=\"{}\",queue=\"{}\"}}",
                                                 PromEscape((*store)->dir()), PromEscape(q.name));
                out.Append(fmt::format("mq_queue_messages{} {}\n", labels, q.count));
                out.Append(fmt::format("mq_queue_delayed_messages{} {}\n", labels, q.delayed));
                out.Append(fmt::format("mq_queue_bytes{} {}\n", labels, q.bytes));
                out.Append(fmt::format("mq_queue_oldest_message_age_seconds{} {:.3f}\n", labels,
                                       static_cast<double>(age) / 1000.0));
                out.Append(fmt::format("mq_queue_enabled{} {}\n", labels, q.enabled ? 1 : 0));
                out.Append(fmt::format("mq_queue_quota_bytes{} {}\n", labels, q.quota));
              } else {
                out.Append(fmt::format("{:<32} {:>10} {:>8} {:>12} {:>10} {}\n", q.name, q.count,
                                       q.delayed, q.bytes, st->oldest_arrived ? FormatDuration(age) : "-",
                                       q.enabled ? "on" : "off"));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
