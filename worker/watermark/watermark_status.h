// WatermarkStatus: whether a stream currently advances event time (Flink's
// WatermarkStatus).
//
// A stream is a source subtask's output or one input channel of a downstream
// subtask. An IDLE stream sends no watermarks and does not hold back the
// minimum a StatusWatermarkValve computes over its input channels. Statuses
// travel in-band (the data plane's WATERMARK_STATUS frame); the numeric values
// are Flink's (IDLE = -1, ACTIVE = 0).
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

namespace keyflow {

enum class WatermarkStatus : int8_t {
  kIdle = -1,
  kActive = 0,
};

inline std::string_view WatermarkStatusName(WatermarkStatus status) {
  return status == WatermarkStatus::kIdle ? "IDLE" : "ACTIVE";
}

inline std::ostream& operator<<(std::ostream& os, WatermarkStatus status) {
  return os << WatermarkStatusName(status);
}

}  // namespace keyflow
