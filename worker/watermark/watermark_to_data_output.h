// WatermarkToDataOutput: the framework end of a source subtask's
// WatermarkOutput (Flink's WatermarkToDataOutput). Generators may call it with
// any value at any time; downstream sees each watermark and each status change
// exactly once:
//   * EmitWatermark(w) forwards w only if w > every watermark forwarded before
//   ("watermarks
//     never go backwards"); the initial bound is kMinWatermark, so
//     kMinWatermark itself is never forwarded. If the stream is idle, ACTIVE is
//     forwarded first.
//   * MarkIdle() forwards IDLE on the ACTIVE -> IDLE transition only.
//   * MarkActive() forwards ACTIVE on the IDLE -> ACTIVE transition only.
// The stream starts ACTIVE. End of input: emit kMaxWatermark (it is forwarded,
// after ACTIVE if the stream was idle, so an idle source still releases every
// downstream event-time timer).
//
// Threading: used only on the source's task thread. `downstream` must outlive
// this object.
#pragma once

#include "common/types.h"
#include "worker/watermark/watermark_data_output.h"
#include "worker/watermark/watermark_output.h"
#include "worker/watermark/watermark_status.h"

namespace keyflow {

class WatermarkToDataOutput final : public WatermarkOutput {
 public:
  explicit WatermarkToDataOutput(WatermarkDataOutput& downstream) : downstream_(&downstream) {}

  void EmitWatermark(Timestamp watermark) override {
    if (watermark <= max_watermark_so_far_) return;
    max_watermark_so_far_ = watermark;
    MarkActive();
    downstream_->EmitWatermark(watermark);
  }
  void MarkIdle() override {
    if (is_idle_) return;
    is_idle_ = true;
    downstream_->EmitWatermarkStatus(WatermarkStatus::kIdle);
  }
  void MarkActive() override {
    if (!is_idle_) return;
    is_idle_ = false;
    downstream_->EmitWatermarkStatus(WatermarkStatus::kActive);
  }

  // The largest watermark forwarded so far (kMinWatermark before the first).
  Timestamp max_watermark_so_far() const { return max_watermark_so_far_; }
  bool is_idle() const { return is_idle_; }

 private:
  WatermarkDataOutput* downstream_;
  Timestamp max_watermark_so_far_ = kMinWatermark;
  bool is_idle_ = false;
};

}  // namespace keyflow
