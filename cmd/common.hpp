// common.hpp: what the five tools share: diagnostics, exit codes, store options, and the
// options and output of the reading tools (mq-peek, mq-receive), each set up in one place so
// that spelling and help text agree everywhere. Implemented in common.cpp, select.cpp (the
// selection options) and output.cpp (the output options and OutputSink).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "output/columns.hpp"
#include "output/format.hpp"
#include "base/names.hpp"
#include "base/status.hpp"
#include "proc/stop.hpp"
#include "store/store.hpp"

namespace mq::cli {

// The program name in diagnostics ("mq-send"). Called first by every tool: it also opens
// /dev/null on any of descriptors 0, 1 and 2 that is closed, so that no store file can ever
// be one of them (LMDB would take the lowest free descriptor, and a later write to stdout or
// stderr would go into the store).
void SetTool(const char* name);
// Adds --version, which prints "TOOL (mq) VERSION" (the GNU form: `mq-send (mq) 0.1.0`).
// Call after SetTool.
void AddVersionFlag(CLI::App& app);
// Whether standard output was closed when the tool started (`>&-`): a tool that prints
// what it removes must refuse to run rather than print into /dev/null.
bool StdoutWasClosed();
const char* Tool();

// Prints "mq-TOOL: SUBJECT: text (MQ_SYMBOL 0xHEX)" on stderr; returns the exit status.
int Fail(const Status& status);
// Ends a one-shot tool whose work is done (its transactions over, its output written) with
// exit status `rc`: stdio is flushed and the process leaves at once, without closing the
// store or freeing its objects one by one. The kernel unmaps, closes and frees all of it at
// exit anyway, in one go, as after a kill (which every store user survives, lmdb.cpp); the
// piecemeal way cost a single send or receive 0.1-0.15 ms (bench/foundation.sh (a), (a2)).
// Built with AddressSanitizer it returns `rc`, so that LeakSanitizer still sees the heap.
int ExitNow(int rc);
// From now on, Fail() says nothing of "no message" (MQ_ERROR_MESSAGE_NOT_FOUND, and a wait
// that ran out): its exit status 1 says it (--quiet).
void QuietWhenEmpty();
// Prints "mq-TOOL: SUBJECT: text" on stderr: something the user should know, not an error.
void Note(const std::string& subject, const std::string& text);

// After --exec everything is the command's (the find -exec rule), but a word there that is one
// of the tool's own long options (--max-readers, --max-readers=3) was most likely meant for the
// tool: one note names them ("--max-readers after --exec is passed to ./h.sh; put mq-watch's
// options before --exec"). --help and --version are left alone: commands have their own.
void NoteOwnOptionsAfterExec(const CLI::App& app, const std::vector<std::string>& cmd);

// Parses argv. Returns -1 to go on, or the exit status to return at once: 0 after --help or
// --version, 2 after a usage error (never CLI11's own 100-127). Options that take an
// optional DURATION (-w/--wait) get "infinite" when the next word is not a duration, so that
// `mq-receive --wait jobs` means what it says.
int Parse(CLI::App& app, int argc, char** argv);

// The options a command line names, so that a tool can build only those: CLI11 2.1 compares
// each option it adds with every one added before, which for mq-send's 45 options was half
// of a send's instructions. It over-approximates: a word "-abc" names -a, -b and -c,
// "--name=value" names --name, and nothing after "--" is an option. --help, -h and
// --version want every option. A tool builds with Wants() deciding each option, then, if
// Complete() is false (the line names an option it did not add: one it lacks, which CLI11
// must report as usual, or a value that looks like an option), builds again after WantAll().
class OptionScan {
 public:
  OptionScan(int argc, char** argv);
  // Whether to add the option of these CLI11 names ("-p,--priority"); notes them as offered.
  bool Wants(std::string_view names);
  bool Complete() const;
  void WantAll() { all_ = true; }

 private:
  bool all_ = false;
  std::vector<std::string> longs_, offered_longs_;
  std::string shorts_, offered_shorts_;
};
// a->excludes(b) for each of `others`, where both were built (an OptionScan may leave out
// either).
void Excludes(CLI::Option* a, std::initializer_list<CLI::Option*> others);
// How many times the option `name` was given; 0 if the app has no such option (one that an
// OptionScan left out).
size_t CountOf(const CLI::App& app, const std::string& name);

// A whole number from `min` to `max`, refused with the limits a user can act on ("-n 0":
// "give a whole number of at least 1"), where CLI::Range would print its bounds as stored
// (1 to 4611686018427387904). kNoLimit as `max`: no upper bound is worth naming (the value
// must still fit in 62 bits).
inline constexpr int64_t kNoLimit = int64_t{1} << 62;
CLI::Validator WholeNumber(int64_t min, int64_t max);

// Refuses an empty value: for an option that selects (--id "$id" with $id unset), an empty
// value would otherwise mean the option was not given, and select every message.
CLI::Validator NotEmpty();

struct StoreArgs {
  std::string dir;
  bool create = false;
  // The command only reads: a store it cannot write is opened read-only, with one note.
  bool read_only_ok = false;
};
void AddStoreOption(CLI::App& app, StoreArgs& args);
Result<std::unique_ptr<Store>> OpenStore(const StoreArgs& args);

// SIGINT and SIGTERM set a flag and make the returned descriptor readable (a self-pipe, for
// Waiter's stop_fd); -1 if the pipe could not be made. Wake() makes it readable too (for
// SIGCHLD handlers). Stopping() tells whether a stop signal came.
int StopOnSignals();
// The process's stop signal, for engines (lib/proc/stop.hpp); StopOnSignals() arms it.
proc::StopSignal& Stop();
void WakeStopPipe();
bool Stopping();
// Sleeps `ms`, or less if a stop signal comes (`stop_fd` from StopOnSignals): whether one came.
bool SleepUnlessStopped(int stop_fd, int64_t ms);

// A queue reference argument, validated at parse time.
Result<QueueRef> ParseQueueArg(const std::string& text);

// Selection options of mq-peek and mq-receive.
struct SelectArgs {
  uint64_t count = 1;
  bool all = false;
  uint64_t top = 0;
  uint64_t lookup_id = 0;
  bool lookup_given = false;
  bool first = false, last = false, next = false, prev = false;
  std::string id;
  std::string correlation;
  std::string cursor;
  bool current = false;
  bool no_wait_lock = false;
  bool locked = false;
  std::string wait;  // empty: not given
};
// `receive` leaves out what only peeks do (--cursor with --first/--next).
void AddSelectOptions(CLI::App& app, SelectArgs& args, bool receive, OptionScan& scan);
Result<Selection> MakeSelection(const SelectArgs& args);
Result<ReadOptions> MakeReadOptions(const SelectArgs& args);
// For --cursor: the cursor and its action; E_INVALIDARG if the options do not fit together.
Result<CursorOptions> MakeCursorOptions(const SelectArgs& args, bool receive);
// Adds -w/--wait [DURATION], also spelled -t/--timeout (mq-watch's old name).
void AddWaitOption(CLI::App& app, std::string& wait, const char* what);
Result<int64_t> ParseWait(const std::string& wait);

// Output options of the reading tools.
struct OutputArgs {
  bool json = false;
  std::string format;
  std::string templ;
  bool lines = false;
  bool null = false;
  std::string columns;  // empty: not given
  bool header = false;
  std::string into;     // empty: stdout
};
void AddOutputOptions(CLI::App& app, OutputArgs& args, OptionScan& scan);
// Whether any option that shapes or redirects output was given (tools that print nothing
// themselves, such as mq-receive --exec, refuse them).
bool HasOutputOptions(const OutputArgs& args);
// Raw bodies carry no separator: a selection of several messages (--all, -n or --top above 1)
// with no output option would run them together ("12345"). E_INVALIDARG with a hint then.
Status CheckSeparated(const SelectArgs& select, const OutputArgs& output);

// Writes messages to stdout, or appends them to the --into file, as raw bodies, JSON lines, a
// template, or rows of Service Broker columns (--columns, --format tsv|csv, columns.hpp).
//
// For stdout, output may be written in pieces during Add() (above 1 MiB). For --into, a
// batch (the messages between two Flush() calls: one store transaction) is kept whole and
// appended by Flush() with FileAppender: locked, in one piece, synced. mq-receive commits
// only after Flush() succeeded, so a failed append removes nothing.
class OutputSink : public MessageSink {
 public:
  static Result<std::unique_ptr<OutputSink>> Make(const OutputArgs& args);
  // Raw bodies without -l or -0 cannot show where one of several messages ends (a
  // conversation group's receive takes several without --all): refused.
  Status Accept(size_t n) override;
  Status Add(const Message& m) override;
  Status Flush() override;
  // stdout: the reader has read it (FdWriter::WaitTaken); --into: Flush() synced it.
  Status Taken() override { return into_ ? Status() : out_.WaitTaken(); }
  void SetLease(const std::string& token, int64_t expires) override {
    lease_token_ = token;
    lease_expires_ = expires;
  }
  // Whether a --lease token goes into the output (full --json); otherwise the caller prints
  // it on stderr.
  bool CarriesLeaseToken() const { return mode_ == Mode::kJson; }
  // With --into: the rows of the last batch appended to the file, if no Add() has started a
  // new batch since. After a failed receive, these rows may stand for messages whose removal
  // did not commit. 0 without --into.
  uint64_t UnconfirmedRows() const { return unconfirmed_rows_; }
  const std::string& IntoPath() const { return into_path_; }

 private:
  enum class Mode { kRaw, kJson, kTemplate, kRows };
  OutputSink() : out_(1, "stdout") {}
  Mode mode_ = Mode::kRaw;
  std::string sep_;
  std::optional<Template> templ_;
  std::optional<ColumnList> columns_;
  bool header_ = false;       // tsv/csv: a header line before the first row
  bool header_done_ = false;  // stdout only; --into decides by the file's length
  FdWriter out_;
  std::unique_ptr<FileAppender> into_;
  std::string into_path_;
  std::string batch_;         // --into: the batch not yet appended
  std::string text_;          // the message being written (its storage reused)
  uint64_t batch_rows_ = 0;
  uint64_t unconfirmed_rows_ = 0;
  std::string lease_token_;
  int64_t lease_expires_ = 0;
};
// Reports a failed receive; with --into, also that the rows of the last batch appended may
// stand for messages that were not removed (the commit, or what followed it, failed).
int FailAfterInto(const Status& status, const OutputSink& sink);

}  // namespace mq::cli
