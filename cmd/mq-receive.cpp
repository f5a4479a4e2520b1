// mq-receive: remove messages from a queue and print them.
//
//   mq-receive [options] QUEUE
//
// Protocol (why nothing is lost): in one write transaction the selected messages are deleted
// with their index entries, their output is written completely to stdout, and only then is
// the transaction committed. A failed write (EPIPE, ENOSPC, ...) aborts the transaction and
// the messages stay where they were. If the commit itself fails after the output was
// written, the messages stay too and will be delivered again: at least once, never lost.
// Many messages (-n, --all, --top) go in batches of up to 1000 per transaction.
#include <csignal>

#include "common.hpp"

namespace mq {
namespace {

int Run(int argc, char** argv) {
  cli::SetTool("mq-receive");
  std::signal(SIGPIPE, SIG_IGN);
  cli::StoreArgs store_args;
  cli::SelectArgs sel_args;
  cli::OutputArgs out_args;
  std::string queue;
  CLI::App app("Remove messages from an mq queue and print them", "mq-receive");
  app.set_version_flag("--version", MQ_VERSION);
  cli::AddStoreOption(app, store_args);
  app.add_option("QUEUE", queue, "Queue to receive from")->required();
  cli::AddSelectOptions(app, sel_args, true);
  cli::AddOutputOptions(app, out_args);
  if (int rc = cli::Parse(app, argc, argv); rc >= 0) return rc;

  auto ref = cli::ParseQueueArg(queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  auto sel = cli::MakeSelection(sel_args);
  if (!sel.ok()) return cli::Fail(sel.status());
  auto sink = cli::OutputSink::Make(out_args);
  if (!sink.ok()) return cli::Fail(sink.status());
  auto ro = cli::MakeReadOptions(sel_args);
  if (!ro.ok()) return cli::Fail(ro.status());
  std::optional<CursorOptions> co;
  if (!sel_args.cursor.empty()) {
    auto c = cli::MakeCursorOptions(sel_args, true);
    if (!c.ok()) return cli::Fail(c.status());
    co = *c;
  }
  auto store = cli::OpenStore(store_args);
  if (!store.ok()) return cli::Fail(store.status());
  Status s = co ? (*store)->CursorReceive(*ref, *co, *ro, **sink)
                : (*store)->Receive(*ref, *sel, *ro, **sink);
  if (!s.ok()) return cli::Fail(s.WithSubject(ref->Full()));
  return 0;
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
