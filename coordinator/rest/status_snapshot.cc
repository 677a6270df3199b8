#include "coordinator/rest/status_snapshot.h"

#include <algorithm>
#include <utility>

namespace keyflow {

void StatusSnapshotPublisher::MergeCheckpointHistory(nlohmann::json& status) {
  auto job = status.find("job");
  if (job == status.end() || !job->is_object()) return;
  auto ck = job->find("checkpoints");
  if (ck == job->end() || !ck->is_object()) return;
  auto id = job->find("job_id");
  const std::string job_id =
      id != job->end() && id->is_string() ? id->get<std::string>() : std::string();
  if (job_id != history_job_id_) {
    history_.clear();
    history_job_id_ = job_id;
  }
  const auto id_of = [](const nlohmann::json& c) {
    auto it = c.find("id");
    return it != c.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{-1};
  };
  const int64_t newest = history_.empty() ? -1 : id_of(history_.front());
  auto incoming = ck->find("history");
  if (incoming != ck->end() && incoming->is_array()) {
    // Newest first: the ones newer than what is kept go to the front, oldest of them first.
    size_t added = 0;
    for (auto it = incoming->rbegin(); it != incoming->rend(); ++it) {
      if (it->is_object() && id_of(*it) > newest) {
        history_.push_front(std::move(*it));
        ++added;
      }
    }
    for (size_t i = kCheckpointHistoryWithSubtasks;
         i < std::min(history_.size(), kCheckpointHistoryWithSubtasks + added); ++i) {
      history_[i].erase("subtasks");
    }
    while (history_.size() > kCheckpointHistory) history_.pop_back();
  }
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& c : history_) out.push_back(c);
  (*ck)["history"] = std::move(out);
}

void StatusSnapshotPublisher::Publish(nlohmann::json status, int64_t wall_now_ms) {
  MergeCheckpointHistory(status);
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
