// mq-admin list [--json]: the queues of the store, one per line (with --json, one object per
// queue with its settings and counters).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupList(CLI::App& app, Context&) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("list", "List the queues");
  AddJsonOption(*sub, *json, "One JSON object per queue");
  return {sub, [json](Context& ctx) {
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            auto queues = (*store)->ListQueues();
            if (!queues.ok()) return cli::Fail(queues.status());
            FdWriter out(1, "stdout");
            for (const QueueInfo& q : *queues) {
              if (!*json) {
                out.Append(q.name + "\n");
                continue;
              }
              nlohmann::ordered_json j = {{"queue", q.name},
                                          {"id", q.id},
                                          {"label", q.label},
                                          {"status", q.enabled ? "on" : "off"},
                                          {"receive", q.receive_paused ? "off" : "on"},
                                          {"quota", q.quota},
                                          {"max_message_size", q.max_message_size},
                                          {"messages", q.count},
                                          {"bytes", q.bytes},
                                          {"transactional", q.transactional},
                                          {"max_retries", q.max_retries},
                                          {"poison", PoisonName(q.poison)},
                                          {"dedup_window_ms", q.dedup_window},
                                          {"retry_delay_ms", q.retry_delay},
                                          {"retry_backoff", q.retry_backoff},
                                          {"retry_delay_max_ms", q.retry_delay_max},
                                          {"retry_jitter", q.retry_jitter},
                                          {"retention", q.retention ? "on" : "off"},
                                          {"rate", q.rate.count
                                                       ? nlohmann::ordered_json(FormatRate(q.rate))
                                                       : nlohmann::ordered_json(nullptr)},
                                          {"burst", q.rate.count
                                                        ? nlohmann::ordered_json(RateBurst(q))
                                                        : nlohmann::ordered_json(nullptr)},
                                          {"created_time", FormatTime(q.created_time)},
                                          {"modified_time", FormatTime(q.modified_time)}};
              out.Append(j.dump() + "\n");
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
