// common.cpp: diagnostics, argument parsing and output shared by the tools.
#include "common.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>

#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include "base/ids.hpp"
#include "base/units.hpp"
#include "store/waiter.hpp"

namespace mq::cli {

namespace {
const char* g_tool = "mq";
}

namespace {
bool g_stdout_closed = false;
bool g_wait_option = false;  // AddWaitOption ran: -t/--timeout is its other spelling
}

void SetTool(const char* name) {
  g_tool = name;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == 1) g_stdout_closed = true;
    // The lowest free descriptor: this one, as the lower ones are open by now.
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0 && null_fd != fd) ::close(null_fd);  // cannot happen; never keep a stray
  }
}

bool StdoutWasClosed() { return g_stdout_closed; }
const char* Tool() { return g_tool; }

int Fail(const Status& status) {
  std::string line = fmt::format("{}: {}\n", g_tool, status.ToString());
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
  return ExitCode(status);
}

namespace {

void OnStopSignal(int) { Stop().Request(); }

}  // namespace

proc::StopSignal& Stop() {
  static proc::StopSignal stop;
  return stop;
}

void WakeStopPipe() { Stop().Wake(); }

bool Stopping() { return Stop().Requested(); }

bool SleepUnlessStopped(int, int64_t ms) { return Stop().SleepFor(ms); }

int StopOnSignals() {
  if (!Stop().valid()) return -1;
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return Stop().fd();
}

void AddVersionFlag(CLI::App& app) {
  app.set_version_flag("--version", fmt::format("{} (mq) {}", g_tool, MQ_VERSION));
}

void Note(const std::string& subject, const std::string& text) {
  std::string line = subject.empty() ? fmt::format("{}: {}\n", g_tool, text)
                                     : fmt::format("{}: {}: {}\n", g_tool, subject, text);
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

int Parse(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> args;
  std::vector<std::string> after_wait;  // words after a bare -w/-t that were not durations
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool takes_optional =
        a == "-w" || a == "--wait" || (g_wait_option && (a == "-t" || a == "--timeout"));
    if (takes_optional) {
      // A word that starts with a digit is meant as the duration: passed on, so that a bad
      // one ("1x") is named as such.
      bool next_is_duration =
          i + 1 < argc && (ParseDuration(argv[i + 1]).ok() ||
                           (argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9'));
      if (!next_is_duration) a += a.size() == 2 ? "infinite" : "=infinite";
      if (!next_is_duration && i + 1 < argc) after_wait.emplace_back(argv[i + 1]);
    }
    args.push_back(std::move(a));
  }
  std::vector<char*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  try {
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    // `mq-watch q -t soon` or `mq-watch -t soon q`: the word after -t was taken for an
    // operand, as it is no duration, and so one word was left over. The word after -t is
    // what the user got wrong, most likely: it is named as the bad duration.
    std::string what = e.what();
    for (const std::string& w : after_wait)
      if (what.size() >= w.size() && what.compare(what.size() - w.size(), w.size(), w) == 0)
        return Fail(ParseDuration(w).status());
    if (!after_wait.empty()) return Fail(ParseDuration(after_wait.front()).status());
    return Fail(Status(Code::kInvalidArg, what + fmt::format(" (see {} --help)", g_tool)));
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    return Fail(Status(Code::kInvalidArg,
                       what + fmt::format(" (see {} --help)", g_tool)));
  }
  return -1;
}

CLI::Validator WholeNumber(int64_t min, int64_t max) {
  std::string range = max == kNoLimit ? fmt::format("of at least {}", min)
                                      : fmt::format("from {} to {}", min, max);
  return CLI::Validator(
      [min, max, range](std::string& input) -> std::string {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(input.data(), input.data() + input.size(), v);
        bool whole = ec == std::errc() && p == input.data() + input.size();
        if (whole && v >= min && v <= max) return {};
        bool too_large = ec == std::errc::result_out_of_range ? input[0] != '-' : whole && v > max;
        if (too_large && max == kNoLimit)
          return fmt::format("'{}' is too large (at most {})", input, max);
        return fmt::format("'{}' is not allowed: give a whole number {}", input, range);
      },
      max == kNoLimit ? fmt::format("at least {}", min) : fmt::format("{} to {}", min, max));
}

CLI::Validator NotEmpty() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        return input.empty() ? "empty (an unset variable?): it would select any message" : "";
      },
      "");
}

void AddStoreOption(CLI::App& app, StoreArgs& args) {
  app.add_option("-s,--store", args.dir,
                 "Store directory (default: $MQ_STORE, else $XDG_DATA_HOME/mq, else "
                 "~/.local/share/mq)")
      ->type_name("DIR");
}

Result<std::unique_ptr<Store>> OpenStore(const StoreArgs& args) {
  OpenOptions o;
  o.dir = args.dir;
  o.create = args.create;
  return Store::Open(o);
}

Result<QueueRef> ParseQueueArg(const std::string& text) { return ParseQueueRef(text); }

void AddWaitOption(CLI::App& app, std::string& wait, const char* what) {
  g_wait_option = true;
  app.add_option("-w,--wait,-t,--timeout", wait, what)->type_name("[DURATION]")->expected(0, 1);
}

Result<int64_t> ParseWait(const std::string& wait) {
  if (wait.empty()) return int64_t{0};
  return ParseDuration(wait);
}

void AddSelectOptions(CLI::App& app, SelectArgs& a, bool receive) {
  auto* n = app.add_option("-n,--count", a.count, "Take up to N messages (default 1)")
                ->type_name("N")
                ->check(WholeNumber(1, kNoLimit));
  auto* all = app.add_flag("--all", a.all, "Take every qualifying message");
  auto* top = app.add_option("--top", a.top, "Service Broker TOP(N): at most N messages")
                  ->type_name("N")
                  ->check(WholeNumber(1, kNoLimit));
  n->excludes(all)->excludes(top);
  all->excludes(top);
  auto* lookup = app.add_option_function<uint64_t>(
                        "--lookup-id",
                        [&a](const uint64_t& v) {
                          a.lookup_id = v;
                          a.lookup_given = true;
                        },
                        "Start at the message with this lookup id (PeekByLookupId; ignored "
                        "with --first or --last, as MSMQ's PEEK_FIRST and PEEK_LAST)")
                     ->type_name("N")
                     ->check(WholeNumber(0, kNoLimit));
  auto* first = app.add_flag("--first", a.first,
                             receive ? "From the first message of the queue"
                                     : "From the first message of the queue (with --cursor: "
                                       "move the cursor to it)");
  auto* last = app.add_flag("--last", a.last, "From the last message, backwards");
  auto* next = app.add_flag("--next", a.next,
                            receive ? "The message(s) after --lookup-id"
                                    : "The message(s) after --lookup-id (with --cursor: "
                                      "advance the cursor)");
  auto* prev = app.add_flag("--prev", a.prev, "The message(s) before --lookup-id, backwards");
  auto* current =
      app.add_flag("--current", a.current, "With --cursor: the message at the cursor");
  first->excludes(last)->excludes(next)->excludes(prev)->excludes(current);
  last->excludes(next)->excludes(prev)->excludes(current);
  next->excludes(prev)->excludes(current);
  prev->excludes(current);
  auto* id = app.add_option("--id", a.id, "The message with this id")
                 ->type_name("MSGID")
                 ->check(NotEmpty());
  auto* corr = app.add_option("--correlation", a.correlation,
                              "Messages with this correlation id (40 hex digits or a message id)")
                   ->type_name("ID")
                   ->check(NotEmpty());
  id->excludes(corr)->excludes(lookup)->excludes(first)->excludes(last);
  corr->excludes(lookup)->excludes(first)->excludes(last);
  auto* cursor = app.add_option("--cursor", a.cursor,
                                receive ? "Receive the message at this named cursor (--current)"
                                        : "Use this named cursor, kept in the store, with "
                                          "--first, --current or --next")
                     ->type_name("NAME");
  cursor->excludes(lookup)->excludes(id)->excludes(corr)->excludes(last)->excludes(prev)
      ->excludes(all)->excludes(top)->excludes(n);
  app.add_flag("--no-wait-lock", a.no_wait_lock,
               "With --cursor: fail (exit 5) instead of waiting when another process is using "
               "the cursor");
  if (!receive)
    app.add_flag("--locked", a.locked,
                 "Also show messages Locked by an open transactional receive "
                 "(AllowPeekWhenLocked)");
  AddWaitOption(app, a.wait,
                "Wait for a qualifying message, up to DURATION (default: infinite; 0: look "
                "once)");
}

Result<Selection> MakeSelection(const SelectArgs& a) {
  Selection s;
  s.limit = a.all ? 0 : a.top ? a.top : a.count;
  if ((a.next || a.prev) && !a.lookup_given && a.cursor.empty())
    return Status(Code::kInvalidArg, "--next and --prev need --lookup-id (or --cursor)");
  if (a.current && a.cursor.empty())
    return Status(Code::kInvalidArg, "--current needs --cursor");
  if (a.no_wait_lock && a.cursor.empty())
    return Status(Code::kInvalidArg, "--no-wait-lock applies to --cursor");
  if (a.locked && !a.cursor.empty())
    return Status(Code::kInvalidArg,
                  "--locked applies to plain peeks; a cursor skips Locked messages");
  s.include_locked = a.locked;
  // With --first or --last the lookup id is ignored (MQ_LOOKUP_PEEK_FIRST / _LAST).
  if (a.next) s.anchor = Anchor::kAfter;
  else if (a.prev) s.anchor = Anchor::kBefore;
  else if (a.last) s.anchor = Anchor::kLast;
  else if (a.first) s.anchor = Anchor::kHead;
  else if (a.lookup_given) s.anchor = Anchor::kAt;
  if (s.anchor == Anchor::kAt || s.anchor == Anchor::kAfter || s.anchor == Anchor::kBefore) {
    if (a.lookup_id == 0 && a.cursor.empty())
      return Status(Code::kInvalidArg,
                    "--lookup-id must be a positive number (0 only with --first or --last)");
    s.lookup_id = a.lookup_id;
  }
  if (!a.id.empty()) {
    auto id = ParseMessageId(a.id);
    if (!id)
      return Status(Code::kInvalidArg,
                    fmt::format("invalid message id '{}': expected {{GUID}}\\N", a.id));
    s.anchor = Anchor::kId;
    s.id = *id;
    s.limit = 1;
  }
  if (!a.correlation.empty()) {
    auto c = ParseCorrelationId(a.correlation);
    if (!c.ok()) return c.status();
    s.anchor = Anchor::kCorrelation;
    s.correlation = *c;
  }
  return s;
}

Result<ReadOptions> MakeReadOptions(const SelectArgs& a) {
  ReadOptions ro;
  auto w = ParseWait(a.wait);
  if (!w.ok()) return w.status();
  ro.wait_ms = *w;
  return ro;
}

Result<CursorOptions> MakeCursorOptions(const SelectArgs& a, bool receive) {
  CursorOptions co;
  co.name = a.cursor;
  co.wait_lock = !a.no_wait_lock;
  // No --wait: wait for the cursor's lock as long as it takes; --wait D: at most D.
  if (!a.wait.empty()) {
    auto w = ParseWait(a.wait);
    if (w.ok()) co.lock_wait_ms = *w < 0 ? -1 : *w;
  }
  MQ_RETURN_IF_ERROR(CheckCursorName(a.cursor));
  int actions = a.first + a.current + a.next;
  if (receive) {
    if (!a.current || actions != 1)
      return Status(Code::kInvalidArg, "a receive at a cursor takes --current");
    if (!a.wait.empty())
      return Status(Code::kInvalidArg,
                    "--wait does not apply to a receive at a cursor: the message is there or "
                    "not");
  } else if (actions != 1) {
    return Status(Code::kInvalidArg, "--cursor needs one of --first, --current, --next");
  }
  co.action = a.first ? CursorAction::kFirst
              : a.next ? CursorAction::kNext
                       : CursorAction::kCurrent;
  return co;
}

void AddOutputOptions(CLI::App& app, OutputArgs& a) {
  auto* json = app.add_flag("--json", a.json, "One JSON object per message (--format json)");
  auto* format = app.add_option("--format", a.format,
                                "Output format: json (every property), tsv or csv (rows of "
                                "Service Broker columns, see --columns)")
                     ->type_name("NAME");
  auto* templ = app.add_option("--template", a.templ,
                               "Print each message through {field} placeholders, e.g. "
                               "'{lookup_id}\\t{label}\\n'")
                    ->type_name("TEXT");
  json->excludes(format)->excludes(templ);
  format->excludes(templ);
  auto* lines = app.add_flag("-l,--lines", a.lines, "End each raw body with a newline");
  auto* null = app.add_flag("-0,--null", a.null, "End each raw body with a NUL byte");
  lines->excludes(null);
  auto* columns =
      app.add_option("--columns", a.columns,
                     "Print these Service Broker queue columns, comma-separated, in this order "
                     "('*': all), as --format tsv (default), csv or json rows")
          ->type_name("LIST");
  columns->excludes(templ);
  app.add_flag("--header", a.header, "With tsv or csv rows: a first line of column names");
  app.add_option("--into", a.into,
                 "Append the output to FILE instead of stdout, each batch locked, whole and "
                 "fsynced (before a receive commits)")
      ->type_name("FILE");
}

bool HasOutputOptions(const OutputArgs& a) {
  return a.json || !a.format.empty() || !a.templ.empty() || a.lines || a.null ||
         !a.columns.empty() || a.header || !a.into.empty();
}

Status CheckSeparated(const SelectArgs& select, const OutputArgs& output) {
  bool several = select.all || select.count > 1 || select.top > 1;
  // --into and --header only say where and with what heading: the bodies would still run
  // together, in the file as on stdout.
  bool separated = output.json || !output.format.empty() || !output.templ.empty() ||
                   output.lines || output.null || !output.columns.empty();
  if (!several || separated) return Status();
  return Status(Code::kInvalidArg,
                "several bodies would run together: add -l, -0, --json or a --template");
}

Result<std::unique_ptr<OutputSink>> OutputSink::Make(const OutputArgs& a) {
  std::unique_ptr<OutputSink> sink(new OutputSink());
  std::string format = a.json ? "json" : a.format;
  if (!format.empty() && format != "json" && format != "tsv" && format != "csv")
    return Status(Code::kInvalidArg,
                  fmt::format("unknown --format '{}' (this tool prints: json, tsv, csv)", format));
  if (format == "tsv" || format == "csv" || !a.columns.empty()) {
    RowFormat rf = format == "json" ? RowFormat::kJson
                   : format == "csv" ? RowFormat::kCsv
                                     : RowFormat::kTsv;
    auto cols = ColumnList::Parse(a.columns.empty() ? "*" : a.columns, rf);
    if (!cols.ok()) return cols.status();
    sink->columns_ = std::move(*cols);
    sink->mode_ = Mode::kRows;
    sink->header_ = a.header;
    if (a.header && rf == RowFormat::kJson)
      return Status(Code::kInvalidArg, "--header goes with tsv and csv rows, not json");
  } else if (format == "json") {
    sink->mode_ = Mode::kJson;
  } else if (!a.templ.empty()) {
    auto t = Template::Parse(a.templ);
    if (!t.ok()) return t.status();
    sink->templ_ = std::move(*t);
    sink->mode_ = Mode::kTemplate;
  }
  if (a.header && sink->mode_ != Mode::kRows)
    return Status(Code::kInvalidArg, "--header goes with --format tsv or csv (or --columns)");
  if (sink->mode_ != Mode::kRaw && (a.lines || a.null))
    return Status(Code::kInvalidArg, "-l and -0 apply to raw bodies only");
  if (a.lines) sink->sep_ = "\n";
  if (a.null) sink->sep_ = std::string(1, '\0');
  if (a.into.empty() && StdoutWasClosed())
    return Status(Code::kBrokenPipe,
                  "standard output is closed: nothing could read the messages (use --into FILE "
                  "or redirect it)");
  if (!a.into.empty()) {
    // Opened now, before any message is touched: a bad path fails with nothing received.
    auto f = FileAppender::Open(a.into);
    if (!f.ok()) return f.status();
    sink->into_ = std::move(*f);
    sink->into_path_ = a.into;
  }
  return sink;
}

Status OutputSink::Add(const Message& m) {
  std::string text;
  switch (mode_) {
    case Mode::kRaw:
      text = m.body + sep_;
      break;
    case Mode::kJson:
      if (lease_token_.empty()) {
        text = MessageToJsonLine(m);
      } else {
        auto j = MessageToJson(m);
        j["lease_token"] = lease_token_;
        j["lease_expires"] = FormatTime(lease_expires_);
        text = j.dump() + "\n";
      }
      break;
    case Mode::kTemplate:
      text = templ_->Render(m);
      break;
    case Mode::kRows:
      text = columns_->Row(m);
      break;
  }
  if (into_) {
    // A new batch means the one appended before it was committed.
    if (batch_rows_ == 0) unconfirmed_rows_ = 0;
    batch_ += text;
    ++batch_rows_;
    return {};
  }
  if (header_ && !header_done_) {
    out_.Append(columns_->Header());
    header_done_ = true;
  }
  out_.Append(text);
  if (out_.buffered() >= (1 << 20)) return out_.Flush();
  return {};
}

Status OutputSink::Flush() {
  if (!into_) return out_.Flush();
  if (batch_rows_ == 0) return {};
  Status s = into_->Append(batch_, header_ ? columns_->Header() : std::string());
  batch_.clear();
  unconfirmed_rows_ = s.ok() ? batch_rows_ : 0;
  batch_rows_ = 0;
  return s;
}

}  // namespace mq::cli
