#include "worker/watermark/split_watermark_multiplexer.h"

#include "common/check.h"
#include "worker/watermark/watermark_output.h"

namespace keyflow {

SplitWatermarkMultiplexer::SplitWatermarkMultiplexer(size_t num_splits, Duration bound)
    : bound_(bound),
      // As BoundedOutOfOrdernessWatermarks: before any event the watermark is exactly kMin.
      max_timestamp_(num_splits, kMinWatermark + bound + Duration::Millis(1)),
      finished_(num_splits, false) {
  KF_CHECK_GE(bound.millis(), 0);
}

size_t SplitWatermarkMultiplexer::AddSplit() {
  max_timestamp_.push_back(kMinWatermark + bound_ + Duration::Millis(1));
  finished_.push_back(false);
  return max_timestamp_.size() - 1;
}

Timestamp SplitWatermarkMultiplexer::CurrentWatermark() const {
  Timestamp w = kMaxWatermark;
  for (size_t s = 0; s < max_timestamp_.size(); ++s) {
    if (finished_[s]) continue;
    Timestamp split = max_timestamp_[s] - bound_ - Duration::Millis(1);
    if (split < w) w = split;
  }
  return w;
}

void SplitWatermarkMultiplexer::OnPeriodicEmit(WatermarkOutput& output) {
  Timestamp w = CurrentWatermark();
  if (w != kMaxWatermark) {
    output.EmitWatermark(w);
  } else if (idle_when_all_ended_) {
    output.MarkIdle();
  }
}

}  // namespace keyflow
