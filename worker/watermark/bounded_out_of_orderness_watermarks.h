// BoundedOutOfOrdernessWatermarks: the default periodic watermark generator
// (Flink's BoundedOutOfOrdernessWatermarks; AscendingTimestampsWatermarks is
// the bound 0 case).
//
// Assumes records arrive at most `bound` ms later than the largest timestamp
// seen so far:
//   max_timestamp starts at kMinWatermark + bound + 1;
//   OnEvent(ts):      max_timestamp = max(max_timestamp, ts)   (emits nothing);
//   OnPeriodicEmit(): emits max_timestamp - bound - 1, which is exactly
//   kMinWatermark before the
//                     first record.
// The "- 1" makes a watermark W mean "every record with timestamp <= W has
// arrived".
//
// Threading: used only on the source's task thread.
#pragma once

#include "common/status.h"
#include "common/types.h"
#include "worker/watermark/watermark_generator.h"

namespace keyflow {

class BoundedOutOfOrdernessWatermarks final : public WatermarkGenerator {
 public:
  // Fails with InvalidArgument when max_out_of_orderness is negative.
  static Result<BoundedOutOfOrdernessWatermarks> Create(Duration max_out_of_orderness);

  void OnEvent(Timestamp event_timestamp, WatermarkOutput& /*output*/) override {
    if (event_timestamp > max_timestamp_) max_timestamp_ = event_timestamp;
  }
  void OnPeriodicEmit(WatermarkOutput& output) override {
    output.EmitWatermark(CurrentWatermark());
  }

  // The watermark the next OnPeriodicEmit emits.
  Timestamp CurrentWatermark() const {
    return max_timestamp_ - max_out_of_orderness_ - Duration::Millis(1);
  }
  Duration max_out_of_orderness() const { return max_out_of_orderness_; }

 private:
  explicit BoundedOutOfOrdernessWatermarks(Duration max_out_of_orderness)
      : max_out_of_orderness_(max_out_of_orderness),
        max_timestamp_(kMinWatermark + max_out_of_orderness + Duration::Millis(1)) {}

  Duration max_out_of_orderness_;
  Timestamp max_timestamp_;
};

}  // namespace keyflow
