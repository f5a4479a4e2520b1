// admin.cpp: what the mq-admin subcommands share: the store, and the queue options of
// create and set.
#include "admin.hpp"

#include <fmt/format.h>

#include "units.hpp"

namespace mq::admin {

Result<Store*> Context::Open() {
  if (!opened_) {
    auto s = cli::OpenStore(store);
    if (!s.ok()) return s.status();
    opened_ = std::move(*s);
  }
  return opened_.get();
}

void AddQueueOptions(CLI::App& app, QueueOptions& o, bool with_status) {
  app.add_option("--label", o.label, "Queue label, at most 124 characters")->type_name("TEXT");
  app.add_option("--quota", o.quota,
                 "Maximum bytes of messages (records) in the queue; 0: no limit")
      ->type_name("SIZE");
  app.add_option("--max-message-size", o.max_message_size,
                 "Largest body accepted (default 4MiB)")
      ->type_name("SIZE");
  if (with_status)
    app.add_option("--status", o.status, "on: enabled; off: no sends or receives")
        ->type_name("on|off")
        ->check(CLI::IsMember({"on", "off"}));
}

Result<QueueSettings> MakeSettings(CLI::App& app, const QueueOptions& o) {
  QueueSettings s;
  if (app.count("--label")) {
    if (o.label.size() > kMaxQueueName)
      return Status(Code::kLabelTooLong,
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
    if (*m == 0) return Status(Code::kInvalidArg, "--max-message-size must be above 0");
    s.max_message_size = *m;
  }
  if (!o.status.empty()) s.enabled = o.status == "on";
  return s;
}

}  // namespace mq::admin
