// WatermarkOutput: where a WatermarkGenerator sends watermarks and idleness
// (Flink's WatermarkOutput).
//
// Generators (BoundedOutOfOrdernessWatermarks, WatermarksWithIdleness) call it;
// the source subtask passes a WatermarkToDataOutput, which turns the calls into
// the in-band events a downstream subtask sees (only increasing watermarks,
// each status change once).
//
// Threading: called only on the thread that drives the generator (the source's
// task thread).
#pragma once

#include "common/types.h"

namespace keyflow {

class WatermarkOutput {
 public:
  virtual ~WatermarkOutput() = default;

  // "No more records with timestamp <= watermark will follow." Implementations
  // may drop a watermark that does not advance event time.
  virtual void EmitWatermark(Timestamp watermark) = 0;
  // The stream has no data for now: downstream must not wait for its
  // watermarks.
  virtual void MarkIdle() = 0;
  // The stream has data again (ends a MarkIdle()).
  virtual void MarkActive() = 0;
};

}  // namespace keyflow
