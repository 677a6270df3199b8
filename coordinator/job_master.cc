#include "coordinator/job_master.h"

#include <algorithm>

#include "common/job_library/keyed_pipeline.h"
#include "common/key_group_assignment.h"
#include "common/logging/logging.h"
#include "common/output_directory.h"
#include "coordinator/path_rules.h"
#include "coordinator/source/split_enumerator.h"
#include "worker/api/stream_graph.h"

namespace keyflow {
namespace {

// A graph job's graph came over the wire: well formed, of a shape this version runs, and keyed
// as the spec says (what the sources extract).
Status CheckJobGraph(const JobSpec& spec) {
  if (!spec.is_graph_job()) return Status::Ok();
  Status valid = ValidateJobGraph(spec.graph);
  if (!valid.ok()) return InvalidArgument("the job's graph is malformed: " + valid.message());
  KF_ASSIGN_OR_RETURN(KeyedPipeline pipeline, PlanKeyedPipeline(spec.graph));
  if (pipeline.keyed &&
      (pipeline.key_by.key_field != spec.key_field || pipeline.key_by.key_type != spec.key_type)) {
    return InvalidArgument("the job spec's key field or type differs from its graph's KeyBy");
  }
  return Status::Ok();
}

}  // namespace

std::string_view RescalePhaseName(RescalePhase p) {
  switch (p) {
    case RescalePhase::kWaitingForWorkers:
      return "waiting for workers";
    case RescalePhase::kCheckpoint:
      return "checkpoint";
    case RescalePhase::kSavepoint:
      return "savepoint";
    case RescalePhase::kDeploying:
      return "deploying";
  }
  return "?";
}

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kDeploying:
      return "DEPLOYING";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kRescaling:
      return "RESCALING";
    case JobState::kFinishing:
      return "FINISHING";
    case JobState::kRestarting:
      return "RESTARTING";
    case JobState::kFinished:
      return "FINISHED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCanceled:
      return "CANCELED";
  }
  return "?";
}

JobMaster::JobMaster(std::string job_id, JobSpec spec, WorkerRegistry* workers,
                     ControlOutbox* outbox, const Clock* wall_clock, JobMasterOptions options)
    : job_id_(std::move(job_id)),
      spec_(std::move(spec)),
      workers_(workers),
      outbox_(outbox),
      wall_clock_(wall_clock),
      options_(std::move(options)),
      storage_(spec_.checkpoint_dir.empty() ? options_.checkpoint_root : spec_.checkpoint_dir) {}

Result<std::unique_ptr<JobMaster>> JobMaster::Create(std::string job_id, JobSpec spec,
                                                     WorkerRegistry* workers, ControlOutbox* outbox,
                                                     const Clock* wall_clock,
                                                     JobMasterOptions options, int64_t now_ms) {
  // The job and its params were checked against the job library at submit (keyflow run); the
  // coordinator runs no user code. A worker that cannot create the function fails the task.
  if (spec.job_name.empty()) {
    return InvalidArgument("the job spec names no job: give keyflow run --job NAME");
  }
  KF_RETURN_IF_ERROR(CheckJobGraph(spec));
  size_t available = workers->size();
  if (available == 0) {
    return FailedPrecondition(
        "no workers are registered with the coordinator; start some with "
        "scripts/start-cluster.sh --workers N (or keyflow-worker --coordinator ...)");
  }
  if (spec.parallelism == 0) spec.parallelism = static_cast<int32_t>(available);
  std::optional<RestorePoint> restore;
  if (!spec.from_savepoint.empty()) {
    auto m = CheckpointStorage::ReadMetadata(spec.from_savepoint);
    if (!m.ok()) return m.status().WithContext("cannot restore from " + spec.from_savepoint);
    KF_RETURN_IF_ERROR(ValidateRestore(*m, spec.parallelism, spec.max_parallelism));
    std::string dir = spec.from_savepoint;
    if (dir.size() > 10 && dir.substr(dir.size() - 10) == "/_metadata") dir.resize(dir.size() - 10);
    KF_RETURN_IF_ERROR(CheckpointStorage::VerifyStateFiles(dir, *m));
    // Its pending results are committed where the job that took it wrote them.
    if (OutputIsDirectory(m->spec.output_dir)) {
      KF_RETURN_IF_ERROR(
          CheckAllowedPath("the output directory of the savepoint " + spec.from_savepoint,
                           m->spec.output_dir, options.allowed_paths));
    }
    if (m->spec.job_name != spec.job_name) {
      return FailedPrecondition("the savepoint " + spec.from_savepoint + " belongs to job " +
                                m->spec.job_name + ", not " + spec.job_name);
    }
    if (m->spec.key_type != spec.key_type) {
      return FailedPrecondition(
          "the savepoint holds " + std::string(KeyTypeName(m->spec.key_type)) +
          " keys; run with --key-type " + std::string(KeyTypeName(m->spec.key_type)));
    }
    spec.max_parallelism = m->spec.max_parallelism;  // fixed for the lifetime of the state
    restore = RestorePoint{std::move(m).value(), dir};
  }
  if (spec.max_parallelism == 0 && spec.parallelism > 0 &&
      spec.parallelism <= kUpperBoundMaxParallelism) {
    spec.max_parallelism = ComputeDefaultMaxParallelism(spec.parallelism);
  }
  KF_RETURN_IF_ERROR(ValidateParallelism(spec.parallelism, spec.max_parallelism));
  if (static_cast<size_t>(spec.parallelism) > available) {
    return FailedPrecondition("the job needs " + std::to_string(spec.parallelism) +
                              " workers (one per subtask) but only " + std::to_string(available) +
                              " are registered: start more workers or lower --parallelism");
  }
  KF_ASSIGN_OR_RETURN(RestartStrategy restart, RestartStrategy::FromSpec(spec));
  std::unique_ptr<JobMaster> jm(new JobMaster(std::move(job_id), std::move(spec), workers, outbox,
                                              wall_clock, std::move(options)));
  jm->restart_ = restart;
  jm->submitted_ms_ = now_ms;
  jm->initial_restore_ = restore;
  KF_RETURN_IF_ERROR(jm->DeployAttempt(jm->spec_.parallelism, restore, now_ms));
  return jm;
}

Result<std::unique_ptr<JobMaster>> JobMaster::Resume(const JobRecord& record,
                                                     WorkerRegistry* workers, ControlOutbox* outbox,
                                                     const Clock* wall_clock,
                                                     JobMasterOptions options, int64_t now_ms) {
  KF_ASSIGN_OR_RETURN(RestartStrategy restart, RestartStrategy::FromSpec(record.spec));
  std::unique_ptr<JobMaster> jm(
      new JobMaster(record.job_id, record.spec, workers, outbox, wall_clock, std::move(options)));
  jm->restart_ = restart;
  jm->submitted_ms_ = now_ms;
  jm->attempt_ = record.last_attempt;
  jm->state_ = JobState::kRestarting;
  jm->restart_at_ms_ = now_ms;
  jm->replacement_deadline_ms_ = now_ms + record.spec.replacement_timeout_ms;
  jm->last_failure_ = "the coordinator restarted";
  jm->last_command_ = record.last_command;
  jm->last_command_outcome_ = record.last_command_outcome;
  if (!record.spec.from_savepoint.empty()) {
    auto m = CheckpointStorage::ReadMetadata(record.spec.from_savepoint);
    if (m.ok()) {
      std::string dir = record.spec.from_savepoint;
      if (dir.size() > 10 && dir.substr(dir.size() - 10) == "/_metadata")
        dir.resize(dir.size() - 10);
      jm->initial_restore_ = RestorePoint{std::move(m).value(), dir};
    }
  }
  if (!record.rescale_savepoint.empty()) jm->ResumeRescaleSavepoint(record);
  KF_LOG_INFO("resuming job job={} last_attempt={}", record.job_id, record.last_attempt.value());
  return jm;
}

Status JobMaster::WriteJobRecord() {
  JobRecord r;
  r.job_id = job_id_;
  r.spec = spec_;
  r.state = terminal() ? std::string(JobStateName(state_)) : "RUNNING";
  r.last_attempt = attempt_;
  for (const auto& [token, c] : commands_) r.pending_commands.push_back(c);
  r.last_command = last_command_;
  r.last_command_outcome = last_command_outcome_;
  if (rescale_savepoint_) {
    r.rescale_savepoint = rescale_savepoint_->directory;
    r.rescale_savepoint_id = rescale_savepoint_->metadata.id;
  }
  Status s = storage_.WriteJobRecord(r);
  if (!s.ok()) KF_LOG_WARN("cannot write the job record: {}", s.message());
  return s;
}

void JobMaster::CrashPoint(std::string_view step) {
  if (options_.crash_point) options_.crash_point(step);
}

Status JobMaster::DeployAttempt(int32_t parallelism, std::optional<RestorePoint> restore,
                                int64_t now_ms) {
  // The source's splits, from the restored positions if any: the enumerator decides which
  // subtask reads which. Before anything changes: after a failure here the job is as it was.
  DeploymentSplitAssignment splits(parallelism);
  KF_ASSIGN_OR_RETURN(
      std::unique_ptr<SplitEnumerator> enumerator,
      CreateSplitEnumerator(spec_, restore ? &restore->metadata.split_positions : nullptr,
                            options_.directory_lister));
  KF_RETURN_IF_ERROR(enumerator->Start(splits));
  enumerator_ = std::move(enumerator);
  attempt_ = AttemptNumber(attempt_.value() + 1);
  state_ = JobState::kDeploying;
  deploy_started_ms_ = now_ms;
  final_ = FinalCheckpoint::kNone;
  attempt_cancelled_ = false;
  spec_.parallelism = parallelism;
  for (const Vertex& v : vertices_) {
    const SubtaskMetrics& m = v.finished ? v.final_metrics : v.last_metrics;
    earlier_attempts_.records_in += m.records_in;
    earlier_attempts_.records_processed += m.records_processed;
    earlier_attempts_.records_out += m.records_out;
    earlier_attempts_.bad_records += m.bad_records;
    earlier_attempts_.late_records += m.late_records;
  }
  vertices_.clear();
  std::vector<const WorkerInfo*> by_slot = workers_->BySlot();
  KF_CHECK_GE(by_slot.size(), static_cast<size_t>(parallelism));
  auto ranges = CreateKeyGroupPartitions(spec_.max_parallelism, parallelism);
  std::vector<RestoreAssignment> assignments;
  restored_from_.reset();
  if (restore) {
    assignments = AssignState(restore->metadata, restore->directory, parallelism);
    restored_from_ = RestoredFrom{restore->metadata.id, restore->directory};
  }
  for (int32_t i = 0; i < parallelism; ++i) {
    const WorkerInfo* w = by_slot[static_cast<size_t>(i)];
    Vertex v;
    v.subtask = SubtaskIndex(i);
    v.worker = w->id;
    v.identity = w->identity;
    v.worker_description = w->Describe();
    v.key_groups = ranges[static_cast<size_t>(i)];
    vertices_.push_back(std::move(v));
  }
  // Data-plane CURVE: every worker learns the public keys of its peers (none when insecure).
  std::vector<std::string> peer_keys;
  for (int32_t i = 0; i < parallelism; ++i) {
    peer_keys.push_back(by_slot[static_cast<size_t>(i)]->public_key);
  }
  if (std::all_of(peer_keys.begin(), peer_keys.end(), [](const auto& k) { return k.empty(); })) {
    peer_keys.clear();
  }
  // The record names this attempt (and the rescale savepoint it may restore) before any of its
  // subtasks exists: a coordinator restarted from here on resumes after it.
  (void)WriteJobRecord();
  for (size_t i = 0; i < vertices_.size(); ++i) {
    DeployTask d;
    d.peer_public_keys = peer_keys;
    d.attempt = attempt_;
    d.job_id = job_id_;
    d.spec = spec_;
    d.subtask = vertices_[i].subtask;
    d.key_groups = vertices_[i].key_groups;
    d.cluster_id = options_.cluster_id;
    if (restore) d.restore = assignments[i];
    d.source_splits = splits.splits(d.subtask);
    d.no_more_splits = splits.no_more_splits(d.subtask);
    outbox_->Send(vertices_[i].identity, d);
  }
  // A fresh checkpoint coordinator per attempt; ids keep increasing across attempts: after the
  // highest id in storage and the highest this process triggered (an aborted checkpoint's
  // directory is deleted, but its id is never used again, as in Flink).
  KF_ASSIGN_OR_RETURN(int64_t max_used, storage_.MaxUsedId(job_id_));
  // A rescale savepoint in a --dir outside the job's directory still orders the ids.
  if (rescale_savepoint_) max_used = std::max(max_used, rescale_savepoint_->metadata.id.value());
  int32_t failures = 0;
  std::string last_checkpoint_failure;
  CheckpointCoordinator::Totals checkpoint_totals;
  if (checkpoints_) {
    max_used = std::max(max_used, checkpoints_->next_id() - 1);
    failures = checkpoint_failure_count_reset_ ? 0 : checkpoints_->consecutive_failures();
    last_checkpoint_failure = checkpoints_->last_failure();
    checkpoint_totals = checkpoints_->totals();
  }
  CheckpointConfig config;
  config.interval_ms = spec_.checkpoint_interval_ms;
  config.timeout_ms = spec_.checkpoint_timeout_ms;
  config.min_pause_ms = spec_.checkpoint_min_pause_ms;
  config.max_concurrent = spec_.max_concurrent_checkpoints;
  config.retained = spec_.retained_checkpoints;
  checkpoints_ = std::make_unique<CheckpointCoordinator>(job_id_, spec_, attempt_, config,
                                                         &storage_, wall_clock_, max_used + 1);
  checkpoints_->ContinueFailureCount(failures, std::move(last_checkpoint_failure));
  checkpoint_failure_count_reset_ = false;
  checkpoints_->ContinueTotals(checkpoint_totals);
  auto completed = storage_.ListCompletedCheckpoints(job_id_);
  if (completed.ok()) {
    // The restore point survives retention until a newer checkpoint completes; the corrupt
    // ones newer than it stay on disk but never count as retained or restore again.
    CheckpointCoordinator::RecoverOptions recover;
    for (const auto& [directory, why] : bad_checkpoints_) recover.unrestorable.insert(directory);
    if (restore) recover.restore = restore->directory;
    checkpoints_->RecoverCompleted(*completed, std::move(recover));
  }
  KF_LOG_INFO("job deploying job={} attempt={} parallelism={} max_parallelism={} restore={}",
              job_id_, attempt_.value(), parallelism, spec_.max_parallelism,
              restore ? restore->directory : std::string("none"));
  return Status::Ok();
}

JobMaster::Vertex* JobMaster::VertexOf(SubtaskIndex s, AttemptNumber a, WorkerId w) {
  if (a != attempt_ || terminal() || state_ == JobState::kRestarting) return nullptr;
  if (s.value() < 0 || static_cast<size_t>(s.value()) >= vertices_.size()) return nullptr;
  Vertex& v = vertices_[static_cast<size_t>(s.value())];
  return v.worker == w ? &v : nullptr;
}

void JobMaster::Send(const std::vector<CheckpointCoordinator::Outgoing>& out) {
  for (const auto& o : out) {
    if (o.subtask.value() < 0 || static_cast<size_t>(o.subtask.value()) >= vertices_.size())
      continue;
    const Vertex& v = vertices_[static_cast<size_t>(o.subtask.value())];
    if (workers_->Find(v.worker) != nullptr) outbox_->Send(v.identity, o.message);
  }
}

void JobMaster::SendSplits(SubtaskIndex subtask, std::vector<std::string> splits) {
  const Vertex& v = vertices_[static_cast<size_t>(subtask.value())];
  // A lost worker fails the attempt; the next one discovers these splits again.
  if (workers_->Find(v.worker) == nullptr) return;
  outbox_->Send(v.identity, AddSplits{attempt_, subtask, std::move(splits)});
}

bool JobMaster::AwaitsDeployment(WorkerId w) const {
  if (state_ != JobState::kDeploying) return false;
  return std::any_of(vertices_.begin(), vertices_.end(),
                     [w](const Vertex& v) { return v.worker == w && !v.deployed; });
}

void JobMaster::OnTaskDeployed(const TaskDeployed& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr || state_ != JobState::kDeploying) return;
  if (m.input_endpoints.size() != vertices_.size()) {
    FailAttempt("subtask " + std::to_string(m.subtask.value()) + " reported " +
                    std::to_string(m.input_endpoints.size()) + " input endpoints, expected " +
                    std::to_string(vertices_.size()),
                now_ms);
    return;
  }
  v->deployed = true;
  v->input_endpoints = m.input_endpoints;
  for (const Vertex& x : vertices_) {
    if (!x.deployed) return;
  }
  StartTask start;
  start.attempt = attempt_;
  for (const Vertex& x : vertices_) start.input_endpoints.push_back(x.input_endpoints);
  for (const Vertex& x : vertices_) outbox_->Send(x.identity, start);
  state_ = JobState::kRunning;
  running_since_ms_ = now_ms;
  KF_LOG_INFO("job running job={} attempt={} deploy_ms={} since_failure_ms={}", job_id_,
              attempt_.value(), now_ms - deploy_started_ms_,
              last_failure_ms_ > 0 ? now_ms - last_failure_ms_ : 0);
}

void JobMaster::OnTaskRunning(const TaskRunning& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr || v->running) return;
  v->running = true;
  for (const Vertex& x : vertices_) {
    if (!x.running) return;
  }
  KF_LOG_INFO("job processing again job={} attempt={} since_deploy_ms={} since_failure_ms={}",
              job_id_, attempt_.value(), now_ms - deploy_started_ms_,
              last_failure_ms_ > 0 ? now_ms - last_failure_ms_ : 0);
  if (rescale_ && rescale_->phase == RescalePhase::kDeploying) {
    KF_LOG_INFO("rescale done job={} parallelism={} ms={}", job_id_, spec_.parallelism,
                now_ms - rescale_->started_ms);
    EndRescale(Status::Ok(), now_ms);
  }
}

void JobMaster::OnTaskInputEnded(const TaskInputEnded& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr) return;
  v->input_ended = true;
  for (const Vertex& x : vertices_) {
    if (!x.input_ended) return;
  }
  if (state_ == JobState::kRunning) {
    state_ = JobState::kFinishing;
    if (checkpoints_) checkpoints_->EndPeriodic();
    KF_LOG_INFO("all input consumed job={}: taking the final checkpoint", job_id_);
  }
  OnTick(now_ms);
}

void JobMaster::OnTaskFinished(const TaskFinished& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr) return;
  v->finished = true;
  v->final_metrics = m.metrics;
  KF_LOG_INFO("subtask finished job={} subtask={} records_in={} records_out={}", job_id_,
              m.subtask.value(), m.metrics.records_in, m.metrics.records_out);
  for (const Vertex& x : vertices_) {
    if (!x.finished) return;
  }
  EndJob(JobState::kFinished, "", now_ms);
}

void JobMaster::OnAcknowledge(const AcknowledgeCheckpoint& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr && checkpoints_ && m.attempt < attempt_ && workers_->Find(m.worker) != nullptr) {
    // A late upload of an earlier attempt: the checkpoint coordinator ignores the ack and
    // deletes the shared files it wrote (nothing will reference them).
    checkpoints_->OnAcknowledge(m, now_ms);
    return;
  }
  if (v == nullptr || !checkpoints_) return;
  // Before the ack can complete a rescale savepoint (which folds this attempt's counters).
  if (!v->finished && v->ended_state.empty()) v->TakeNewerMetrics(m.metrics);
  Send(checkpoints_->OnAcknowledge(m, now_ms));
  CheckCheckpointFailures(now_ms);
}

void JobMaster::OnDecline(const DeclineCheckpoint& m, int64_t now_ms) {
  if (m.attempt != attempt_ || !checkpoints_ || terminal()) return;
  // The worker is the authority on which subtask declined: a worker whose subtask is gone
  // declines with -1, and the checkpoint must not wait for that subtask's answer.
  auto v = std::find_if(vertices_.begin(), vertices_.end(),
                        [&](const Vertex& x) { return x.worker == m.worker; });
  if (v == vertices_.end()) {
    KF_LOG_WARN("ignoring a decline from worker {} which runs no subtask of attempt {}",
                m.worker.value(), attempt_.value());
    return;
  }
  if (m.subtask.value() < 0 && v->deployed && !v->finished) {
    // The worker says it runs no subtask of this attempt, yet it acknowledged the deployment:
    // it dropped the subtask (e.g. it heard nothing from this coordinator for a heartbeat
    // timeout). The attempt has lost that subtask; waiting for checkpoints to time out would
    // only end in more declines.
    FailAttempt(v->worker_description + " no longer runs subtask " +
                    std::to_string(v->subtask.value()) + " of attempt " +
                    std::to_string(attempt_.value()) + " (" + m.reason + ")",
                now_ms);
    return;
  }
  DeclineCheckpoint d = m;
  d.subtask = v->subtask;
  KF_LOG_WARN("checkpoint declined checkpoint={} subtask={} reported_subtask={} reason={}",
              m.checkpoint.value(), d.subtask.value(), m.subtask.value(), m.reason);
  Send(checkpoints_->OnDecline(d, now_ms));
  CheckCheckpointFailures(now_ms);
}

void JobMaster::CheckCheckpointFailures(int64_t now_ms) {
  if (!checkpoints_ || terminal() || state_ == JobState::kRestarting) return;
  const int32_t failures = checkpoints_->consecutive_failures();
  if (failures <= spec_.tolerable_checkpoint_failures) return;
  // As in Flink, too many failed checkpoints are a failure of the attempt, which the restart
  // strategy governs: the next attempt restores the latest completed checkpoint and counts its
  // checkpoint failures from zero (the totals and the last failure stay in status).
  std::string why = std::to_string(failures) +
                    " checkpoints failed in a row, more than --tolerable-checkpoint-failures " +
                    std::to_string(spec_.tolerable_checkpoint_failures) +
                    " allows; the last failure: " + checkpoints_->last_failure() +
                    " (fix the cause, e.g. free space in the checkpoint directory; the job "
                    "restarts from its latest completed checkpoint)";
  ++checkpoint_failovers_;
  checkpoint_failure_count_reset_ = true;
  FailAttempt(why, now_ms);
}

void JobMaster::OnHeartbeat(WorkerId worker, AttemptNumber attempt, const SubtaskMetrics& m) {
  if (attempt != attempt_) return;
  for (Vertex& v : vertices_) {
    if (v.worker != worker || v.finished) continue;
    // A cancelled subtask's last report (a worker sends one when it cancels its subtask) still
    // counts, so an attempt that failed between two heartbeats keeps what it did.
    if (v.ended_state.empty()) {
      v.last_metrics = m;
    } else {
      v.TakeNewerMetrics(m);
    }
  }
}

int64_t JobMaster::BeginCommand(JobCommand command) {
  int64_t token = next_command_token_++;
  commands_[token] = std::move(command);
  (void)WriteJobRecord();
  return token;
}

void JobMaster::EndCommand(int64_t token, const std::string& outcome) {
  auto it = commands_.find(token);
  if (it == commands_.end()) return;
  if (!outcome.empty()) {
    last_command_ = it->second;
    last_command_outcome_ = outcome;
  }
  commands_.erase(it);
  (void)WriteJobRecord();
}

void JobMaster::OnTick(int64_t now_ms) {
  switch (state_) {
    case JobState::kDeploying:
      if (now_ms - deploy_started_ms_ > options_.deploy_timeout_ms) {
        std::string missing;
        for (const Vertex& v : vertices_) {
          if (!v.deployed) missing += (missing.empty() ? "" : ", ") + v.worker_description;
        }
        FailAttempt("deployment timed out after " + std::to_string(options_.deploy_timeout_ms) +
                        " ms waiting for " + missing,
                    now_ms);
      }
      return;
    case JobState::kRunning:
      // New splits first: a checkpoint triggered on this tick covers them.
      if (enumerator_) {
        LiveSplitAssignment live(static_cast<int32_t>(vertices_.size()),
                                 [this](SubtaskIndex subtask, std::vector<std::string> splits) {
                                   SendSplits(subtask, std::move(splits));
                                 });
        enumerator_->OnTick(live, now_ms);
      }
      if (checkpoints_) Send(checkpoints_->OnTick(now_ms));
      CheckCheckpointFailures(now_ms);
      return;
    case JobState::kFinishing:
      if (!checkpoints_) return;
      Send(checkpoints_->OnTick(now_ms));  // expiry only: periodic triggering has ended
      CheckCheckpointFailures(now_ms);
      MaybeTriggerFinal(now_ms);
      return;
    case JobState::kRestarting:
      TryRestart(now_ms);
      return;
    case JobState::kRescaling:
      if (checkpoints_) Send(checkpoints_->OnTick(now_ms));  // expiry only: periodic is off
      CheckCheckpointFailures(now_ms);
      if (state_ != JobState::kRescaling) return;
      StepRescale(now_ms);
      return;
    default:
      return;
  }
}

void JobMaster::MaybeTriggerFinal(int64_t now_ms) {
  if (state_ != JobState::kFinishing || final_ != FinalCheckpoint::kNone) return;
  const AttemptNumber attempt = attempt_;
  auto out = checkpoints_->Trigger(now_ms, CheckpointType::kFinal, "",
                                   [this, attempt](Result<CheckpointLocation> done, int64_t) {
                                     if (attempt != attempt_ || final_ != FinalCheckpoint::kPending)
                                       return;
                                     // Failed: the next tick triggers it again.
                                     final_ = done.ok() ? FinalCheckpoint::kCompleted
                                                        : FinalCheckpoint::kNone;
                                   });
  if (!out.ok()) {
    KF_LOG_WARN("final checkpoint not triggered job={} reason={}; trying again", job_id_,
                out.status().message());
    return;
  }
  final_ = FinalCheckpoint::kPending;
  Send(*out);
}

Status JobMaster::RequestCheckpoint(bool savepoint, const std::string& directory,
                                    RequestCallback done, int64_t now_ms) {
  KF_RETURN_IF_ERROR(CheckAllowedPath("--dir", directory, options_.allowed_paths));
  if ((state_ != JobState::kRunning && state_ != JobState::kFinishing) || !checkpoints_) {
    return FailedPrecondition("job " + job_id_ + " is " + std::string(JobStateName(state_)) +
                              ": checkpoints are taken only while it runs");
  }
  if (final_ == FinalCheckpoint::kCompleted) {
    return FailedPrecondition("job " + job_id_ +
                              " has completed its final checkpoint and is ending: there is "
                              "nothing left to checkpoint");
  }
  KF_ASSIGN_OR_RETURN(
      auto out, checkpoints_->Trigger(
                    now_ms, savepoint ? CheckpointType::kSavepoint : CheckpointType::kCheckpoint,
                    directory, std::move(done)));
  Send(out);
  return Status::Ok();
}

void JobMaster::Cancel(const std::string& reason, int64_t now_ms) {
  if (terminal()) return;
  CancelAll(reason);
  if (checkpoints_) checkpoints_->AbortAll("the job was canceled", now_ms);
  EndJob(JobState::kCanceled, reason, now_ms);
}

void JobMaster::EndJob(JobState state, const std::string& reason, int64_t now_ms) {
  if (rescale_) EndRescale(Aborted("the job ended: " + reason), now_ms);
  if (state != JobState::kFinished) CancelAll(reason);
  state_ = state;
  failure_reason_ = reason;
  ended_ms_ = now_ms;
  (void)WriteJobRecord();
  if (state == JobState::kFinished) {
    KF_LOG_INFO("job finished job={} attempts={} duration_ms={}", job_id_, attempt_.value(),
                now_ms - submitted_ms_);
  } else {
    KF_LOG_ERROR("job ended job={} state={} reason={}", job_id_, JobStateName(state), reason);
  }
}

void JobMaster::CancelAll(const std::string& reason) {
  if (attempt_cancelled_) return;
  attempt_cancelled_ = true;
  for (Vertex& v : vertices_) {
    if (!v.finished) v.ended_state = "CANCELED";
  }
  CancelTask c;
  c.attempt = attempt_;
  c.reason = reason;
  for (const Vertex& v : vertices_) {
    if (workers_->Find(v.worker) != nullptr) outbox_->Send(v.identity, c);
  }
}

bool JobMaster::Uses(WorkerId worker) const {
  for (const Vertex& v : vertices_) {
    if (v.worker == worker) return true;
  }
  return false;
}

}  // namespace keyflow
