// WatermarkStrategy: how a source subtask generates watermarks (Flink's
// WatermarkStrategy forBoundedOutOfOrderness(bound).withIdleness(timeout), plus
// pipeline.auto-watermark-interval).
//
// The job configuration fills it in; each source subtask calls
// CreateGenerator() once, and its loop calls OnPeriodicEmit every
// auto_watermark_interval of processing time, with a WatermarkToDataOutput in
// front of the record writer.
#pragma once

#include <memory>
#include <optional>

#include "common/clock.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/watermark/watermark_generator.h"

namespace keyflow {

struct WatermarkStrategy {
  // Records may be up to this much older than the newest timestamp seen (>= 0).
  Duration max_out_of_orderness = Duration::Millis(0);
  // Mark the source idle after this long without records (> 0); unset: never
  // idle.
  std::optional<Duration> idle_timeout;
  // How often the source calls OnPeriodicEmit (> 0). Flink's default is 200 ms.
  Duration auto_watermark_interval = Duration::Millis(200);

  // InvalidArgument, naming the bad field, when a value is out of range.
  [[nodiscard]] Status Validate() const;

  // BoundedOutOfOrdernessWatermarks, wrapped in WatermarksWithIdleness when
  // idle_timeout is set. `clock` must outlive the generator. Fails as
  // Validate() does.
  Result<std::unique_ptr<WatermarkGenerator>> CreateGenerator(const Clock& clock) const;
};

}  // namespace keyflow
