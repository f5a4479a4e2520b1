// activator.cpp: the activator's loop (activator.hpp).
#include "activate/activator.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "base/units.hpp"
#include "proc/spawn.hpp"

namespace mq::activate {
namespace {

constexpr int64_t kProbeMs = 250;      // during a hold, at most one probe receiver this often
constexpr int64_t kHoldMaxMs = 30000;  // the longest hold

}  // namespace

Status RunActivator(Store& store, const ActivatorOptions& o, const proc::StopSignal& stop,
                    const std::function<void(const ActivatorEvent&)>& on_event) {
  auto note = [&](ActivatorEvent e) {
    if (on_event) on_event(e);
  };
  proc::SpawnOptions receiver;
  receiver.argv = o.receiver;
  receiver.death_signal = SIGHUP;  // dies with us: it kills its command and rolls back
  const QueueRef& ref = o.queue;

  // What the queue looked like when a receiver started: whether it made progress.
  struct Started {
    uint64_t rings;     // doorbell rings (kLook wake-ups) seen so far
    uint64_t received;  // the queue's received_total
    uint64_t delayed;   // and its delayed messages
  };
  std::map<pid_t, Started> children;
  uint64_t rings = 0;  // doorbell rings (kLook wake-ups) seen so far
  int failures = 0;
  int64_t hold_until = 0;     // monotonic ms: no new receivers before (0: no hold)
  bool rang_in_hold = false;  // the doorbell rang during the hold: worth one probe
  int64_t last_probe = 0;     // monotonic ms of the last probe receiver
  uint64_t sent_at_start = 0;  // the queue's sent_total when the last receiver started
  Status result;
  bool stopping = false;
  bool idle = false;
  auto waiter = store.ArmDoorbell(ref);
  if (!waiter.ok()) return waiter.status().WithSubject(ref.Full());
  auto stop_all = [&] {
    stopping = true;
    for (const auto& c : children) ::kill(c.first, SIGTERM);
  };
  for (;;) {
    for (auto it = children.begin(); it != children.end();) {
      int status = 0;
      if (::waitpid(it->first, &status, WNOHANG) != it->first) {
        ++it;
        continue;
      }
      Started started = it->second;
      note({ActivatorEvent::Kind::kEnded, it->first, status, 0});
      it = children.erase(it);
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (code == 8) {
        // Its failed messages wait a retry delay (delayed rises), or others were received:
        // progress. Neither (failures that return at once: a conversation's, or a retry
        // delay of 0) is a loop on the same messages, and is held off as below.
        auto st = store.StatQueue(ref);
        if (!st.ok() || st->info.received_total > started.received ||
            st->info.delayed > started.delayed)
          continue;
      }
      if (code == 0) {
        failures = 0;
        hold_until = 0;
        rang_in_hold = false;
      } else if (code == 1) {
        if (rings == started.rings) idle = true;
      } else if (!stopping) {
        failures = std::min(failures + 1, 9);
        int64_t hold = std::min<int64_t>(100LL << failures, kHoldMaxMs);
        hold_until = MonotonicMs() + hold;
        note({ActivatorEvent::Kind::kHold, 0, 0, hold});
      }
    }
    if (hold_until && MonotonicMs() >= hold_until) {
      hold_until = 0;
      rang_in_hold = false;
    }
    if (stop.Requested() && !stopping) stop_all();
    int64_t deadline = 0;
    if (!stopping) {
      auto st = store.StatQueue(ref);
      if (!st.ok() || !st->info.enabled) {
        result = st.ok() ? Status::QueueNotActive("queue was disabled (status OFF)", ref.Full())
                         : Status::QueueDeleted("queue was deleted", ref.Full());
        stop_all();
      } else {
        const QueueInfo& q = st->info;
        // Receiving paused (mq-admin set --receive off): nothing to start receivers for; the
        // doorbell rings when it is on again.
        uint64_t available =
            q.receive_paused ? 0 : q.count - std::min(q.count, q.delayed + q.locked + q.retained);
        // A rate limit (mq-admin set --rate): no more receivers than tokens; with none, look
        // again when the next one comes.
        // Tokens due within the lead count: their receivers start now and wait for them.
        int64_t now_ns = NowNs() + o.rate_lead_ms * 1'000'000;
        uint64_t tokens = RateTokens(q, now_ns);
        int64_t token_due = available && tokens == 0 ? RateNextMs(q, now_ns) - o.rate_lead_ms : 0;
        available = std::min(available, tokens);
        // A ring is owed a probe only if something was sent since the last receiver started:
        // one send may ring twice (two wake-ups), and the second ring, after the probe, is no
        // new work.
        if (q.sent_total == sent_at_start) rang_in_hold = false;
        bool probe = hold_until && rang_in_hold && children.empty() &&
                     MonotonicMs() - last_probe >= kProbeMs;
        // Receivers not holding a message yet: a running one that holds its message
        // (Locked, out of `available`) leaves room for another. Locks of other processes
        // make this low, so that a receiver too many may start and find nothing.
        uint64_t pending = children.size() - std::min<uint64_t>(children.size(), q.locked);
        while ((!hold_until || probe) && !idle &&
               children.size() < static_cast<size_t>(o.max_readers) && pending < available) {
          auto c = proc::Spawn(receiver);
          if (!c.ok()) {
            stop_all();
            result = c.status();
            break;
          }
          children.emplace(*c, Started{rings, q.received_total, q.delayed});
          ++pending;
          sent_at_start = q.sent_total;
          note({ActivatorEvent::Kind::kStarted, *c, 0, 0});
          if (probe) {
            probe = rang_in_hold = false;
            last_probe = MonotonicMs();
            break;
          }
        }
        auto d = store.NextDeadline(ref);
        if (d.ok()) deadline = *d;
        if (token_due && (deadline == 0 || token_due < deadline)) deadline = token_due;
      }
    }
    if (stopping && children.empty()) return result;
    int64_t until = hold_until && !stopping ? hold_until : -1;
    if (until > 0 && rang_in_hold && children.empty())
      until = std::min(until, last_probe + kProbeMs);  // the probe that ring is owed
    if (stopping) deadline = 0;
    auto wake = (*waiter)->Wait(deadline, until, stop.fd());
    if (!wake.ok()) {
      stop_all();
      if (result.ok()) result = wake.status();
      // Receivers still end before we return (SIGTERM sent): wait for them without the bell.
      for (auto& c : children) {
        int st;
        while (::waitpid(c.first, &st, 0) < 0 && errno == EINTR) {
        }
      }
      return result;
    }
    if (*wake == Doorbell::Wake::kLook) {
      ++rings;
      idle = false;
      if (hold_until) rang_in_hold = true;
    }
    stop.Drain();
  }
}

}  // namespace mq::activate
