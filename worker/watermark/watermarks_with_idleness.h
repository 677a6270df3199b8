// WatermarksWithIdleness: wraps a generator and marks the stream idle when no
// record arrived for longer than a timeout (Flink's WatermarksWithIdleness with
// its IdlenessTimer).
//
// Idleness is evaluated only in OnPeriodicEmit, with Flink's IdlenessTimer
// rule:
//   * a record arrived since the last check  -> reset, not idle;
//   * else, no inactivity start recorded yet -> record now as the start, not
//   idle;
//   * else                                   -> idle iff now - start > timeout
//   (strictly).
// While idle, OnPeriodicEmit does not call the wrapped generator; MarkIdle() is
// called once, on the transition. The next record clears idleness: MarkActive()
// is called once (before the record is forwarded), and periodic emission
// resumes. Not idle -> the wrapped generator's periodic emit runs.
//
// Note: the first idle check can only start the inactivity timer, so a stream
// becomes idle after more than `timeout` plus up to one auto-watermark interval
// without records.
//
// Threading: used only on the source's task thread; `clock` must outlive this
// object.
#pragma once

#include <memory>

#include "common/clock.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/watermark/watermark_generator.h"

namespace keyflow {

class WatermarksWithIdleness final : public WatermarkGenerator {
 public:
  // Fails with InvalidArgument when idle_timeout is not positive.
  // Precondition: watermarks != nullptr.
  static Result<WatermarksWithIdleness> Create(std::unique_ptr<WatermarkGenerator> watermarks,
                                               Duration idle_timeout, const Clock& clock);

  void OnEvent(Timestamp event_timestamp, WatermarkOutput& output) override;
  void OnPeriodicEmit(WatermarkOutput& output) override;

  bool is_idle() const { return is_idle_; }
  Duration idle_timeout() const { return idle_timeout_; }

 private:
  WatermarksWithIdleness(std::unique_ptr<WatermarkGenerator> watermarks, Duration idle_timeout,
                         const Clock& clock)
      : watermarks_(std::move(watermarks)), idle_timeout_(idle_timeout), clock_(&clock) {}

  // Flink's IdlenessTimer.checkIfIdle().
  bool CheckIfIdle();

  std::unique_ptr<WatermarkGenerator> watermarks_;
  Duration idle_timeout_;
  const Clock* clock_;
  bool activity_since_last_check_ = false;
  bool inactivity_started_ = false;
  Timestamp start_of_inactivity_;
  bool is_idle_ = false;
};

}  // namespace keyflow
