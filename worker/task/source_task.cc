#include "worker/task/source_task.h"

#include <algorithm>
#include "common/logging.h"

#include "worker/watermark/watermarks_with_idleness.h"

namespace keyflow {
namespace {

constexpr int kRecordsPerBatch = 1024;          // records per default-action call
constexpr int kRecordsPerSplitTurn = 128;       // records of one split before the next split's turn
constexpr size_t kReadBufferBudget = 64 << 20;  // file read buffers of all splits together

}  // namespace

Result<std::unique_ptr<SourceTask>> SourceTask::Create(const DeployTask& deployment,
                                                       const InputSpec& input,
                                                       std::vector<SourceSplitState> splits,
                                                       std::unique_ptr<RecordWriter> writer,
                                                       const Clock* clock, TaskMetrics* metrics) {
  std::unique_ptr<SourceTask> t(new SourceTask());
  const JobSpec& spec = deployment.spec;
  t->deployment_ = deployment;
  t->input_ = input;
  for (SourceSplitState& st : splits) t->slots_.push_back(SplitSlot{std::move(st), {}, {}, false});
  t->writer_ = std::move(writer);
  t->clock_ = clock;
  t->metrics_ = metrics;
  t->assigner_ = KeyGroupAssigner(spec.key_type, spec.max_parallelism);
  if (input.kind() == InputSpec::Kind::kFiles) {
    JsonRecordFormat format;
    format.key_field = spec.key_field;
    format.timestamp_field = spec.ts_field;
    format.key_type = spec.key_type;
    format.keep_fields = spec.reads_fields;
    format.fields = spec.fields;
    t->parser_ = std::make_unique<JsonRecordParser>(format, spec.max_parallelism);
  }
  if (spec.watermark_bound_ms < 0) return InvalidArgument("--watermark-bound must not be negative");
  auto mux = std::make_unique<SplitWatermarkMultiplexer>(t->slots_.size(),
                                                         Duration::Millis(spec.watermark_bound_ms));
  t->split_watermarks_ = mux.get();
  if (spec.idle_timeout_ms > 0) {
    KF_ASSIGN_OR_RETURN(WatermarksWithIdleness idle,
                        WatermarksWithIdleness::Create(
                            std::move(mux), Duration::Millis(spec.idle_timeout_ms), *clock));
    t->watermarks_ = std::make_unique<WatermarksWithIdleness>(std::move(idle));
  } else {
    t->watermarks_ = std::move(mux);
  }
  KF_RETURN_IF_ERROR(t->OpenSplits());
  t->channel_output_ = std::make_unique<ChannelWatermarkOutput>(t.get());
  t->watermark_output_ = std::make_unique<WatermarkToDataOutput>(*t->channel_output_);
  KF_ASSIGN_OR_RETURN(t->mailbox_, TaskMailbox::Create());
  t->time_ = std::make_unique<SystemProcessingTimeService>(*clock);
  SourceTask* self = t.get();
  t->processor_ = std::make_unique<MailboxProcessor>(*t->mailbox_, *t->time_,
                                                     [self] { return self->ReadBatch(); });
  return t;
}

SourceTask::~SourceTask() {
  if (mailbox_) mailbox_->Close();
}

void SourceTask::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  processor_->ReportError(Aborted("the source subtask was cancelled"));
  mailbox_->Put([] {}, "wake up for cancellation").IgnoreError();
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
        std::map<std::string, std::string> positions = SnapshotPositions();
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
  Status s = writer_->Emit(r, now);
  if (s.code() != StatusCode::kDeadlineExceeded) return s;
  // Backpressured: the record was not accepted; wait for the receiver, then emit it.
  return SendWithBackpressure([&] { return writer_->Emit(r, clock_->Now()); });
}

Status SourceTask::OpenSplits() {
  size_t buffer =
      std::clamp<size_t>(kReadBufferBudget / std::max<size_t>(1, slots_.size()), 64 << 10, 1 << 20);
  for (size_t i = 0; i < slots_.size(); ++i) {
    SplitSlot& slot = slots_[i];
    const SourceSplitState& st = slot.state;
    if (st.split.kind() == SplitKind::kFile) {
      FileSplitReaderOptions options;
      options.on_bad_record =
          deployment_.spec.fail_on_bad_record ? BadRecordPolicy::kFail : BadRecordPolicy::kSkip;
      options.on_input_change = deployment_.spec.fail_on_input_change ? InputChangePolicy::kFail
                                                                      : InputChangePolicy::kWarn;
      options.read_buffer_bytes = buffer;
      TaskMetrics* metrics = metrics_;
      options.bad_record_callback = [metrics](const BadRecord& bad) {
        metrics->bad_records.Inc();
        KF_LOG_WARN("bad record skipped: {}", bad.ToString());
      };
      options.input_change_callback = [](const InputChange& change) {
        KF_LOG_WARN("{}", change.ToString());
      };
      KF_ASSIGN_OR_RETURN(FileSplitReader reader,
                          FileSplitReader::Open(st.split, st.position, parser_.get(), options));
      slot.file.emplace(std::move(reader));
    } else {
      KF_ASSIGN_OR_RETURN(
          GeneratorSplitReader reader,
          GeneratorSplitReader::Create(
              input_.generator(), st.split.generator_index(), assigner_, st.position, clock_,
              GeneratorRecordFormat{deployment_.spec.reads_fields, deployment_.spec.key_field,
                                    deployment_.spec.ts_field, deployment_.spec.fields}));
      slot.generator.emplace(reader);
    }
    ++unfinished_;
    KF_LOG_INFO("source reading split={} from={}", st.split.ToString(), st.position.ToString());
  }
  return Status::Ok();
}

Result<InputStatus> SourceTask::ReadBatch() {
  if (!deferred_error_.ok()) return deferred_error_;
  if (finished_) return InputStatus::kEndOfInput;
  Record record;
  int emitted = 0;
  Timestamp throttled_until = kMaxWatermark;
  // One clock read per batch: it only stamps the batches' time bound (a few ms).
  const Timestamp now = clock_->Now();
  for (size_t turn = 0; turn < slots_.size() && emitted < kRecordsPerBatch; ++turn) {
    size_t index = next_slot_;
    next_slot_ = (next_slot_ + 1) % slots_.size();
    SplitSlot& slot = slots_[index];
    if (slot.finished) continue;
    for (int i = 0; i < kRecordsPerSplitTurn; ++i) {
      SplitReadResult r;
      if (slot.file) {
        KF_ASSIGN_OR_RETURN(r, slot.file->Next(&record));
        slot.state.position = slot.file->position();
      } else {
        r = slot.generator->Next(&record);
        slot.state.position = slot.generator->position();
      }
      if (r == SplitReadResult::kRecord) {
        split_watermarks_->OnSplitEvent(index, record.timestamp);
        KF_RETURN_IF_ERROR(Emit(record, now));
        ++emitted;
        continue;
      }
      if (r == SplitReadResult::kThrottled) {
        throttled_until = std::min(throttled_until, slot.generator->next_available_time());
        break;
      }
      slot.finished = true;  // end of split: keep its final position
      split_watermarks_->SplitFinished(index);
      --unfinished_;
      break;
    }
  }
  metrics_->records_in.Inc(emitted);  // one atomic add per batch, not per record
  if (unfinished_ == 0) {
    KF_RETURN_IF_ERROR(Finish());
    return InputStatus::kEndOfInput;
  }
  if (emitted == 0 && throttled_until != kMaxWatermark) {
    // Rate limit: sleep in the mailbox loop (mail still runs) until the next event is allowed.
    processor_->SuspendDefaultAction();
    time_->Schedule(Timestamp(throttled_until.millis() - 1),
                    [this](Timestamp) { processor_->ResumeDefaultAction(); });
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
    final_positions_ = SnapshotPositions();
  }
  KF_LOG_INFO("source finished subtask={} records={}", deployment_.subtask.value(),
              metrics_->records_in.value());
  processor_->AllActionsCompleted();
  return Status::Ok();
}

std::map<std::string, std::string> SourceTask::SnapshotPositions() const {
  std::map<std::string, std::string> out;
  for (const SplitSlot& slot : slots_) {
    std::string bytes;
    BinaryWriter w(&bytes);
    slot.state.EncodeTo(&w);
    out[std::to_string(slot.state.split.id().value())] = std::move(bytes);
  }
  return out;
}

}  // namespace keyflow
