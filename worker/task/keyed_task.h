// KeyedTask: the keyed subtask of a deployed job (DESIGN §2, §6, §7, §8, §10): reads its input
// channels (one per source subtask) through the InputGate, combines their watermarks with the
// StatusWatermarkValve, runs the KeyedProcessOperator (the job's function with keyed state and
// timers) and hands the results to the chained two-phase-commit sink. Everything runs in one
// mailbox loop on the task thread: records, watermarks, timers, barriers, control mail.
//
// Checkpoints: barriers are aligned by the CheckpointBarrierHandler; when aligned (and announced
// by the coordinator's trigger), the synchronous part pre-commits the sink and installs an
// AsyncKeyedSnapshot; a helper thread writes the state file while processing goes on, then
// reports through the mailbox. NotifyCheckpointComplete commits the sink's pending files.
//
// End of input: when every channel delivered END_OF_INPUT the operator's EndInput runs. Without
// checkpointing the sink commits and the task ends. With checkpointing the task reports
// TaskInputEnded and waits for the final checkpoint — one the coordinator triggers with
// CheckpointType::kFinal once every subtask's input ended — to complete, then commits and ends,
// so a failure before that point rolls back cleanly. A periodic checkpoint completing after the
// end of input only commits the files it covered; the subtask keeps running until the final one.
// Time (durations in acks, restore time) comes from the injected clock.
//
// Results go to the file sink (--output, exactly once) or, without --output, to the print sink
// on `print_stream` (the worker's stdout: its log file under scripts/start-cluster.sh), each
// line prefixed "<subtask + 1>> " when the job's parallelism is > 1 (Flink's print()); printed
// lines are flushed at least every 200 ms and at the end of input, and are at least once (a
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
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/protocol/control_messages.h"
#include "state/snapshot/async_keyed_snapshot.h"
#include "worker/checkpointing/checkpoint_barrier_handler.h"
#include "worker/operators/keyed_process_operator.h"
#include "worker/runtime/mailbox_processor.h"
#include "worker/runtime/system_processing_time_service.h"
#include "worker/runtime/task_mailbox.h"
#include "worker/shuffle/input_gate.h"
#include "worker/sinks/file_sink.h"
#include "worker/sinks/print_sink.h"
#include "worker/task/task_metrics.h"
#include "worker/watermark/status_watermark_valve.h"

namespace keyflow {

// What the keyed subtask contributes to an acknowledgement.
struct KeyedCheckpointPart {
  KeyGroupsStateHandle keyed_state;            // path relative to the checkpoint directory
  std::vector<std::string> sink_committables;  // encoded FileSinkCommittables, pending ones
  int64_t sync_duration_us = 0;
  int64_t async_duration_us = 0;
  int64_t alignment_duration_us = 0;
};

class KeyedTask {
 public:
  struct Callbacks {
    // Called on the task thread or the snapshot thread; must only hand over (e.g. put mail).
    std::function<void(CheckpointId, Result<KeyedCheckpointPart>)> checkpoint_done;
    std::function<void()> input_ended;  // checkpointing on: waiting for the final checkpoint
    // State restored (if any), processing starts: how long the restore took and its bytes.
    std::function<void(int64_t restore_ms, int64_t restore_bytes)> running;
  };

  // `gate` is bound already (its endpoints were reported to the coordinator). `sink` is null
  // when the job has no --output: results are printed to `print_stream` then. `metrics`,
  // `clock` and `print_stream` must outlive the task.
  static Result<std::unique_ptr<KeyedTask>> Create(const DeployTask& deployment,
                                                   std::unique_ptr<InputGate> gate,
                                                   std::unique_ptr<RecordFunction> function,
                                                   std::optional<FileSink> sink, const Clock* clock,
                                                   TaskMetrics* metrics, Callbacks callbacks,
                                                   std::FILE* print_stream = stdout);
  ~KeyedTask();

  // Opens the operator, restores state (if deployed with a restore), processes input until the
  // end (OK), cancellation (Aborted) or a failure (its Status).
  Status Run();
  void Cancel();
  // True if Run failed because a file of the checkpoint being restored is corrupted.
  bool restore_corrupted() const { return restore_corrupted_.load(std::memory_order_acquire); }

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

  // The operator's output: the file sink, or the print sink without --output.
  class SinkCollector final : public Collector<OutputRecord> {
   public:
    void Collect(OutputRecord record) override;
    std::optional<FileSink> sink;
    std::optional<PrintSink> print;
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
  };
  std::map<int64_t, Announced> announced_;
  // The snapshot being written by snapshot_thread_ (one at a time).
  std::unique_ptr<AsyncKeyedSnapshot> snapshot_;
  std::thread snapshot_thread_;
  CheckpointId snapshot_id_{0};
  CheckpointId final_checkpoint_{0};  // the kFinal checkpoint snapshotted after the end of input
  bool committed_final_ = false;
};

}  // namespace keyflow
