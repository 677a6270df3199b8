// InternalTimerService: event- and processing-time timers of one keyed operator (Flink's
// InternalTimerServiceImpl).
//
// Owns two KeyGroupPartitionedTimerQueues (processing time, event time) over the key context's
// range. Timers are registered for the key context's current key. Firing order is the queues'
// global order: timestamp, then key group, key bytes, namespace (see
// key_group_partitioned_timer_queue.h). Before each callback the key context is set to the
// timer's key.
//
// Processing time: at most ONE physical callback is scheduled with the ProcessingTimeService,
// at the earliest processing-time timer. Registering moves it only when the timer was really
// inserted and is earlier than the old head; deleting never moves it (an early wake-up fires
// nothing and re-arms for the head).
// Event time: AdvanceWatermark(W) fires every event-time timer <= W. A timer registered at or
// below the current watermark fires on the next AdvanceWatermark call.
//
// Snapshots: SerializeKeyGroup / RestoreKeyGroup write and read the timers of one key group
// (format in README.md). Restore, then StartTimerService().
//
// Used by: the keyed operator (worker/), the operator test harness, the snapshot writer.
// Threading: task thread only — except SerializeKeyGroup/NumTimers of a key group, which may
// run on another thread while the task thread does not mutate that key group.
#pragma once

#include <cstddef>
#include <memory>

#include "common/binary_io.h"
#include "common/processing_time_service.h"
#include "common/status.h"
#include "common/types.h"
#include "state/key_context.h"
#include "state/key_group_copy.h"
#include "state/namespace.h"
#include "state/timers/key_group_partitioned_timer_queue.h"
#include "state/timers/triggerable.h"

namespace keyflow {

class InternalTimerService {
 public:
  // All three references must outlive the service. The queues cover key_context.range().
  InternalTimerService(KeyContext& key_context, ProcessingTimeService& processing_time_service,
                       Triggerable& target);
  // Cancels the physical processing-time callback, if any.
  ~InternalTimerService();
  InternalTimerService(const InternalTimerService&) = delete;
  InternalTimerService& operator=(const InternalTimerService&) = delete;

  Timestamp CurrentProcessingTime() const {
    return processing_time_service_.CurrentProcessingTime();
  }
  // kMinWatermark until the first AdvanceWatermark.
  Timestamp CurrentWatermark() const { return current_watermark_; }

  // Register/delete a timer (time, current key, ns). Precondition: the key context has a
  // current key. Registering an existing timer and deleting a missing one are no-ops.
  void RegisterProcessingTimeTimer(Namespace ns, Timestamp time);
  void RegisterEventTimeTimer(Namespace ns, Timestamp time);
  void DeleteProcessingTimeTimer(Namespace ns, Timestamp time);
  void DeleteEventTimeTimer(Namespace ns, Timestamp time);

  // Sets the watermark to `watermark`, then fires, in order, every event-time timer with
  // timestamp <= watermark, including timers the callbacks register in that range.
  // Preconditions: watermark >= CurrentWatermark() (watermarks never go back); not called
  // from a timer callback.
  void AdvanceWatermark(Timestamp watermark);

  // Arms the physical callback for the head of the (restored) processing-time queue. Call
  // once, after restoring; overdue timers fire when that callback runs. Idempotent.
  void StartTimerService();

  // Installs the guard of an asynchronous snapshot on both queues (nullptr removes it).
  void SetWriteGuard(KeyGroupWriteGuard* guard) {
    processing_timers_.SetWriteGuard(guard);
    event_timers_.SetWriteGuard(guard);
  }

  size_t NumProcessingTimers() const { return processing_timers_.size(); }
  size_t NumEventTimers() const { return event_timers_.size(); }
  // Timers of both domains in one key group. Precondition: key_group in range.
  size_t NumTimers(KeyGroupId key_group) const {
    return processing_timers_.NumTimers(key_group) + event_timers_.NumTimers(key_group);
  }
  const KeyGroupPartitionedTimerQueue& processing_time_queue() const { return processing_timers_; }
  const KeyGroupPartitionedTimerQueue& event_time_queue() const { return event_timers_; }

  // Appends the timers of `key_group` (event time, then processing time, each sorted by
  // (timestamp, key, namespace): equal queues give equal bytes). Reads only that key group.
  // Precondition: key_group in range.
  void SerializeKeyGroup(KeyGroupId key_group, BinaryWriter& out) const;
  // A copy of the key group's timers, cheap to take (unsorted), for copy-on-write snapshots:
  // its Write appends what SerializeKeyGroup appends now, its Count is NumTimers now.
  // Precondition: key_group in range.
  std::unique_ptr<KeyGroupCopy> CopyKeyGroup(KeyGroupId key_group) const;

  // Reads what SerializeKeyGroup wrote and adds the timers, with dedup. Nothing is added
  // unless the whole key group parses. Errors: OutOfRange if key_group is not local;
  // Corruption if the bytes are truncated or malformed or a key does not belong to key_group.
  // After StartTimerService it also re-arms the physical callback if the head moved earlier.
  [[nodiscard]] Status RestoreKeyGroup(KeyGroupId key_group, BinaryReader& in);

 private:
  // The physical processing-time callback for `time` (Flink's onProcessingTime).
  void OnProcessingTime(Timestamp time);
  // Cancels the physical callback (if any) and schedules one at `time`.
  void SchedulePhysicalTimer(Timestamp time);
  // Schedules the physical callback for the processing head unless one is due no later.
  void ArmForProcessingHead();
  TimerEntry CurrentKeyTimer(Namespace ns, Timestamp time) const;
  void SetKeyContextTo(const TimerEntry& timer, KeyGroupId key_group);

  KeyContext& key_context_;
  ProcessingTimeService& processing_time_service_;
  Triggerable& target_;
  KeyGroupPartitionedTimerQueue processing_timers_;
  KeyGroupPartitionedTimerQueue event_timers_;
  Timestamp current_watermark_ = kMinWatermark;

  bool has_physical_timer_ = false;  // Flink's nextTimer != null
  ProcessingTimeService::TimerId physical_timer_id_ = 0;
  Timestamp physical_timer_time_;
  bool started_ = false;
  bool advancing_watermark_ = false;  // guards against AdvanceWatermark from a callback
};

}  // namespace keyflow
