// WatermarkGenerator: turns the event timestamps a source subtask sees into
// watermarks (Flink's WatermarkGenerator).
//
// The source loop calls OnEvent for every record (after assigning its
// timestamp) and OnPeriodicEmit every auto-watermark interval
// (WatermarkStrategy::auto_watermark_interval, 200 ms by default). Periodic
// emission is driven by that caller; generators own no threads and read time
// only through an injected Clock.
//
// Implementations: BoundedOutOfOrdernessWatermarks, WatermarksWithIdleness (a
// wrapper). Threading: one generator per source subtask, used only on its task
// thread.
#pragma once

#include "common/types.h"
#include "worker/watermark/watermark_output.h"

namespace keyflow {

class WatermarkGenerator {
 public:
  virtual ~WatermarkGenerator() = default;

  // Called once per record with its event timestamp. May emit a watermark
  // (punctuated generators); periodic generators only update their state.
  virtual void OnEvent(Timestamp event_timestamp, WatermarkOutput& output) = 0;
  // Called every auto-watermark interval.
  virtual void OnPeriodicEmit(WatermarkOutput& output) = 0;
};

}  // namespace keyflow
