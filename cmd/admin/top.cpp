// mq-admin top [QUEUE...] [--interval DURATION] [-n COUNT] [--json]
//   A live view of the store. On a terminal, full screen (ncurses): one row per queue with
//   its counts and rates in and out, then links and open leases; redrawn each interval and
//   as soon as a doorbell rings. Keys: q quits, s cycles the sort column, / filters queue
//   names, p pauses. Elsewhere (a pipe, a file, cron): a block of lines per interval, as
//   `vmstat 1` prints, or with --json one object per interval; -n stops after COUNT. It only
//   reads: each sample is a few short read transactions (lib/monitor), none is held between
//   them, and a store mounted read-only can be watched too.
//
// This file is left out of mq-admin's unity batches (CMakeLists.txt): curses.h defines
// macros (OK, ERR, and functions as macros) that other files must not see.
#define NCURSES_NOMACROS
#include <curses.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <clocale>
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "admin.hpp"
#include "base/units.hpp"
#include "monitor/monitor.hpp"

namespace mq::admin {

namespace {

struct Args {
  std::vector<std::string> queues;
  std::string interval = "1s";
  uint64_t count = 0;  // 0: until stopped
  bool json = false;
};

// Redraws that a ring asks for are at least this far apart (a busy queue rings thousands of
// times a second); the interval's own redraws are not delayed.
constexpr int64_t kMinRedrawGapMs = 100;

// The pipe form: a block (or a JSON line) per interval, until COUNT or a closed pipe.
int RunLines(Store& store, const std::vector<QueueRef>& refs, const Args& a, int64_t every) {
  monitor::Rates rates;
  int64_t next = MonotonicMs();
  for (uint64_t i = 0; a.count == 0 || i < a.count; ++i) {
    if (i) {
      int64_t wait = next - MonotonicMs();
      if (wait > 0) ::poll(nullptr, 0, static_cast<int>(wait));
    }
    next += every;
    auto sample = monitor::Take(store, refs);
    if (!sample.ok()) return cli::Fail(sample.status());
    rates.Apply(*sample, true);
    monitor::Arrange(*sample, monitor::SortKey::kName, "");
    FdWriter out(1, "stdout");
    if (a.json) {
      out.Append(monitor::ToJson(*sample).dump() + "\n");
    } else {
      for (const monitor::Line& l : monitor::Format(*sample)) out.Append(l.text + "\n");
      out.Append("\n");
    }
    Status st = out.Flush();
    if (st.code() == Code::kBrokenPipe) return 0;
    if (!st.ok()) return cli::Fail(st);
  }
  return 0;
}

// The terminal, restored on every way out.
class Screen {
 public:
  Screen() {
    std::setlocale(LC_CTYPE, "");
    ::initscr();
    ::cbreak();
    ::noecho();
    ::keypad(stdscr, TRUE);
    ::nodelay(stdscr, TRUE);
    ::curs_set(0);
    const char* no_color = std::getenv("NO_COLOR");
    if (::has_colors() && !(no_color && *no_color)) {
      ::start_color();
      ::use_default_colors();
      ::init_pair(1, COLOR_BLACK, COLOR_CYAN);  // headings
      ::init_pair(2, COLOR_RED, -1);            // a status line that reports an error
      color_ = true;
    }
  }
  ~Screen() { ::endwin(); }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  void Draw(const std::vector<monitor::Line>& lines, const std::string& status, bool error) {
    ::erase();
    int rows = LINES, cols = COLS;
    int y = 0;
    for (const monitor::Line& l : lines) {
      if (y >= rows - 1) break;
      if (l.heading) ::attron(color_ ? COLOR_PAIR(1) : A_REVERSE);
      ::mvaddnstr(y, 0, l.text.c_str(), cols);
      if (l.heading) {
        // A heading is a full-width bar.
        for (int x = static_cast<int>(l.text.size()); x < cols; ++x) ::mvaddch(y, x, ' ');
        ::attroff(color_ ? COLOR_PAIR(1) : A_REVERSE);
      }
      ++y;
    }
    if (error) ::attron(color_ ? COLOR_PAIR(2) : A_BOLD);
    ::mvaddnstr(rows - 1, 0, status.c_str(), cols);
    if (error) ::attroff(color_ ? COLOR_PAIR(2) : A_BOLD);
    ::refresh();
  }

  // After SIGWINCH: the terminal's new size.
  void Resize() {
    winsize ws{};
    if (::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
      ::resizeterm(ws.ws_row, ws.ws_col);
  }

 private:
  bool color_ = false;
};

// The full-screen view, until q or a signal that ends it.
int RunScreen(Store& store, const std::vector<QueueRef>& refs, int64_t every) {
  // Signals that end the view, and SIGWINCH, come through a signalfd, polled with the keys:
  // the terminal is restored before the process ends.
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) sigaddset(&sigs, sig);
  if (::sigprocmask(SIG_BLOCK, &sigs, nullptr) != 0)
    return cli::Fail(ErrnoStatus(errno, "sigprocmask", "cannot block signals"));
  int sfd = ::signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (sfd < 0 || ep < 0) return cli::Fail(ErrnoStatus(errno, "signalfd", "cannot wait"));
  for (int fd : {0, sfd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  // Without a doorbell (inotify refused) the view still redraws each interval.
  auto bell = store.ArmStoreDoorbell();
  std::string note = bell.ok() ? "" : bell.status().text();

  Screen screen;
  monitor::Rates rates;
  monitor::SortKey sort = monitor::SortKey::kName;
  std::string filter, typing;
  bool filtering = false, paused = false, tick = true, error = false;
  int64_t next_tick = MonotonicMs();
  int64_t last_draw = -kMinRedrawGapMs;
  std::vector<monitor::Line> lines;
  int exit_code = 0;
  for (;;) {
    int64_t now = MonotonicMs();
    if (now >= next_tick) {
      tick = true;
      next_tick = now + every;
    }
    if (!paused) {
      auto sample = monitor::Take(store, refs);
      if (sample.ok()) {
        rates.Apply(*sample, tick);
        monitor::Arrange(*sample, sort, filter);
        lines = monitor::Format(*sample, static_cast<size_t>(std::max(8, COLS - 72)));
        error = false;
      } else {
        note = sample.status().text();
        error = true;
      }
      tick = false;
      last_draw = MonotonicMs();
    }
    std::string status =
        filtering ? "filter: " + typing + "_"
                  : fmt::format("{}sorted by {}{}  q quit  s sort  / filter  p {}{}",
                                paused ? "PAUSED  " : "", monitor::SortKeyName(sort),
                                filter.empty() ? "" : ", names holding '" + filter + "'",
                                paused ? "resume" : "pause", note.empty() ? "" : "  | " + note);
    screen.Draw(lines, status, error);

    // Sleep until the next tick, a key, a signal or (not paused) a ring.
    bool woke_by_ring = false;
    for (;;) {
      int64_t until = next_tick;
      if (woke_by_ring) until = std::min(until, last_draw + kMinRedrawGapMs);
      if (bell.ok() && !paused && !woke_by_ring) {
        auto w = (*bell)->Wait(0, until, ep);
        if (!w.ok()) return cli::Fail(w.status());
        if (*w == Doorbell::Wake::kLook) {
          woke_by_ring = true;
          continue;  // redraw once the gap since the last one has passed
        }
        if (*w == Doorbell::Wake::kTimeout) break;
      } else {
        int64_t wait = std::max<int64_t>(0, until - MonotonicMs());
        pollfd p{ep, POLLIN, 0};
        int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(wait, 60'000)));
        if (n == 0) {
          if (MonotonicMs() >= until) break;
          continue;
        }
      }
      // A key or a signal. A terminal that is gone (a hang-up without SIGHUP) ends the view
      // rather than waking it for ever.
      epoll_event evs[2];
      int ready = ::epoll_wait(ep, evs, 2, 0);
      for (int i = 0; i < ready; ++i)
        if (evs[i].data.fd == 0 && (evs[i].events & (EPOLLHUP | EPOLLERR))) return 0;
      signalfd_siginfo si;
      bool redraw = false;
      while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        if (si.ssi_signo == SIGWINCH) {
          screen.Resize();
          redraw = true;
        } else {
          return 128 + static_cast<int>(si.ssi_signo);  // the Screen is restored first
        }
      }
      for (int ch; (ch = ::getch()) != ERR;) {
        redraw = true;
        if (filtering) {
          if (ch == '\n' || ch == KEY_ENTER) {
            filter = typing;
            filtering = false;
          } else if (ch == 27) {
            filtering = false;  // Esc: the filter as it was
          } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
            if (!typing.empty()) typing.pop_back();
          } else if (ch >= 32 && ch < 256) {
            typing += static_cast<char>(ch);
          }
          continue;
        }
        switch (ch) {
          case 'q':
          case 'Q': return exit_code;
          case 's': sort = static_cast<monitor::SortKey>((static_cast<int>(sort) + 1) %
                                                         monitor::kSortKeys);
            break;
          case '/':
            filtering = true;
            typing = filter;
            break;
          case 'p': paused = !paused; break;
          default: break;
        }
      }
      if (redraw) break;
    }
  }
}

}  // namespace

Command SetupTop(CLI::App& app, Context&) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("top", "Watch the store live: counts, rates, links, leases");
  sub->add_option("QUEUE", args->queues, "Only these queues (default: all)");
  sub->add_option("--interval", args->interval, "Time between refreshes (default 1s)")
      ->type_name("DURATION");
  sub->add_option("-n,--count", args->count,
                  "Stop after COUNT refreshes (not on a terminal; default: until stopped)")
      ->type_name("COUNT");
  AddJsonOption(*sub, args->json, "One JSON object per refresh (not on a terminal)");
  sub->footer("On a terminal: q quits, s cycles the sort column, / filters queue names, p "
              "pauses. NO_COLOR=1 draws without colour.");
  return {sub, [args](Context& ctx) {
            auto every = ParseDuration(args->interval);
            if (!every.ok()) return cli::Fail(every.status().WithSubject("--interval"));
            if (*every <= 0)
              return cli::Fail(Status::InvalidArg("the interval must be over 0", "--interval"));
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            std::vector<QueueRef> refs;
            for (const std::string& name : args->queues) {
              auto ref = cli::ParseQueueArg(name);
              if (!ref.ok()) return cli::Fail(ref.status());
              auto st = (*store)->StatQueue(*ref);
              if (!st.ok()) return cli::Fail(st.status().WithSubject(ref->Full()));
              refs.push_back(*ref);
            }
            bool screen = ::isatty(0) && ::isatty(1) && !args->json && args->count == 0;
            if (!screen) return RunLines(**store, refs, *args, *every);
            return RunScreen(**store, refs, *every);
          }};
}

}  // namespace mq::admin
