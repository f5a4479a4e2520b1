// progress.hpp: what a long mq-admin command (purge, export, import, backup, compact) says
// on standard error: one summary line when it is done (counts, bytes, seconds), and, while
// it runs over a second with standard error on a terminal, a progress line redrawn twice a
// second and cleared at the end. --quiet silences both. The progress line comes from a
// thread that only reads the counters (atomics) and writes to descriptor 2; it never
// touches the store.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

namespace mq::admin {

// -q/--quiet, on a long command or (`common`) on mq-admin itself, before any command.
void AddQuietOption(CLI::App& app, bool& quiet, bool common = false);

class Progress {
 public:
  // `what`: the operation and its subject, e.g. "export q".
  Progress(std::string what, bool quiet);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Messages and bytes handled so far (what the progress line shows; 0: not shown).
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> bytes{0};

  // Stops the progress line and prints "mq-admin: SUBJECT: TEXT in S.SS s" (unless quiet).
  void Done(const std::string& subject, const std::string& text);

 private:
  void Tick();
  void Stop();
  std::string what_;
  bool quiet_;
  int64_t started_;
  bool drawn_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread ticker_;
};

// "1.2 MiB" style byte counts for the summaries ("1 byte", "512 bytes" below 1 KiB).
std::string HumanBytes(uint64_t n);
// "1 message", "2 messages".
std::string Messages(uint64_t n);

}  // namespace mq::admin
