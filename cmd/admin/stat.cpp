// mq-admin stat [QUEUE] [--json | --format text|json|prometheus]: per queue, the messages
// (of which delayed and Locked), bytes, the age of the oldest message, the readers waiting,
// and the messages sent and received since the queue was made; for the store, the size of
// data.mdb and the bytes of it in use. The prometheus
// form suits the node exporter's textfile collector, e.g. from cron:
//   mq-admin stat --format prometheus > /var/lib/node_exporter/mq.prom.$$ &&
//     mv /var/lib/node_exporter/mq.prom.$$ /var/lib/node_exporter/mq.prom
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

namespace {

struct Args {
  std::string queue;
  bool json = false;
  std::string format;
};

// "on", "off" or "paused" (receiving), and ",journal-full" once journal copies were dropped
// for lack of room.
std::string StatusText(const QueueInfo& q, int64_t now_ns) {
  std::string s = StateWord(q);
  if (q.journal_dropped) s += ",journal-full";
  // A rate limit, its burst if above 1, and the tokens now (one decimal, rounded down so
  // that 1.0 means a message may leave).
  if (q.rate.count) {
    s += ",rate=" + FormatRate(q.rate);
    if (RateBurst(q) > 1) s += fmt::format(",burst={}", RateBurst(q));
    s += fmt::format(",tokens={:.1f}", std::floor(RateTokensExact(q, now_ns) * 10) / 10);
  }
  return s;
}

// The rate limit in --json: the rate as written, per second, the burst and the tokens now.
void RateJson(nlohmann::ordered_json& j, const QueueInfo& q, int64_t now_ns) {
  if (!q.rate.count) {
    j["rate"] = nullptr;
    j["rate_per_second"] = nullptr;
    j["burst"] = nullptr;
    j["tokens"] = nullptr;
    return;
  }
  j["rate"] = FormatRate(q.rate);
  j["rate_per_second"] = q.rate.PerSecond();
  j["burst"] = RateBurst(q);
  j["tokens"] = std::floor(RateTokensExact(q, now_ns) * 1000) / 1000;
}

struct Row {
  QueueStat st;
  int64_t age = 0;
};

struct Metric {
  const char* name;
  const char* type;  // gauge, or counter (a total since the queue was made)
  const char* help;
  std::function<std::string(const Row&)> value;
};

}  // namespace

Command SetupStat(CLI::App& app, Context&) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("stat", "Counts, bytes and oldest message age");
  sub->add_option("QUEUE", args->queue, "Only this queue");
  auto* json = sub->add_flag("--json", args->json, "One JSON object per queue");
  sub->add_option("--format", args->format, "Output format: text (default), json or prometheus")
      ->type_name("NAME")
      ->check(CLI::IsMember({"json", "prometheus", "text"}))
      ->excludes(json);
  // The table is 100 columns wide already: the totals, for monitoring, are left to the
  // machine formats.
  sub->footer("The messages sent and received since the queue was made are in --json "
              "(sent_total, received_total) and --format prometheus (mq_queue_sent_total, "
              "mq_queue_received_total).");
  return {sub, [args](Context& ctx) {
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            std::vector<QueueRef> refs;
            if (!args->queue.empty()) {
              auto ref = cli::ParseQueueArg(args->queue);
              if (!ref.ok()) return cli::Fail(ref.status());
              refs.push_back(*ref);
            } else {
              auto queues = (*store)->ListQueues();
              if (!queues.ok()) return cli::Fail(queues.status());
              for (auto& q : *queues) refs.push_back(*ParseQueueRef(q.name));
            }
            int64_t now_ns = NowNs(), now = now_ns / 1'000'000;
            std::vector<Row> rows;
            for (const QueueRef& ref : refs) {
              auto st = (*store)->StatQueue(ref);
              if (!st.ok()) return cli::Fail(st.status().WithSubject(ref.Full()));
              Row r{*st, 0};
              if (st->oldest_arrived) r.age = std::max<int64_t>(0, now - st->oldest_arrived);
              rows.push_back(std::move(r));
            }
            std::string format =
                args->json ? "json" : args->format.empty() ? "text" : args->format;
            FdWriter out(1, "stdout");
            if (format == "text") {
              out.Append(fmt::format("{:<32} {:>10} {:>8} {:>8} {:>12} {:>10} {:>7} {}\n",
                                     "QUEUE", "MESSAGES", "DELAYED", "LOCKED", "BYTES", "OLDEST",
                                     "WAITING", "STATUS"));
              for (const Row& r : rows) {
                const QueueInfo& q = r.st.info;
                out.Append(
                    fmt::format("{:<32} {:>10} {:>8} {:>8} {:>12} {:>10} {:>7} {}\n", q.name,
                                q.count, q.delayed, q.locked, q.bytes,
                                r.st.oldest_arrived ? FormatDuration(r.age / 1000 * 1000) : "-",
                                r.st.waiting, StatusText(q, now_ns)));
              }
              // The whole store: how much of data.mdb is in use (mq-admin compact gives the
              // rest back).
              if (args->queue.empty()) {
                auto z = (*store)->FileSizes();
                if (z.ok())
                  out.Append(fmt::format("store {}: data.mdb {} bytes, {} in use, format {}\n",
                                         (*store)->dir(), z->file, z->used, (*store)->format()));
                // What accept keeps for the senders of links into this store.
                auto ss = (*store)->AcceptedStreams();
                if (ss.ok() && ss->streams)
                  out.Append(fmt::format(
                      "link streams accepted from: {}, refusals kept for their replays: {} "
                      "({} bytes; sweep forgets those of a sender silent for 30 days)\n",
                      ss->streams, ss->refusals, ss->refusal_bytes));
              }
            } else if (format == "json") {
              auto z = (*store)->FileSizes();
              auto ss = (*store)->AcceptedStreams();
              for (const Row& r : rows) {
                const QueueInfo& q = r.st.info;
                nlohmann::ordered_json j = {
                    {"queue", q.name},
                    {"messages", q.count},
                    {"delayed", q.delayed},
                    {"locked", q.locked},
                    {"retained", q.retained},
                    {"bytes", q.bytes},
                    {"oldest_age_ms", r.age},
                    {"oldest_arrived_time",
                     r.st.oldest_arrived ? nlohmann::ordered_json(FormatTime(r.st.oldest_arrived))
                                         : nlohmann::ordered_json(nullptr)},
                    {"status", q.enabled ? "on" : "off"},
                    {"receive", q.receive_paused ? "off" : "on"},
                    {"quota", q.quota},
                    {"max_message_size", q.max_message_size},
                    {"label", q.label},
                    {"journal", q.journal},
                    {"journal_quota", q.journal_quota},
                    {"journal_full", q.journal_dropped != 0},
                    {"journal_dropped", q.journal_dropped},
                    {"next_due_time", r.st.next_due
                                          ? nlohmann::ordered_json(FormatTime(r.st.next_due))
                                          : nlohmann::ordered_json(nullptr)},
                    {"waiting", r.st.waiting},
                    {"sent_total", q.sent_total},
                    {"received_total", q.received_total}};
                RateJson(j, q, now_ns);
                if (z.ok()) {
                  j["store_file_bytes"] = z->file;
                  j["store_used_bytes"] = z->used;
                }
                j["store_format"] = (*store)->format();
                if (ss.ok()) {
                  j["store_accepted_streams"] = ss->streams;
                  j["store_refusals_kept"] = ss->refusals;
                }
                out.Append(j.dump() + "\n");
              }
            } else {
              // Prometheus text format: each metric's HELP, TYPE and samples together.
              std::vector<Metric> metrics = {
                  {"mq_queue_messages", "gauge", "Messages in the queue, of any state.",
                   [](const Row& r) { return std::to_string(r.st.info.count); }},
                  {"mq_queue_delayed_messages", "gauge",
                   "Messages not visible yet (--delay, --at).",
                   [](const Row& r) { return std::to_string(r.st.info.delayed); }},
                  {"mq_queue_locked_messages", "gauge",
                   "Messages held by an open transactional receive.",
                   [](const Row& r) { return std::to_string(r.st.info.locked); }},
                  {"mq_queue_bytes", "gauge", "Bytes of message records in the queue.",
                   [](const Row& r) { return std::to_string(r.st.info.bytes); }},
                  {"mq_queue_oldest_message_age_seconds", "gauge",
                   "Age of the oldest message; 0 if empty.",
                   [](const Row& r) { return fmt::format("{:.3f}", r.age / 1000.0); }},
                  {"mq_queue_enabled", "gauge", "1 if the queue's status is ON.",
                   [](const Row& r) { return std::string(r.st.info.enabled ? "1" : "0"); }},
                  {"mq_queue_receiving", "gauge",
                   "1 if receiving from the queue is on (mq-admin set --receive).",
                   [](const Row& r) { return std::string(r.st.info.receive_paused ? "0" : "1"); }},
                  {"mq_queue_rate_per_second", "gauge",
                   "The queue's rate limit (mq-admin set --rate), per second; 0: none.",
                   [](const Row& r) { return fmt::format("{:g}", r.st.info.rate.PerSecond()); }},
                  {"mq_queue_rate_tokens", "gauge",
                   "Tokens of the rate limit: messages that may leave now.",
                   [now_ns](const Row& r) {
                     return fmt::format("{:.3f}", RateTokensExact(r.st.info, now_ns));
                   }},
                  {"mq_queue_quota_bytes", "gauge", "The queue's quota; 0: none.",
                   [](const Row& r) { return std::to_string(r.st.info.quota); }},
                  {"mq_queue_waiting_readers", "gauge", "Readers waiting for a message.",
                   [](const Row& r) { return std::to_string(r.st.waiting); }},
                  {"mq_queue_journal_dropped_total", "counter",
                   "Journal copies not kept: the journal was full.",
                   [](const Row& r) { return std::to_string(r.st.info.journal_dropped); }},
                  {"mq_queue_sent_total", "counter", "Messages that entered the queue.",
                   [](const Row& r) { return std::to_string(r.st.info.sent_total); }},
                  {"mq_queue_received_total", "counter", "Messages received from the queue.",
                   [](const Row& r) { return std::to_string(r.st.info.received_total); }},
              };
              auto z = (*store)->FileSizes();
              if (z.ok())
                out.Append(fmt::format(
                    "# HELP mq_store_file_bytes Size of data.mdb.\n# TYPE mq_store_file_bytes "
                    "gauge\nmq_store_file_bytes{{store=\"{}\"}} {}\n# HELP mq_store_used_bytes "
                    "Bytes of data.mdb in use (mq-admin compact gives the rest back).\n# TYPE "
                    "mq_store_used_bytes gauge\nmq_store_used_bytes{{store=\"{}\"}} {}\n",
                    PromEscape((*store)->dir()), z->file, PromEscape((*store)->dir()), z->used));
              if (auto ss = (*store)->AcceptedStreams(); ss.ok())
                out.Append(fmt::format(
                    "# HELP mq_store_accepted_streams Link streams accepted from.\n# TYPE "
                    "mq_store_accepted_streams gauge\nmq_store_accepted_streams{{store=\"{}\"}} "
                    "{}\n# HELP mq_store_refusals_kept Refusals kept for the replays of link "
                    "streams.\n# TYPE mq_store_refusals_kept gauge\n"
                    "mq_store_refusals_kept{{store=\"{}\"}} {}\n",
                    PromEscape((*store)->dir()), ss->streams, PromEscape((*store)->dir()),
                    ss->refusals));
              for (const Metric& m : metrics) {
                out.Append(
                    fmt::format("# HELP {} {}\n# TYPE {} {}\n", m.name, m.help, m.name, m.type));
                for (const Row& r : rows)
                  out.Append(fmt::format("{}{{store=\"{}\",queue=\"{}\"}} {}\n", m.name,
                                         PromEscape((*store)->dir()), PromEscape(r.st.info.name),
                                         m.value(r)));
              }
            }
            Status s = out.Flush();
            return s.ok() || s.code() == Code::kBrokenPipe ? 0 : cli::Fail(s);
          }};
}

}  // namespace mq::admin
