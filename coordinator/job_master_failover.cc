// JobMaster's failover: a failed subtask, a lost worker and the note of how its process ended, a
// worker registering again, failing the attempt and restarting the job per its restart strategy
// (with the workers that remain when replacements do not come). The class is declared in
// job_master.h; this file holds its failover part.
#include "coordinator/job_master.h"

#include <algorithm>

#include "common/key_group_assignment.h"
#include "common/logging/logging.h"
#include "common/output_directory.h"
#include "coordinator/path_rules.h"
#include "coordinator/source/split_enumerator.h"

namespace keyflow {

void JobMaster::OnTaskFailed(const TaskFailed& m, int64_t now_ms) {
  Vertex* v = VertexOf(m.subtask, m.attempt, m.worker);
  if (v == nullptr) return;
  // Its counters up to the failure (a heartbeat may be up to an interval older).
  v->TakeNewerMetrics(m.metrics);
  // The worker names the checkpoint by id; the job master knows which directory (of this job or,
  // with --from-savepoint, of another one) the attempt restored.
  if (m.corrupted_checkpoint.value() != 0 && restored_from_ &&
      restored_from_->id == m.corrupted_checkpoint) {
    bad_checkpoints_[restored_from_->directory] = m.reason;
    KF_LOG_WARN(
        "checkpoint {} is corrupted ({}); the next attempt uses the previous completed "
        "checkpoint",
        m.corrupted_checkpoint.value(), m.reason);
  }
  std::string reason = "subtask " + std::to_string(m.subtask.value()) + " on " +
                       v->worker_description + " failed: " + m.reason;
  if (m.non_recoverable) {
    reason +=
        ": the job cannot continue (no restart can help); once the cause is fixed (e.g. the "
        "input is back), run it again with --from-savepoint <its latest checkpoint>";
  }
  FailAttempt(reason, now_ms, /*recoverable=*/!m.non_recoverable);
}

void JobMaster::OnWorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms) {
  if (terminal() || state_ == JobState::kRestarting || !Uses(w.id)) return;
  for (const Vertex& v : vertices_) {
    if (v.worker == w.id && v.finished) return;  // its work is done and committed
  }
  FailAttempt(w.Describe() + " was lost: " + why, now_ms);
}

void JobMaster::OnWorkerExitReported(const std::string& hostname, int64_t pid,
                                     const std::string& how) {
  const std::string who = "host " + hostname + ", pid " + std::to_string(pid) + ")";
  // Also present when the report itself declared the worker lost ("was lost: its process
  // ended: ..."), or an earlier report of the same exit appended it ("; its process ended: ...").
  const std::string ended = "its process ended: " + how;
  for (std::string* reason : {&last_failure_, &failure_reason_}) {
    if (reason->find(who) != std::string::npos && reason->find(ended) == std::string::npos) {
      *reason += "; " + ended;
    }
  }
}

void JobMaster::OnWorkerRegisteredAgain(const WorkerInfo& w, int64_t now_ms) {
  if (terminal() || state_ == JobState::kRestarting) return;
  for (const Vertex& v : vertices_) {
    if (v.worker != w.id || v.finished) continue;
    // A worker registers again only after it gave up on this coordinator (no message for its
    // heartbeat timeout, e.g. the coordinator stalled) and cancelled what it ran.
    FailAttempt(w.Describe() + " registered again: it heard nothing from the coordinator for " +
                    "longer than the heartbeat timeout and cancelled subtask " +
                    std::to_string(v.subtask.value()) + " of attempt " +
                    std::to_string(attempt_.value()),
                now_ms);
    return;
  }
}

void JobMaster::OnWorkerRegistered(int64_t now_ms) {
  if (state_ == JobState::kRestarting) TryRestart(now_ms);
  if (state_ == JobState::kRescaling) StepRescale(now_ms);
}

void JobMaster::FailAttempt(const std::string& reason, int64_t now_ms, bool recoverable) {
  if (terminal() || state_ == JobState::kRestarting) return;
  if (rescale_) EndRescale(Aborted("the rescale was interrupted: " + reason), now_ms);
  last_failure_ = reason;
  last_failure_ms_ = now_ms;
  CancelAll("attempt " + std::to_string(attempt_.value()) + " failed: " + reason);
  if (checkpoints_) checkpoints_->AbortAll("the attempt failed: " + reason, now_ms);
  int64_t delay = 0;
  if (!recoverable) {
    EndJob(JobState::kFailed, reason, now_ms);
    return;
  }
  if (!restart_.OnFailure(now_ms, running_since_ms_, &delay)) {
    std::string why = restart_.kind() == RestartStrategy::Kind::kNone
                          ? reason + " (restart strategy: none)"
                          : reason + " (restart attempts exhausted after " +
                                std::to_string(restart_.restarts()) + " restarts)";
    EndJob(JobState::kFailed, why, now_ms);
    return;
  }
  state_ = JobState::kRestarting;
  restart_at_ms_ = now_ms + delay;
  replacement_deadline_ms_ = now_ms + spec_.replacement_timeout_ms;
  running_since_ms_ = 0;
  KF_LOG_WARN("job attempt failed job={} attempt={} restart_in_ms={} reason={}", job_id_,
              attempt_.value(), delay, reason);
}

void JobMaster::TryRestart(int64_t now_ms) {
  if (now_ms < restart_at_ms_) return;
  int32_t wanted = spec_.parallelism;
  int32_t available = static_cast<int32_t>(workers_->size());
  int32_t p = wanted;
  if (available < wanted) {
    if (now_ms < replacement_deadline_ms_ || available == 0) {
      waiting_for_ = "waiting for " + std::to_string(wanted - available) +
                     " replacement worker(s) (" + std::to_string(available) + " of " +
                     std::to_string(wanted) + " registered)";
      return;
    }
    p = available;  // reactive scale-down: go on with the workers that remain
    KF_LOG_WARN(
        "no replacement worker within {} ms: restarting job {} on {} worker(s) instead of {}",
        spec_.replacement_timeout_ms, job_id_, p, wanted);
  }
  waiting_for_.clear();
  auto restore = ChooseRestorePoint();
  if (!restore.ok()) {
    // FailedPrecondition: a fallback would replay committed output, or the savepoint to restore
    // is corrupted (the message says what to do).
    EndJob(JobState::kFailed,
           restore.status().code() == StatusCode::kFailedPrecondition
               ? restore.status().message()
               : "cannot find a checkpoint to restore: " + restore.status().message(),
           now_ms);
    return;
  }
  if (*restore) {
    Status valid = ValidateRestore((*restore)->metadata, p, spec_.max_parallelism);
    if (!valid.ok()) {
      EndJob(JobState::kFailed, valid.message(), now_ms);
      return;
    }
  }
  Status s = DeployAttempt(p, *restore, now_ms);
  if (s.ok()) return;
  int64_t delay = 0;
  if (state_ == JobState::kRestarting && s.code() == StatusCode::kIoError &&
      restart_.OnFailure(now_ms, running_since_ms_, &delay)) {
    // The enumerator could not read the input (a transient I/O error): try again as the restart
    // strategy allows.
    last_failure_ = s.message();
    last_failure_ms_ = now_ms;
    restart_at_ms_ = now_ms + delay;
    KF_LOG_WARN("job {} cannot deploy: {} (retrying in {} ms)", job_id_, s.message(), delay);
    return;
  }
  EndJob(JobState::kFailed, s.message(), now_ms);
}

}  // namespace keyflow
