// mq-watch: MSMQ's EnableNotification for the shell (seed 000).
//
//   mq-watch [options] QUEUE
//
// Steps, in the seed's order:
//  1. A cursor action other than first, current or next is E_INVALIDARG (exit 2); current
//     and next need a named cursor (--cursor NAME --current|--next, as mq-peek; the old
//     spelling --cursor ACTION --cursor-name NAME still works), as only a cursor that exists
//     can be current or advanced. Without a cursor: the head of the queue, in the order
//     mq-peek and mq-receive use (--locked: Locked messages too).
//  2. A missing store is OLE_E_BLANK (the queue manager is not initialized, exit 3); a
//     missing queue MQ_ERROR_QUEUE_NOT_FOUND (3); a disabled queue is closed:
//     MQ_ERROR_INVALID_HANDLE (5); a store the caller cannot use MQ_ERROR_ACCESS_DENIED (4).
//  3. NEXT advances the cursor first; then, from the cursor (FIRST: from the head), the
//     first suitable message fires Arrived: "arrived QUEUE LOOKUP_ID" on stdout, exit 0.
//     Suitable: visible now (not delayed).
//  4. Nothing suitable: with timeout 0, ArrivedError MQ_ERROR_MESSAGE_NOT_FOUND; else wait
//     (inotify, see lib/store/waiter.hpp) until a message arrives (Arrived) or the timeout expires
//     (ArrivedError MQ_ERROR_IO_TIMEOUT). ArrivedError is printed on stdout as
//     "error QUEUE SYMBOL 0xHEX" and exits 1.
//  5. --follow re-arms after each Arrived, as an application calling EnableNotification again
//     from its handler, with NEXT on a named cursor; an anonymous cursor follows arrival
//     order so that no message is reported twice or skipped. It ends on SIGINT or SIGTERM
//     (exit 0), or when the queue is deleted or disabled (exit 5).
//  --until-empty waits for the opposite: the queue holding no message in any state (nq -w,
//     task-spooler's wait): "empty QUEUE", exit 0, at once if it is empty; after --wait the
//     ArrivedError MQ_ERROR_IO_TIMEOUT, exit 1 (Store::WaitEmpty).
//
// --exec CMD [ARG...] makes it an activator (Service Broker ACTIVATION): while the queue has
// available messages it keeps up to --max-readers receivers running, each
// `mq-receive QUEUE --all --keep-going --quiet --retry-delay D --wait 1s --exec CMD [ARG...]`
// (the mq-receive beside this program). The engine, and how failures are handled:
// lib/activate/activator.hpp. SIGTERM/SIGINT: no new receivers; the running ones get SIGTERM,
// finish their current command (commit or roll back) and exit; then mq-watch exits 0. A queue
// disabled or deleted: the same, exit 5. If mq-watch dies (SIGKILL included), each receiver
// gets SIGHUP, which makes it kill its command's process group and roll back.
#include <sys/wait.h>
#include <limits.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <map>

#include <fmt/format.h>

#include "activate/activator.hpp"
#include "base/paths.hpp"
#include "base/units.hpp"
#include "common.hpp"
#include "exec.hpp"

namespace mq {
namespace {

void OnChild(int) { cli::WakeStopPipe(); }

int Activate(Store& store, const QueueRef& ref, const std::vector<std::string>& cmd,
             int max_readers, const std::string& retry_delay) {
  activate::ActivatorOptions o;
  o.queue = ref;
  o.max_readers = max_readers;
  o.receiver = {SiblingProgram("mq-receive"),
                "--diagnostics-as",
                "mq-watch",
                "-s",
                store.dir(),
                ref.Full(),
                "--all",
                "--keep-going",
                "--quiet",
                "--retry-delay",
                retry_delay,
                "--wait",
                "1s",  // for a rate limit's token, when started rate_lead_ms before it
                "--exec"};
  o.rate_lead_ms = 50;
  o.receiver.insert(o.receiver.end(), cmd.begin(), cmd.end());
  if (cli::StopOnSignals() < 0)
    return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  struct sigaction sa {};
  sa.sa_handler = OnChild;  // a receiver's end wakes the activator
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);
  Status s = activate::RunActivator(store, o, cli::Stop());
  return s.ok() ? 0 : cli::Fail(s);
}

int Run(int argc, char** argv) {
  cli::SetTool("mq-watch");
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<char*> own;
  std::vector<std::string> cmd;
  bool exec = cli::SplitExec(argc, argv, own, cmd);
  cli::StoreArgs store_args;
  std::string queue, cursor, cursor_name, timeout, format;
  bool json = false, follow = false, no_wait_lock = false, exec_flag = false, locked = false;
  bool until_empty = false;
  bool first = false, current = false, next = false;
  int max_readers = 1;
  std::string retry_delay;
  CLI::App app("Wait for messages to arrive in an mq queue (EnableNotification)", "mq-watch");
  app.footer("Examples:\n"
             "  mq-watch jobs --wait 30s          # one event, or exit 1 after 30 s\n"
             "  mq-watch jobs --follow --json     # an event per arrival\n"
             "  mq-watch jobs --cursor audit --next\n"
             "  mq-watch jobs --exec ./work.sh    # activator\n"
             "  mq-watch jobs --until-empty -w 1h # wait for the work to be done\n"
             "See mq-watch(1).");
  cli::AddVersionFlag(app);
  cli::AddStoreOption(app, store_args);
  app.add_option("QUEUE", queue, "Queue to watch")->required();
  auto* cursor_opt =
      app.add_option("--cursor", cursor,
                     "Use this persistent named cursor with --first, --current or --next, as "
                     "mq-peek (the old 'ACTION --cursor-name NAME' spelling still works)")
          ->type_name("NAME");
  auto* first_opt = app.add_flag("--first", first, "With --cursor: move the cursor to the head");
  auto* current_opt =
      app.add_flag("--current", current, "With --cursor: the message at the cursor");
  auto* next_opt = app.add_flag("--next", next, "With --cursor: advance the cursor first");
  first_opt->excludes(current_opt)->excludes(next_opt);
  current_opt->excludes(next_opt);
  app.add_option("--cursor-name", cursor_name,
                 "Deprecated: the cursor of '--cursor first|current|next' (use --cursor NAME "
                 "--first|--current|--next)")
      ->type_name("NAME");
  cli::AddWaitOption(app, timeout,
                     "How long to wait for an event: 0, infinite (default) or a duration");
  auto* json_opt = app.add_flag("--json", json, "Print each event as a JSON object");
  app.add_option("--format", format, "Event format: text (default) or json (as --json)")
      ->type_name("NAME")
      ->excludes(json_opt);
  app.add_flag("--locked", locked,
               "Also report messages Locked by an open transactional receive "
               "(AllowPeekWhenLocked)");
  app.add_flag("--follow", follow, "Keep watching: one event per message until a signal");
  app.add_flag("--until-empty", until_empty,
               "Wait until the queue holds no message (visible, delayed or Locked): event "
               "'empty QUEUE', exit 0; exit 1 after --wait");
  app.add_flag("--no-wait-lock", no_wait_lock,
               "Fail (exit 5) instead of waiting when another process uses the cursor");
  app.add_flag("--exec", exec_flag,
               "Activator: receive each arriving message transactionally with CMD [ARG...] "
               "(the rest of the command line), as mq-receive --exec");
  app.add_option("--max-readers", max_readers,
                 "With --exec: up to N receivers at once (MAX_QUEUE_READERS, default 1)")
      ->type_name("N")
      ->check(cli::WholeNumber(1, 32767));
  app.add_option("--retry-delay", retry_delay,
                 "With --exec: how long a message whose command failed waits before it is "
                 "tried again, if its queue sets no --retry-delay (default 1s; 0: at once)")
      ->type_name("DURATION");
  if (int rc = cli::Parse(app, static_cast<int>(own.size()), own.data()); rc >= 0) return rc;
  if (format == "json") json = true;
  else if (!format.empty() && format != "text")
    return cli::Fail(Status::InvalidArg(
        fmt::format("unknown --format '{}' (mq-watch prints: text, json)", format)));
  if (exec && cmd.empty()) return cli::Fail(Status::InvalidArg("--exec needs a command"));
  if (exec) cli::NoteOwnOptionsAfterExec(app, cmd);
  if (!exec && app.count("--max-readers"))
    return cli::Fail(Status::InvalidArg("--max-readers goes with --exec"));
  if (!exec && app.count("--retry-delay"))
    return cli::Fail(Status::InvalidArg("--retry-delay goes with --exec"));
  if (retry_delay.empty()) retry_delay = "1s";
  if (auto d = ParseDuration(retry_delay); !d.ok() || *d < 0)
    return cli::Fail(d.ok() ? Status::InvalidArg("--retry-delay must be a finite duration")
                            : d.status());
  if (exec && (follow || json || cursor_opt->count() || app.count("--cursor-name") || locked ||
               first || current || next || until_empty || !timeout.empty()))
    return cli::Fail(
        Status::InvalidArg("--exec runs until stopped: no --follow, --json, --cursor, --locked, "
                           "--until-empty or --wait"));
  if (until_empty && (follow || cursor_opt->count() || app.count("--cursor-name") || locked ||
                      first || current || next || no_wait_lock))
    return cli::Fail(Status::InvalidArg(
        "--until-empty watches the whole queue: no --follow, --cursor, --locked or "
        "--no-wait-lock"));

  // The cursor: `--cursor NAME --first|--current|--next` (as mq-peek), or the old spelling
  // `--cursor first|current|next [--cursor-name NAME]`.
  WatchOptions wo;
  int actions = first + current + next;
  std::string action = "first";
  bool old_spelling = app.count("--cursor-name") > 0;
  bool is_action = cursor == "first" || cursor == "current" || cursor == "next";
  if (cursor_opt->count() && !actions && !old_spelling && !is_action)
    return cli::Fail(
        Status::InvalidArg(fmt::format("invalid cursor action '{}': use first, current or next "
                                       "(or --cursor NAME with --first, --current or --next)",
                                       cursor)));
  if (actions) {
    if (old_spelling)
      return cli::Fail(
          Status::InvalidArg("--cursor NAME with --first, --current or --next takes no "
                             "--cursor-name"));
    if (!cursor_opt->count())
      return cli::Fail(Status::InvalidArg("--first, --current and --next need --cursor"));
    if (actions != 1)
      return cli::Fail(Status::InvalidArg("--cursor needs one of --first, --current, --next"));
    cursor_name = cursor;
    action = first ? "first" : current ? "current" : "next";
  } else if (cursor_opt->count()) {
    action = cursor;
  }
  if (action == "first") wo.action = CursorAction::kFirst;
  else if (action == "current") wo.action = CursorAction::kCurrent;
  else if (action == "next") wo.action = CursorAction::kNext;
  else
    return cli::Fail(Status::InvalidArg(
        fmt::format("invalid cursor action '{}': use first, current or next", action)));
  if (timeout.empty()) timeout = "infinite";
  auto ref = cli::ParseQueueArg(queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  bool named = actions || old_spelling;
  if (wo.action != CursorAction::kFirst && !named)
    return cli::Fail(
        Status::InvalidArg("--cursor current and next need a named cursor (--cursor NAME "
                           "--current|--next, or --cursor-name NAME)"));
  if (locked && named)
    return cli::Fail(
        Status::InvalidArg("--locked applies to the head of the queue; a cursor skips Locked "
                           "messages"));
  if (named) {
    Status s = CheckCursorName(cursor_name);
    if (!s.ok()) return cli::Fail(s);
  }
  auto t = ParseDuration(timeout);
  if (!t.ok()) return cli::Fail(t.status());
  wo.cursor_name = cursor_name;
  wo.follow = follow;
  wo.include_locked = locked;
  wo.wait_lock = !no_wait_lock;
  wo.lock_wait_ms = *t;
  ReadOptions ro;
  ro.wait_ms = *t;

  auto store = cli::OpenStore(store_args);
  if (!store.ok()) {
    Status s = store.status();
    if (s.code() == Code::kServiceNotAvailable)
      return cli::Fail(Status::Blank(s.text(), s.subject()));
    return cli::Fail(s);
  }
  auto st = (*store)->StatQueue(*ref);
  if (!st.ok()) return cli::Fail(st.status());
  if (!st->info.enabled && st->info.id != 0)
    return cli::Fail(Status::InvalidHandle("queue is closed (status OFF)", ref->Full()));

  if (exec) {
    Status runnable = cli::CheckCommand(cmd);
    if (!runnable.ok()) return cli::Fail(runnable);
    return Activate(**store, *ref, cmd, max_readers, retry_delay);
  }
  // Only --follow ends cleanly on a signal (exit 0); a single watch dies by it, so that
  // `if mq-watch q` never takes an interrupted wait for an arrival.
  if (follow) {
    ro.stop_fd = cli::StopOnSignals();
    if (ro.stop_fd < 0)
      return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  }

  FdWriter out(1, "stdout");
  bool reader_gone = false;
  Status s;
  if (until_empty) {
    s = (*store)->WaitEmpty(*ref, ro);
    if (s.ok()) {
      if (json)
        out.Append(nlohmann::ordered_json({{"event", "empty"}, {"queue", ref->Full()}}).dump() +
                   "\n");
      else
        out.Append(fmt::format("empty {}\n", ref->Full()));
      Status w = out.Flush();
      return w.ok() || w.code() == Code::kBrokenPipe ? 0 : cli::Fail(w);
    }
  } else {
    s = (*store)->Watch(*ref, wo, ro, [&](const Message& m) -> Status {
      if (json) {
        nlohmann::ordered_json j = {{"event", "arrived"},       {"queue", m.queue},
                                    {"lookup_id", m.lookup_id}, {"id", FormatMessageId(m.id)},
                                    {"priority", m.priority},   {"label", m.label}};
        out.Append(j.dump() + "\n");
      } else {
        out.Append(fmt::format("arrived {} {}\n", m.queue, m.lookup_id));
      }
      Status w = out.Flush();
      if (w.code() == Code::kBrokenPipe) {
        reader_gone = true;
        return Status::OperationCancelled("the reader went away");
      }
      return w;
    });
  }
  if (reader_gone) return 0;
  // Seed 000: a Peek Next that is illegal (a cursor never moved) with ReceiveTimeout 0 fires
  // ArrivedError MQ_ERROR_MESSAGE_NOT_FOUND.
  if (s.code() == Code::kIllegalCursorAction && ro.wait_ms == 0 && wo.action == CursorAction::kNext)
    s = Status::MessageNotFound(s.text(), s.subject());
  if (s.code() == Code::kIoTimeout || s.code() == Code::kMessageNotFound) {
    Status event(s.code(), "", ref->Full());
    if (json) {
      nlohmann::ordered_json j = {
          {"event", "error"},
          {"queue", ref->Full()},
          {"error", CodeSymbol(s.code())},
          {"code", fmt::format("0x{:08X}", static_cast<uint32_t>(s.code()))}};
      out.Append(j.dump() + "\n");
    } else {
      out.Append(fmt::format("error {} {} 0x{:08X}\n", ref->Full(), CodeSymbol(s.code()),
                             static_cast<uint32_t>(s.code())));
    }
    (void)out.Flush();
    return ExitCode(s);
  }
  if (!s.ok()) return cli::Fail(s.WithSubject(ref->Full()));
  return 0;
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
