// JobMaster: rescaling a running job (a checkpoint or savepoint, then a new attempt at the new
// parallelism), resuming an interrupted rescale, stop with a savepoint, and the rescale plan.
#include "coordinator/job_master.h"

#include "common/logging/logging.h"
#include "coordinator/path_rules.h"

namespace keyflow {

void JobMaster::ResumeRescaleSavepoint(const JobRecord& record) {
  auto m = CheckpointStorage::ReadMetadata(record.rescale_savepoint);
  if (m.ok()) {
    rescale_savepoint_ = RestorePoint{std::move(m).value(), record.rescale_savepoint};
    return;
  }
  // Kept with the recorded id, marked unrestorable: ChooseRestorePoint then restores a newer
  // checkpoint if there is one, and otherwise fails the job with what to do (restoring an older
  // checkpoint would emit again what the rescale's attempt committed).
  KF_LOG_WARN("the rescale savepoint {} of job {} cannot be read: {}", record.rescale_savepoint,
              record.job_id, m.status().message());
  RestorePoint lost;
  lost.metadata.id = record.rescale_savepoint_id;
  lost.metadata.savepoint = true;
  lost.directory = record.rescale_savepoint;
  rescale_savepoint_ = std::move(lost);
  bad_checkpoints_[record.rescale_savepoint] = m.status().message();
}

Status JobMaster::Rescale(int32_t new_parallelism, int64_t wait_for_workers_ms,
                          RescaleCallback done, int64_t now_ms, RescaleVia via) {
  if (state_ != JobState::kRunning || !checkpoints_) {
    return FailedPrecondition("job " + job_id_ + " is " + std::string(JobStateName(state_)) +
                              ": it can be rescaled only while RUNNING");
  }
  if (new_parallelism < 1 || new_parallelism > spec_.max_parallelism) {
    return InvalidArgument(
        "cannot rescale job " + job_id_ + " to " + std::to_string(new_parallelism) +
        ": it must be between 1 and the job's max parallelism " +
        std::to_string(spec_.max_parallelism) +
        " (its number of key groups, fixed for the lifetime of the job and its checkpoints); "
        "the job keeps running at parallelism " +
        std::to_string(spec_.parallelism));
  }
  if (new_parallelism == spec_.parallelism) {
    done(Status::Ok());
    return Status::Ok();
  }
  RescaleOp op;
  op.target = new_parallelism;
  op.via = via != RescaleVia::kAuto           ? via
           : spec_.state_backend == "rocksdb" ? RescaleVia::kCheckpoint
                                              : RescaleVia::kSavepoint;
  op.phase = RescalePhase::kWaitingForWorkers;
  op.started_ms = now_ms;
  op.workers_deadline_ms = now_ms + wait_for_workers_ms;
  op.done = std::move(done);
  rescale_ = std::move(op);
  state_ = JobState::kRescaling;
  KF_LOG_INFO("rescale requested job={} from={} to={}", job_id_, spec_.parallelism,
              new_parallelism);
  StepRescale(now_ms);
  return Status::Ok();
}

void JobMaster::StepRescale(int64_t now_ms) {
  if (!rescale_ || rescale_->phase != RescalePhase::kWaitingForWorkers) return;
  int32_t available = static_cast<int32_t>(workers_->size());
  if (available < rescale_->target) {
    if (now_ms > rescale_->workers_deadline_ms) {
      EndRescale(
          FailedPrecondition(
              "rescaling to " + std::to_string(rescale_->target) + " needs " +
              std::to_string(rescale_->target) + " workers but only " + std::to_string(available) +
              " registered in time: start more workers (scripts/rescale.sh does); the job keeps "
              "running at parallelism " +
              std::to_string(spec_.parallelism)),
          now_ms);
    }
    return;
  }
  const bool via_savepoint = rescale_->via == RescaleVia::kSavepoint;
  const std::string what = RescaleSnapshotName();
  rescale_->phase = via_savepoint ? RescalePhase::kSavepoint : RescalePhase::kCheckpoint;
  Send(checkpoints_->StopPeriodic(rescale_->target == 0 ? "the job stops with a savepoint"
                                  : via_savepoint       ? "a rescale takes a savepoint"
                                                        : "a rescale takes a checkpoint",
                                  now_ms));
  auto on_done = [this](Result<CheckpointLocation> snapshot, int64_t done_ms) {
    OnRescaleSnapshot(std::move(snapshot), done_ms);
  };
  auto out = via_savepoint
                 ? checkpoints_->Trigger(now_ms, CheckpointType::kSavepoint,
                                         rescale_->savepoint_dir, std::move(on_done))
                 : checkpoints_->Trigger(
                       now_ms, CheckpointType::kCheckpoint, "", std::move(on_done),
                       CheckpointTriggerOptions{.forced = true, .notify_complete = false});
  if (!out.ok()) {
    EndRescale(out.status().WithContext("cannot take " + what), now_ms);
    return;
  }
  Send(*out);
}

std::string JobMaster::RescaleSnapshotName() const {
  if (rescale_->target == 0) return "the stop savepoint";
  return rescale_->via == RescaleVia::kSavepoint ? "the rescale savepoint"
                                                 : "the rescale checkpoint";
}

void JobMaster::OnRescaleSnapshot(Result<CheckpointLocation> snapshot, int64_t now_ms) {
  if (!rescale_ || (rescale_->phase != RescalePhase::kSavepoint &&
                    rescale_->phase != RescalePhase::kCheckpoint)) {
    return;
  }
  const bool via_savepoint = rescale_->via == RescaleVia::kSavepoint;
  if (!snapshot.ok()) {
    EndRescale(snapshot.status().WithContext(RescaleSnapshotName() + " failed"), now_ms);
    return;
  }
  if (rescale_->target == 0) {  // stop with savepoint
    RequestCallback done = std::move(rescale_->stop_done);
    rescale_.reset();
    KF_LOG_INFO("job stopped with savepoint job={} savepoint={}", job_id_, snapshot->directory);
    Cancel("stopped with savepoint " + std::to_string(snapshot->id.value()) + " (" +
               snapshot->directory + ")",
           now_ms);
    if (done) done(std::move(snapshot), now_ms);
    return;
  }
  auto m = CheckpointStorage::ReadMetadata(snapshot->directory);
  Status valid = m.ok() ? ValidateRestore(*m, rescale_->target, spec_.max_parallelism) : m.status();
  if (!valid.ok()) {
    EndRescale(valid.WithContext(RescaleSnapshotName() + " cannot be restored"), now_ms);
    return;
  }
  CrashPoint("rescale-snapshot-completed");
  RestorePoint from{std::move(m).value(), snapshot->directory};
  if (via_savepoint) {
    // Durably, before the new attempt exists: it commits the savepoint's output when it
    // restores, so from then on no restart may restore an older checkpoint. (A rescale
    // checkpoint is one of the job's completed checkpoints: already the newest on disk.)
    std::optional<RestorePoint> previous = std::move(rescale_savepoint_);
    rescale_savepoint_ = from;
    if (Status recorded = WriteJobRecord(); !recorded.ok()) {
      rescale_savepoint_ = std::move(previous);
      EndRescale(recorded.WithContext("cannot record " + RescaleSnapshotName() +
                                      " in the job record, so a coordinator restart could not "
                                      "find it"),
                 now_ms);
      return;
    }
    CrashPoint("rescale-savepoint-recorded");
  }
  rescale_->phase = RescalePhase::kDeploying;
  int32_t target = rescale_->target;
  KF_LOG_INFO("rescale {} taken job={} id={} ms={}: redeploying at parallelism {}",
              via_savepoint ? "savepoint" : "checkpoint", job_id_, snapshot->id.value(),
              now_ms - rescale_->started_ms, target);
  CancelAll("rescaling to parallelism " + std::to_string(target));
  checkpoints_->AbortAll("rescaling", now_ms);
  Status s = DeployAttempt(target, std::move(from), now_ms);
  if (!s.ok()) {
    EndRescale(s, now_ms);
    EndJob(JobState::kFailed, "rescale deployment failed: " + s.message(), now_ms);
    return;
  }
  CrashPoint("rescale-deployed");
}

void JobMaster::EndRescale(const Status& result, int64_t now_ms) {
  if (!rescale_) return;
  RescaleOp op = std::move(*rescale_);
  rescale_.reset();
  if (op.target == 0 && !result.ok() && op.stop_done) op.stop_done(result, now_ms);
  if (!result.ok() && state_ == JobState::kRescaling) {
    // The old attempt never stopped: it goes on as before.
    state_ = JobState::kRunning;
    if (checkpoints_) checkpoints_->ResumePeriodic();
    KF_LOG_WARN("rescale failed job={}: {}", job_id_, result.message());
  }
  if (op.done) op.done(result);
}

Status JobMaster::StopWithSavepoint(const std::string& directory, RequestCallback done,
                                    int64_t now_ms) {
  KF_RETURN_IF_ERROR(CheckAllowedPath("--dir", directory, options_.allowed_paths));
  if (state_ != JobState::kRunning || !checkpoints_) {
    return FailedPrecondition("job " + job_id_ + " is " + std::string(JobStateName(state_)) +
                              ": it can be stopped with a savepoint only while RUNNING");
  }
  RescaleOp op;
  op.target = 0;
  op.phase = RescalePhase::kWaitingForWorkers;  // trivially satisfied: straight to the savepoint
  op.started_ms = now_ms;
  op.workers_deadline_ms = now_ms;
  op.savepoint_dir = directory;
  op.stop_done = std::move(done);
  rescale_ = std::move(op);
  state_ = JobState::kRescaling;
  StepRescale(now_ms);
  return Status::Ok();
}

Result<nlohmann::json> JobMaster::PlanRescaleJson(int32_t new_parallelism) const {
  if (new_parallelism < 1 || new_parallelism > spec_.max_parallelism) {
    return InvalidArgument("cannot plan a rescale of job " + job_id_ + " to " +
                           std::to_string(new_parallelism) +
                           ": it must be between 1 and the job's max parallelism " +
                           std::to_string(spec_.max_parallelism) +
                           " (its number of key groups, fixed for the lifetime of the job)");
  }
  std::optional<RestorePoint> from;
  auto completed = storage_.ListCompletedCheckpoints(job_id_);
  if (completed.ok() && !completed->empty()) {
    auto m = CheckpointStorage::ReadMetadata(completed->back().directory);
    if (m.ok()) from = RestorePoint{std::move(m).value(), completed->back().directory};
  }
  if (rescale_savepoint_ && (!from || rescale_savepoint_->metadata.id > from->metadata.id)) {
    from = rescale_savepoint_;
  }
  if (!from && initial_restore_) from = initial_restore_;
  if (!from) {
    return FailedPrecondition("job " + job_id_ +
                              " has no completed checkpoint to plan from yet: take one with "
                              "`keyflow checkpoint` (or run with --checkpoint-interval)");
  }
  RescalePlan plan = PlanRescale(from->metadata, new_parallelism);
  nlohmann::json j;
  j["job_id"] = job_id_;
  j["planned_from"] = from->directory;
  j["checkpoint"] = from->metadata.id.value();
  j["old_parallelism"] = plan.old_parallelism;
  j["new_parallelism"] = plan.new_parallelism;
  j["max_parallelism"] = plan.max_parallelism;
  j["key_groups_moved"] = plan.key_groups_moved;
  nlohmann::json moves = nlohmann::json::array();
  for (const KeyGroupMove& mv : plan.moves) {
    moves.push_back({{"old_subtask", mv.old_subtask},
                     {"new_subtask", mv.new_subtask},
                     {"first_key_group", mv.first_key_group},
                     {"last_key_group", mv.last_key_group},
                     {"bytes", mv.bytes}});
  }
  j["moves"] = std::move(moves);
  j["bytes_per_new_subtask"] = plan.bytes_per_new_subtask;
  uint64_t total = 0;
  for (uint64_t b : plan.bytes_per_new_subtask) total += b;
  j["total_bytes"] = total;
  return j;
}

}  // namespace keyflow
