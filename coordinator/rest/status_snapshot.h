// StatusSnapshot: what the REST API and /metrics read — the coordinator's status JSON
// (Coordinator::StatusJson, the same document `keyflow status --json` prints) as of the last
// publication. The control loop publishes a new one every publish interval (and after each
// message that changes the job); HTTP threads read the latest without taking any lock the
// control loop holds for longer than a pointer swap.
//
// Threading: Publish on the control loop; Latest from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/mutex.h"

namespace keyflow {

struct StatusSnapshot {
  nlohmann::json status;        // Coordinator::StatusJson(now)
  int64_t published_at_ms = 0;  // wall clock (ms since the epoch) of the publication
  uint64_t sequence = 0;        // 1, 2, ... per publication
};

// The checkpoint history the REST API serves (GET /api/v1/job/checkpoints): the publisher keeps
// the newest kCheckpointHistory finished checkpoints of the job across publications and attempts
// (the job's own history starts over with each attempt), and writes them, newest first, into
// each snapshot's job.checkpoints.history (replacing the coordinator's). Each subtask's numbers
// stay on the kCheckpointHistoryWithSubtasks newest only. A new job id starts a new history.
inline constexpr size_t kCheckpointHistory = 100;
inline constexpr size_t kCheckpointHistoryWithSubtasks = 10;

class StatusSnapshotPublisher {
 public:
  // Call from one thread (the control loop).
  void Publish(nlohmann::json status, int64_t wall_now_ms);
  // Null before the first publication.
  std::shared_ptr<const StatusSnapshot> Latest() const;

 private:
  void MergeCheckpointHistory(nlohmann::json& status);

  // Publish's thread only.
  std::string history_job_id_;
  std::deque<nlohmann::json> history_;  // newest first, at most kCheckpointHistory

  mutable Mutex mu_;
  std::shared_ptr<const StatusSnapshot> latest_ ABSL_GUARDED_BY(mu_);
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace keyflow
