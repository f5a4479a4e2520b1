// admin.cpp: what the mq-admin subcommands share: the store, and the queue options of
// create and set.
#include "admin.hpp"

#include <fmt/format.h>

#include "base/units.hpp"

namespace mq::admin {

void AddJsonOption(CLI::App& app, bool& json, const char* what) {
  auto* flag = app.add_flag("--json", json, what);
  app.add_option_function<std::string>(
         "--format", [&json](const std::string& v) { json = v == "json"; },
         "Output format: text (default) or json (as --json)")
      ->type_name("NAME")
      ->check(CLI::IsMember({"text", "json"}))
      ->excludes(flag);
}

Result<Store*> Context::Open() {
  if (!opened_) {
    auto s = cli::OpenStore(store);
    if (!s.ok()) return s.status();
    opened_ = std::move(*s);
  }
  return opened_.get();
}

void AddQueueOptions(CLI::App& app, QueueOptions& o, bool create) {
  app.add_option("--label", o.label, "Queue label, at most 124 characters")->type_name("TEXT");
  app.add_option("--quota", o.quota,
                 "Maximum bytes of messages (records) in the queue; 0: no limit")
      ->type_name("SIZE");
  app.add_option("--max-message-size", o.max_message_size,
                 "Largest body accepted (default 4MiB)")
      ->type_name("SIZE");
  if (!create)
    app.add_option("--status", o.status, "on: enabled; off: no sends or receives")
        ->type_name("on|off")
        ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--receive", o.receive,
                 "off: pause receiving (sends go on; receivers find nothing and waiting ones "
                 "wait); on: resume")
      ->type_name("on|off")
      ->check(CLI::IsMember({"on", "off"}));
  if (create)
    app.add_flag("--transactional", o.transactional,
                 "Accept only transactional sends (mq-send --tx); fixed at creation");
  app.add_option("--max-retries", o.max_retries,
                 "Rollbacks of one message before the poison action runs (default 5; 0: never)")
      ->type_name("N")
      ->check(cli::WholeNumber(0, UINT32_MAX));
  app.add_option("--poison", o.poison,
                 "Poison action: subqueue (QUEUE;poison, default), deadletter, or disable")
      ->type_name("ACTION")
      ->check(CLI::IsMember({"subqueue", "deadletter", "disable"}));
  app.add_option("--dedup-window", o.dedup_window,
                 "How long mq-send --dedup remembers a key (default 5m)")
      ->type_name("DURATION");
  app.add_option("--retry-delay", o.retry_delay,
                 "A rolled-back message is visible again after DURATION (default 0: at once)")
      ->type_name("DURATION");
  app.add_option("--retry-backoff", o.retry_backoff,
                 "Multiply the retry delay by FACTOR after each rollback of a message "
                 "(default 1)")
      ->type_name("FACTOR");
  app.add_option("--retry-delay-max", o.retry_delay_max,
                 "The longest retry delay backoff reaches (default 0: no cap)")
      ->type_name("DURATION");
  app.add_option("--retry-jitter", o.retry_jitter,
                 "Shorten each retry delay by a random part of up to FRACTION (0 to 1, or "
                 "a percentage)")
      ->type_name("FRACTION");
  app.add_option("--rate", o.rate,
                 "At most COUNT messages leave the queue per PERIOD, across every receiver "
                 "(20/s, 1000/m, 5/h, 100/10s); off: no limit")
      ->type_name("COUNT/PERIOD");
  app.add_option("--burst", o.burst,
                 "How many of the rate's messages may leave at once after a quiet spell "
                 "(default 1)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 1'000'000'000));
  auto* journal = app.add_flag("--journal", o.journal,
                               "Keep a copy of every received message in QUEUE;journal");
  if (!create)
    app.add_flag("--no-journal", o.no_journal, "Stop keeping journal copies")->excludes(journal);
  app.add_option("--journal-quota", o.journal_quota,
                 "Maximum bytes of QUEUE;journal; when full, journaling stops (0: no limit)")
      ->type_name("SIZE");
  app.add_option("--retention", o.retention,
                 "Service Broker RETENTION: on keeps every received message (status 0) until "
                 "end-conversation, purge or delete removes it")
      ->type_name("on|off")
      ->check(CLI::IsMember({"on", "off"}));
}

Result<QueueSettings> MakeSettings(CLI::App& app, const QueueOptions& o) {
  QueueSettings s;
  if (app.count("--label")) {
    size_t chars = 0;
    for (char c : o.label) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (chars > kMaxQueueName)
      return Status::LabelTooLong(
          fmt::format("queue label longer than {} characters", kMaxQueueName));
    s.label = o.label;
  }
  if (app.count("--quota")) {
    auto q = ParseSize(o.quota);
    if (!q.ok()) return q.status();
    s.quota = *q;
  }
  if (app.count("--max-message-size")) {
    auto m = ParseSize(o.max_message_size);
    if (!m.ok()) return m.status();
    if (*m == 0) return Status::InvalidArg("--max-message-size must be above 0");
    s.max_message_size = *m;
  }
  if (!o.status.empty()) s.enabled = o.status == "on";
  if (!o.receive.empty()) s.receive = o.receive == "on";
  if (o.transactional) s.transactional = true;
  if (app.count("--max-retries")) s.max_retries = o.max_retries;
  if (!o.poison.empty())
    s.poison = o.poison == "deadletter" ? PoisonAction::kDeadletter
               : o.poison == "disable"  ? PoisonAction::kDisable
                                        : PoisonAction::kSubqueue;
  if (!o.dedup_window.empty()) {
    auto d = ParseDuration(o.dedup_window);
    if (!d.ok()) return d.status();
    if (*d <= 0) return Status::InvalidArg("--dedup-window must be a positive duration");
    s.dedup_window = *d;
  }
  if (!o.retry_delay.empty()) {
    auto d = ParseDuration(o.retry_delay);
    if (!d.ok()) return d.status();
    if (*d < 0) return Status::InvalidArg("--retry-delay must be a finite duration");
    s.retry_delay = *d;
  }
  if (!o.retry_backoff.empty()) {
    auto f = ParseNumber(o.retry_backoff, 1, 1000, "--retry-backoff");
    if (!f.ok()) return f.status();
    s.retry_backoff = *f;
  }
  if (!o.retry_delay_max.empty()) {
    auto d = ParseDuration(o.retry_delay_max);
    if (!d.ok()) return d.status();
    if (*d < 0) return Status::InvalidArg("--retry-delay-max must be a finite duration");
    s.retry_delay_max = *d;
  }
  if (!o.retry_jitter.empty()) {
    auto j = ParseNumber(o.retry_jitter, 0, 1, "--retry-jitter");
    if (!j.ok()) return j.status();
    s.retry_jitter = *j;
  }
  if (o.journal) s.journal = true;
  if (o.no_journal) s.journal = false;
  if (app.count("--journal-quota")) {
    auto q = ParseSize(o.journal_quota);
    if (!q.ok()) return q.status();
    s.journal_quota = *q;
  }
  if (!o.retention.empty()) s.retention = o.retention == "on";
  if (!o.rate.empty()) {
    if (o.rate == "off" || o.rate == "0") {
      s.rate = Rate{};
    } else {
      auto r = ParseRate(o.rate);
      if (!r.ok()) return r.status();
      s.rate = *r;
    }
  }
  if (app.count("--burst")) s.rate_burst = o.burst;
  return s;
}

// A Prometheus label value (admin.hpp).
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

}  // namespace mq::admin
