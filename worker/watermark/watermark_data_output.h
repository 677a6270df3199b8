// WatermarkDataOutput: the watermark side of a stream's downstream output (the
// watermark half of Flink's PushingAsyncDataInput.DataOutput).
//
// Receives the in-band events that move event time: watermarks and watermark
// statuses. Implemented by whatever forwards them: the source's record writer
// (broadcast to every output channel), the keyed operator's input (advance
// timers, forward downstream), test recorders. Producers: WatermarkToDataOutput
// (source side) and StatusWatermarkValve (receiving side).
//
// Threading: called only on the task thread of the producing subtask.
#pragma once

#include "common/types.h"
#include "worker/watermark/watermark_status.h"

namespace keyflow {

class WatermarkDataOutput {
 public:
  virtual ~WatermarkDataOutput() = default;

  virtual void EmitWatermark(Timestamp watermark) = 0;
  virtual void EmitWatermarkStatus(WatermarkStatus status) = 0;
};

}  // namespace keyflow
