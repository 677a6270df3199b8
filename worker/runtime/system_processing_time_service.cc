#include "worker/runtime/system_processing_time_service.h"

#include "common/check.h"

namespace keyflow {

ProcessingTimeService::TimerId SystemProcessingTimeService::Schedule(
    Timestamp ts, ProcessingTimeCallback callback) {
  KF_CHECK(callback) << "processing-time callback for " << ts << " is empty";
  const TimerId id = next_id_++;
  callbacks_.emplace(std::make_pair(ts, id), std::move(callback));
  ts_of_id_.emplace(id, ts);
  return id;
}

void SystemProcessingTimeService::Cancel(TimerId id) {
  auto it = ts_of_id_.find(id);
  if (it == ts_of_id_.end()) return;  // ran already, cancelled, or never scheduled
  callbacks_.erase(std::make_pair(it->second, id));
  ts_of_id_.erase(it);
}

std::optional<Timestamp> SystemProcessingTimeService::NextDueTime() const {
  if (callbacks_.empty()) return std::nullopt;
  return callbacks_.begin()->first.first + Duration::Millis(1);  // saturates at kMax
}

bool SystemProcessingTimeService::RunNextDueCallback(Timestamp now) {
  if (callbacks_.empty()) return false;
  const Timestamp ts = callbacks_.begin()->first.first;
  if (!(ts < now)) return false;  // due iff ts + 1 <= now
  auto node = callbacks_.extract(callbacks_.begin());
  ts_of_id_.erase(node.key().second);
  node.mapped()(ts);
  return true;
}

size_t SystemProcessingTimeService::RunDueCallbacks(Timestamp now) {
  size_t ran = 0;
  while (RunNextDueCallback(now)) ++ran;
  return ran;
}

}  // namespace keyflow
