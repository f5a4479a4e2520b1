// monitor.hpp: what mq-admin top shows, taken apart from how it is shown.
//
// Owns no database: a Sample is read through the Store's public calls (queues, links, open
// leases, the file's sizes), each its own short read transaction, so nothing is held between
// samples and a paused viewer pins no pages. Rates come from the queues' totals (sent_total,
// received_total): Rates compares each tick's sample with the previous tick's, and keeps an
// exponential average beside it. The Format functions lay a sample out as lines of text, for
// the full-screen view and for the block a pipe gets each interval; ToJson is the --json form.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/store.hpp"

namespace mq::monitor {

struct QueueRow {
  QueueStat st;
  int64_t oldest_age_ms = 0;  // 0: empty
  // Messages per second into and out of the queue over the last interval, and smoothed
  // (Rates). Negative: not known yet (the first sample, or the queue is new).
  double in_rate = -1, out_rate = -1;
  double in_avg = -1, out_avg = -1;
};

struct Sample {
  int64_t time_ms = 0;  // wall clock, when it was taken
  int64_t mono_ms = 0;  // monotonic clock, for the rates
  std::string store_dir;
  bool read_only = false;
  Store::Sizes sizes;
  std::vector<QueueRow> queues;
  std::vector<LinkInfo> links;
  std::vector<LeaseInfo> leases;
};

// `queues`: only these (names as given to the tools); empty: every queue of the store. A named
// queue that is gone is left out of the sample (it was there when the viewer started).
Result<Sample> Take(Store& store, const std::vector<QueueRef>& queues);

// The rates of successive samples. A tick starts a new interval: its rates are measured
// against the previous tick. A sample between ticks (a doorbell rang) gets the rates of the
// last tick, with fresh counts.
class Rates {
 public:
  // `half_life_ms`: the smoothed rates weigh an interval that long ago half as much as now.
  explicit Rates(int64_t half_life_ms = 5000) : half_life_ms_(half_life_ms) {}
  void Apply(Sample& s, bool tick);

 private:
  struct Last {
    uint64_t sent = 0, received = 0;
    double in_rate = -1, out_rate = -1, in_avg = -1, out_avg = -1;
  };
  int64_t half_life_ms_;
  int64_t last_tick_mono_ = -1;
  std::map<uint32_t, Last> last_;  // by queue id: a queue made again under its name is new
};

enum class SortKey { kName, kMessages, kIn, kOut, kOldest };
inline constexpr int kSortKeys = 5;
const char* SortKeyName(SortKey k);
// Sorts the queue rows (the largest first, except by name) and keeps only those whose name
// holds `filter` (empty: all).
void Arrange(Sample& s, SortKey key, const std::string& filter);

// One line of a table: the text and whether it is a heading.
struct Line {
  std::string text;
  bool heading = false;
};
// The store line, then the queue table, then links and open leases when there are any.
// `width`: the columns the queue name may take at most (the rest have fixed widths).
std::vector<Line> Format(const Sample& s, size_t name_width = 32);
// A rate as the table shows it: "-" unknown, "0", "3.5", "120", "1.2k", "34k", "1.5M".
std::string FormatRate(double per_s);
// Bytes as 512B, 12K, 3.4M, 1.2G.
std::string FormatBytes(uint64_t n);

nlohmann::ordered_json ToJson(const Sample& s);

}  // namespace mq::monitor
