// ProcessingTimeService: processing time and one-shot callbacks at a processing time.
//
// The timer service (state/timers) keeps exactly one callback scheduled here, at its earliest
// processing-time timer. Implementations:
//   ManualProcessingTimeService (below) — time moves only when a test calls SetCurrentTime;
//     a callback for `ts` runs when the time is set to a value >= ts (as Flink's
//     TestProcessingTimeService).
//   worker/runtime's mailbox-driven service — wall clock; a callback for `ts` runs on the task
//     thread at wall-clock ts + 1 ms (Flink's getProcessingTimeDelay: ts >= now ? ts-now+1 : 0),
//     between two mailbox actions, never concurrently with record processing.
// Callbacks receive the timestamp they were scheduled for, not the wall clock.
//
// Threading: used only from the task thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "common/types.h"

namespace keyflow {

using ProcessingTimeCallback = std::function<void(Timestamp)>;

class ProcessingTimeService {
 public:
  using TimerId = uint64_t;
  virtual ~ProcessingTimeService() = default;

  virtual Timestamp CurrentProcessingTime() const = 0;
  // Schedules `callback(ts)`. A `ts` in the past runs as soon as possible (never inline).
  virtual TimerId Schedule(Timestamp ts, ProcessingTimeCallback callback) = 0;
  // Cancels a scheduled callback; a no-op if it already ran or was cancelled.
  virtual void Cancel(TimerId id) = 0;
};

// Deterministic processing time for tests and the operator test harness.
class ManualProcessingTimeService final : public ProcessingTimeService {
 public:
  explicit ManualProcessingTimeService(Timestamp start = Timestamp(0)) : now_(start) {}

  Timestamp CurrentProcessingTime() const override { return now_; }
  TimerId Schedule(Timestamp ts, ProcessingTimeCallback callback) override {
    TimerId id = next_id_++;
    pending_.emplace(std::make_pair(ts, id), std::move(callback));
    return id;
  }
  void Cancel(TimerId id) override {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->first.second == id) {
        pending_.erase(it);
        return;
      }
    }
  }

  // Moves time to `t` (never backwards) and runs every callback scheduled for a time <= t, in
  // (time, scheduling order) order — including callbacks that those callbacks schedule.
  void SetCurrentTime(Timestamp t) {
    if (t > now_) now_ = t;
    while (!pending_.empty() && pending_.begin()->first.first <= now_) {
      auto node = pending_.extract(pending_.begin());
      node.mapped()(node.key().first);
    }
  }
  void Advance(Duration d) { SetCurrentTime(now_ + d); }

  size_t NumScheduled() const { return pending_.size(); }
  // Earliest scheduled time, or kMaxWatermark when nothing is scheduled.
  Timestamp NextScheduledTime() const {
    return pending_.empty() ? kMaxWatermark : pending_.begin()->first.first;
  }

 private:
  Timestamp now_;
  TimerId next_id_ = 1;
  std::map<std::pair<Timestamp, TimerId>, ProcessingTimeCallback> pending_;
};

}  // namespace keyflow
