#include "worker/task/task_executor.h"

#include "common/file_io.h"
#include "common/job_library/job_library.h"
#include "common/logging/logging.h"
#include "common/output_directory.h"
#include "worker/sinks/builtin_sink.h"
#include "worker/sinks/chained_sink_writer.h"
#include "worker/sources/builtin_source.h"
#include "worker/task/job_functions.h"

namespace keyflow {
namespace {

// The job's library (the built-in one for a default ref).
Result<std::shared_ptr<const JobLibrary>> LoadJobLibrary(const JobSpec& spec,
                                                         const std::string& cache_dir) {
  std::shared_ptr<const JobLibrary> library;
  if (spec.job_library.is_default()) {
    KF_ASSIGN_OR_RETURN(library, LoadDefaultJobLibrary());
  } else {
    // The cached copy WorkerProcess fetched, its SHA-256 verified right before the load: bytes
    // that do not match spec.job_library are never loaded.
    KF_ASSIGN_OR_RETURN(std::string path, ResolveJobLibraryPath(spec.job_library, cache_dir));
    KF_ASSIGN_OR_RETURN(library, JobLibrary::Load(path, spec.job_library.file_name));
    KF_LOG_INFO("job library loaded path={} sha256={}", path, spec.job_library.sha256);
  }
  return library;
}

// Each an encoded SourceSplitState (DeployTask::source_splits, AddSplits::splits).
Result<std::vector<SourceSplitState>> DecodeSplits(const std::vector<std::string>& encoded) {
  std::vector<SourceSplitState> splits;
  splits.reserve(encoded.size());
  for (const std::string& bytes : encoded) {
    BinaryReader r(bytes);
    KF_ASSIGN_OR_RETURN(SourceSplitState split, SourceSplitState::DecodeFrom(&r));
    if (!r.at_end()) return Corruption("a source split has trailing bytes");
    splits.push_back(std::move(split));
  }
  return splits;
}

}  // namespace

Result<std::unique_ptr<TaskExecutor>> TaskExecutor::Deploy(const DeployTask& d, WorkerId worker,
                                                           ZmqContext* zmq,
                                                           const TaskExecutorOptions& options,
                                                           const Clock* clock,
                                                           TaskExecutorHooks hooks) {
  std::unique_ptr<TaskExecutor> t(new TaskExecutor());
  t->deployment_ = d;
  t->worker_ = worker;
  t->zmq_ = zmq;
  t->clock_ = clock;
  t->hooks_ = std::move(hooks);
  t->self_ = std::make_shared<TaskExecutor*>(t.get());
  const JobSpec& spec = d.spec;
  const int32_t p = spec.parallelism;
  t->curve_keys_ = options.curve_keys;
  if (!options.curve_keys.secret_key.empty() &&
      d.peer_public_keys.size() != static_cast<size_t>(p)) {
    return FailedPrecondition(
        "the deployment names " + std::to_string(d.peer_public_keys.size()) +
        " data-plane public keys for parallelism " + std::to_string(p) +
        " although this worker runs with --keys: run the coordinator with --keys too (or every "
        "process with --insecure)");
  }

  KF_ASSIGN_OR_RETURN(t->library_, LoadJobLibrary(spec, options.job_library_cache_dir));
  KF_ASSIGN_OR_RETURN(
      JobFunctions functions,
      CreateJobFunctions(spec, t->library_, &t->metrics_.bad_records, d.key_groups));
  t->chain_ = std::move(functions.chain);
  // The splits the coordinator's enumerator assigned to this subtask, with their positions.
  KF_ASSIGN_OR_RETURN(t->splits_, DecodeSplits(d.source_splits));

  KF_ASSIGN_OR_RETURN(std::unique_ptr<SinkWriter> sink, OpenBuiltinSink(d, stdout, t->library_));
  if (functions.after_process != nullptr) {
    sink = std::make_unique<ChainedSinkWriter>(std::move(functions.after_process), std::move(sink),
                                               functions.on_bad_result);
  }

  InputGateOptions gate_options;
  gate_options.subtask = d.subtask;
  gate_options.num_channels = p;
  gate_options.attempt = d.attempt;
  gate_options.bind_host = options.bind_host;
  gate_options.advertised_host = options.advertised_host;
  gate_options.key_groups = d.key_groups;
  gate_options.clock = clock;
  gate_options.curve_keys = options.curve_keys;
  gate_options.authorizer = options.data_authorizer;
  KF_ASSIGN_OR_RETURN(std::unique_ptr<InputGate> gate, InputGate::Create(*zmq, gate_options));
  t->gate_endpoints_ = gate->endpoints();

  KeyedTask::Callbacks callbacks;
  TaskExecutor* self = t.get();
  callbacks.checkpoint_done = [self](CheckpointId id, Result<KeyedCheckpointPart> part) {
    self->hooks_.run_on_control_thread(
        self->OnControlThread([self, id, part = std::move(part)]() mutable {
          self->KeyedPartDone(id, std::move(part));
        }));
  };
  callbacks.input_ended = [self] {
    self->hooks_.run_on_control_thread(self->OnControlThread([self] {
      self->hooks_.send(
          TaskInputEnded{self->worker_, self->deployment_.attempt, self->deployment_.subtask});
    }));
  };
  callbacks.running = [self](int64_t restore_ms, int64_t restore_bytes) {
    self->hooks_.run_on_control_thread(self->OnControlThread([self, restore_ms, restore_bytes] {
      self->hooks_.send(TaskRunning{self->worker_, self->deployment_.attempt,
                                    self->deployment_.subtask, restore_ms, restore_bytes});
    }));
  };
  std::string state_dir;
  if (d.spec.state_backend == "rocksdb") {
    const std::string root = d.spec.state_dir.empty()
                                 ? (options.state_root.empty() ? AbsoluteStateRoot(kDefaultStateDir)
                                                               : options.state_root)
                                 : AbsoluteStateRoot(d.spec.state_dir);
    for (const std::string& dead : RemoveDeadStateDirectories(root)) {
      KF_LOG_INFO("removed the RocksDB working state of a dead attempt: {}", dead);
    }
    KF_ASSIGN_OR_RETURN(t->state_dir_,
                        StateDirectory::Create(root, d.cluster_id, d.job_id, d.attempt, d.subtask));
    state_dir = t->state_dir_->path();
  }
  KF_ASSIGN_OR_RETURN(
      t->keyed_, KeyedTask::Create(d, std::move(gate), std::move(functions.keyed), std::move(sink),
                                   clock, &t->metrics_, std::move(callbacks), state_dir));
  return t;
}

TaskExecutor::~TaskExecutor() {
  Cancel();
  *self_ = nullptr;
}

std::function<void()> TaskExecutor::OnControlThread(std::function<void()> fn) {
  std::shared_ptr<TaskExecutor*> self = self_;
  return [self, fn = std::move(fn)] {
    if (*self != nullptr) fn();
  };
}

Status TaskExecutor::Start(const StartTask& start) {
  const int32_t p = deployment_.spec.parallelism;
  if (start.input_endpoints.size() != static_cast<size_t>(p)) {
    return InvalidArgument("StartTask lists " + std::to_string(start.input_endpoints.size()) +
                           " keyed subtasks, the job has " + std::to_string(p));
  }
  RecordWriterOptions wo;
  wo.subtask = deployment_.subtask;
  wo.attempt = deployment_.attempt;
  wo.max_parallelism = deployment_.spec.max_parallelism;
  for (int32_t j = 0; j < p; ++j) {
    const auto& row = start.input_endpoints[static_cast<size_t>(j)];
    if (row.size() != static_cast<size_t>(p)) {
      return InvalidArgument("StartTask: keyed subtask " + std::to_string(j) + " lists " +
                             std::to_string(row.size()) + " input endpoints");
    }
    wo.receiver_endpoints.push_back(row[static_cast<size_t>(deployment_.subtask.value())]);
  }
  wo.cancelled = &cancelled_;
  if (!curve_keys_.secret_key.empty()) {
    wo.curve_keys = curve_keys_;
    wo.receiver_public_keys = deployment_.peer_public_keys;
  }
  KF_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> writer, RecordWriter::Create(*zmq_, wo));
  const JobSpec& spec = deployment_.spec;
  KF_ASSIGN_OR_RETURN(source_, SourceTask::Create(
                                   deployment_,
                                   [&spec, library = library_](const SourceReaderContext& context) {
                                     return CreateBuiltinSourceReader(spec, context, library);
                                   },
                                   splits_, deployment_.no_more_splits, std::move(writer), clock_,
                                   &metrics_, std::move(chain_)));
  {
    MutexLock lock(&mu_);
    running_ = 2;
  }
  keyed_thread_ = std::thread([this] { TaskEnded(keyed_->Run()); });
  source_thread_ = std::thread([this] { TaskEnded(source_->Run()); });
  return Status::Ok();
}

void TaskExecutor::TaskEnded(const Status& s) {
  bool report = false;
  bool cancel_other = false;
  Status result;
  {
    MutexLock lock(&mu_);
    --running_;
    if (reported_) return;
    if (!s.ok()) {
      reported_ = report = true;
      cancel_other = true;
      result = s;
    } else if (running_ == 0) {
      reported_ = report = true;
    }
  }
  if (cancel_other && !cancelled_.load()) {
    // The first failure stops the other task of this subtask too.
    cancelled_.store(true);
    if (source_) source_->Cancel();
    if (keyed_) keyed_->Cancel();
  }
  if (!report) return;
  CheckpointId corrupted{0};
  if (!result.ok() && keyed_->restore_corrupted() && deployment_.restore) {
    corrupted = deployment_.restore->checkpoint;
  }
  hooks_.run_on_control_thread(
      OnControlThread([this, result, corrupted] { hooks_.done(result, corrupted); }));
}

void TaskExecutor::TriggerCheckpoint(const struct TriggerCheckpoint& trigger) {
  CheckpointId id = trigger.checkpoint;
  if (!source_ || !keyed_) {
    Decline(id, "the subtask is not running yet");
    return;
  }
  PendingAck& p = pending_acks_[id.value()];
  p.ack.worker = worker_;
  p.ack.attempt = deployment_.attempt;
  p.ack.subtask = deployment_.subtask;
  p.ack.checkpoint = id;
  TaskExecutor* self = this;
  Status s = source_->TriggerCheckpoint(
      id, Timestamp(trigger.timestamp_ms),
      [self, id](Result<std::map<std::string, std::string>> positions) {
        self->hooks_.run_on_control_thread(
            self->OnControlThread([self, id, positions = std::move(positions)]() mutable {
              self->SourcePartDone(id, std::move(positions));
            }));
      });
  if (!s.ok()) {
    Decline(id, "the source subtask is gone: " + s.message());
    return;
  }
  s = keyed_->AnnounceCheckpoint(trigger);
  if (!s.ok()) Decline(id, "the keyed subtask is gone: " + s.message());
}

void TaskExecutor::SourcePartDone(CheckpointId id,
                                  Result<std::map<std::string, std::string>> positions) {
  auto it = pending_acks_.find(id.value());
  if (it == pending_acks_.end()) return;
  if (!positions.ok()) {
    Decline(id, positions.status().message());
    return;
  }
  it->second.ack.split_positions = std::move(positions).value();
  it->second.source_done = true;
  MaybeAcknowledge(id);
}

void TaskExecutor::KeyedPartDone(CheckpointId id, Result<KeyedCheckpointPart> part) {
  auto it = pending_acks_.find(id.value());
  if (it == pending_acks_.end()) return;
  if (!part.ok()) {
    Decline(id, part.status().message());
    return;
  }
  AcknowledgeCheckpoint& ack = it->second.ack;
  ack.keyed_state = std::move(part->keyed_state);
  ack.native_state = std::move(part->native_state);
  ack.written_bytes = part->written_bytes;
  ack.sink_committables = std::move(part->sink_committables);
  ack.sync_duration_us = part->sync_duration_us;
  ack.async_duration_us = part->async_duration_us;
  ack.alignment_duration_us = part->alignment_duration_us;
  it->second.keyed_done = true;
  MaybeAcknowledge(id);
}

void TaskExecutor::MaybeAcknowledge(CheckpointId id) {
  auto it = pending_acks_.find(id.value());
  if (it == pending_acks_.end() || !it->second.source_done || !it->second.keyed_done) return;
  it->second.ack.metrics = Metrics();
  hooks_.send(it->second.ack);
  pending_acks_.erase(it);
}

void TaskExecutor::Decline(CheckpointId id, const std::string& reason) {
  pending_acks_.erase(id.value());
  KF_LOG_WARN("declining checkpoint checkpoint={} reason={}", id.value(), reason);
  hooks_.send(DeclineCheckpoint{worker_, deployment_.attempt, deployment_.subtask, id, reason});
}

void TaskExecutor::AddSplits(const struct AddSplits& m) {
  if (!source_) {
    KF_LOG_WARN("splits for subtask {} arrived before it started; dropped", m.subtask.value());
    return;
  }
  Result<std::vector<SourceSplitState>> splits = DecodeSplits(m.splits);
  if (!splits.ok()) {
    source_->Fail(splits.status().WithContext("the coordinator assigned an unreadable split"));
    return;
  }
  source_->AddSplits(*std::move(splits)).IgnoreError();  // a closed mailbox: the task ended
}

void TaskExecutor::NotifyCheckpointComplete(CheckpointId id) {
  if (source_) source_->NotifyCheckpointComplete(id).IgnoreError();
  if (keyed_) keyed_->NotifyCheckpointComplete(id).IgnoreError();
}

void TaskExecutor::NotifyCheckpointAborted(CheckpointId id, const std::string& reason) {
  pending_acks_.erase(id.value());
  if (keyed_) keyed_->NotifyCheckpointAborted(id, reason).IgnoreError();
}

void TaskExecutor::Cancel() {
  {
    MutexLock lock(&mu_);
    reported_ = true;  // a cancelled subtask reports nothing
  }
  cancelled_.store(true);
  int64_t start = MonotonicMillis();
  if (source_) source_->Cancel();
  if (keyed_) keyed_->Cancel();
  if (source_thread_.joinable()) source_thread_.join();
  int64_t source_ms = MonotonicMillis() - start;
  if (keyed_thread_.joinable()) keyed_thread_.join();
  KF_LOG_DEBUG("subtask threads stopped attempt={} source_ms={} total_ms={}",
               deployment_.attempt.value(), source_ms, MonotonicMillis() - start);
}

}  // namespace keyflow
