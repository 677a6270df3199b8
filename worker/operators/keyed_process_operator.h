// KeyedProcessOperator: runs a KeyedProcessFunction on one keyed subtask (Flink's
// KeyedProcessOperator + AbstractStreamOperator's keyed parts). Owns the subtask's key context,
// keyed state backend and timer service; sets the current key before every element and timer;
// advances event time on watermarks; snapshots and restores state and timers per key group.
//
// Lifecycle: construct -> Open() (function registers state) -> Restore(...)* -> Start() ->
// ProcessElement / ProcessWatermark / processing-time callbacks -> EndInput() -> Close().
//
// Output (Flink's TimestampedCollector): a record the function emits without a timestamp gets
// the element's event timestamp in ProcessElement, the timer's time in an event-time OnTimer,
// none in a processing-time OnTimer (Flink's KeyedProcessOperator erases it there: a wall-clock
// time is not an event time), and the final watermark (kMaxWatermark) in EndInput.
//
// User code: every call into the function goes through a UserFunctionGuard. The first failure
// (Open's error, anything thrown) is kept: failure() returns it, the failure listener hears it
// (timers fire outside any call that returns a Status), and the function is not called again
// except for Close.
// Used by the keyed task (worker/task) and the operator test harness.
// Threading: task thread only (SerializeKeyGroup of the sections: see the state classes).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/job_library/user_function_guard.h"
#include "common/metrics.h"
#include "common/processing_time_service.h"
#include "common/record.h"
#include "state/key_context.h"
#include "state/key_group_write_guard.h"
#include "state/keyed_state_backend.h"
#include "state/rocksdb/rocksdb_state_options.h"
#include "state/snapshot/keyed_snapshot_format.h"
#include "state/timers/internal_timer_service.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace keyflow {

using RecordFunction = KeyedFunction;  // the older name

struct OperatorConfig {
  SubtaskIndex subtask{0};
  int32_t parallelism = 1;
  int32_t max_parallelism = 128;
  KeyType key_type = KeyType::kString;
  KeyGroupRange key_groups;  // this subtask's range
  std::map<std::string, std::string> params;
  // For messages about the function's failures: the job's name and its library's file name.
  std::string job_name;
  std::string library_name;
  // The keyed state backend: "heap" or "rocksdb" (JobSpec::state_backend); for rocksdb, its
  // options, with rocksdb.dir this subtask's own directory.
  std::string state_backend = "heap";
  RocksDbStateOptions rocksdb;
};

// The functions' TimerService (worker/api/keyed_process_function.h) over the operator's
// InternalTimerService.
class OperatorTimerService final : public TimerService {
 public:
  explicit OperatorTimerService(InternalTimerService* timers) : timers_(timers) {}
  Timestamp CurrentProcessingTime() const override { return timers_->CurrentProcessingTime(); }
  Timestamp CurrentWatermark() const override { return timers_->CurrentWatermark(); }

 protected:
  void RegisterTimer(TimeDomain domain, Timestamp t, Namespace ns) override {
    domain == TimeDomain::kEventTime ? timers_->RegisterEventTimeTimer(ns, t)
                                     : timers_->RegisterProcessingTimeTimer(ns, t);
  }
  void DeleteTimer(TimeDomain domain, Timestamp t, Namespace ns) override {
    domain == TimeDomain::kEventTime ? timers_->DeleteEventTimeTimer(ns, t)
                                     : timers_->DeleteProcessingTimeTimer(ns, t);
  }

 private:
  InternalTimerService* timers_;
};

// Snapshot section ids (stable: they are in snapshot files).
inline constexpr uint8_t kKeyedStateSectionId = 1;
inline constexpr uint8_t kTimersSectionId = 2;

class KeyedProcessOperator final : public Triggerable {
 public:
  // `processing_time` and `output` must outlive the operator.
  KeyedProcessOperator(OperatorConfig config, std::unique_ptr<RecordFunction> function,
                       ProcessingTimeService* processing_time, Collector<OutputRecord>* output);
  ~KeyedProcessOperator() override;  // Close() if not called

  // The function's Open.
  Status Open();
  // Restores the key groups of this subtask's range that `reader` holds. Refuses a snapshot of
  // another max parallelism or key type (FailedPrecondition saying what differs).
  Status Restore(KeyedSnapshotReader& reader);
  // Restores key group g from `reader` (a file of a key-group-incremental snapshot, which may
  // hold only some key groups), with the checks of Restore. Precondition: g is in the range.
  Status RestoreKeyGroup(KeyedSnapshotReader& reader, KeyGroupId g);
  // Arms processing-time timers (restored overdue ones fire on the next callback).
  void Start();

  // A hint that a record of key `key` (bytes) in key group g comes soon: prefetches its state
  // (KeyedStateBackend::Prefetch). Changes nothing.
  void PrefetchState(std::string_view key, KeyGroupId g) const {
    backend_->Prefetch(Key::HashOf(key), g);
  }
  // OutOfRange (Flink's message) if the record's key group is not this subtask's; the
  // function's failure (failure()) if it failed, now or before.
  Status ProcessElement(const Record& record);
  // Fires event-time timers <= watermark. Watermarks that do not advance are ignored.
  void ProcessWatermark(Timestamp watermark);
  // Final watermark (if not yet seen) then the function's EndInput. Returns failure().
  Status EndInput();
  // The function's Close (once; also after a failure). Its failure, if it throws.
  Status Close();

  // The first failure of the function (OK while none).
  const Status& failure() const { return failure_; }
  // Called (on the task thread) with the function's first failure.
  void SetFailureListener(std::function<void(const Status&)> listener) {
    failure_listener_ = std::move(listener);
  }

  // Installs (or with nullptr removes) the guard every change of a key group's state or timers
  // goes through first: how an AsyncKeyedSnapshot keeps its copy consistent.
  void SetWriteGuard(KeyGroupWriteGuard* guard) { SetWriteGuards(guard, guard); }
  // The same with one guard for the keyed state and one for the timers (a backend with native
  // snapshots needs none for its keyed state while an incremental checkpoint is written).
  void SetWriteGuards(KeyGroupWriteGuard* state, KeyGroupWriteGuard* timers) {
    backend_->SetWriteGuard(state);
    timers_.SetWriteGuard(timers);
  }

  // Synchronous full snapshot of state and timers of the whole range into `out`.
  Result<KeyedSnapshotInfo> SnapshotTo(std::string* out) const;
  const std::vector<const SnapshotSection*>& snapshot_sections() const { return section_ptrs_; }

  const OperatorConfig& config() const { return config_; }
  Timestamp current_watermark() const { return timers_.CurrentWatermark(); }
  const KeyedStateBackend& backend() const { return *backend_; }
  // For the native snapshot calls (SnapshotNative, Notify..., RestoreNative). Task thread.
  KeyedStateBackend& mutable_backend() { return *backend_; }
  const InternalTimerService& timer_service() const { return timers_; }
  int64_t records_processed() const { return records_processed_.value(); }
  int64_t records_out() const { return output_.count.value(); }
  int64_t late_records() const { return runtime_.late_records().value(); }

  // Triggerable
  void OnEventTime(const TimerEntry& timer) override;
  void OnProcessingTime(const TimerEntry& timer) override;

 private:
  // Counts what the function emits, gives it the current timestamp (none: erased) unless it has
  // one, and passes it on (Flink's TimestampedCollector).
  struct TimestampedCollector final : Collector<OutputRecord> {
    explicit TimestampedCollector(Collector<OutputRecord>* d) : downstream(d) {}
    void Collect(OutputRecord value) override {
      if (!value.timestamp) value.timestamp = timestamp;
      count.Inc();
      downstream->Collect(std::move(value));
    }
    Collector<OutputRecord>* downstream;
    std::optional<Timestamp> timestamp;
    Counter count;
  };

  // Keeps the first failure and tells the listener. Returns `s`.
  Status Fail(Status s);
  // FailedPrecondition if the snapshot has another max parallelism or key type.
  Status CheckCompatible(const KeyedSnapshotInfo& info) const;
  void FireTimer(const TimerEntry& timer, TimeDomain domain);

  OperatorConfig config_;
  std::unique_ptr<RecordFunction> function_;
  KeyContext key_context_;
  Status backend_error_;  // the configured backend could not be opened: Open() fails with it
  std::unique_ptr<KeyedStateBackend> backend_;  // config_.state_backend
  InternalTimerService timers_;
  OperatorTimerService user_timers_;
  RuntimeContext runtime_;
  Context context_;
  TimestampedCollector output_;
  Counter records_processed_;
  UserFunctionGuard guard_;
  Status failure_;
  std::function<void(const Status&)> failure_listener_;
  bool ended_ = false;
  bool closed_ = false;
  std::vector<SnapshotSection> sections_;
  std::vector<const SnapshotSection*> section_ptrs_;
};

}  // namespace keyflow
