#include "coordinator/restart_strategy.h"

#include <algorithm>

#include "common/duration.h"

namespace keyflow {

Result<RestartStrategy> RestartStrategy::FromSpec(const JobSpec& spec) {
  RestartStrategy r;
  std::string name = spec.restart_strategy;
  if (name.empty()) name = spec.checkpoint_interval_ms > 0 ? "exponential-delay" : "none";
  if (spec.restart_attempts < 0 || spec.restart_delay_ms < 0 || spec.restart_max_delay_ms < 0) {
    return InvalidArgument("restart attempts and delays must not be negative");
  }
  r.max_attempts_ = spec.restart_attempts;
  r.delay_ms_ = spec.restart_delay_ms;
  r.max_delay_ms_ = std::max(spec.restart_max_delay_ms, spec.restart_delay_ms);
  if (name == "none" || name == "disable" || name == "off") {
    r.kind_ = Kind::kNone;
  } else if (name == "fixed-delay" || name == "fixeddelay") {
    r.kind_ = Kind::kFixedDelay;
  } else if (name == "exponential-delay" || name == "exponentialdelay") {
    r.kind_ = Kind::kExponentialDelay;
  } else {
    return InvalidArgument("unknown restart strategy '" + name +
                           "'; use none, fixed-delay or exponential-delay");
  }
  r.current_delay_ms_ = r.delay_ms_;
  return r;
}

bool RestartStrategy::OnFailure(int64_t now_ms, int64_t running_since_ms, int64_t* delay_ms) {
  switch (kind_) {
    case Kind::kNone:
      return false;
    case Kind::kFixedDelay:
      if (restarts_ >= max_attempts_) return false;
      ++restarts_;
      *delay_ms = delay_ms_;
      return true;
    case Kind::kExponentialDelay:
      if (running_since_ms > 0 && now_ms - running_since_ms >= reset_after_ms_) {
        since_reset_ = 0;
        current_delay_ms_ = delay_ms_;
      }
      if (since_reset_ >= max_attempts_) return false;
      ++restarts_;
      ++since_reset_;
      *delay_ms = current_delay_ms_;
      current_delay_ms_ = std::min(max_delay_ms_, std::max<int64_t>(1, current_delay_ms_) * 2);
      return true;
  }
  return false;
}

std::string RestartStrategy::Describe() const {
  switch (kind_) {
    case Kind::kNone:
      return "none";
    case Kind::kFixedDelay:
      return "fixed-delay (" + FormatDuration(Duration::Millis(delay_ms_)) + ", at most " +
             std::to_string(max_attempts_) + " restarts)";
    case Kind::kExponentialDelay:
      return "exponential-delay (" + FormatDuration(Duration::Millis(delay_ms_)) + " .. " +
             FormatDuration(Duration::Millis(max_delay_ms_)) + ", at most " +
             std::to_string(max_attempts_) + " restarts in a row)";
  }
  return "?";
}

}  // namespace keyflow
