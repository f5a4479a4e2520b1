// mq-watch: MSMQ's EnableNotification for the shell (seed 000).
//
//   mq-watch [options] QUEUE
//
// Steps, in the seed's order:
//  1. A cursor action other than first, current or next is E_INVALIDARG (exit 2); current
//     and next need a named cursor (--cursor-name), as only a cursor that exists can be
//     current or advanced.
//  2. A missing store is OLE_E_BLANK (the queue manager is not initialized, exit 3); a
//     missing queue MQ_ERROR_QUEUE_NOT_FOUND (3); a disabled queue is closed:
//     MQ_ERROR_INVALID_HANDLE (5); a store the caller cannot use MQ_ERROR_ACCESS_DENIED (4).
//  3. NEXT advances the cursor first; then, from the cursor (FIRST: from the head), the
//     first suitable message fires Arrived: "arrived QUEUE LOOKUP_ID" on stdout, exit 0.
//     Suitable: visible now (not delayed).
//  4. Nothing suitable: with timeout 0, ArrivedError MQ_ERROR_MESSAGE_NOT_FOUND; else wait
//     (inotify, see lib/waiter.hpp) until a message arrives (Arrived) or the timeout expires
//     (ArrivedError MQ_ERROR_IO_TIMEOUT). ArrivedError is printed on stdout as
//     "error QUEUE SYMBOL 0xHEX" and exits 1.
//  5. --follow re-arms after each Arrived, as an application calling EnableNotification again
//     from its handler, with NEXT on a named cursor; an anonymous cursor follows arrival
//     order so that no message is reported twice or skipped. It ends on SIGINT or SIGTERM
//     (exit 0), or when the queue is deleted or disabled (exit 5).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <fmt/format.h>

#include "common.hpp"
#include "units.hpp"

namespace mq {
namespace {

int g_stop_pipe[2] = {-1, -1};

void OnSignal(int) {
  int saved = errno;
  char b = 1;
  ssize_t ignored = ::write(g_stop_pipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

int Run(int argc, char** argv) {
  cli::SetTool("mq-watch");
  std::signal(SIGPIPE, SIG_IGN);
  cli::StoreArgs store_args;
  std::string queue, cursor = "first", cursor_name, timeout = "infinite";
  bool json = false, follow = false, no_wait_lock = false;
  CLI::App app("Wait for messages to arrive in an mq queue (EnableNotification)", "mq-watch");
  app.set_version_flag("--version", MQ_VERSION);
  cli::AddStoreOption(app, store_args);
  app.add_option("QUEUE", queue, "Queue to watch")->required();
  app.add_option("--cursor", cursor,
                 "first (default): the head of the queue; current: the message at the named "
                 "cursor; next: advance the named cursor first")
      ->type_name("ACTION");
  app.add_option("--cursor-name", cursor_name, "Use this persistent named cursor")
      ->type_name("NAME");
  app.add_option("-t,--timeout", timeout,
                 "How long to wait for an event: 0, infinite (default) or a duration")
      ->type_name("DURATION");
  app.add_flag("--json", json, "Print each event as a JSON object");
  app.add_flag("--follow", follow, "Keep watching: one event per message until a signal");
  app.add_flag("--no-wait-lock", no_wait_lock,
               "Fail (exit 5) instead of waiting when another process uses the cursor");
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;

  WatchOptions wo;
  if (cursor == "first") wo.action = CursorAction::kFirst;
  else if (cursor == "current") wo.action = CursorAction::kCurrent;
  else if (cursor == "next") wo.action = CursorAction::kNext;
  else
    return cli::Fail(Status(Code::kInvalidArg,
                            fmt::format("invalid cursor action '{}': use first, current or next",
                                        cursor)));
  auto ref = cli::ParseQueueArg(queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  if (wo.action != CursorAction::kFirst && cursor_name.empty())
    return cli::Fail(Status(Code::kInvalidArg,
                            "--cursor current and next need a named cursor (--cursor-name)"));
  if (!cursor_name.empty()) {
    Status s = CheckCursorName(cursor_name);
    if (!s.ok()) return cli::Fail(s);
  }
  auto t = ParseDuration(timeout);
  if (!t.ok()) return cli::Fail(t.status());
  wo.cursor_name = cursor_name;
  wo.follow = follow;
  wo.wait_lock = !no_wait_lock;
  ReadOptions ro;
  ro.wait_ms = *t;

  auto store = cli::OpenStore(store_args);
  if (!store.ok()) {
    Status s = store.status();
    if (s.code() == Code::kServiceNotAvailable)
      return cli::Fail(Status(Code::kBlank, s.text(), s.subject()));
    return cli::Fail(s);
  }
  auto st = (*store)->StatQueue(*ref);
  if (!st.ok()) return cli::Fail(st.status());
  if (!st->info.enabled && st->info.id != 0)
    return cli::Fail(Status(Code::kInvalidHandle, "queue is closed (status OFF)", ref->Full()));

  if (::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  ro.stop_fd = g_stop_pipe[0];

  FdWriter out(1, "stdout");
  bool reader_gone = false;
  Status s = (*store)->Watch(*ref, wo, ro, [&](const Message& m) -> Status {
    if (json) {
      nlohmann::ordered_json j = {{"event", "arrived"},     {"queue", m.queue},
                                  {"lookup_id", m.lookup_id}, {"id", FormatMessageId(m.id)},
                                  {"priority", m.priority},   {"label", m.label}};
      out.Append(j.dump() + "\n");
    } else {
      out.Append(fmt::format("arrived {} {}\n", m.queue, m.lookup_id));
    }
    Status w = out.Flush();
    if (w.code() == Code::kBrokenPipe) {
      reader_gone = true;
      return Status(Code::kOperationCancelled, "the reader went away");
    }
    return w;
  });
  if (reader_gone) return 0;
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
