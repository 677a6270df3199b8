// RestartStrategy: whether and when a failed job restarts (Flink's restart strategies).
//   none              never restart
//   fixed-delay       up to `attempts` restarts, each after `delay`
//   exponential-delay up to `attempts` restarts; backoff starts at `delay`, doubles up to
//                     `max_delay`; a job that ran for `reset_after` without failing starts over
//                     at `delay` (no jitter: drills stay reproducible)
// Default: exponential-delay when checkpointing is on (restarts resume from a checkpoint),
// none otherwise — as in Flink.
//
// Threading: coordinator thread; time passed in.
#pragma once

#include <cstdint>
#include <string>

#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow {

class RestartStrategy {
 public:
  enum class Kind { kNone, kFixedDelay, kExponentialDelay };

  // From the job spec (restart_strategy "" = the default above). InvalidArgument for an unknown
  // name or negative numbers.
  static Result<RestartStrategy> FromSpec(const JobSpec& spec);

  // A failure at `now_ms`: true and the delay before the restart, or false when attempts are
  // exhausted. `running_since_ms` = when the failed attempt started running (for the reset).
  bool OnFailure(int64_t now_ms, int64_t running_since_ms, int64_t* delay_ms);

  Kind kind() const { return kind_; }
  int32_t restarts() const { return restarts_; }
  std::string Describe() const;  // "exponential-delay (200ms .. 30s, at most 50 restarts)"

 private:
  Kind kind_ = Kind::kNone;
  int32_t max_attempts_ = 0;
  int64_t delay_ms_ = 0;
  int64_t max_delay_ms_ = 0;
  int64_t reset_after_ms_ = 60'000;
  int32_t restarts_ = 0;     // total
  int32_t since_reset_ = 0;  // exponential: restarts since the last reset
  int64_t current_delay_ms_ = 0;
};

}  // namespace keyflow
