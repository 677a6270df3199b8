// LogRateLimiter: "at most once per key per interval" for errors logged per received message
// (a bad frame, an undecodable control message, a message from an unknown peer). A peer that
// sends a million junk messages costs one log line per interval, not a million; the line that
// is logged says how many like it were suppressed since the previous one.
//
//   KF_LOG_WARN_RATE_LIMITED(limiter_, "undecodable/" + peer, "undecodable control message: {}",
//                            why.message());
//
// Two bounds: per key (one line per `interval`), and over all keys (`max_lines_per_interval`
// lines per interval, so a flood of fresh keys — e.g. a new connection per message — cannot
// flood the log either). Memory is bounded: at most `max_keys` keys are tracked; when a new key
// arrives at the cap, keys whose interval has passed are dropped first, then the oldest.
//
// Who uses it: the coordinator's control loop (coordinator/), the worker's input channels
// (worker/shuffle/). Thread-safe (one mutex; only error paths call it). The clock is
// injectable: tests use a ManualClock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "common/clock.h"
#include "common/logging/logging.h"
#include "common/mutex.h"
#include "common/types.h"

namespace keyflow {

struct LogRateLimiterOptions {
  Duration interval = Duration::Seconds(60);
  size_t max_keys = 1024;                 // >= 1
  uint64_t max_lines_per_interval = 100;  // over all keys, >= 1
  const Clock* clock = nullptr;           // null: the system clock. Not owned.
};

struct LogDecision {
  bool log = false;
  // When `log`: events of this key that were not logged since its previous line.
  uint64_t suppressed = 0;
  explicit operator bool() const { return log; }
};

class LogRateLimiter {
 public:
  explicit LogRateLimiter(LogRateLimiterOptions options = {});
  LogRateLimiter(const LogRateLimiter&) = delete;
  LogRateLimiter& operator=(const LogRateLimiter&) = delete;

  // Counts one event of `key` and says whether to log it now.
  LogDecision ShouldLog(const std::string& key);

  // Events not logged since construction (all keys, evicted ones included).
  uint64_t suppressed_total() const;
  size_t tracked_keys() const;

 private:
  struct Entry {
    int64_t window_start_ms = 0;
    uint64_t suppressed = 0;
  };
  void MakeRoom(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LogRateLimiterOptions options_;
  SystemClock system_clock_;
  const Clock* clock_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t global_window_start_ms_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t global_lines_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t suppressed_total_ ABSL_GUARDED_BY(mu_) = 0;
};

// "" for 0, else " (N similar messages suppressed since the last one)": the tail of a
// rate-limited line.
std::string SuppressedNote(uint64_t suppressed);

}  // namespace keyflow

// Logs a warning through `limiter` (a LogRateLimiter) under `key`; `fmt` must be a literal.
#define KF_LOG_WARN_RATE_LIMITED(limiter, key, fmt, ...)                                      \
  do {                                                                                        \
    if (::keyflow::LogDecision kf_decision_ = (limiter).ShouldLog(key)) {                     \
      KF_LOG_WARN(fmt "{}", __VA_ARGS__, ::keyflow::SuppressedNote(kf_decision_.suppressed)); \
    }                                                                                         \
  } while (false)
