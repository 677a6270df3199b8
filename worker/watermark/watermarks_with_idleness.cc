#include "worker/watermark/watermarks_with_idleness.h"

#include <sstream>
#include <utility>

namespace keyflow {

Result<WatermarksWithIdleness> WatermarksWithIdleness::Create(
    std::unique_ptr<WatermarkGenerator> watermarks, Duration idle_timeout, const Clock& clock) {
  KF_CHECK(watermarks != nullptr) << "WatermarksWithIdleness needs a generator to wrap";
  if (idle_timeout <= Duration::Millis(0)) {
    std::ostringstream m;
    m << "the idleness timeout must be greater than 0, got " << idle_timeout
      << "; leave idleness unset to never mark the source idle";
    return InvalidArgument(m.str());
  }
  return WatermarksWithIdleness(std::move(watermarks), idle_timeout, clock);
}

void WatermarksWithIdleness::OnEvent(Timestamp event_timestamp, WatermarkOutput& output) {
  if (is_idle_) {
    is_idle_ = false;
    output.MarkActive();
  }
  watermarks_->OnEvent(event_timestamp, output);
  activity_since_last_check_ = true;
}

void WatermarksWithIdleness::OnPeriodicEmit(WatermarkOutput& output) {
  if (CheckIfIdle()) {
    if (!is_idle_) {
      is_idle_ = true;
      output.MarkIdle();
    }
  } else {
    watermarks_->OnPeriodicEmit(output);
  }
}

bool WatermarksWithIdleness::CheckIfIdle() {
  if (activity_since_last_check_) {
    activity_since_last_check_ = false;
    inactivity_started_ = false;
    return false;
  }
  const Timestamp now = clock_->Now();
  if (!inactivity_started_) {
    inactivity_started_ = true;
    start_of_inactivity_ = now;
    return false;
  }
  // now - start > timeout, written without the subtraction (no overflow at the
  // time bounds).
  return now > start_of_inactivity_ + idle_timeout_;
}

}  // namespace keyflow
