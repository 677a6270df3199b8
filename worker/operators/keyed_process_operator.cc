#include "worker/operators/keyed_process_operator.h"

#include "state/heap/heap_keyed_state_backend.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"

namespace keyflow {
namespace {

// The configured backend; the heap one (and the error in *error) if the RocksDB one cannot be
// opened, so that the operator is whole and Open() fails with the sentence.
std::unique_ptr<KeyedStateBackend> MakeBackend(const OperatorConfig& config, KeyContext& context,
                                               Status* error) {
  if (config.state_backend == "rocksdb") {
    auto rocksdb = RocksDbKeyedStateBackend::Open(context, config.rocksdb);
    if (rocksdb.ok()) return std::move(*rocksdb);
    *error = rocksdb.status();
  } else if (config.state_backend != "heap") {
    *error = InvalidArgument("unknown state backend '" + config.state_backend +
                             "': use heap or rocksdb");
  }
  return std::make_unique<HeapKeyedStateBackend>(context);
}

}  // namespace

KeyedProcessOperator::KeyedProcessOperator(OperatorConfig config,
                                           std::unique_ptr<RecordFunction> function,
                                           ProcessingTimeService* processing_time,
                                           Collector<OutputRecord>* output)
    : config_(std::move(config)),
      function_(std::move(function)),
      key_context_(config_.key_type, config_.max_parallelism, config_.key_groups),
      backend_(MakeBackend(config_, key_context_, &backend_error_)),
      timers_(key_context_, *processing_time, *this),
      user_timers_(&timers_),
      runtime_(config_.subtask, config_.parallelism, config_.key_type, config_.params,
               backend_.get()),
      context_(&key_context_, &user_timers_),
      output_(output),
      guard_(config_.job_name, config_.library_name) {
  sections_.resize(2);
  SnapshotSection& state = sections_[0];
  state.id = kKeyedStateSectionId;
  state.name = "keyed state";
  state.write = [this](KeyGroupId g, BinaryWriter& w) { backend_->SerializeKeyGroup(g, w); };
  state.count = [this](KeyGroupId g) -> uint64_t { return backend_->NumKeys(g); };
  state.restore = [this](KeyGroupId g, BinaryReader& r) { return backend_->RestoreKeyGroup(g, r); };
  state.copy = [this](KeyGroupId g) { return backend_->CopyKeyGroup(g); };
  SnapshotSection& timers = sections_[1];
  timers.id = kTimersSectionId;
  timers.name = "timers";
  timers.write = [this](KeyGroupId g, BinaryWriter& w) { timers_.SerializeKeyGroup(g, w); };
  timers.count = [this](KeyGroupId g) -> uint64_t { return timers_.NumTimers(g); };
  timers.restore = [this](KeyGroupId g, BinaryReader& r) { return timers_.RestoreKeyGroup(g, r); };
  timers.copy = [this](KeyGroupId g) { return timers_.CopyKeyGroup(g); };
  section_ptrs_ = {&sections_[0], &sections_[1]};
}

KeyedProcessOperator::~KeyedProcessOperator() {
  Close().IgnoreError();
}

Status KeyedProcessOperator::Fail(Status s) {
  if (failure_.ok() && !s.ok()) {
    failure_ = s;
    if (failure_listener_) failure_listener_(failure_);
  }
  return s;
}

Status KeyedProcessOperator::Open() {
  KF_RETURN_IF_ERROR(Fail(backend_error_));
  KF_RETURN_IF_ERROR(failure_);
  return Fail(
      guard_.CallReturningStatus(UserCall::kOpen, [this] { return function_->Open(runtime_); }));
}

Status KeyedProcessOperator::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  return guard_.Call(UserCall::kClose, [this] { function_->Close(); });
}

Status KeyedProcessOperator::Restore(KeyedSnapshotReader& reader) {
  KF_RETURN_IF_ERROR(CheckCompatible(reader.info()));
  return reader.Restore(config_.key_groups, section_ptrs_);
}

Status KeyedProcessOperator::RestoreKeyGroup(KeyedSnapshotReader& reader, KeyGroupId g) {
  KF_RETURN_IF_ERROR(CheckCompatible(reader.info()));
  return reader.RestoreKeyGroup(g, section_ptrs_);
}

Status KeyedProcessOperator::CheckCompatible(const KeyedSnapshotInfo& info) const {
  if (info.max_parallelism != config_.max_parallelism) {
    return FailedPrecondition(
        "the snapshot was written with max parallelism " + std::to_string(info.max_parallelism) +
        " but this job has max parallelism " + std::to_string(config_.max_parallelism) +
        ": the number of key groups is fixed for the lifetime of a job and its checkpoints; "
        "restore with --max-parallelism " +
        std::to_string(info.max_parallelism));
  }
  if (info.key_type != config_.key_type) {
    return FailedPrecondition(
        "the snapshot holds " + std::string(KeyTypeName(info.key_type)) +
        " keys but this job uses " + std::string(KeyTypeName(config_.key_type)) +
        " keys: restore with --key-type " + std::string(KeyTypeName(info.key_type)));
  }
  return Status::Ok();
}

void KeyedProcessOperator::Start() {
  timers_.StartTimerService();
}

Status KeyedProcessOperator::ProcessElement(const Record& record) {
  KF_RETURN_IF_ERROR(failure_);
  KF_RETURN_IF_ERROR(key_context_.SetCurrentKey(record.key, record.key_group));
  records_processed_.Inc();
  context_.Set(record.timestamp);
  output_.timestamp = record.timestamp;
  KF_RETURN_IF_ERROR(Fail(guard_.Call(
      UserCall::kProcessElement, [&] { function_->ProcessElement(record, context_, output_); })));
  if (!backend_->failure().ok()) [[unlikely]] {
    return Fail(backend_->failure());  // a storage failure of the RocksDB backend
  }
  return Status::Ok();
}

void KeyedProcessOperator::ProcessWatermark(Timestamp watermark) {
  if (watermark <= timers_.CurrentWatermark()) return;
  timers_.AdvanceWatermark(watermark);
}

Status KeyedProcessOperator::EndInput() {
  if (ended_) return failure_;
  ended_ = true;
  ProcessWatermark(kMaxWatermark);
  KF_RETURN_IF_ERROR(failure_);
  context_.Set(timers_.CurrentProcessingTime(), TimeDomain::kProcessingTime);
  output_.timestamp = kMaxWatermark;
  return Fail(guard_.Call(UserCall::kEndInput, [this] { function_->EndInput(context_, output_); }));
}

Result<KeyedSnapshotInfo> KeyedProcessOperator::SnapshotTo(std::string* out) const {
  return WriteKeyedSnapshot(config_.max_parallelism, config_.key_type, config_.key_groups,
                            section_ptrs_, out);
}

void KeyedProcessOperator::FireTimer(const TimerEntry& timer, TimeDomain domain) {
  if (!failure_.ok()) return;  // the function failed: the task is going down
  context_.Set(timer.timestamp, domain, timer.ns);
  // Flink's KeyedProcessOperator.onProcessingTime calls collector.eraseTimestamp().
  output_.timestamp =
      domain == TimeDomain::kEventTime ? std::optional(timer.timestamp) : std::nullopt;
  Fail(guard_.Call(UserCall::kOnTimer, [&] {
    function_->OnTimer(timer.timestamp, context_, output_);
  })).IgnoreError();
  if (!backend_->failure().ok()) [[unlikely]]
    Fail(backend_->failure()).IgnoreError();
}

void KeyedProcessOperator::OnEventTime(const TimerEntry& timer) {
  FireTimer(timer, TimeDomain::kEventTime);
}

void KeyedProcessOperator::OnProcessingTime(const TimerEntry& timer) {
  if (ended_) return;  // processing-time timers do not fire after the end of input
  FireTimer(timer, TimeDomain::kProcessingTime);
}

}  // namespace keyflow
