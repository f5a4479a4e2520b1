// progress.cpp: summary and progress lines of the long mq-admin commands (progress.hpp).
#include "progress.hpp"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "../common.hpp"
#include "base/units.hpp"

namespace mq::admin {

void AddQuietOption(CLI::App& app, bool& quiet, bool common) {
  app.add_flag("-q,--quiet", quiet,
               common ? "Print no summary line and no progress line on standard error (purge, "
                        "export, import, backup, compact, upgrade)"
                      : "Print no summary line and no progress line on standard error");
}

std::string Messages(uint64_t n) { return fmt::format("{} message{}", n, n == 1 ? "" : "s"); }

std::string HumanBytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} byte{}", n, n == 1 ? "" : "s");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

Progress::Progress(std::string what, bool quiet)
    : what_(std::move(what)), quiet_(quiet), started_(MonotonicMs()) {
  if (!quiet_ && ::isatty(2)) ticker_ = std::thread([this] { Tick(); });
}

Progress::~Progress() { Stop(); }

void Progress::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  // Nothing for the first second: a quick command prints only its summary.
  if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) return;
  for (;;) {
    double secs = static_cast<double>(MonotonicMs() - started_) / 1000;
    uint64_t n = messages.load(), b = bytes.load();
    std::string line = fmt::format("\r\033[K{}: {}: ", cli::Tool(), what_);
    if (n) line += Messages(n) + ", ";
    if (b) line += HumanBytes(b) + ", ";
    line += fmt::format("{:.0f} s...", secs);
    ssize_t ignored = ::write(2, line.data(), line.size());
    (void)ignored;
    drawn_ = true;
    if (cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) return;
  }
}

void Progress::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (drawn_) {
    ssize_t ignored = ::write(2, "\r\033[K", 4);
    (void)ignored;
    drawn_ = false;
  }
}

void Progress::Done(const std::string& subject, const std::string& text) {
  Stop();
  if (quiet_) return;
  double secs = static_cast<double>(MonotonicMs() - started_) / 1000;
  cli::Note(subject, fmt::format("{} in {:.2f} s", text, secs));
}

}  // namespace mq::admin
