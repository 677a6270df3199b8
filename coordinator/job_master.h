// JobMaster: one submitted job on the coordinator — deployment, liveness of its subtasks,
// completion, failure (Flink's JobMaster + ExecutionGraph, for a single keyed pipeline).
//
// Per attempt: DeployTask to P workers -> all TaskDeployed (data endpoints bound) ->
// StartTask with every endpoint -> RUNNING -> all TaskFinished -> FINISHED. A lost worker or a
// failed task fails the attempt: every subtask is cancelled and the job ends FAILED with a
// reason that names the worker. Messages of older attempts are ignored.
//
// Threading: coordinator thread only. Time is passed in (monotonic ms).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/key_group_range.h"
#include "common/protocol/control_messages.h"
#include "coordinator/control_outbox.h"
#include "coordinator/worker_registry.h"

namespace keyflow {

enum class JobState { kDeploying, kRunning, kFinished, kFailed, kCanceled };
std::string_view JobStateName(JobState s);

struct JobMasterOptions {
  int64_t deploy_timeout_ms = 30'000;  // all TaskDeployed must arrive within this
};

class JobMaster {
 public:
  // Resolves P (0 -> all registered workers) and M (0 -> Flink's default) and validates them
  // against the registry; the error says what to change.
  static Result<std::unique_ptr<JobMaster>> Create(std::string job_id, JobSpec spec,
                                                   WorkerRegistry* workers, ControlOutbox* outbox,
                                                   JobMasterOptions options, int64_t now_ms);

  void OnTaskDeployed(const TaskDeployed& m, int64_t now_ms);
  void OnTaskFinished(const TaskFinished& m, int64_t now_ms);
  void OnTaskFailed(const TaskFailed& m, int64_t now_ms);
  void OnWorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms);
  void OnTick(int64_t now_ms);
  void Cancel(const std::string& reason, int64_t now_ms);

  JobState state() const { return state_; }
  bool terminal() const {
    return state_ == JobState::kFinished || state_ == JobState::kFailed ||
           state_ == JobState::kCanceled;
  }
  const std::string& job_id() const { return job_id_; }
  const JobSpec& spec() const { return spec_; }
  const std::string& failure_reason() const { return failure_reason_; }
  AttemptNumber attempt() const { return attempt_; }
  // Whether `worker` runs a subtask of the current attempt.
  bool Uses(WorkerId worker) const;

  nlohmann::json StatusJson(int64_t now_ms) const;

 private:
  struct Vertex {
    SubtaskIndex subtask;
    WorkerId worker;
    std::string identity;
    std::string worker_description;
    KeyGroupRange key_groups;
    bool deployed = false;
    bool finished = false;
    std::vector<std::string> input_endpoints;
    SubtaskMetrics final_metrics;
  };

  JobMaster(std::string job_id, JobSpec spec, WorkerRegistry* workers, ControlOutbox* outbox,
            JobMasterOptions options)
      : job_id_(std::move(job_id)), spec_(std::move(spec)), workers_(workers), outbox_(outbox),
        options_(options) {}

  Status Deploy(int64_t now_ms);
  void Fail(const std::string& reason, int64_t now_ms);
  void CancelAll(const std::string& reason);
  Vertex* VertexOf(SubtaskIndex s, AttemptNumber a, WorkerId w);

  std::string job_id_;
  JobSpec spec_;
  WorkerRegistry* workers_;
  ControlOutbox* outbox_;
  JobMasterOptions options_;

  JobState state_ = JobState::kDeploying;
  AttemptNumber attempt_{0};
  std::vector<Vertex> vertices_;
  int64_t submitted_ms_ = 0;
  int64_t deploy_started_ms_ = 0;
  int64_t running_since_ms_ = 0;
  int64_t ended_ms_ = 0;
  std::string failure_reason_;
};

}  // namespace keyflow
