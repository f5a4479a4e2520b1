// monitor.cpp: samples of a store, their rates and their layout (monitor.hpp).
#include "monitor/monitor.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/units.hpp"

namespace mq::monitor {

Result<Sample> Take(Store& store, const std::vector<QueueRef>& queues) {
  Sample s;
  s.time_ms = NowMs();
  s.mono_ms = MonotonicMs();
  s.store_dir = store.dir();
  s.read_only = !store.read_only().empty();
  std::vector<QueueRef> refs = queues;
  if (refs.empty()) {
    auto all = store.ListQueues();
    if (!all.ok()) return all.status();
    for (const QueueInfo& q : *all)
      if (auto ref = ParseQueueRef(q.name); ref.ok()) refs.push_back(*ref);
  }
  for (const QueueRef& ref : refs) {
    auto st = store.StatQueue(ref);
    if (!st.ok()) {
      if (st.status().code() == Code::kQueueNotFound) continue;  // deleted meanwhile
      return st.status().WithSubject(ref.Full());
    }
    QueueRow row;
    row.st = std::move(*st);
    if (row.st.oldest_arrived)
      row.oldest_age_ms = std::max<int64_t>(0, s.time_ms - row.st.oldest_arrived);
    s.queues.push_back(std::move(row));
  }
  auto sizes = store.FileSizes();
  if (!sizes.ok()) return sizes.status();
  s.sizes = *sizes;
  auto links = store.ListLinks();
  if (!links.ok()) return links.status();
  s.links = std::move(*links);
  auto leases = store.ListLeases();
  if (!leases.ok()) return leases.status();
  s.leases = std::move(*leases);
  return s;
}

void Rates::Apply(Sample& s, bool tick) {
  double dt = last_tick_mono_ < 0 ? 0 : (s.mono_ms - last_tick_mono_) / 1000.0;
  std::map<uint32_t, Last> next;
  for (QueueRow& row : s.queues) {
    const QueueInfo& q = row.st.info;
    auto it = last_.find(q.id);
    if (!tick) {
      // Between ticks: the last tick's rates, and the totals of that tick kept.
      if (it != last_.end()) {
        row.in_rate = it->second.in_rate;
        row.out_rate = it->second.out_rate;
        row.in_avg = it->second.in_avg;
        row.out_avg = it->second.out_avg;
      }
      continue;
    }
    Last now{q.sent_total, q.received_total};
    if (it != last_.end() && dt > 0 && q.sent_total >= it->second.sent &&
        q.received_total >= it->second.received) {
      const Last& was = it->second;
      now.in_rate = static_cast<double>(q.sent_total - was.sent) / dt;
      now.out_rate = static_cast<double>(q.received_total - was.received) / dt;
      // An exponential average over time: an interval `half_life` ago weighs half.
      double keep = std::exp2(-dt * 1000.0 / static_cast<double>(half_life_ms_));
      auto smooth = [keep](double avg, double rate) {
        return avg < 0 ? rate : avg * keep + rate * (1 - keep);
      };
      now.in_avg = smooth(was.in_avg, now.in_rate);
      now.out_avg = smooth(was.out_avg, now.out_rate);
    }
    row.in_rate = now.in_rate;
    row.out_rate = now.out_rate;
    row.in_avg = now.in_avg;
    row.out_avg = now.out_avg;
    next[q.id] = now;
  }
  if (tick) {
    last_ = std::move(next);
    last_tick_mono_ = s.mono_ms;
  }
}

const char* SortKeyName(SortKey k) {
  switch (k) {
    case SortKey::kName: return "name";
    case SortKey::kMessages: return "messages";
    case SortKey::kIn: return "in/s";
    case SortKey::kOut: return "out/s";
    case SortKey::kOldest: return "oldest";
  }
  return "name";
}

void Arrange(Sample& s, SortKey key, const std::string& filter) {
  if (!filter.empty())
    std::erase_if(s.queues, [&](const QueueRow& r) {
      return r.st.info.name.find(filter) == std::string::npos;
    });
  auto by = [key](const QueueRow& r) -> double {
    switch (key) {
      case SortKey::kMessages: return static_cast<double>(r.st.info.count);
      case SortKey::kIn: return r.in_rate;
      case SortKey::kOut: return r.out_rate;
      case SortKey::kOldest: return static_cast<double>(r.oldest_age_ms);
      case SortKey::kName: break;
    }
    return 0;
  };
  std::stable_sort(s.queues.begin(), s.queues.end(), [&](const QueueRow& a, const QueueRow& b) {
    if (key != SortKey::kName && by(a) != by(b)) return by(a) > by(b);
    return a.st.info.name < b.st.info.name;
  });
}

std::string FormatRate(double r) {
  if (r < 0) return "-";
  if (r == 0) return "0";
  if (r < 10) return fmt::format("{:.1f}", r);
  if (r < 1e4) return fmt::format("{:.0f}", r);
  if (r < 1e5) return fmt::format("{:.1f}k", r / 1e3);
  if (r < 1e7) return fmt::format("{:.0f}k", r / 1e3);
  return fmt::format("{:.1f}M", r / 1e6);
}

std::string FormatBytes(uint64_t n) {
  static const char* const kUnits[] = {"K", "M", "G", "T"};
  if (n < 1024) return fmt::format("{}B", n);
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return v < 10 ? fmt::format("{:.1f}{}", v, kUnits[u]) : fmt::format("{:.0f}{}", v, kUnits[u]);
}

namespace {

// An age as the table shows it: whole seconds, minutes or hours, "-" for none.
std::string Age(int64_t ms, bool any) {
  if (!any) return "-";
  int64_t s = ms / 1000;
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

std::string Fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 1) + "~";
}

std::string When(int64_t ms, int64_t now) {
  return ms ? Age(std::max<int64_t>(0, now - ms), true) + " ago" : "-";
}

}  // namespace

std::vector<Line> Format(const Sample& s, size_t name_width) {
  std::vector<Line> out;
  size_t w = 5;
  for (const QueueRow& r : s.queues) w = std::max(w, r.st.info.name.size());
  w = std::min(w, std::max<size_t>(name_width, 8));
  uint64_t waiting = 0;
  for (const QueueRow& r : s.queues) waiting += r.st.waiting;
  out.push_back({fmt::format("{} {}{}: data.mdb {} ({} in use, {} free), queues {}, links {}, "
                             "leases {}, waiting {}",
                             FormatTime(s.time_ms), s.store_dir, s.read_only ? " (read-only)" : "",
                             FormatBytes(s.sizes.file), FormatBytes(s.sizes.used),
                             FormatBytes(s.sizes.free), s.queues.size(), s.links.size(),
                             s.leases.size(), waiting)});
  out.push_back({fmt::format("{:<{}} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>4} {}",
                             "QUEUE", w, "MESSAGES", "DELAYED", "LOCKED", "IN/S", "OUT/S", "IN~",
                             "OUT~", "OLDEST", "WAIT", "STATUS"),
                 true});
  for (const QueueRow& r : s.queues) {
    const QueueInfo& q = r.st.info;
    out.push_back(
        {fmt::format("{:<{}} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>4} {}",
                     Fit(q.name, w), w, q.count, q.delayed, q.locked, FormatRate(r.in_rate),
                     FormatRate(r.out_rate), FormatRate(r.in_avg), FormatRate(r.out_avg),
                     Age(r.oldest_age_ms, r.st.oldest_arrived), r.st.waiting, StateWord(q))});
  }
  if (!s.links.empty()) {
    out.push_back({fmt::format("{:<{}} {:>9} {:>7} {:>9} {:>8} {:>10} {:>10} {}", "LINK", w,
                               "BACKLOG", "FLIGHT", "ACKED", "REFUSED", "LAST-ACK", "FORWARD",
                               "LAST-ERROR"),
                   true});
    for (const LinkInfo& l : s.links)
      out.push_back({fmt::format(
          "{:<{}} {:>9} {:>7} {:>9} {:>8} {:>10} {:>10} {}", Fit(l.name, w), w, l.backlog,
          l.in_flight, l.acked, l.refused, When(l.last_ack, s.time_ms),
          l.connected_since ? fmt::format("pid {}", l.forward_pid) : "-",
          l.last_error.empty() ? "-"
                               : When(l.last_error_time, s.time_ms) + ": " + l.last_error)});
  }
  if (!s.leases.empty()) {
    out.push_back({fmt::format("{:<{}} {:>9} {:>7} {:>9} {:>8} {}", "LEASE QUEUE", w, "LEASE",
                               "HOLDS", "SINCE", "STATE", "HOLDER"),
                   true});
    for (const LeaseInfo& l : s.leases)
      out.push_back({fmt::format(
          "{:<{}} {:>9} {:>7} {:>9} {:>8} {}", Fit(l.queue, w), w, l.lease_id,
          l.lookup_ids.size(), Age(std::max<int64_t>(0, s.time_ms - l.since), true),
          l.alive ? "alive" : "stale",
          l.process ? fmt::format("pid {}", l.pid) : "token until " + FormatTime(l.expires))});
  }
  return out;
}

nlohmann::ordered_json ToJson(const Sample& s) {
  auto rate = [](double r) {
    return r < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r);
  };
  auto time = [](int64_t ms) {
    return ms ? nlohmann::ordered_json(FormatTime(ms)) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json queues = nlohmann::ordered_json::array();
  for (const QueueRow& r : s.queues) {
    const QueueInfo& q = r.st.info;
    queues.push_back({{"queue", q.name},
                      {"messages", q.count},
                      {"delayed", q.delayed},
                      {"locked", q.locked},
                      {"bytes", q.bytes},
                      {"in_per_s", rate(r.in_rate)},
                      {"out_per_s", rate(r.out_rate)},
                      {"in_avg_per_s", rate(r.in_avg)},
                      {"out_avg_per_s", rate(r.out_avg)},
                      {"oldest_age_ms", r.oldest_age_ms},
                      {"waiting", r.st.waiting},
                      {"status", q.enabled ? "on" : "off"},
                      {"receive", q.receive_paused ? "off" : "on"},
                      {"sent_total", q.sent_total},
                      {"received_total", q.received_total}});
  }
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const LinkInfo& l : s.links)
    links.push_back({{"link", l.name},
                     {"backlog", l.backlog},
                     {"backlog_bytes", l.backlog_bytes},
                     {"in_flight", l.in_flight},
                     {"acknowledged", l.acked},
                     {"refused", l.refused},
                     {"last_ack", time(l.last_ack)},
                     {"forward_pid", l.connected_since ? nlohmann::ordered_json(l.forward_pid)
                                                       : nlohmann::ordered_json(nullptr)},
                     {"last_error", l.last_error},
                     {"last_error_time", time(l.last_error_time)}});
  nlohmann::ordered_json leases = nlohmann::ordered_json::array();
  for (const LeaseInfo& l : s.leases)
    leases.push_back({{"queue", l.queue},
                      {"lease", l.lease_id},
                      {"kind", l.process ? "process" : "token"},
                      {"pid", l.pid},
                      {"since", FormatTime(l.since)},
                      {"expires", time(l.expires)},
                      {"alive", l.alive},
                      {"messages", l.lookup_ids.size()}});
  return {{"time", FormatTime(s.time_ms)},
          {"store", s.store_dir},
          {"read_only", s.read_only},
          {"store_file_bytes", s.sizes.file},
          {"store_used_bytes", s.sizes.used},
          {"store_free_bytes", s.sizes.free},
          {"queues", std::move(queues)},
          {"links", std::move(links)},
          {"leases", std::move(leases)}};
}

}  // namespace mq::monitor
