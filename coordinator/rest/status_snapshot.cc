#include "coordinator/rest/status_snapshot.h"

#include <utility>

namespace keyflow {

void StatusSnapshotPublisher::Publish(nlohmann::json status, int64_t wall_now_ms) {
  auto next = std::make_shared<StatusSnapshot>();
  next->status = std::move(status);
  next->published_at_ms = wall_now_ms;
  std::shared_ptr<const StatusSnapshot> old;  // freed outside the lock
  MutexLock lock(&mu_);
  next->sequence = ++sequence_;
  old = std::exchange(latest_, std::move(next));
}

std::shared_ptr<const StatusSnapshot> StatusSnapshotPublisher::Latest() const {
  MutexLock lock(&mu_);
  return latest_;
}

}  // namespace keyflow
