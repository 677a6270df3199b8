// SystemProcessingTimeService: the ProcessingTimeService of a running task. Its
// callbacks run on the task thread inside the MailboxProcessor loop, between
// mails and input batches, so they never interleave with record processing
// (Flink's SystemProcessingTimeService, minus the timer thread: the loop itself
// waits until the next callback is due).
//
// Time is read from an injected Clock (SystemClock in production, ManualClock
// in tests). Due rule (Flink's ProcessingTimeServiceUtil delay, ts >= now ? ts
// - now + 1 : 0): a callback for `ts` becomes due once clock >= ts + 1 ms; a
// `ts` already in the past is due at once (but never runs inline in Schedule).
// Due callbacks run in (ts, scheduling order) order and receive their `ts`, not
// the clock. Callbacks may Schedule and Cancel, including callbacks that are
// due at once: those run in the same pass.
//
// Note: SystemClock is the wall clock; if it steps backwards, callbacks wait
// for it to catch up.
//
// Threading: task thread only (other threads put mail that schedules). `clock`
// must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "common/processing_time_service.h"
#include "common/types.h"

namespace keyflow {

class SystemProcessingTimeService final : public ProcessingTimeService {
 public:
  explicit SystemProcessingTimeService(const Clock& clock) : clock_(&clock) {}

  // --- ProcessingTimeService ---
  Timestamp CurrentProcessingTime() const override { return clock_->Now(); }
  // Precondition: callback is not empty.
  TimerId Schedule(Timestamp ts, ProcessingTimeCallback callback) override;
  void Cancel(TimerId id) override;

  // --- For the mailbox loop ---
  // The clock time at which the earliest callback becomes due (its ts + 1 ms),
  // or nullopt when nothing is scheduled.
  std::optional<Timestamp> NextDueTime() const;
  // Runs the earliest callback if it is due at `now` (ts + 1 <= now). Returns
  // whether it ran. The loop calls it repeatedly, with one `now` per pass,
  // checking for stop in between.
  bool RunNextDueCallback(Timestamp now);
  // Runs every callback due at `now`, including ones scheduled by them. Returns
  // the count.
  size_t RunDueCallbacks(Timestamp now);

  size_t NumScheduled() const { return callbacks_.size(); }

 private:
  const Clock* clock_;
  TimerId next_id_ = 1;
  // Ordered by (ts, id); ids increase, so ties run in scheduling order.
  std::map<std::pair<Timestamp, TimerId>, ProcessingTimeCallback> callbacks_;
  absl::flat_hash_map<TimerId, Timestamp> ts_of_id_;  // for Cancel
};

}  // namespace keyflow
