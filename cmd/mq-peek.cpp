// mq-peek: print messages without removing them.
//
//   mq-peek [options] QUEUE
//
// Reads in one LMDB read transaction (a consistent snapshot), streaming the output in batches
// so that memory does not grow with the queue. A reader that closes the pipe early ends the
// peek quietly.
#include <csignal>
#include <memory>

#include "common.hpp"

namespace mq {
namespace {

int Run(int argc, char** argv) {
  cli::SetTool("mq-peek");
  std::signal(SIGPIPE, SIG_IGN);
  cli::StoreArgs store_args;
  cli::SelectArgs sel_args;
  cli::OutputArgs out_args;
  std::string queue;
  // Only the options the command line names are built; all of them when it names one that
  // mq-peek lacks, so that CLI11 reports it as usual (cli::OptionScan).
  cli::OptionScan scan(argc, argv);
  std::unique_ptr<CLI::App> app;
  for (;;) {
    app = std::make_unique<CLI::App>("Print messages of an mq queue without removing them",
                                     "mq-peek");
    app->footer("Examples:\n"
                "  mq-peek jobs                      # the message mq-receive would take next\n"
                "  mq-peek jobs --all --json         # every message, a JSON object each\n"
                "  mq-peek jobs --cursor audit --next\n"
                "See mq-peek(1).");
    cli::AddVersionFlag(*app);
    if (scan.Wants("-s,--store")) cli::AddStoreOption(*app, store_args);
    app->add_option("QUEUE", queue, "Queue to read")->required();
    cli::AddSelectOptions(*app, sel_args, false, scan);
    cli::AddOutputOptions(*app, out_args, scan);
    if (scan.Complete()) break;
    scan.WantAll();
  }
  if (int rc = cli::Parse(*app, argc, argv); rc >= 0) return rc;

  auto ref = cli::ParseQueueArg(queue);
  if (!ref.ok()) return cli::Fail(ref.status());
  if (Status sep = cli::CheckSeparated(sel_args, out_args); !sep.ok()) return cli::Fail(sep);
  auto sel = cli::MakeSelection(sel_args);
  if (!sel.ok()) return cli::Fail(sel.status());
  auto sink = cli::OutputSink::Make(out_args);
  if (!sink.ok()) return cli::Fail(sink.status());
  auto ro = cli::MakeReadOptions(sel_args);
  if (!ro.ok()) return cli::Fail(ro.status());
  std::optional<CursorOptions> co;
  if (cli::CountOf(*app, "--cursor")) {
    auto c = cli::MakeCursorOptions(sel_args, false);
    if (!c.ok()) return cli::Fail(c.status());
    co = *c;
  }
  store_args.read_only_ok = true;  // a peek only reads (a cursor move fails read-only)
  auto store = cli::OpenStore(store_args);
  if (!store.ok()) return cli::Fail(store.status());
  Status s = co ? (*store)->CursorPeek(*ref, *co, *ro, **sink)
                : (*store)->Peek(*ref, *sel, *ro, **sink);
  if (s.code() == Code::kBrokenPipe) return cli::ExitNow(0);  // the reader has seen enough
  if (!s.ok()) return cli::ExitNow(cli::Fail(s.WithSubject(ref->Full())));
  return cli::ExitNow(0);
}

}  // namespace
}  // namespace mq

int main(int argc, char** argv) { return mq::Run(argc, argv); }
