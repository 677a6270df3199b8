#include "worker/task/keyed_task.h"

#include <random>

#include "checkpoint/checkpoint_storage.h"
#include "common/file_io.h"
#include "common/hashing.h"
#include "common/logging/logging.h"
#include "worker/runtime/crash_handler.h"

namespace keyflow {
namespace {

constexpr int64_t kGaugeIntervalMs = 200;  // how often state/timer gauges are refreshed

// 32 random hex digits: names the shared files of one task instance (unique per upload).
std::string RandomUuid() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    out += buf;
  }
  return out;
}

// A function that failed on "field 'NAME' is missing" (the typed reads of Record say so) where
// NAME is not among the job's declared fields: the sources dropped it before the shuffle. The
// failure then says so, and how to declare it.
Status ExplainProjectedField(Status failure, const std::vector<std::string>& declared) {
  constexpr std::string_view kOpen = "field '", kClose = "' is missing";
  const std::string& m = failure.message();
  const size_t end = m.find(kClose);
  if (declared.empty() || end == std::string::npos) return failure;
  const size_t begin = m.rfind(kOpen, end);
  if (begin == std::string::npos) return failure;
  const std::string name = m.substr(begin + kOpen.size(), end - begin - kOpen.size());
  std::string list;
  for (const std::string& f : declared) {
    if (f == name) return failure;  // declared, and absent from the record itself
    list += (list.empty() ? "'" : ", '") + f + "'";
  }
  return Status(failure.code(),
                m + " (the job declares the fields it reads, JobDefinition::fields: " + list +
                    "; the sources drop every other field before the shuffle: add '" + name +
                    "' to the fields the job's definition returns)");
}

}  // namespace

Result<std::unique_ptr<KeyedTask>> KeyedTask::Create(
    const DeployTask& deployment, std::unique_ptr<InputGate> gate,
    std::unique_ptr<RecordFunction> function, std::unique_ptr<SinkWriter> sink, const Clock* clock,
    TaskMetrics* metrics, Callbacks callbacks, const std::string& state_dir) {
  std::unique_ptr<KeyedTask> t(new KeyedTask());
  const JobSpec& spec = deployment.spec;
  t->deployment_ = deployment;
  t->clock_ = clock;
  t->metrics_ = metrics;
  t->callbacks_ = std::move(callbacks);
  t->gate_ = std::move(gate);
  if (!sink) return InvalidArgument("a keyed task needs a sink");
  t->collector_.sink = std::move(sink);
  KF_ASSIGN_OR_RETURN(t->mailbox_, TaskMailbox::Create());
  t->time_ = std::make_unique<SystemProcessingTimeService>(*clock);
  t->waiter_ = std::make_unique<GateWaiter>(t->gate_.get());
  KeyedTask* self = t.get();
  t->processor_ = std::make_unique<MailboxProcessor>(
      *t->mailbox_, *t->time_, [self] { return self->ProcessInput(); }, t->waiter_.get());
  t->valve_ = std::make_unique<StatusWatermarkValve>(spec.parallelism);
  t->valve_output_ = std::make_unique<OperatorWatermarkOutput>(self);
  CheckpointBarrierHandler::Callbacks cb;
  cb.block_channel = [self](SubtaskIndex c) { self->gate_->BlockChannel(c); };
  cb.unblock_all = [self] { self->gate_->UnblockAll(); };
  cb.snapshot = [self](CheckpointId id, int64_t align_us) { self->TakeSnapshot(id, align_us); };
  cb.abort = [](CheckpointId id, const std::string& why) {
    KF_LOG_INFO("checkpoint aborted during alignment checkpoint={} reason={}", id.value(), why);
  };
  t->barriers_ = std::make_unique<CheckpointBarrierHandler>(spec.parallelism, std::move(cb));
  OperatorConfig config;
  config.subtask = deployment.subtask;
  config.parallelism = spec.parallelism;
  config.max_parallelism = spec.max_parallelism;
  config.key_type = spec.key_type;
  config.key_groups = deployment.key_groups;
  config.params = spec.params;
  config.job_name = spec.job_name;
  config.library_name = spec.job_library.file_name;
  config.state_backend = spec.state_backend;
  config.rocksdb.dir = state_dir;
  t->operator_ = std::make_unique<KeyedProcessOperator>(std::move(config), std::move(function),
                                                        t->time_.get(), &t->collector_);
  metrics->state_backend.store(
      t->operator_->backend().backend_name() == "rocksdb" ? "rocksdb" : "heap",
      std::memory_order_relaxed);
  t->tracker_ = std::make_unique<KeyGroupChangeTracker>(deployment.key_groups.size());
  t->uuid_ = RandomUuid();
  t->InstallWriteGuards(nullptr, false);
  // A failure in a timer (which returns nothing) ends the mailbox loop with it.
  t->operator_->SetFailureListener([self](const Status& s) {
    self->processor_->ReportError(ExplainProjectedField(s, self->deployment_.spec.fields));
  });
  return t;
}

KeyedTask::~KeyedTask() {
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  if (operator_) operator_->SetWriteGuard(nullptr);
  if (mailbox_) mailbox_->Close();
}

int64_t KeyedTask::NowMicros() const {
  return clock_->MonotonicMicros();
}

void KeyedTask::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  processor_->ReportError(Aborted("the keyed subtask was cancelled"));
  mailbox_->Put([] {}, "wake up for cancellation").IgnoreError();
}

Status KeyedTask::AnnounceCheckpoint(const TriggerCheckpoint& trigger) {
  return mailbox_->Put(
      [this, trigger] {
        announced_[trigger.checkpoint.value()] = Announced{
            trigger.directory, trigger.type, trigger.incremental, trigger.shared_directory};
        barriers_->Announce(trigger.checkpoint, NowMicros());
      },
      "announce checkpoint " + std::to_string(trigger.checkpoint.value()));
}

Status KeyedTask::NotifyCheckpointComplete(CheckpointId id) {
  return mailbox_->Put(
      [this, id] {
        // A completed incremental checkpoint of this task is the base of the next ones; older
        // pending ones never become one (their files may be gone with them).
        if (auto it = pending_incremental_.find(id.value()); it != pending_incremental_.end()) {
          base_.emplace(id, std::move(it->second));
          tracker_->DropBefore(id);
        }
        pending_incremental_.erase(pending_incremental_.begin(),
                                   pending_incremental_.upper_bound(id.value()));
        operator_->mutable_backend().NotifyNativeCheckpointComplete(id);
        Status committed = collector_.sink->NotifyCheckpointComplete(id);
        if (!committed.ok()) {
          processor_->ReportError(
              committed.WithContext("committing checkpoint " + std::to_string(id.value())));
          return;
        }
        // Only the completion of a checkpoint designated final by the coordinator (or a later
        // one) ends the subtask: a periodic checkpoint taken after the end of input commits
        // the pending files above and the subtask waits for the final one.
        if (ended_ && final_checkpoint_.value() != 0 && id >= final_checkpoint_ &&
            !committed_final_) {
          committed_final_ = true;
          Status finished = collector_.sink->FinishAndCommit();
          if (!finished.ok()) {
            processor_->ReportError(finished);
            return;
          }
          KF_LOG_INFO("final checkpoint committed subtask={} checkpoint={}",
                      deployment_.subtask.value(), id.value());
          processor_->AllActionsCompleted();
        }
      },
      "checkpoint " + std::to_string(id.value()) + " complete");
}

Status KeyedTask::NotifyCheckpointAborted(CheckpointId id, const std::string& reason) {
  return mailbox_->Put(
      [this, id, reason] {
        pending_incremental_.erase(id.value());
        operator_->mutable_backend().NotifyNativeCheckpointAborted(id);
        barriers_->Abort(id, reason);
      },
      "checkpoint " + std::to_string(id.value()) + " aborted");
}

Status KeyedTask::Run() {
  ScopedAltSignalStack crash_stack;  // a stack overflow in user code still names the call
  Status s = RunOperator();
  Status closed = operator_->Close();
  Status flushed = collector_.sink->Flush();
  if (!flushed.ok()) KF_LOG_WARN("sink: {}", flushed.message());
  if (cancelled_.load(std::memory_order_acquire)) return Aborted("the keyed subtask was cancelled");
  if (s.ok()) return closed;
  if (!closed.ok()) KF_LOG_WARN("after the subtask failed: {}", closed.message());
  return s;
}

Status KeyedTask::RunOperator() {
  KF_RETURN_IF_ERROR(operator_->Open());
  int64_t restore_start = clock_->MonotonicMillis();
  if (deployment_.restore) KF_RETURN_IF_ERROR(Restore(*deployment_.restore));
  operator_->Start();
  if (callbacks_.running) {
    callbacks_.running(clock_->MonotonicMillis() - restore_start, metrics_->restore_bytes.value());
  }
  time_->Schedule(clock_->Now() + Duration::Millis(kGaugeIntervalMs),
                  [this](Timestamp ts) { UpdateGauges(ts); });
  Status s = processor_->RunMailboxLoop();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  operator_->SetWriteGuard(nullptr);
  return s;
}

void KeyedTask::UpdateGauges(Timestamp ts) {
  metrics_->state_keys.Set(static_cast<int64_t>(operator_->backend().NumEntries()));
  const StateSize size = operator_->backend().ApproximateSize();
  metrics_->state_bytes_memory.Set(size.memory_bytes);
  metrics_->state_bytes_disk.Set(size.disk_bytes);
  metrics_->timers.Set(static_cast<int64_t>(operator_->timer_service().NumEventTimers() +
                                            operator_->timer_service().NumProcessingTimers()));
  metrics_->late_records.Set(operator_->late_records());
  metrics_->records_out.Set(operator_->records_out());
  metrics_->dropped_frames.Set(static_cast<int64_t>(gate_->dropped_frames()));
  collector_.Flush();
  time_->Schedule(ts + Duration::Millis(kGaugeIntervalMs),
                  [this](Timestamp t) { UpdateGauges(t); });
}

Result<InputStatus> KeyedTask::ProcessInput() {
  if (ended_) return InputStatus::kEndOfInput;
  KF_ASSIGN_OR_RETURN(std::optional<InputEvent> event, gate_->PollNext());
  if (!event) return InputStatus::kNothingAvailable;
  KF_RETURN_IF_ERROR(HandleEvent(*event));
  KF_RETURN_IF_ERROR(operator_->failure());  // e.g. in a timer the watermark fired
  if (!collector_.error.ok()) return collector_.error;
  if (gate_->AllFinished()) {
    KF_RETURN_IF_ERROR(EndOfInput());
    return InputStatus::kEndOfInput;
  }
  return InputStatus::kMoreAvailable;
}

Status KeyedTask::HandleEvent(const InputEvent& event) {
  switch (event.kind) {
    case FrameKind::kRecords: {
      // The state of the record kStatePrefetchDistance ahead is prefetched, so that the memory
      // latency of random keys overlaps with processing (state_bench: 2.6x on 1 M keys).
      constexpr size_t kStatePrefetchDistance = 8;
      const std::span<const RecordView> records = event.records;
      for (size_t i = 0; i < records.size(); ++i) {
        if (i + kStatePrefetchDistance < records.size()) {
          const RecordView& ahead = records[i + kStatePrefetchDistance];
          operator_->PrefetchState(ahead.key, ahead.key_group);
        }
        const RecordView& v = records[i];
        scratch_.key = Key::FromBytes(v.key);
        scratch_.key_group = v.key_group;
        scratch_.timestamp = v.timestamp;
        scratch_.payload.assign(v.payload);
        scratch_.fields.assign(v.fields);
        scratch_.raw_json_cache.clear();
        Status processed = operator_->ProcessElement(scratch_);
        if (!processed.ok()) {
          metrics_->records_processed.Inc(static_cast<int64_t>(i));  // the ones before it
          // The function's own failure names it; others get the record's origin.
          if (!operator_->failure().ok()) return processed;
          return processed.WithContext("record from source subtask " +
                                       std::to_string(event.channel.value()));
        }
      }
      metrics_->records_processed.Inc(static_cast<int64_t>(event.records.size()));
      return Status::Ok();
    }
    case FrameKind::kWatermark:
      valve_->InputWatermark(event.event.watermark, event.channel, *valve_output_);
      return Status::Ok();
    case FrameKind::kWatermarkStatus:
      valve_->InputWatermarkStatus(
          event.event.idle ? WatermarkStatus::kIdle : WatermarkStatus::kActive, event.channel,
          *valve_output_);
      return Status::Ok();
    case FrameKind::kBarrier:
      barriers_->OnBarrier(event.channel, event.event.checkpoint_id, NowMicros());
      return Status::Ok();
    case FrameKind::kCancelBarrier:
      barriers_->OnCancelBarrier(event.channel, event.event.checkpoint_id);
      return Status::Ok();
    case FrameKind::kLatencyMarker:
      // Every record this channel delivered before the marker has been processed: now minus
      // the marker's time is the latency of a record that arrived at the source with it.
      metrics_->latency.Record(clock_->EpochMicros() - event.event.marked_time_us, clock_->Now());
      return Status::Ok();
    case FrameKind::kEndOfInput:
      KF_LOG_INFO("input channel finished subtask={} channel={}", deployment_.subtask.value(),
                  event.channel.value());
      barriers_->OnChannelFinished(event.channel, NowMicros());
      return Status::Ok();
  }
  return Internal("unknown frame kind");
}

Status KeyedTask::EndOfInput() {
  ended_ = true;
  KF_RETURN_IF_ERROR(operator_->EndInput());
  metrics_->records_out.Set(operator_->records_out());
  collector_.Flush();
  KF_RETURN_IF_ERROR(collector_.error);
  KF_LOG_INFO("keyed subtask input ended subtask={} processed={} emitted={}",
              deployment_.subtask.value(), metrics_->records_processed.value(),
              operator_->records_out());
  if (checkpointing()) {
    // Results stay pending until a checkpoint taken from now on completes.
    if (callbacks_.input_ended) callbacks_.input_ended();
    return Status::Ok();
  }
  KF_RETURN_IF_ERROR(collector_.sink->FinishAndCommit());
  processor_->AllActionsCompleted();
  return Status::Ok();
}

void KeyedTask::OperatorWatermarkOutput::EmitWatermark(Timestamp w) {
  task_->operator_->ProcessWatermark(w);
  task_->metrics_->current_watermark.Set(w.millis());
}

void KeyedTask::SinkCollector::Collect(OutputRecord record) {
  if (!error.ok()) return;
  Status s = sink->Write(record);
  if (!s.ok()) error = s.WithContext("writing a result");
}

void KeyedTask::SinkCollector::Flush() {
  if (!error.ok()) return;
  Status s = sink->Flush();
  if (!s.ok()) error = s.WithContext("writing results");
}

Status KeyedTask::GateWaiter::Wait(std::optional<Duration> timeout, int mailbox_fd) {
  Duration t = timeout.value_or(Duration::Millis(1000));
  KF_ASSIGN_OR_RETURN(InputAvailability a, gate_->WaitForInput(t, mailbox_fd));
  (void)a;
  return Status::Ok();
}

}  // namespace keyflow
