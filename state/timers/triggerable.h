// Triggerable: the target of fired timers (Flink's Triggerable), implemented by the keyed
// operator that owns an InternalTimerService.
//
// Called on the task thread only, with the key context already set to timer.key. A callback
// may register and delete timers (including ones already due, which then fire in the same
// pass) but must not call AdvanceWatermark or restore key groups.
#pragma once

#include "state/timers/timer_entry.h"

namespace keyflow {

class Triggerable {
 public:
  virtual ~Triggerable() = default;
  virtual void OnEventTime(const TimerEntry& timer) = 0;
  virtual void OnProcessingTime(const TimerEntry& timer) = 0;
};

}  // namespace keyflow
