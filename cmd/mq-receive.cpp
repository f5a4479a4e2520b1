// mq-receive: remove messages from a queue and print them, or hand them to a command in a
// transaction.
//
//   mq-receive [options] QUEUE
//   mq-receive [options] QUEUE --exec CMD [ARG...]
//   mq-receive [options] QUEUE --lease DURATION
//
// Protocol (why nothing is lost, and why no one waits for our reader):
//  1. one write transaction Locks a batch (up to 4000 messages, kLockBatchCount in
//     lib/store/schema.hpp) under a lease whose lock file this process holds, and commits
//     (lib/store/leases.cpp);
//  2. with no transaction open, the batch is written to stdout and we wait until the reader
//     has taken it: for a pipe or socket, until it has read every byte (FIONREAD/SIOCOUTQ is
//     0); a file or terminal has taken what was written. --into FILE appends the batch whole
//     under flock(2) and fdatasync's it (cmd/common.hpp OutputSink);
//  3. a second write transaction removes the batch (journal, acks, retention).
// A write that fails or a reader that goes away (EPIPE, POLLERR) returns the batch untouched
// and exits 10; a crash between 1 and 3 returns it through lease recovery (the lock file is
// released by the kernel). At least once, never lost. Standard output closed at start (>&-)
// is refused before anything is touched.
// --exec: each message (or, with --batch, each batch) is Locked in the store under a lease
// whose lock file this process holds (lib/store/store.hpp "Locks"); CMD runs with the body on
// stdin; exit 0 commits (the message is removed), anything else rolls back (it returns to its
// place, abort count + 1). The command runs in its own process group and holds the lease's lock
// file too, as do its descendants (cmd/exec.hpp): the lease ends when the last of them and
// mq-receive are gone, and whatever of the command's group is left when the command exits
// is killed before the commit or rollback. SIGTERM: the running command finishes, no new one
// starts. SIGINT: passed on to the command's group (as a terminal would), no new one starts.
// SIGHUP (a lost terminal; mq-watch's death, through PR_SET_PDEATHSIG): the command's group
// is killed at once and the messages are rolled back.
//
// --lease: the messages are Locked under an expiring lease and printed with its token (on
// stderr, or in the JSON); mq-admin ack/nack TOKEN ends it, expiry rolls it back.
//
// Service Broker RECEIVE (seed 001): from the head, a receive takes either plain messages or
// the messages of one conversation group (--conversation/--group name it; otherwise the best
// unlocked group), all of them unless --top or -n limits it. With --exec the group's messages
// are one transaction: CMD runs once per message (or once with --batch), and the first
// failure rolls them all back, in their order; the group stays locked until then.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "common.hpp"
#include "exec.hpp"
#include "base/units.hpp"

namespace mq {
namespace {

volatile sig_atomic_t g_exec_stop = 0;  // SIGINT or SIGHUP came: no new command

void OnExecSignal(int sig) {
  g_exec_stop = 1;
  if (sig == SIGHUP) cli::AbandonCommand();
  else cli::InterruptCommand();
  cli::WakeStopPipe();
}

struct ExecArgs {
  std::vector<std::string> cmd;
  bool batch = false;
  char sep = '\n';
  bool all = false;
  bool keep_going = false;
  int64_t retry_delay_ms = 0;  // a failed message waits this long if its queue sets no delay
};

// --keep-going: a failure rolls its messages back and the run goes on with the messages after
// them in delivery order (a Selection kAfter the last failed one, so that a message that is
// back in its place is not taken again in this run); at the end, exit 8 if any failed.
// A command that cannot be started (ExecResult::CannotStart) returns its messages untouched
// and ends the run at once, with keep-going too: exit 127 or 126.
int RunExec(Store& store, const QueueRef& ref, Selection sel, ReadOptions ro, const ExecArgs& x) {
  const auto& cmd = x.cmd;
  bool batch = x.batch;
  char sep = x.sep;
  // The commands get the store by its absolute path, wherever they cd.
  char real[PATH_MAX];
  std::string store_dir = ::realpath(store.dir().c_str(), real) ? real : store.dir();
  ro.stop_fd = cli::StopOnSignals();
  if (ro.stop_fd < 0) return cli::Fail(ErrnoStatus(errno, "pipe", "cannot set up signal handling"));
  Status reaper = cli::BecomeSubreaper();
  if (!reaper.ok()) return cli::Fail(reaper);
  struct sigaction sa {};
  sa.sa_handler = OnExecSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  auto stopping = [] { return cli::Stopping() || g_exec_stop; };
  uint64_t wanted = x.all ? UINT64_MAX : sel.limit;
  uint64_t done = 0;
  uint64_t failed = 0;           // --keep-going: messages rolled back
  std::string first_failure;     // and what the first failure was
  std::optional<std::string> after;  // --keep-going: the id of the last failed message
  while (done < wanted && !stopping()) {
    Selection one = sel;
    if (after) {
      // Past the failed message, if it is still in the queue (a poison action may have moved
      // it).
      auto m = store.FindMessage(*after);
      if (m.ok() && m->queue == ref.Full()) {
        one.anchor = Anchor::kAfter;
        one.lookup_id = m->lookup_id;
      }
    }
    one.limit = batch ? (x.all ? 0 : wanted - done) : 1;
    auto lease = store.Lock(ref, one, ro, {}, nullptr);
    if (!lease.ok()) {
      Status s = lease.status();
      if (s.code() == Code::kOperationCancelled) break;
      if ((done || failed) && (s.code() == Code::kMessageNotFound || s.code() == Code::kIoTimeout))
        break;
      return cli::Fail(s.WithSubject(ref.Full()));
    }
    ro.wait_ms = 0;  // only the first message is waited for
    // A copy for the command's environment and input (one per batch, not per message).
    const std::vector<Message> msgs((*lease)->messages().begin(), (*lease)->messages().end());
    Result<cli::ExecResult> ran = cli::ExecResult();
    if (batch || msgs.size() == 1) {
      ran = cli::RunCommand(cmd, msgs, batch, sep, store_dir, (*lease)->lock_fd());
    } else {
      // A conversation group's messages: one run each, in order, in one transaction.
      for (const Message& m : msgs) {
        if (stopping()) {
          ran = Status::OperationCancelled("stopped by a signal");
          break;
        }
        ran = cli::RunCommand(cmd, std::vector<Message>{m}, false, sep, store_dir,
                              (*lease)->lock_fd());
        if (!ran.ok() || !ran->ok()) break;
      }
    }
    if (ran.ok() && ran->CannotStart()) {
      Status back = store.Release(**lease);
      if (!back.ok()) return cli::Fail(back.WithSubject(ref.Full()));
      cli::Fail(Status::ExecFailed(
          fmt::format("{} {}; {} returned untouched", cmd.front(), ran->Describe(),
                      msgs.size() == 1 ? fmt::format("message {}", msgs.front().lookup_id)
                                       : fmt::format("{} messages", msgs.size())),
          ref.Full()));
      return ran->CannotStartExit();
    }
    bool commit = ran.ok() && ran->ok();
    FinishReport report;
    // Why it rolls back, kept with the messages (mq(7): last_failure, last_stderr).
    Failure failure;
    if (!ran.ok()) {
      failure.what = ran.status().text();
    } else {
      failure.what = ran->Describe();
      if (WIFEXITED(ran->status)) failure.exit_status = WEXITSTATUS(ran->status);
      if (WIFSIGNALED(ran->status)) failure.signal = WTERMSIG(ran->status);
      failure.stderr_tail = std::move(ran->stderr_tail);
    }
    Status fin = store.Finish(**lease, commit, RetryDelay(0, x.retry_delay_ms), &report, &failure);
    for (const std::string& note : report.notes) cli::Note(ref.Full(), note);
    if (!fin.ok()) return cli::Fail(fin.WithSubject(ref.Full()));
    if (!ran.ok()) return cli::Fail(ran.status().WithSubject(ref.Full()));
    if (!commit) {
      std::string what = msgs.size() == 1
                             ? fmt::format("message {} rolled back", msgs.front().lookup_id)
                             : fmt::format("{} messages rolled back", msgs.size());
      Status s = Status::ExecFailed(fmt::format("{} {}; {}", cmd.front(), ran->Describe(), what),
                                    ref.Full());
      if (!x.keep_going) return cli::Fail(s);
      cli::Note(ref.Full(), fmt::format("{} {}; {} (--keep-going: on to the next)", cmd.front(),
                                        ran->Describe(), what));
      if (!failed) first_failure = s.text();
      failed += msgs.size();
      // Rolled back to its place, it is still at the head: go on past it. Waiting a retry
      // delay, it is not, and comes back at the queue's tail: no anchor (one there would skip
      // the messages before it).
      auto back = store.FindMessage(msgs.back().id);
      if (!back.ok() || back->queue != ref.Full() || back->visible_time <= NowMs())
        after = msgs.back().id;
      wanted -= std::min<uint64_t>(wanted, msgs.size());
      continue;
    }
    done += msgs.size();
  }
  if (failed)
    return cli::Fail(
        Status::ExecFailed(fmt::format("{} message(s) rolled back, {} committed; the first: {}",
                                       failed, done, first_failure),
                           ref.Full()));
  return 0;
}

// The WHERE clause and the size of a group's receive: --top N, -n N, else all of the group
// (RECEIVE without TOP).
Status SetWhere(CLI::App& app, const cli::SelectArgs& a, const std::string& conversation,
                const std::string& group, Selection& sel) {
  for (auto [text, field, what] :
       {std::tuple{&conversation, &sel.conversation, "conversation handle"},
        std::tuple{&group, &sel.group, "conversation group id"}}) {
    if (text->empty()) continue;
    auto g = ParseGuid(*text);
    if (!g || IsNil(*g))
      return Status::InvalidArg(fmt::format("invalid {} '{}': expected a UUID", what, *text));
    *field = *g;
  }
  bool where = !conversation.empty() || !group.empty();
  if (where && (sel.anchor != Anchor::kHead || !a.cursor.empty()))
    return Status::InvalidArg("--conversation and --group take the group's messages in order: no "
                              "--lookup-id, --last, --id, --correlation or --cursor");
  sel.group_limit = a.all ? 0 : a.top ? a.top : cli::CountOf(app, "--count") ? a.count : 0;
  return {};
}

int Run(int argc, char** argv) {
  cli::SetTool("mq-receive");
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<char*> own;
  std::vector<std::string> cmd;
  bool exec = cli::SplitExec(argc, argv, own, cmd);

  cli::StoreArgs store_args;
  cli::SelectArgs sel_args;
  cli::OutputArgs out_args;
  std::string queue, lease;
  std::string conversation, group;
  bool batch = false, exec_flag = false, keep_going = false, quiet = false;
  std::string retry_delay;
  // Only the options the command line names are built; all of them when it names one that
  // mq-receive lacks (CLI11 reports it as usual: cli::OptionScan), or with --exec, whose note
  // on mq-receive's options after it needs their names (and whose command costs more).
  cli::OptionScan scan(static_cast<int>(own.size()), own.data());
  if (exec) scan.WantAll();
  std::unique_ptr<CLI::App> app;
  std::string diagnostics_as;
  for (;;) {
    app =
        std::make_unique<CLI::App>("Remove messages from an mq queue and print them", "mq-receive");
    app->footer("Examples:\n"
                "  mq-receive jobs --wait 30s        # one body, or exit 1 after 30 s\n"
                "  mq-receive jobs --all -l          # every message, a line each\n"
                "  mq-receive jobs --all --exec ./work.sh   # each in a transaction\n"
                "See mq-receive(1).");
    cli::AddVersionFlag(*app);
    if (scan.Wants("-s,--store")) cli::AddStoreOption(*app, store_args);
    app->add_option("QUEUE", queue, "Queue to receive from")->required();
    cli::AddSelectOptions(*app, sel_args, true, scan);
    cli::AddOutputOptions(*app, out_args, scan);
    if (scan.Wants("--exec"))
      app->add_flag("--exec", exec_flag,
                    "Run CMD [ARG...] (the rest of the command line) for each message in a "
                    "transaction: exit 0 commits, anything else rolls back");
    if (scan.Wants("--batch"))
      app->add_flag("--batch", batch,
                    "With --exec: run CMD once for all the messages (-n, --top, --all), in one "
                    "transaction; bodies separated by newlines (-0: NUL)");
    if (scan.Wants("--keep-going"))
      app->add_flag("--keep-going", keep_going,
                    "With --exec: a failed command rolls its message back and the run goes on "
                    "with the next (exit 8 at the end if any failed)");
    if (scan.Wants("--retry-delay"))
      app->add_option("--retry-delay", retry_delay,
                      "With --exec: how long a message whose command failed waits before it can "
                      "be received again, if its queue sets no --retry-delay (default 0: at once)")
          ->type_name("DURATION");
    if (scan.Wants("-q,--quiet"))
      app->add_flag("-q,--quiet", quiet,
                    "No message is not worth a line on stderr: exit 1 says it");
    if (scan.Wants("--lease"))
      app->add_option("--lease", lease,
                      "Lock the messages for DURATION and print them with a lease token; "
                      "mq-admin ack/nack TOKEN ends it")
          ->type_name("DURATION");
    CLI::Option *conv_opt = nullptr, *group_opt = nullptr;
    if (scan.Wants("--conversation"))
      conv_opt = app->add_option("--conversation", conversation,
                                 "RECEIVE ... WHERE conversation_handle = HANDLE: the "
                                 "messages of this conversation")
                     ->type_name("HANDLE")
                     ->check(cli::NotEmpty());
    if (scan.Wants("--group"))
      group_opt = app->add_option("--group", group,
                                  "RECEIVE ... WHERE conversation_group_id = ID: the messages "
                                  "of this conversation group")
                      ->type_name("ID")
                      ->check(cli::NotEmpty());
    cli::Excludes(conv_opt, {group_opt});
    // Not in --help: mq-watch --exec runs its receivers with `--diagnostics-as mq-watch`, so that
    // what they report (a failed command, a rollback) is signed by the tool the user ran.
    if (scan.Wants("--diagnostics-as"))
      app->add_option("--diagnostics-as", diagnostics_as)
          ->check(CLI::IsMember({"mq-watch"}))
          ->group("");
    if (scan.Complete()) break;
    scan.WantAll();
  }
  if (int rc = cli::Parse(*app, static_cast<int>(own.size()), own.data()); rc >= 0) return rc;
  if (!diagnostics_as.empty()) cli::SetTool("mq-watch");

  auto ref = cli::ParseQueueArg(queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  if (exec && cmd.empty()) return cli::Fail(Status::InvalidArg("--exec needs a command"));
  // mq-watch's receivers (--diagnostics-as) leave the note to mq-watch: once, not per receiver.
  if (exec && diagnostics_as.empty()) cli::NoteOwnOptionsAfterExec(*app, cmd);
  if (batch && !exec) return cli::Fail(Status::InvalidArg("--batch goes with --exec"));
  if (quiet) cli::QuietWhenEmpty();
  if (keep_going && !exec) return cli::Fail(Status::InvalidArg("--keep-going goes with --exec"));
  int64_t retry_delay_ms = 0;
  if (!retry_delay.empty()) {
    if (!exec) return cli::Fail(Status::InvalidArg("--retry-delay goes with --exec"));
    auto d = ParseDuration(retry_delay);
    if (!d.ok()) return cli::Fail(d.status());
    if (*d < 0) return cli::Fail(Status::InvalidArg("--retry-delay must be a finite duration"));
    retry_delay_ms = *d;
  }
  if (exec && !lease.empty())
    return cli::Fail(Status::InvalidArg("--exec and --lease do not go together"));
  if ((exec || !lease.empty()) && !sel_args.cursor.empty())
    return cli::Fail(
        Status::InvalidArg("--exec and --lease take messages from the head, not a cursor"));
  if (exec) {
    Status runnable = cli::CheckCommand(cmd);
    if (!runnable.ok()) return cli::Fail(runnable);
  }
  cli::OutputArgs shaping = out_args;
  if (batch) shaping.lines = shaping.null = false;  // with --batch they separate the bodies
  if (exec && cli::HasOutputOptions(shaping))
    return cli::Fail(
        Status::InvalidArg("with --exec the messages go to the command: no output options"));
  // --exec hands each body to its command alone.
  if (Status sep = cli::CheckSeparated(sel_args, out_args); !exec && !sep.ok())
    return cli::Fail(sep);
  auto sel = cli::MakeSelection(sel_args);
  if (!sel.ok()) return cli::Fail(sel.status());
  Status where = SetWhere(*app, sel_args, conversation, group, *sel);
  if (!where.ok()) return cli::Fail(where);
  auto ro = cli::MakeReadOptions(sel_args);
  if (!ro.ok()) return cli::Fail(ro.status());
  int64_t lease_ms = 0;
  if (!lease.empty()) {
    auto d = ParseDuration(lease);
    if (!d.ok()) return cli::Fail(d.status());
    if (*d <= 0) return cli::Fail(Status::InvalidArg("--lease needs a finite duration"));
    lease_ms = *d;
  }
  std::optional<CursorOptions> co;
  if (cli::CountOf(*app, "--cursor")) {
    auto c = cli::MakeCursorOptions(sel_args, true);
    if (!c.ok()) return cli::Fail(c.status());
    co = *c;
  }
  cli::OutputArgs sink_args = out_args;
  if (exec) sink_args = cli::OutputArgs();
  auto sink = cli::OutputSink::Make(sink_args);
  if (!sink.ok()) return cli::Fail(sink.status());
  auto store = cli::OpenStore(store_args);
  if (!store.ok()) return cli::Fail(store.status());

  if (exec) {
    ExecArgs x;
    x.cmd = cmd;
    x.batch = batch;
    x.sep = out_args.null ? '\0' : '\n';
    x.all = sel_args.all;
    x.keep_going = keep_going;
    x.retry_delay_ms = retry_delay_ms;
    return RunExec(**store, *ref, *sel, *ro, x);
  }
  if (lease_ms) {
    LockOptions lo;
    lo.lease_ms = lease_ms;
    auto l = (*store)->Lock(*ref, *sel, *ro, lo, sink->get());
    if (!l.ok())
      return cli::ExitNow(cli::FailAfterInto(l.status().WithSubject(ref->Full()), **sink));
    if (!(*sink)->CarriesLeaseToken()) {
      std::string line = (*l)->token() + "\n";
      ssize_t ignored = ::write(2, line.data(), line.size());
      (void)ignored;
    }
    return cli::ExitNow(0);
  }
  Status s = co ? (*store)->CursorReceive(*ref, *co, *ro, **sink)
                : (*store)->Receive(*ref, *sel, *ro, **sink);
  if (!s.ok()) return cli::ExitNow(cli::FailAfterInto(s.WithSubject(ref->Full()), **sink));
  return cli::ExitNow(0);
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
