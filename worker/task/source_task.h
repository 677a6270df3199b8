// SourceTask: the source subtask of a deployed job. On its own thread it
// reads its splits (split ids with id % P == subtask: file splits of --input, or generator
// splits) interleaved, round robin, assigns timestamps, generates watermarks per split (bounded
// out-of-orderness, combined by the minimum over the splits still running, periodic, with
// idleness), routes every record by key group to the owning keyed subtask through the
// RecordWriter, and at the end emits the final watermark and END_OF_INPUT on every channel.
//
// It is a mailbox loop (worker/runtime): the default action reads and emits a bounded batch of
// records; periodic watermarks, batch flush deadlines and rate-limit pauses are processing-time
// callbacks, and so are latency markers (every JobSpec::latency_interval_ms, 0 = none: they
// ride the record batches, RecordWriter::AddLatencyMarker); control (checkpoint triggers,
// cancellation) arrives as mail. So a checkpoint
// barrier is emitted between two records, exactly after the records its split positions cover.
//
// Threading: Run() on the task thread; Cancel(), mailbox() from any thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/protocol/control_messages.h"
#include "common/transport/zmq_context.h"
#include "worker/runtime/mailbox_processor.h"
#include "worker/runtime/system_processing_time_service.h"
#include "worker/runtime/task_mailbox.h"
#include "worker/shuffle/record_writer.h"
#include "worker/sources/file_split_reader.h"
#include "worker/sources/generator_split_reader.h"
#include "worker/sources/input_spec.h"
#include "worker/sources/json_record_parser.h"
#include "worker/task/task_metrics.h"
#include "worker/watermark/split_watermark_multiplexer.h"
#include "worker/watermark/watermark_generator.h"
#include "worker/watermark/watermark_to_data_output.h"

namespace keyflow {

class SourceTask {
 public:
  // `splits` are this subtask's splits with their start positions. `metrics` and `clock` must
  // outlive the task.
  static Result<std::unique_ptr<SourceTask>> Create(const DeployTask& deployment,
                                                    const InputSpec& input,
                                                    std::vector<SourceSplitState> splits,
                                                    std::unique_ptr<RecordWriter> writer,
                                                    const Clock* clock, TaskMetrics* metrics);
  ~SourceTask();

  // Runs until every split is read and END_OF_INPUT is sent (OK), or cancellation (Aborted),
  // or a failure (its Status).
  Status Run();
  // Any thread: stops Run() soon (a send blocked on backpressure notices within ~50 ms).
  void Cancel();

  // Checkpoint trigger (from the control thread): on the task thread, snapshots the split
  // positions and emits barrier `id` on every channel; then calls `done` with the positions
  // (split id -> encoded SourceSplitState) or an error. Once the source finished, `done` gets
  // the final positions at once (no barrier: its channels delivered END_OF_INPUT, which counts
  // as aligned downstream).
  using SnapshotCallback = std::function<void(Result<std::map<std::string, std::string>>)>;
  Status TriggerCheckpoint(CheckpointId id, Timestamp timestamp, SnapshotCallback done);

 private:
  SourceTask() = default;
  Result<InputStatus> ReadBatch();
  Status OpenSplits();
  Status Emit(const Record& r, Timestamp now);
  Status SendWithBackpressure(const std::function<Status()>& send);
  void EmitPeriodicWatermark(Timestamp ts);
  void EmitLatencyMarker(Timestamp ts);
  void ScheduleFlush();
  Status Finish();
  std::map<std::string, std::string> SnapshotPositions() const;

  // The watermark output of the generator: events go to every channel.
  class ChannelWatermarkOutput final : public WatermarkDataOutput {
   public:
    explicit ChannelWatermarkOutput(SourceTask* task) : task_(task) {}
    void EmitWatermark(Timestamp w) override;
    void EmitWatermarkStatus(WatermarkStatus s) override;

   private:
    SourceTask* task_;
  };

  DeployTask deployment_;
  InputSpec input_;
  // One per assigned split, read round robin.
  struct SplitSlot {
    SourceSplitState state;  // position updated as the split is read
    std::optional<FileSplitReader> file;
    std::optional<GeneratorSplitReader> generator;
    bool finished = false;
  };
  std::vector<SplitSlot> slots_;
  size_t next_slot_ = 0;  // round-robin cursor
  size_t unfinished_ = 0;
  SplitWatermarkMultiplexer* split_watermarks_ = nullptr;  // inside watermarks_
  std::unique_ptr<JsonRecordParser> parser_;
  KeyGroupAssigner assigner_{KeyType::kString, 128};
  std::unique_ptr<RecordWriter> writer_;
  const Clock* clock_ = nullptr;
  TaskMetrics* metrics_ = nullptr;
  std::atomic<bool> cancelled_{false};

  std::unique_ptr<TaskMailbox> mailbox_;
  std::unique_ptr<SystemProcessingTimeService> time_;
  std::unique_ptr<MailboxProcessor> processor_;
  std::unique_ptr<WatermarkGenerator> watermarks_;
  std::unique_ptr<ChannelWatermarkOutput> channel_output_;
  std::unique_ptr<WatermarkToDataOutput> watermark_output_;
  Status deferred_error_;  // an emit error inside a watermark callback
  bool flush_scheduled_ = false;
  bool finished_ = false;
  Mutex final_mu_;
  std::optional<std::map<std::string, std::string>> final_positions_ ABSL_GUARDED_BY(final_mu_);
  int64_t blocked_ms_window_ = 0;  // time spent in sends during the current metrics window
  int64_t window_start_ms_ = 0;
};

}  // namespace keyflow
