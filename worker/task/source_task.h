// SourceTask: the source subtask of a deployed job. On its own thread it polls its
// SourceReader (worker/sources/source_reader.h) for the records of its splits, runs a graph job's
// operators before the KeyBy on them (worker/operators/record_chain.h), generates
// watermarks per split (bounded out-of-orderness, combined by the minimum over the splits still
// running, periodic, with idleness), routes every record by key group to the owning keyed
// subtask through the RecordWriter, and at the end emits the final watermark and END_OF_INPUT
// on every channel. What a source reads (files, the generator, ...) is the reader's business.
//
// It is a mailbox loop (worker/runtime): the default action polls the reader for a bounded
// batch of records; a reader with nothing available suspends the default action until the time
// it names or its wake-up (as mail); periodic watermarks, batch flush deadlines and rate-limit
// pauses are processing-time callbacks, and so are latency markers (every
// JobSpec::latency_interval_ms, 0 = none: they ride the record batches,
// RecordWriter::AddLatencyMarker); control (checkpoint triggers, cancellation) arrives as mail. So
// a checkpoint barrier is emitted between two records, exactly after the records its split
// positions cover.
//
// Threading: Run() on the task thread; Cancel(), mailbox() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/protocol/control_messages.h"
#include "common/transport/zmq_context.h"
#include "worker/operators/record_chain.h"
#include "worker/runtime/mailbox_processor.h"
#include "worker/runtime/system_processing_time_service.h"
#include "worker/runtime/task_mailbox.h"
#include "worker/shuffle/record_writer.h"
#include "worker/sources/source_reader.h"
#include "worker/task/task_metrics.h"
#include "worker/watermark/split_watermark_multiplexer.h"
#include "worker/watermark/watermark_generator.h"
#include "worker/watermark/watermark_to_data_output.h"

namespace keyflow {

// Creates the task's reader, given the context the task provides.
using SourceReaderFactory =
    std::function<Result<std::unique_ptr<SourceReader>>(const SourceReaderContext& context)>;

class SourceTask {
 public:
  // `splits` are this subtask's splits with their start positions; with `no_more_splits` they
  // are all it will read. `metrics` and `clock` must outlive the task. `chain`: the operators a
  // graph job runs before its KeyBy (null: none); what it emits is routed, keyed by it.
  static Result<std::unique_ptr<SourceTask>> Create(const DeployTask& deployment,
                                                    const SourceReaderFactory& create_reader,
                                                    std::vector<SourceSplitState> splits,
                                                    bool no_more_splits,
                                                    std::unique_ptr<RecordWriter> writer,
                                                    const Clock* clock, TaskMetrics* metrics,
                                                    std::unique_ptr<RecordChain> chain = nullptr);
  ~SourceTask();

  // Runs until every split is read and END_OF_INPUT is sent (OK), or cancellation (Aborted),
  // or a failure (its Status).
  Status Run();
  // Any thread: stops Run() soon (a send blocked on backpressure notices within ~50 ms).
  void Cancel();
  // Any thread: Run() ends soon with `error` (not OK).
  void Fail(const Status& error);

  // Checkpoint trigger (from the control thread): on the task thread, snapshots the split
  // positions and emits barrier `id` on every channel; then calls `done` with the positions
  // (split id -> encoded SourceSplitState) or an error. Once the source finished, `done` gets
  // the final positions at once (no barrier: its channels delivered END_OF_INPUT, which counts
  // as aligned downstream).
  using SnapshotCallback = std::function<void(Result<std::map<std::string, std::string>>)>;
  Status TriggerCheckpoint(CheckpointId id, Timestamp timestamp, SnapshotCallback done);
  // Any thread: more splits for the reader (from the coordinator's split enumerator), added on
  // the task thread in the order of the calls and of TriggerCheckpoint: a checkpoint triggered
  // after this call covers them. An error adding them fails the task.
  Status AddSplits(std::vector<SourceSplitState> splits);
  // Any thread: checkpoint `id` completed; the reader hears it on the task thread.
  Status NotifyCheckpointComplete(CheckpointId id);

 private:
  SourceTask() = default;
  Result<InputStatus> ReadBatch();
  Status Emit(const Record& r, Timestamp now);
  // Sends one keyed record to its keyed subtask, waiting out backpressure.
  Status Route(const Record& r, Timestamp now);
  Status SendWithBackpressure(const std::function<Status()>& send);
  void EmitPeriodicWatermark(Timestamp ts);
  void EmitLatencyMarker(Timestamp ts);
  void ScheduleFlush();
  Status Finish();
  // The reader's state, split id -> encoded SourceSplitState.
  std::map<std::string, std::string> SnapshotPositions(std::optional<CheckpointId> checkpoint);

  // The watermark output of the generator: events go to every channel.
  class ChannelWatermarkOutput final : public WatermarkDataOutput {
   public:
    explicit ChannelWatermarkOutput(SourceTask* task) : task_(task) {}
    void EmitWatermark(Timestamp w) override;
    void EmitWatermarkStatus(WatermarkStatus s) override;

   private:
    SourceTask* task_;
  };

  // The reader's output: records of one split, its event time tracked in split_watermarks_.
  class SplitOutput final : public SourceOutput {
   public:
    SplitOutput(SourceTask* task, size_t watermark_index)
        : task_(task), watermark_index_(watermark_index) {}
    Status Collect(const Record& record) override;
    size_t watermark_index() const { return watermark_index_; }

   private:
    SourceTask* task_;
    size_t watermark_index_;
  };
  class Outputs final : public ReaderOutput {
   public:
    explicit Outputs(SourceTask* task) : task_(task) {}
    SourceOutput& CreateOutputForSplit(SplitId split) override;
    void ReleaseOutputForSplit(SplitId split) override;

   private:
    SourceTask* task_;
    std::map<SplitId, std::unique_ptr<SplitOutput>> outputs_;
  };

  DeployTask deployment_;
  std::unique_ptr<SourceReader> reader_;
  Outputs outputs_{this};
  SplitWatermarkMultiplexer* split_watermarks_ = nullptr;  // inside watermarks_
  Timestamp batch_now_;        // the clock read once per poll: stamps the batches' time bound
  int64_t batch_records_ = 0;  // records emitted in the current poll
  std::unique_ptr<RecordWriter> writer_;
  std::unique_ptr<RecordChain> chain_;
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
