// common.cpp: diagnostics, argument parsing, the store option and stop signals, shared by the
// tools (common.hpp; the reading tools' selection options are in select.cpp, their output in
// output.cpp).
#include "common.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>

#include <cstdio>
#include <utility>

#include <fmt/format.h>

#include "base/codec.hpp"
#include "base/ids.hpp"
#include "base/units.hpp"

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

namespace {
bool g_quiet_empty = false;
}  // namespace

void QuietWhenEmpty() { g_quiet_empty = true; }

int Fail(const Status& status) {
  if (g_quiet_empty &&
      (status.code() == Code::kMessageNotFound || status.code() == Code::kIoTimeout))
    return ExitCode(status);
  std::string line = fmt::format("{}: {}\n", g_tool, status.ToString());
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
  return ExitCode(status);
}

#if defined(__SANITIZE_ADDRESS__)
#define MQ_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MQ_LEAK_CHECKED 1
#endif
#endif

int ExitNow(int rc) {
#ifdef MQ_LEAK_CHECKED
  return rc;
#else
  std::fflush(nullptr);
  ::_exit(rc);
#endif
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

void NoteOwnOptionsAfterExec(const CLI::App& app, const std::vector<std::string>& cmd) {
  std::vector<std::string> found;
  for (size_t i = 1; i < cmd.size(); ++i) {
    const std::string& w = cmd[i];
    if (w == "--") break;  // the command's own end of options
    if (w.size() < 3 || w.compare(0, 2, "--") != 0) continue;
    std::string name = w.substr(2, w.find('=') - 2);
    if (name == "help" || name == "version") continue;
    bool ours = app.get_option_no_throw("--" + name) != nullptr;
    if (ours && std::find(found.begin(), found.end(), "--" + name) == found.end())
      found.push_back("--" + name);
  }
  if (found.empty()) return;
  std::string names;
  for (const std::string& f : found) names += (names.empty() ? "" : ", ") + f;
  Note("", fmt::format("note: {} after --exec {} passed to {}; put {}'s options before --exec",
                       names, found.size() == 1 ? "is" : "are", PeerText(cmd.front()), g_tool));
}

namespace {

// The command line whose --help explains a usage error: the tool and the subcommands parsed
// so far (`mq-admin link add --help`, not `mq-admin --help`).
std::string HelpFor(const CLI::App& app) {
  std::string path = g_tool;
  const CLI::App* at = &app;
  for (;;) {
    auto subs = at->get_subcommands();
    if (subs.empty()) break;
    at = subs.front();
    path += " " + at->get_name();
  }
  return path;
}

}  // namespace

OptionScan::OptionScan(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view w = argv[i];
    if (w == "--") break;
    if (w == "-h" || w == "--help") all_ = true;
    if (w == "--version") continue;  // every tool has it (AddVersionFlag): nothing to build
    if (w.size() > 2 && w.substr(0, 2) == "--") {
      longs_.emplace_back(w.substr(2, w.find('=') == std::string_view::npos ? std::string_view::npos
                                                                            : w.find('=') - 2));
    } else if (w.size() > 1 && w[0] == '-') {
      shorts_.append(w.substr(1));
    }
  }
}

bool OptionScan::Wants(std::string_view names) {
  bool named = false;
  while (!names.empty()) {
    std::string_view n = names.substr(0, names.find(','));
    names.remove_prefix(std::min(names.size(), n.size() + 1));
    if (n.size() > 2 && n.substr(0, 2) == "--") {
      n.remove_prefix(2);
      offered_longs_.emplace_back(n);
      named = named || std::find(longs_.begin(), longs_.end(), n) != longs_.end();
    } else if (n.size() == 2 && n[0] == '-') {
      offered_shorts_.push_back(n[1]);
      named = named || shorts_.find(n[1]) != std::string::npos;
    }
  }
  return all_ || named;
}

bool OptionScan::Complete() const {
  if (all_) return true;
  for (const std::string& l : longs_)
    if (std::find(offered_longs_.begin(), offered_longs_.end(), l) == offered_longs_.end())
      return false;
  for (char c : shorts_)
    if (offered_shorts_.find(c) == std::string::npos) return false;
  return true;
}

void Excludes(CLI::Option* a, std::initializer_list<CLI::Option*> others) {
  if (!a) return;
  for (CLI::Option* b : others)
    if (b) a->excludes(b);
}

size_t CountOf(const CLI::App& app, const std::string& name) {
  const CLI::Option* o = app.get_option_no_throw(name);
  return o ? o->count() : 0;
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
    return Fail(Status::InvalidArg(what + fmt::format(" (see {} --help)", HelpFor(app))));
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    return Fail(Status::InvalidArg(what + fmt::format(" (see {} --help)", HelpFor(app))));
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
  o.read_only_ok = args.read_only_ok;
  auto s = Store::Open(o);
  if (s.ok() && !(*s)->read_only().empty())
    Note((*s)->dir(), "note: opened read-only: " + (*s)->read_only());
  return s;
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

}  // namespace mq::cli

