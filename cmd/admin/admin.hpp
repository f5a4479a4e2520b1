// admin.hpp: the subcommands of mq-admin. Each lives in its own file with its usage on top,
// and registers itself through one Setup function: parser setup is split from the action.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../common.hpp"

namespace mq::admin {

struct Context {
  cli::StoreArgs store;
  // -q/--quiet: no summary or progress line (progress.hpp); a common option, which may stand
  // before the command too.
  bool quiet = false;
  // Opens the store once, on first use.
  Result<Store*> Open();
  // For a command that only reads: a store it cannot write is opened read-only (one note).
  Result<Store*> OpenForReading() {
    store.read_only_ok = true;
    return Open();
  }

 private:
  std::unique_ptr<Store> opened_;
};

// A subcommand: its parser node and the action run after a successful parse.
struct Command {
  CLI::App* app;
  std::function<int(Context&)> run;
};

// Adds --json (`what`: its help) and --format text|json, two spellings of one choice: every
// command that takes --json takes --format json too (CLI.md).
void AddJsonOption(CLI::App& app, bool& json, const char* what);
// A Prometheus label value: backslash, double quote and newline escaped.
std::string PromEscape(std::string_view s);

// Options shared by create and set.
struct QueueOptions {
  std::string label;
  std::string quota;
  std::string max_message_size;
  std::string status;
  std::string receive;
  bool transactional = false;
  uint32_t max_retries = 0;
  std::string poison;
  std::string dedup_window;
  std::string retry_delay;
  std::string retry_backoff;
  std::string retry_delay_max;
  std::string retry_jitter;
  bool journal = false;
  bool no_journal = false;
  std::string journal_quota;
  std::string retention;
  std::string rate;
  uint64_t burst = 0;
};
// `create` adds --transactional (fixed at creation); `set` adds --status.
void AddQueueOptions(CLI::App& app, QueueOptions& o, bool create);
Result<QueueSettings> MakeSettings(CLI::App& app, const QueueOptions& o);

// The options of the commands that move messages until their source is empty or, with
// --follow, until a signal (forward, bridge out, bridge in), declared once in mover.cpp.
struct MoverArgs {
  bool once = false, follow = false;
  std::string retry;
  std::string timeout = "30s";
};
struct MoverSpec {
  bool follow = false;
  int64_t retry_ms = 30000;  // kInfinite (-1): never give up
  int timeout_ms = 30000;
};
// --once, --follow, --retry and --timeout; `source` names what --once empties.
void AddMoverOptions(CLI::App& sub, MoverArgs& a, const std::string& source);
Result<MoverSpec> ParseMoverOptions(const MoverArgs& a);

Command SetupInit(CLI::App& app, Context& ctx);
Command SetupCreate(CLI::App& app, Context& ctx);
Command SetupTop(CLI::App& app, Context& ctx);
Command SetupTouch(CLI::App& app, Context& ctx);
Command SetupSet(CLI::App& app, Context& ctx);
Command SetupDelete(CLI::App& app, Context& ctx);
Command SetupList(CLI::App& app, Context& ctx);
Command SetupStat(CLI::App& app, Context& ctx);
Command SetupPurge(CLI::App& app, Context& ctx);
Command SetupCheck(CLI::App& app, Context& ctx);
Command SetupBackup(CLI::App& app, Context& ctx);
// For the commands that need the store alone (compact, upgrade): their -w/--wait (returned,
// default 10s) and -q options, and the open that waits that long for the others to leave.
std::shared_ptr<std::string> AddAloneOptions(CLI::App& sub, Context& ctx);
Result<std::unique_ptr<Store>> OpenAlone(const Context& ctx, const std::string& wait);
Command SetupCompact(CLI::App& app, Context& ctx);
Command SetupUpgrade(CLI::App& app, Context& ctx);
Command SetupExport(CLI::App& app, Context& ctx);
Command SetupImport(CLI::App& app, Context& ctx);
Command SetupCursors(CLI::App& app, Context& ctx);
Command SetupDeleteCursor(CLI::App& app, Context& ctx);
Command SetupSweep(CLI::App& app, Context& ctx);
Command SetupAck(CLI::App& app, Context& ctx);
Command SetupNack(CLI::App& app, Context& ctx);
Command SetupLocks(CLI::App& app, Context& ctx);
Command SetupRequeue(CLI::App& app, Context& ctx);
Command SetupMove(CLI::App& app, Context& ctx);
Command SetupMessageType(CLI::App& app, Context& ctx);
Command SetupEndConversation(CLI::App& app, Context& ctx);
Command SetupConversations(CLI::App& app, Context& ctx);
Command SetupBridge(CLI::App& app, Context& ctx);
Command SetupLink(CLI::App& app, Context& ctx);
Command SetupForward(CLI::App& app, Context& ctx);
Command SetupAccept(CLI::App& app, Context& ctx);
Command SetupServe(CLI::App& app, Context& ctx);

}  // namespace mq::admin
