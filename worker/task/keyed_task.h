// KeyedTask: the keyed subtask of a deployed job: reads its input
// channels (one per source subtask) through the InputGate, combines their watermarks with the
// StatusWatermarkValve, runs the KeyedProcessOperator (the job's function with keyed state and
// timers) and hands the results to the chained sink (a SinkWriter, worker/sinks/sink_writer.h).
// Everything runs in one mailbox loop on the task thread: records, watermarks, timers, barriers,
// control mail.
//
// Checkpoints: barriers are aligned by the CheckpointBarrierHandler; when aligned (and announced
// by the coordinator's trigger), the synchronous part pre-commits the sink and installs an
// AsyncKeyedSnapshot; a helper thread makes the sink's pre-commit durable and writes the state
// file while processing goes on, then reports through the mailbox. NotifyCheckpointComplete
// commits the sink's pending committables.
//
// Incremental checkpoints (TriggerCheckpoint.incremental; state/README.md "Incremental
// checkpoints"): a KeyGroupChangeTracker stays installed as the write guard and records which
// key groups changed since each checkpoint's synchronous part. An incremental checkpoint writes
// into a new file of the shared directory (<task uuid>-<checkpoint>-<subtask>.kgs) only the key
// groups changed since its base — the last checkpoint of this task that completed and was
// itself incremental — and references the base's blocks for the others. Without a base (the
// first checkpoint of an attempt, after a restore) every key group is written. A backend with
// native snapshots (RocksDB) writes its keyed state natively (SnapshotNative on the task thread,
// Write on the snapshot thread) and the canonical file holds only the timers. Savepoints and
// non-incremental triggers write the full file into the checkpoint directory.
//
// End of input: when every channel delivered END_OF_INPUT the operator's EndInput runs. Without
// checkpointing the sink commits and the task ends. With checkpointing the task reports
// TaskInputEnded and waits for the final checkpoint — one the coordinator triggers with
// CheckpointType::kFinal once every subtask's input ended — to complete, then commits and ends,
// so a failure before that point rolls back cleanly. A periodic checkpoint completing after the
// end of input only commits the files it covered; the subtask keeps running until the final one.
// Time (durations in acks, restore time) comes from the injected clock.
//
// The sink is flushed (SinkWriter::Flush) at least every 200 ms and at the end of input: printed
// lines (the print sink, without --output) appear within that time; they are at least once (a
// restarted attempt prints what it replays again).
//
// A failure of the job's function (Open's error, an exception from any call) fails Run with
// the operator's message, e.g. "function of job 'sessions' (libsessions.so) threw
// std::runtime_error in ProcessElement: ...".
//
// Threading: Run() on the task thread; the public methods below it from any thread (they put
// mail).
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/protocol/control_messages.h"
#include "state/snapshot/async_keyed_snapshot.h"
#include "state/snapshot/key_group_change_tracker.h"
#include "state/snapshot/native_snapshot.h"
#include "worker/checkpointing/checkpoint_barrier_handler.h"
#include "worker/operators/keyed_process_operator.h"
#include "worker/runtime/mailbox_processor.h"
#include "worker/runtime/system_processing_time_service.h"
#include "worker/runtime/task_mailbox.h"
#include "worker/shuffle/input_gate.h"
#include "worker/sinks/sink_writer.h"
#include "worker/task/task_metrics.h"
#include "worker/watermark/status_watermark_valve.h"

namespace keyflow {

// What the keyed subtask contributes to an acknowledgement.
struct KeyedCheckpointPart {
  // Full: path relative to the checkpoint directory. Incremental: shared files (see
  // KeyGroupsStateHandle); with native_state it holds only the timers.
  KeyGroupsStateHandle keyed_state;
  std::optional<IncrementalKeyedStateHandle> native_state;
  uint64_t written_bytes = 0;  // bytes of the new files this checkpoint wrote
  bool incremental = false;    // written as an incremental checkpoint (a possible base)
  std::vector<std::string> sink_committables;  // encoded FileSinkCommittables, pending ones
  int64_t sync_duration_us = 0;
  int64_t async_duration_us = 0;
  int64_t alignment_duration_us = 0;
};

// The handle of a key-group-incremental checkpoint of `range`: the blocks that the new shared
// file `written` (named `name`; null if no key group changed) holds and, for the other key
// groups, the blocks of `base` (the last completed incremental checkpoint; null if none, then
// `written` holds every key group). Exposed for tests.
KeyGroupsStateHandle IncrementalStateHandle(KeyGroupRange range, const KeyedSnapshotInfo* written,
                                            const std::string& name,
                                            const KeyGroupsStateHandle* base);

class KeyedTask {
 public:
  struct Callbacks {
    // Called on the task thread or the snapshot thread; must only hand over (e.g. put mail).
    std::function<void(CheckpointId, Result<KeyedCheckpointPart>)> checkpoint_done;
    std::function<void()> input_ended;  // checkpointing on: waiting for the final checkpoint
    // State restored (if any), processing starts: how long the restore took and its bytes.
    std::function<void(int64_t restore_ms, int64_t restore_bytes)> running;
  };

  // `gate` is bound already (its endpoints were reported to the coordinator). `sink` is ready
  // to write (recovered). `metrics` and `clock` must outlive the task. `state_dir`: the
  // subtask's own local directory for --state-backend rocksdb (a StateDirectory the caller
  // keeps for longer than the task); ignored by the heap backend.
  static Result<std::unique_ptr<KeyedTask>> Create(
      const DeployTask& deployment, std::unique_ptr<InputGate> gate,
      std::unique_ptr<RecordFunction> function, std::unique_ptr<SinkWriter> sink,
      const Clock* clock, TaskMetrics* metrics, Callbacks callbacks, const std::string& state_dir);
  ~KeyedTask();

  // Opens the operator, restores state (if deployed with a restore), processes input until the
  // end (OK), cancellation (Aborted) or a failure (its Status).
  Status Run();
  void Cancel();
  // True if Run failed because a file of the checkpoint being restored is corrupted.
  bool restore_corrupted() const { return restore_corrupted_.load(std::memory_order_acquire); }
  // True if Run failed because this build cannot read the checkpoint (a format version it does
  // not read, another backend, changed state types or max parallelism: FailedPrecondition of
  // the restore, heap or native): no restart can help.
  bool restore_unreadable() const { return restore_unreadable_.load(std::memory_order_acquire); }

  // From the control thread (each puts mail).
  Status AnnounceCheckpoint(const TriggerCheckpoint& trigger);
  Status NotifyCheckpointComplete(CheckpointId id);
  Status NotifyCheckpointAborted(CheckpointId id, const std::string& reason);

 private:
  KeyedTask() = default;
  Status RunOperator();  // Run without Close and the final flush
  Status Restore(const RestoreAssignment& restore);
  Result<InputStatus> ProcessInput();
  Status HandleEvent(const InputEvent& event);
  Status EndOfInput();
  void TakeSnapshot(CheckpointId id, int64_t alignment_us);
  void FinishSnapshot(CheckpointId id, Result<KeyedCheckpointPart> part);
  void WaitForSnapshotThread();
  // Write guards of backend and timers while `snapshot` (may be null) is written; `native`: the
  // keyed state is in a native snapshot, which needs no copy-on-write.
  void InstallWriteGuards(KeyGroupWriteGuard* snapshot, bool native);
  // A shared file of a restore, opened and verified once.
  struct OpenedStateFile;
  using OpenedStateFiles = std::map<std::string, std::unique_ptr<OpenedStateFile>>;
  // Restores the key groups of my range that key-group-incremental handle `h` holds.
  Status RestoreIncremental(const RestoreAssignment& r, const KeyGroupsStateHandle& h,
                            OpenedStateFiles* files);
  void UpdateGauges(Timestamp ts);
  int64_t NowMicros() const;
  bool checkpointing() const { return deployment_.spec.checkpoint_interval_ms > 0; }

  // Valve output: advances the operator's event time.
  class OperatorWatermarkOutput final : public WatermarkDataOutput {
   public:
    explicit OperatorWatermarkOutput(KeyedTask* task) : task_(task) {}
    void EmitWatermark(Timestamp w) override;
    void EmitWatermarkStatus(WatermarkStatus) override {}

   private:
    KeyedTask* task_;
  };

  // The operator's output: the sink. The first write error is kept and fails the task.
  class SinkCollector final : public Collector<OutputRecord> {
   public:
    void Collect(OutputRecord record) override;
    // Flush() unless an error is kept already; keeps its error.
    void Flush();
    std::unique_ptr<SinkWriter> sink;
    Status error;
  };

  // Waits on the gate's unblocked channels and the mailbox fd.
  class GateWaiter final : public InputWaiter {
   public:
    explicit GateWaiter(InputGate* gate) : gate_(gate) {}
    Status Wait(std::optional<Duration> timeout, int mailbox_fd) override;

   private:
    InputGate* gate_;
  };

  DeployTask deployment_;
  const Clock* clock_ = nullptr;
  TaskMetrics* metrics_ = nullptr;
  Callbacks callbacks_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> restore_corrupted_{false};
  std::atomic<bool> restore_unreadable_{false};
  std::unique_ptr<InputGate> gate_;
  std::unique_ptr<TaskMailbox> mailbox_;
  std::unique_ptr<SystemProcessingTimeService> time_;
  std::unique_ptr<GateWaiter> waiter_;
  std::unique_ptr<MailboxProcessor> processor_;
  std::unique_ptr<StatusWatermarkValve> valve_;
  std::unique_ptr<OperatorWatermarkOutput> valve_output_;
  std::unique_ptr<CheckpointBarrierHandler> barriers_;
  SinkCollector collector_;
  std::unique_ptr<KeyedProcessOperator> operator_;
  Record scratch_;
  bool ended_ = false;

  // Checkpoints announced by the coordinator, by id.
  struct Announced {
    std::string directory;
    CheckpointType type = CheckpointType::kCheckpoint;
    bool incremental = false;
    std::string shared_directory;
  };
  std::map<int64_t, Announced> announced_;
  // The snapshot being written by snapshot_thread_ (one at a time).
  std::unique_ptr<AsyncKeyedSnapshot> snapshot_;
  std::thread snapshot_thread_;
  CheckpointId snapshot_id_{0};
  // Installed for the whole run: which key groups changed since each checkpoint.
  std::unique_ptr<KeyGroupChangeTracker> tracker_;
  std::string uuid_;  // random, names this task's shared files
  // Incremental checkpoints written, not yet completed (by id), and the base of the next one:
  // the last completed incremental checkpoint of this task.
  std::map<int64_t, KeyGroupsStateHandle> pending_incremental_;
  std::optional<std::pair<CheckpointId, KeyGroupsStateHandle>> base_;
  CheckpointId final_checkpoint_{0};  // the kFinal checkpoint snapshotted after the end of input
  bool committed_final_ = false;
};

}  // namespace keyflow
