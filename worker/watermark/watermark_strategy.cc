#include "worker/watermark/watermark_strategy.h"

#include <sstream>
#include <utility>

#include "worker/watermark/bounded_out_of_orderness_watermarks.h"
#include "worker/watermark/watermarks_with_idleness.h"

namespace keyflow {

Status WatermarkStrategy::Validate() const {
  if (auto_watermark_interval <= Duration::Millis(0)) {
    std::ostringstream m;
    m << "the auto-watermark interval must be greater than 0, got " << auto_watermark_interval
      << " (Flink's default is 200ms)";
    return InvalidArgument(m.str());
  }
  if (max_out_of_orderness < Duration::Millis(0)) {
    std::ostringstream m;
    m << "the maximum out-of-orderness must not be negative, got " << max_out_of_orderness
      << "; use 0 for ascending timestamps";
    return InvalidArgument(m.str());
  }
  if (idle_timeout.has_value() && *idle_timeout <= Duration::Millis(0)) {
    std::ostringstream m;
    m << "the idleness timeout must be greater than 0, got " << *idle_timeout
      << "; leave idleness unset to never mark the source idle";
    return InvalidArgument(m.str());
  }
  return Status::Ok();
}

Result<std::unique_ptr<WatermarkGenerator>> WatermarkStrategy::CreateGenerator(
    const Clock& clock) const {
  KF_RETURN_IF_ERROR(Validate());
  KF_ASSIGN_OR_RETURN(BoundedOutOfOrdernessWatermarks bounded,
                      BoundedOutOfOrdernessWatermarks::Create(max_out_of_orderness));
  std::unique_ptr<WatermarkGenerator> generator =
      std::make_unique<BoundedOutOfOrdernessWatermarks>(std::move(bounded));
  if (!idle_timeout.has_value()) return generator;
  KF_ASSIGN_OR_RETURN(WatermarksWithIdleness with_idleness,
                      WatermarksWithIdleness::Create(std::move(generator), *idle_timeout, clock));
  return std::unique_ptr<WatermarkGenerator>(
      std::make_unique<WatermarksWithIdleness>(std::move(with_idleness)));
}

}  // namespace keyflow
