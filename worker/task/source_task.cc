#include "worker/task/source_task.h"

#include <algorithm>

#include "common/input/input_spec.h"
#include "common/logging/logging.h"
#include "worker/watermark/watermarks_with_idleness.h"

namespace keyflow {
Result<std::unique_ptr<SourceTask>> SourceTask::Create(
    const DeployTask& deployment, const SourceReaderFactory& create_reader,
    std::vector<SourceSplitState> splits, bool no_more_splits, std::unique_ptr<RecordWriter> writer,
    const Clock* clock, TaskMetrics* metrics, std::unique_ptr<RecordChain> chain) {
  std::unique_ptr<SourceTask> t(new SourceTask());
  const JobSpec& spec = deployment.spec;
  t->deployment_ = deployment;
  t->writer_ = std::move(writer);
  t->chain_ = std::move(chain);
  t->clock_ = clock;
  t->metrics_ = metrics;
  if (spec.watermark_bound_ms < 0) return InvalidArgument("--watermark-bound must not be negative");
  auto mux =
      std::make_unique<SplitWatermarkMultiplexer>(0, Duration::Millis(spec.watermark_bound_ms));
  t->split_watermarks_ = mux.get();
  mux->set_idle_when_all_ended(!no_more_splits);
  if (InputSpec::IsKafka(spec.input)) {  // reads no file
    KF_ASSIGN_OR_RETURN(InputSpec input, InputSpec::Parse(spec.input));
    const Duration idle = input.kafka().idle_timeout;
    if (idle.millis() > 0) mux->set_split_idle_timeout(idle, clock);
  }
  if (spec.idle_timeout_ms > 0) {
    KF_ASSIGN_OR_RETURN(WatermarksWithIdleness idle,
                        WatermarksWithIdleness::Create(
                            std::move(mux), Duration::Millis(spec.idle_timeout_ms), *clock));
    t->watermarks_ = std::make_unique<WatermarksWithIdleness>(std::move(idle));
  } else {
    t->watermarks_ = std::move(mux);
  }
  t->channel_output_ = std::make_unique<ChannelWatermarkOutput>(t.get());
  t->watermark_output_ = std::make_unique<WatermarkToDataOutput>(*t->channel_output_);
  KF_ASSIGN_OR_RETURN(t->mailbox_, TaskMailbox::Create());
  t->time_ = std::make_unique<SystemProcessingTimeService>(*clock);
  SourceTask* self = t.get();
  t->processor_ = std::make_unique<MailboxProcessor>(*t->mailbox_, *t->time_,
                                                     [self] { return self->ReadBatch(); });

  SourceReaderContext context;
  context.subtask = deployment.subtask;
  context.parallelism = spec.parallelism;
  context.clock = clock;
  context.bad_records = &metrics->bad_records;
  TaskMailbox* mailbox = t->mailbox_.get();
  MailboxProcessor* processor = t->processor_.get();
  // ~SourceTask destroys the reader before the mailbox, so wake_up never finds it gone.
  context.wake_up = [mailbox, processor] {
    mailbox->Put([processor] { processor->ResumeDefaultAction(); }, "source data available")
        .IgnoreError();
  };
  KF_ASSIGN_OR_RETURN(t->reader_, create_reader(context));
  KF_RETURN_IF_ERROR(t->reader_->AddSplits(std::move(splits)));
  if (no_more_splits) t->reader_->NotifyNoMoreSplits();
  return t;
}

SourceTask::~SourceTask() {
  // The reader goes first, while the mailbox is alive: it may call its context's wake_up (which
  // puts mail) from threads of its own until it is destroyed (the Kafka consumer does).
  reader_.reset();
  if (mailbox_) mailbox_->Close();
}

void SourceTask::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  processor_->ReportError(Aborted("the source subtask was cancelled"));
  mailbox_->Put([] {}, "wake up for cancellation").IgnoreError();
}

void SourceTask::Fail(const Status& error) {
  processor_->ReportError(error);
  mailbox_->Put([] {}, "wake up for a failure").IgnoreError();
}

Status SourceTask::TriggerCheckpoint(CheckpointId id, Timestamp timestamp, SnapshotCallback done) {
  std::optional<std::map<std::string, std::string>> final_positions;
  {
    MutexLock lock(&final_mu_);
    final_positions = final_positions_;
  }
  if (final_positions) {
    done(std::move(*final_positions));
    return Status::Ok();
  }
  return mailbox_->Put(
      [this, id, timestamp, done = std::move(done)] {
        if (cancelled_.load(std::memory_order_acquire)) {
          done(Aborted("the source subtask was cancelled"));
          return;
        }
        std::map<std::string, std::string> positions =
            SnapshotPositions(finished_ ? std::nullopt : std::optional<CheckpointId>(id));
        if (finished_) {  // mail drained after the end: no barrier
          done(std::move(positions));
          return;
        }
        Status s = SendWithBackpressure(
            [&] { return writer_->BroadcastEvent(ChannelEvent::Barrier(id, timestamp)); });
        if (!s.ok()) {
          done(s.WithContext("emitting barrier " + std::to_string(id.value())));
          processor_->ReportError(s);
          return;
        }
        done(std::move(positions));
      },
      "trigger checkpoint " + std::to_string(id.value()));
}

Status SourceTask::AddSplits(std::vector<SourceSplitState> splits) {
  return mailbox_->Put(
      [this, splits = std::move(splits)]() mutable {
        if (finished_) return;  // the reader ended: no split can be added (a bounded source)
        if (Status s = reader_->AddSplits(std::move(splits)); !s.ok()) {
          processor_->ReportError(s.WithContext("adding splits"));
          return;
        }
        processor_->ResumeDefaultAction();
      },
      "add splits");
}

Status SourceTask::NotifyCheckpointComplete(CheckpointId id) {
  return mailbox_->Put([this, id] { reader_->NotifyCheckpointComplete(id); },
                       "checkpoint " + std::to_string(id.value()) + " complete");
}

Status SourceTask::Run() {
  int64_t now = MonotonicMillis();
  window_start_ms_ = now;
  time_->Schedule(clock_->Now() + Duration::Millis(deployment_.spec.watermark_interval_ms),
                  [this](Timestamp ts) { EmitPeriodicWatermark(ts); });
  if (deployment_.spec.latency_interval_ms > 0) {
    // Half an interval out of phase with the periodic watermark, which seals every pending
    // batch: a marker right behind it would always start an empty batch and wait the whole
    // batch time bound, while the records of a batch wait between 0 and that bound.
    time_->Schedule(clock_->Now() + Duration::Millis(std::max<int64_t>(
                                        1, deployment_.spec.latency_interval_ms / 2)),
                    [this](Timestamp ts) { EmitLatencyMarker(ts); });
  }
  Status s = processor_->RunMailboxLoop();
  // Checkpoint triggers that raced with the end still get their answer.
  for (Mail& m : mailbox_->Close()) m.action();
  if (cancelled_.load(std::memory_order_acquire))
    return Aborted("the source subtask was cancelled");
  if (s.ok() && !deferred_error_.ok()) s = deferred_error_;
  return s;
}

Status SourceTask::SendWithBackpressure(const std::function<Status()>& send) {
  int64_t start = MonotonicMillis();
  Status s = send();
  // DeadlineExceeded: the receiver accepted nothing for a while (backpressure); keep waiting
  // until it does, the send fails for good, or the task is cancelled.
  while (s.code() == StatusCode::kDeadlineExceeded && !cancelled_.load(std::memory_order_acquire)) {
    s = send();
  }
  blocked_ms_window_ += MonotonicMillis() - start;
  return s;
}

Status SourceTask::Emit(const Record& r, Timestamp now) {
  watermarks_->OnEvent(r.timestamp, *watermark_output_);
  if (chain_ == nullptr) return Route(r, now);
  return chain_->Process(r, [this, now](const Record& out) { return Route(out, now); });
}

Status SourceTask::Route(const Record& r, Timestamp now) {
  Status s = writer_->Emit(r, now);
  if (s.code() != StatusCode::kDeadlineExceeded) return s;
  // Backpressured: the record was not accepted; wait for the receiver, then emit it.
  return SendWithBackpressure([&] { return writer_->Emit(r, clock_->Now()); });
}

Status SourceTask::SplitOutput::Collect(const Record& record) {
  task_->split_watermarks_->OnSplitEvent(watermark_index_, record.timestamp);
  ++task_->batch_records_;
  return task_->Emit(record, task_->batch_now_);
}

SourceOutput& SourceTask::Outputs::CreateOutputForSplit(SplitId split) {
  std::unique_ptr<SplitOutput>& out = outputs_[split];
  if (!out) {
    out = std::make_unique<SplitOutput>(task_, task_->split_watermarks_->AddSplit());
    // A subtask that was idle between splits holds back event time again from now on.
    task_->watermark_output_->MarkActive();
  }
  return *out;
}

void SourceTask::Outputs::ReleaseOutputForSplit(SplitId split) {
  auto it = outputs_.find(split);
  if (it == outputs_.end()) return;
  task_->split_watermarks_->SplitFinished(it->second->watermark_index());
  outputs_.erase(it);
}

Result<InputStatus> SourceTask::ReadBatch() {
  if (!deferred_error_.ok()) return deferred_error_;
  if (finished_) return InputStatus::kEndOfInput;
  // One clock read per poll: it only stamps the batches' time bound (a few ms).
  batch_now_ = clock_->Now();
  batch_records_ = 0;
  Result<PollResult> polled = reader_->PollNext(outputs_);
  metrics_->records_in.Inc(batch_records_);  // one atomic add per poll, not per record
  KF_RETURN_IF_ERROR(polled.status());
  const PollResult result = *polled;
  if (result.status == InputStatus::kEndOfInput) {
    KF_RETURN_IF_ERROR(Finish());
    return InputStatus::kEndOfInput;
  }
  if (result.status == InputStatus::kNothingAvailable) {
    // Sleep in the mailbox loop (mail still runs) until the reader's time or its wake-up.
    processor_->SuspendDefaultAction();
    if (result.retry_at != kMaxWatermark) {
      time_->Schedule(Timestamp(result.retry_at.millis() - 1),
                      [this](Timestamp) { processor_->ResumeDefaultAction(); });
    }
    ScheduleFlush();
    return InputStatus::kNothingAvailable;
  }
  ScheduleFlush();
  return InputStatus::kMoreAvailable;
}

void SourceTask::ScheduleFlush() {
  if (flush_scheduled_) return;
  Timestamp deadline = writer_->NextFlushDeadline();
  if (deadline == kMaxWatermark) return;
  flush_scheduled_ = true;
  Timestamp at = deadline == kMinWatermark ? clock_->Now() : deadline;
  time_->Schedule(Timestamp(at.millis() - 1), [this](Timestamp) {
    flush_scheduled_ = false;
    Status s = SendWithBackpressure([this] { return writer_->FlushIfDue(clock_->Now()); });
    if (!s.ok()) {
      processor_->ReportError(s);
      return;
    }
    ScheduleFlush();
  });
}

void SourceTask::EmitPeriodicWatermark(Timestamp ts) {
  if (finished_) return;
  watermarks_->OnPeriodicEmit(*watermark_output_);
  if (!deferred_error_.ok()) {
    processor_->ReportError(deferred_error_);
    return;
  }
  metrics_->source_watermark.Set(watermark_output_->max_watermark_so_far().millis());
  int64_t now = MonotonicMillis();
  if (now - window_start_ms_ >= 1000) {
    metrics_->backpressure_permille.Set(std::min<int64_t>(
        1000, blocked_ms_window_ * 1000 / std::max<int64_t>(1, now - window_start_ms_)));
    blocked_ms_window_ = 0;
    window_start_ms_ = now;
  }
  time_->Schedule(ts + Duration::Millis(deployment_.spec.watermark_interval_ms),
                  [this](Timestamp t) { EmitPeriodicWatermark(t); });
}

void SourceTask::EmitLatencyMarker(Timestamp ts) {
  if (finished_) return;
  // The marker joins every channel's pending batch: it leaves when that batch does (size or
  // time bound) and never waits for a receiver here.
  Status s = writer_->AddLatencyMarker(clock_->EpochMicros(), clock_->Now());
  if (!s.ok()) {
    processor_->ReportError(s);
    return;
  }
  ScheduleFlush();
  time_->Schedule(ts + Duration::Millis(deployment_.spec.latency_interval_ms),
                  [this](Timestamp t) { EmitLatencyMarker(t); });
}

void SourceTask::ChannelWatermarkOutput::EmitWatermark(Timestamp w) {
  if (!task_->deferred_error_.ok()) return;
  Status s = task_->SendWithBackpressure(
      [&] { return task_->writer_->BroadcastEvent(ChannelEvent::Watermark(w)); });
  if (!s.ok()) task_->deferred_error_ = s;
}

void SourceTask::ChannelWatermarkOutput::EmitWatermarkStatus(WatermarkStatus status) {
  if (!task_->deferred_error_.ok()) return;
  ChannelEvent e = status == WatermarkStatus::kIdle ? ChannelEvent::Idle() : ChannelEvent::Active();
  Status s = task_->SendWithBackpressure([&] { return task_->writer_->BroadcastEvent(e); });
  if (!s.ok()) task_->deferred_error_ = s;
}

Status SourceTask::Finish() {
  finished_ = true;
  watermark_output_->EmitWatermark(kMaxWatermark);
  KF_RETURN_IF_ERROR(deferred_error_);
  KF_RETURN_IF_ERROR(
      SendWithBackpressure([this] { return writer_->BroadcastEvent(ChannelEvent::EndOfInput()); }));
  KF_RETURN_IF_ERROR(writer_->Close());
  metrics_->source_watermark.Set(kMaxWatermark.millis());
  metrics_->source_finished.store(true, std::memory_order_relaxed);
  {
    MutexLock lock(&final_mu_);
    final_positions_ = SnapshotPositions(std::nullopt);
  }
  KF_LOG_INFO("source finished subtask={} records={}", deployment_.subtask.value(),
              metrics_->records_in.value());
  processor_->AllActionsCompleted();
  return Status::Ok();
}

std::map<std::string, std::string> SourceTask::SnapshotPositions(
    std::optional<CheckpointId> checkpoint) {
  std::map<std::string, std::string> out;
  for (const SourceSplitState& state : reader_->SnapshotState(checkpoint)) {
    std::string bytes;
    BinaryWriter w(&bytes);
    state.EncodeTo(&w);
    out[std::to_string(state.split.id().value())] = std::move(bytes);
  }
  return out;
}

}  // namespace keyflow
