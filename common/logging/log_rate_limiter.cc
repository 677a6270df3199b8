#include "common/logging/log_rate_limiter.h"

#include <algorithm>

#include "common/check.h"

namespace keyflow {

LogRateLimiter::LogRateLimiter(LogRateLimiterOptions options)
    : options_(options), clock_(options.clock != nullptr ? options.clock : &system_clock_) {
  KF_CHECK_GE(options_.max_keys, 1u);
  KF_CHECK_GE(options_.max_lines_per_interval, 1u);
}

LogDecision LogRateLimiter::ShouldLog(const std::string& key) {
  const int64_t now = clock_->MonotonicMillis();
  const int64_t interval = options_.interval.millis();
  MutexLock lock(&mu_);
  if (!started_ || now - global_window_start_ms_ >= interval) {
    started_ = true;
    global_window_start_ms_ = now;
    global_lines_ = 0;
  }
  auto it = entries_.find(key);
  bool due = it == entries_.end() || now - it->second.window_start_ms >= interval;
  if (!due || global_lines_ >= options_.max_lines_per_interval) {
    // A key the global budget suppresses before it is tracked is counted in the total only.
    if (it != entries_.end()) ++it->second.suppressed;
    ++suppressed_total_;
    return LogDecision{};
  }
  if (it == entries_.end()) {
    MakeRoom(now);
    it = entries_.emplace(key, Entry{}).first;
  }
  LogDecision out{.log = true, .suppressed = it->second.suppressed};
  it->second = Entry{.window_start_ms = now, .suppressed = 0};
  ++global_lines_;
  return out;
}

void LogRateLimiter::MakeRoom(int64_t now_ms) {
  if (entries_.size() < options_.max_keys) return;
  const int64_t interval = options_.interval.millis();
  // Keys whose interval has passed log their next event anyway; their pending count is lost
  // with them (it stays in suppressed_total).
  absl::erase_if(entries_,
                 [&](const auto& e) { return now_ms - e.second.window_start_ms >= interval; });
  if (entries_.size() < options_.max_keys) return;
  auto oldest =
      std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
        return a.second.window_start_ms < b.second.window_start_ms;
      });
  entries_.erase(oldest);
}

uint64_t LogRateLimiter::suppressed_total() const {
  MutexLock lock(&mu_);
  return suppressed_total_;
}

size_t LogRateLimiter::tracked_keys() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

std::string SuppressedNote(uint64_t suppressed) {
  if (suppressed == 0) return "";
  return " (" + std::to_string(suppressed) + " similar message" + (suppressed == 1 ? "" : "s") +
         " suppressed since the last one)";
}

}  // namespace keyflow
