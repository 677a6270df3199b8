#include "worker/watermark/split_watermark_multiplexer.h"

#include "common/check.h"
#include "worker/watermark/watermark_output.h"

namespace keyflow {

SplitWatermarkMultiplexer::SplitWatermarkMultiplexer(size_t num_splits, Duration bound)
    : bound_(bound),
      // As BoundedOutOfOrdernessWatermarks: before any event the watermark is exactly kMin.
      max_timestamp_(num_splits, kMinWatermark + bound + Duration::Millis(1)),
      finished_(num_splits, false),
      events_(num_splits, 0),
      checked_events_(num_splits, 0),
      inactive_since_(num_splits, kMinWatermark),
      idle_(num_splits, false) {
  KF_CHECK_GE(bound.millis(), 0);
}

size_t SplitWatermarkMultiplexer::AddSplit() {
  max_timestamp_.push_back(kMinWatermark + bound_ + Duration::Millis(1));
  finished_.push_back(false);
  events_.push_back(0);
  checked_events_.push_back(0);
  inactive_since_.push_back(kMinWatermark);
  idle_.push_back(false);
  return max_timestamp_.size() - 1;
}

void SplitWatermarkMultiplexer::set_split_idle_timeout(Duration timeout, const Clock* clock) {
  KF_CHECK_GT(timeout.millis(), 0);
  KF_CHECK(clock != nullptr);
  idle_timeout_ = timeout;
  clock_ = clock;
}

Timestamp SplitWatermarkMultiplexer::CurrentWatermark() const {
  Timestamp w = kMaxWatermark;
  for (size_t s = 0; s < max_timestamp_.size(); ++s) {
    if (finished_[s] || idle_[s]) continue;
    Timestamp split = max_timestamp_[s] - bound_ - Duration::Millis(1);
    if (split < w) w = split;
  }
  return w;
}

void SplitWatermarkMultiplexer::OnPeriodicEmit(WatermarkOutput& output) {
  bool woke = false;  // a split idle at the last check has records again
  if (idle_timeout_.millis() > 0) {
    const Timestamp now = clock_->Now();
    for (size_t s = 0; s < idle_.size(); ++s) {
      if (finished_[s]) continue;
      // WatermarksWithIdleness's rule: records since the last check reset the timer; the first
      // check without records starts it; idle once it ran for longer than the timeout.
      bool idle = false;
      if (events_[s] != checked_events_[s]) {
        checked_events_[s] = events_[s];
        inactive_since_[s] = kMinWatermark;
      } else if (inactive_since_[s] == kMinWatermark) {
        inactive_since_[s] = now;
      } else {
        idle = now.millis() - inactive_since_[s].millis() > idle_timeout_.millis();
      }
      woke = woke || (idle_[s] && !idle);
      idle_[s] = idle;
    }
  }
  bool any_unfinished = false;
  bool any_active = false;
  for (size_t s = 0; s < finished_.size(); ++s) {
    any_unfinished = any_unfinished || !finished_[s];
    any_active = any_active || (!finished_[s] && !idle_[s]);
  }
  if (any_active) {
    if (woke) output.MarkActive();
    output.EmitWatermark(CurrentWatermark());
  } else if (any_unfinished || idle_when_all_ended_) {
    output.MarkIdle();
  }
}

}  // namespace keyflow
