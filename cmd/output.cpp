// output.cpp: the output options of the reading tools and OutputSink, which writes messages
// to stdout or appends them to the --into file (common.hpp).
#include "common.hpp"

#include <fmt/format.h>

#include "base/units.hpp"

namespace mq::cli {

void AddOutputOptions(CLI::App& app, OutputArgs& a, OptionScan& scan) {
  CLI::Option *json = nullptr, *format = nullptr, *templ = nullptr, *lines = nullptr,
              *null = nullptr, *columns = nullptr;
  if (scan.Wants("--json"))
    json = app.add_flag("--json", a.json, "One JSON object per message (--format json)");
  if (scan.Wants("--format"))
    format = app.add_option("--format", a.format,
                            "Output format: json (every property), tsv or csv (rows of "
                            "Service Broker columns, see --columns)")
                 ->type_name("NAME");
  if (scan.Wants("--template"))
    templ = app.add_option("--template", a.templ,
                           "Print each message through {field} placeholders, e.g. "
                           "'{lookup_id}\\t{label}\\n'")
                ->type_name("TEXT");
  Excludes(json, {format, templ});
  Excludes(format, {templ});
  if (scan.Wants("-l,--lines"))
    lines = app.add_flag("-l,--lines", a.lines, "End each raw body with a newline");
  if (scan.Wants("-0,--null"))
    null = app.add_flag("-0,--null", a.null, "End each raw body with a NUL byte");
  Excludes(lines, {null});
  if (scan.Wants("--columns"))
    columns = app.add_option("--columns", a.columns,
                             "Print these Service Broker queue columns, comma-separated, in this "
                             "order ('*': all), as --format tsv (default), csv or json rows")
                  ->type_name("LIST");
  Excludes(columns, {templ});
  if (scan.Wants("--header"))
    app.add_flag("--header", a.header, "With tsv or csv rows: a first line of column names");
  if (scan.Wants("--into"))
    app.add_option("--into", a.into,
                   "Append the output to FILE instead of stdout, each batch locked, whole and "
                   "fsynced (before a receive commits)")
        ->type_name("FILE");
}

bool HasOutputOptions(const OutputArgs& a) {
  return a.json || !a.format.empty() || !a.templ.empty() || a.lines || a.null ||
         !a.columns.empty() || a.header || !a.into.empty();
}

namespace {
const char kRunTogether[] =
    "several bodies would run together: add -l, -0, --json or a --template";
}  // namespace

Status CheckSeparated(const SelectArgs& select, const OutputArgs& output) {
  bool several = select.all || select.count > 1 || select.top > 1;
  // --into and --header only say where and with what heading: the bodies would still run
  // together, in the file as on stdout.
  bool separated = output.json || !output.format.empty() || !output.templ.empty() ||
                   output.lines || output.null || !output.columns.empty();
  if (!several || separated) return Status();
  return Status::InvalidArg(kRunTogether);
}

Result<std::unique_ptr<OutputSink>> OutputSink::Make(const OutputArgs& a) {
  std::unique_ptr<OutputSink> sink(new OutputSink());
  std::string format = a.json ? "json" : a.format;
  if (!format.empty() && format != "json" && format != "tsv" && format != "csv")
    return Status::InvalidArg(
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
      return Status::InvalidArg("--header goes with tsv and csv rows, not json");
  } else if (format == "json") {
    sink->mode_ = Mode::kJson;
  } else if (!a.templ.empty()) {
    auto t = Template::Parse(a.templ);
    if (!t.ok()) return t.status();
    sink->templ_ = std::move(*t);
    sink->mode_ = Mode::kTemplate;
  }
  if (a.header && sink->mode_ != Mode::kRows)
    return Status::InvalidArg("--header goes with --format tsv or csv (or --columns)");
  if (sink->mode_ != Mode::kRaw && (a.lines || a.null))
    return Status::InvalidArg("-l and -0 apply to raw bodies only");
  if (a.lines) sink->sep_ = "\n";
  if (a.null) sink->sep_ = std::string(1, '\0');
  if (a.into.empty() && StdoutWasClosed())
    return Status::BrokenPipe(
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

Status OutputSink::Accept(size_t n) {
  if (n > 1 && mode_ == Mode::kRaw && sep_.empty())
    return Status::InvalidArg(
        fmt::format("{} (a conversation group of {} messages)", kRunTogether, n));
  return {};
}

Status OutputSink::Add(const Message& m) {
  std::string& text = text_;
  switch (mode_) {
    case Mode::kRaw: text.assign(m.body).append(sep_); break;
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

int FailAfterInto(const Status& status, const OutputSink& sink) {
  int rc = Fail(status);
  if (uint64_t n = sink.UnconfirmedRows())
    Note(sink.IntoPath(),
         fmt::format("the last {} row(s) appended here may stand for messages that were "
                     "not removed and will be received again",
                     n));
  return rc;
}

}  // namespace mq::cli
