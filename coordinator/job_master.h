// JobMaster: one submitted job on the coordinator — deployment attempts, liveness of their
// subtasks, checkpoints, failure recovery, completion (Flink's JobMaster + ExecutionGraph +
// scheduler, for a single keyed pipeline).
//
// An attempt: DeployTask to P workers (with the state each subtask restores) -> all
// TaskDeployed -> StartTask -> RUNNING: periodic checkpoints (CheckpointCoordinator) -> with
// checkpointing, every subtask reports TaskInputEnded -> FINISHING: periodic triggering stops
// (pending periodic checkpoints may still complete), the JobMaster triggers a checkpoint of type
// kFinal — the only one whose completion makes a subtask commit its last results and finish —
// and triggers it again until one completes -> all TaskFinished -> FINISHED.
// More than spec.tolerable_checkpoint_failures consecutive checkpoint failures fail the attempt
// (the restart strategy decides, as for any failure; the next attempt counts from zero).
// A decline that names no subtask (-1: the worker runs none of this attempt) from a worker whose
// subtask acknowledged its deployment means the attempt lost that subtask: it fails over at once.
// So does a registration from a worker that holds an unfinished subtask of the attempt.
// A lost worker, a failed subtask or a deployment timeout fails the attempt: every subtask is
// cancelled, pending checkpoints are aborted, and the restart strategy decides: RESTARTING
// (after the backoff, a new attempt restores the latest completed checkpoint — a corrupted one
// is skipped in favour of the previous one unless that would re-emit committed output, then the
// job FAILS, checkpoint/README.md "When a checkpoint is corrupt"; if a lost worker is not
// replaced within the replacement timeout, the job restarts on the workers that remain) or
// FAILED.
// Messages of older attempts are ignored.
//
// Threading: coordinator thread only. Time is passed in (monotonic ms).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/state_assignment.h"
#include "common/clock.h"
#include "common/key_group_range.h"
#include "common/protocol/control_messages.h"
#include "coordinator/control_outbox.h"
#include "coordinator/restart_strategy.h"
#include "coordinator/source/split_enumerator.h"
#include "coordinator/worker_registry.h"

namespace keyflow {

// Phases of a rescale or stop-with-savepoint.
enum class RescalePhase { kWaitingForWorkers, kCheckpoint, kSavepoint, kDeploying };
// "waiting for workers", "checkpoint", "savepoint", "deploying" (status JSON).
std::string_view RescalePhaseName(RescalePhase p);

enum class JobState {
  kDeploying,
  kRunning,
  kRescaling,  // stop-with-savepoint in progress, then a new attempt at the new parallelism
  kFinishing,
  kRestarting,
  kFinished,
  kFailed,
  kCanceled
};
std::string_view JobStateName(JobState s);

struct JobMasterOptions {
  int64_t deploy_timeout_ms = 30'000;  // all TaskDeployed must arrive within this
  std::string checkpoint_root = "./.keyflow/checkpoints";
  // Sent in every DeployTask (DeployTask::cluster_id): the coordinator's incarnation.
  std::string cluster_id;
  // --allowed-path roots, canonical (coordinator/path_rules.h); empty = any absolute path.
  std::vector<std::string> allowed_paths;
  // Fault injection for crash tests: called at the named steps of a rescale
  // ("rescale-snapshot-completed", "rescale-savepoint-recorded", "rescale-deployed"); a test
  // makes it end the process (or throw) to cut the sequence there. Unset in production.
  std::function<void(std::string_view step)> crash_point;
  // How a source's split enumerator lists a directory while the job runs (tests: at once).
  DirectoryLister directory_lister = AsyncDirectoryLister();
};

class JobMaster {
 public:
  using RequestCallback = CheckpointCoordinator::RequestCallback;

  // A new submission: resolves P (0 -> all registered workers) and M (0 -> Flink's default, or
  // the savepoint's), validates job, parameters, restore point and workers; deploys attempt 1.
  static Result<std::unique_ptr<JobMaster>> Create(std::string job_id, JobSpec spec,
                                                   WorkerRegistry* workers, ControlOutbox* outbox,
                                                   const Clock* wall_clock,
                                                   JobMasterOptions options, int64_t now_ms);
  // A job that was running when the coordinator went down: resumes from its latest completed
  // checkpoint once enough workers have registered.
  static Result<std::unique_ptr<JobMaster>> Resume(const JobRecord& record, WorkerRegistry* workers,
                                                   ControlOutbox* outbox, const Clock* wall_clock,
                                                   JobMasterOptions options, int64_t now_ms);

  void OnTaskDeployed(const TaskDeployed& m, int64_t now_ms);
  void OnTaskRunning(const TaskRunning& m, int64_t now_ms);
  void OnTaskInputEnded(const TaskInputEnded& m, int64_t now_ms);
  void OnTaskFinished(const TaskFinished& m, int64_t now_ms);
  void OnTaskFailed(const TaskFailed& m, int64_t now_ms);
  void OnAcknowledge(const AcknowledgeCheckpoint& m, int64_t now_ms);
  void OnDecline(const DeclineCheckpoint& m, int64_t now_ms);
  void OnWorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms);
  void OnWorkerRegistered(int64_t now_ms);
  // Worker `w`, already registered, registered again from the same connection: if it held a
  // subtask of the current attempt that had not finished, it has dropped it, and the attempt
  // fails over at once (restart strategy).
  void OnWorkerRegisteredAgain(const WorkerInfo& w, int64_t now_ms);
  // A heartbeat's metrics: kept per subtask so that status shows the last known counters after
  // the worker is gone or the attempt ended.
  void OnHeartbeat(WorkerId worker, AttemptNumber attempt, const SubtaskMetrics& m);
  // A supervisor reported how a worker process (host, pid) ended: appended to the failure reason
  // of the attempt (or job) that lost that worker, if it did — once: a reason that already says
  // "its process ended: <how>" (the report declared the loss, or came twice) is left as it is.
  void OnWorkerExitReported(const std::string& hostname, int64_t pid, const std::string& how);

  // CLI commands in progress (rescale, stop, savepoint, checkpoint) are kept in the job record so
  // that a coordinator restarted while one ran reports it (Coordinator::ResumeJobs). Begin returns
  // a token; End with an empty outcome forgets a command that was refused at once.
  int64_t BeginCommand(JobCommand command);
  void EndCommand(int64_t token, const std::string& outcome);
  void OnTick(int64_t now_ms);
  void Cancel(const std::string& reason, int64_t now_ms);
  // `keyflow checkpoint` / `keyflow savepoint`: FailedPrecondition unless RUNNING or FINISHING.
  Status RequestCheckpoint(bool savepoint, const std::string& directory, RequestCallback done,
                           int64_t now_ms);

  // `keyflow rescale P'`: waits up to `wait_for_workers_ms` until P' workers are
  // registered, stops periodic checkpoints, takes a checkpoint or a savepoint (`via`; kAuto: a
  // checkpoint with --state-backend rocksdb, whose native incremental checkpoint restores
  // several times faster than its canonical savepoint, a savepoint with heap, whose checkpoint
  // is no faster), cancels the attempt and deploys P' subtasks that restore only their key
  // groups from it. The checkpoint is the job's own kind (Flink's adaptive scheduler rescales
  // from a checkpoint too), forced past max concurrent checkpoints, and nothing of it is
  // committed by the old attempt (as with a savepoint): the new one commits it. `done` gets OK once
  // the job runs at P', or the reason it did not (the job then goes on at the old parallelism,
  // unless the new attempt itself failed — then the restart strategy applies). Refused at once (job
  // untouched): not RUNNING, P' < 1 or P' > max parallelism, another rescale in progress.
  using RescaleCallback = std::function<void(Status)>;
  using RescaleVia = RescaleRequest::Via;
  Status Rescale(int32_t new_parallelism, int64_t wait_for_workers_ms, RescaleCallback done,
                 int64_t now_ms, RescaleVia via = RescaleVia::kAuto);
  // `keyflow stop` (Flink's stop-with-savepoint, no drain): stops periodic checkpoints, takes a
  // savepoint, then cancels the job — nothing is committed after the savepoint, so a job run
  // later with --from-savepoint continues exactly where this one stopped. `done` gets the
  // savepoint or the failure (then the job goes on running).
  Status StopWithSavepoint(const std::string& directory, RequestCallback done, int64_t now_ms);
  // `keyflow rescale P' --plan`: the key-group moves and bytes per new subtask, planned from
  // the latest completed checkpoint (or the rescale/initial savepoint). Changes nothing.
  Result<nlohmann::json> PlanRescaleJson(int32_t new_parallelism) const;

  JobState state() const { return state_; }
  bool terminal() const {
    return state_ == JobState::kFinished || state_ == JobState::kFailed ||
           state_ == JobState::kCanceled;
  }
  const std::string& job_id() const { return job_id_; }
  const JobSpec& spec() const { return spec_; }
  const std::string& failure_reason() const { return failure_reason_; }
  AttemptNumber attempt() const { return attempt_; }
  // True while the current attempt deploys and worker `w` has not answered its DeployTask.
  bool AwaitsDeployment(WorkerId w) const;
  bool Uses(WorkerId worker) const;

  nlohmann::json StatusJson(int64_t now_ms) const;
  // Completed checkpoints and savepoints on disk plus this job's recent checkpoint history.
  nlohmann::json CheckpointsJson() const;
  // The checkpoint history in memory (newest first, at most CheckpointCoordinator::kHistorySize)
  // with each subtask's acknowledgement (bytes, sync/async/alignment) for the 10 newest: no
  // file is read, so the REST API's status snapshot carries it.
  nlohmann::json CheckpointHistoryJson() const;

 private:
  struct Vertex {
    SubtaskIndex subtask;
    WorkerId worker;
    std::string identity;
    std::string worker_description;
    KeyGroupRange key_groups;
    bool deployed = false;
    bool running = false;  // restored and processing (TaskRunning)
    bool input_ended = false;
    bool finished = false;
    std::vector<std::string> input_endpoints;
    SubtaskMetrics final_metrics;
    SubtaskMetrics last_metrics;  // from the latest heartbeat of this attempt
    // Takes `m` as the latest counters unless it is older than what it has (counters never go
    // backwards: a late report after a newer one).
    void TakeNewerMetrics(const SubtaskMetrics& m) {
      if (m.records_in >= last_metrics.records_in &&
          m.records_processed >= last_metrics.records_processed) {
        last_metrics = m;
      }
    }
    std::string ended_state;  // CANCELED once the attempt was cancelled (FINISHED: finished)
  };
  // What an attempt restores from.
  struct RestorePoint {
    CheckpointMetadata metadata;
    std::string directory;
  };

  JobMaster(std::string job_id, JobSpec spec, WorkerRegistry* workers, ControlOutbox* outbox,
            const Clock* wall_clock, JobMasterOptions options);

  // Deploys the next attempt on `parallelism` workers, restoring `restore` if set.
  Status DeployAttempt(int32_t parallelism, std::optional<RestorePoint> restore, int64_t now_ms);
  // A completed checkpoint found unrestorable, and what its notification may have committed.
  struct UnrestorableCheckpoint {
    CheckpointId id;
    std::string directory;
    std::string reason;
    std::vector<std::string> sink_committables;
  };
  // The restore point for a restart: the newest completed checkpoint whose metadata and files
  // verify (skipping `bad_checkpoints_`), else the initial savepoint, else none.
  // FailedPrecondition (job FAILED, checkpoint/README.md "When a checkpoint is corrupt") when
  // skipping would re-emit committed output: a newer unrestorable checkpoint holds sink
  // committables the chosen point does not.
  Result<std::optional<RestorePoint>> ChooseRestorePoint();
  Status CheckFallbackKeepsCommittedOutput(const std::vector<UnrestorableCheckpoint>& skipped,
                                           const std::optional<RestorePoint>& chosen) const;
  void StepRescale(int64_t now_ms);
  // "the stop savepoint", "the rescale savepoint" or "the rescale checkpoint" (rescale_ set).
  std::string RescaleSnapshotName() const;
  // The rescale's (or stop's) checkpoint or savepoint completed or failed.
  void OnRescaleSnapshot(Result<CheckpointLocation> snapshot, int64_t now_ms);
  // FINISHING: triggers the final checkpoint unless one is pending or completed.
  void MaybeTriggerFinal(int64_t now_ms);
  // Fails the job if the consecutive checkpoint failures exceed the tolerable number.
  void CheckCheckpointFailures(int64_t now_ms);
  void EndRescale(const Status& result, int64_t now_ms);
  void TryRestart(int64_t now_ms);
  // `recoverable` false (a non-recoverable TaskFailed): FAILED at once, no restart.
  void FailAttempt(const std::string& reason, int64_t now_ms, bool recoverable = true);
  void EndJob(JobState state, const std::string& reason, int64_t now_ms);
  void CancelAll(const std::string& reason);
  void Send(const std::vector<CheckpointCoordinator::Outgoing>& out);
  // Splits the enumerator assigned while the attempt runs, to the reader of `subtask`.
  void SendSplits(SubtaskIndex subtask, std::vector<std::string> splits);
  // Writes the job record (atomically); a failure is logged and returned.
  Status WriteJobRecord();
  void CrashPoint(std::string_view step);
  // Resume: the rescale savepoint the record names (unreadable: kept by id, marked bad).
  void ResumeRescaleSavepoint(const JobRecord& record);
  Vertex* VertexOf(SubtaskIndex s, AttemptNumber a, WorkerId w);
  bool checkpointing() const { return spec_.checkpoint_interval_ms > 0; }

  std::string job_id_;
  JobSpec spec_;
  WorkerRegistry* workers_;
  ControlOutbox* outbox_;
  const Clock* wall_clock_;
  JobMasterOptions options_;
  CheckpointStorage storage_;
  RestartStrategy restart_;

  JobState state_ = JobState::kDeploying;
  AttemptNumber attempt_{0};
  std::vector<Vertex> vertices_;
  std::unique_ptr<CheckpointCoordinator> checkpoints_;
  // The source's split enumerator of the current attempt (started at its deployment).
  std::unique_ptr<SplitEnumerator> enumerator_;
  std::optional<RestorePoint> initial_restore_;  // --from-savepoint, until the first checkpoint
  // Checkpoints are identified by directory: with --from-savepoint the restored checkpoint may
  // be another job's, with the id of one of this job's own checkpoints.
  struct RestoredFrom {
    CheckpointId id;
    std::string directory;
  };
  std::optional<RestoredFrom> restored_from_;  // of the current attempt
  // Found corrupted, by directory (why); never restored again.
  std::map<std::string, std::string> bad_checkpoints_;
  enum class FinalCheckpoint { kNone, kPending, kCompleted };
  FinalCheckpoint final_ = FinalCheckpoint::kNone;  // of the current attempt
  bool attempt_cancelled_ = false;  // CancelTask sent to the current attempt's subtasks
  // Attempts failed by too many checkpoint failures (status), and whether the next attempt
  // counts its checkpoint failures from zero.
  int32_t checkpoint_failovers_ = 0;
  bool checkpoint_failure_count_reset_ = false;
  int64_t submitted_ms_ = 0;
  int64_t deploy_started_ms_ = 0;
  int64_t running_since_ms_ = 0;
  int64_t restart_at_ms_ = 0;
  int64_t replacement_deadline_ms_ = 0;
  int64_t last_failure_ms_ = 0;
  int64_t ended_ms_ = 0;
  std::string failure_reason_;  // why the job ended (FAILED, CANCELED)
  std::string last_failure_;    // why the last attempt failed
  std::string waiting_for_;     // while RESTARTING

  // A rescale in progress.
  struct RescaleOp {
    int32_t target = 0;                       // 0: stop with savepoint
    RescaleVia via = RescaleVia::kSavepoint;  // kCheckpoint or kSavepoint (resolved)
    std::string savepoint_dir;
    RequestCallback stop_done;
    RescalePhase phase = RescalePhase::kWaitingForWorkers;
    int64_t started_ms = 0;
    int64_t workers_deadline_ms = 0;
    RescaleCallback done;
  };
  std::optional<RescaleOp> rescale_;
  // The latest rescale's savepoint (RescaleVia::kSavepoint; a rescale's checkpoint is one of
  // the job's completed checkpoints).
  std::optional<RestorePoint> rescale_savepoint_;

  // Counters of the attempts before the current one (status adds the current attempt's).
  SubtaskMetrics earlier_attempts_;
  std::map<int64_t, JobCommand> commands_;  // in progress, by token
  int64_t next_command_token_ = 1;
  JobCommand last_command_;
  std::string last_command_outcome_;
};

}  // namespace keyflow
