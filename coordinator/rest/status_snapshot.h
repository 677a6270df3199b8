// StatusSnapshot: what the REST API and /metrics read — the coordinator's status JSON
// (Coordinator::StatusJson, the same document `keyflow status --json` prints) as of the last
// publication. The control loop publishes a new one every publish interval (and after each
// message that changes the job); HTTP threads read the latest without taking any lock the
// control loop holds for longer than a pointer swap.
//
// Threading: Publish on the control loop; Latest from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/mutex.h"

namespace keyflow {

struct StatusSnapshot {
  nlohmann::json status;        // Coordinator::StatusJson(now)
  int64_t published_at_ms = 0;  // wall clock (ms since the epoch) of the publication
  uint64_t sequence = 0;        // 1, 2, ... per publication
};

class StatusSnapshotPublisher {
 public:
  void Publish(nlohmann::json status, int64_t wall_now_ms);
  // Null before the first publication.
  std::shared_ptr<const StatusSnapshot> Latest() const;

 private:
  mutable Mutex mu_;
  std::shared_ptr<const StatusSnapshot> latest_ ABSL_GUARDED_BY(mu_);
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace keyflow
