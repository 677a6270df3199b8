// Test doubles that record what generators and valves emit, as readable
// strings: "W:<ms>" for a watermark ("W:MIN"/"W:MAX" at the bounds), "IDLE",
// "ACTIVE".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/types.h"
#include "worker/watermark/watermark_data_output.h"
#include "worker/watermark/watermark_output.h"

namespace keyflow::test {

inline std::string WatermarkString(Timestamp w) {
  if (w == kMinWatermark) return "W:MIN";
  if (w == kMaxWatermark) return "W:MAX";
  return "W:" + std::to_string(w.millis());
}

class RecordingWatermarkOutput final : public WatermarkOutput {
 public:
  void EmitWatermark(Timestamp watermark) override { events.push_back(WatermarkString(watermark)); }
  void MarkIdle() override { events.push_back("IDLE"); }
  void MarkActive() override { events.push_back("ACTIVE"); }
  std::vector<std::string> Take() { return std::exchange(events, {}); }

  std::vector<std::string> events;
};

class RecordingDataOutput final : public WatermarkDataOutput {
 public:
  void EmitWatermark(Timestamp watermark) override { events.push_back(WatermarkString(watermark)); }
  void EmitWatermarkStatus(WatermarkStatus status) override {
    events.push_back(status == WatermarkStatus::kIdle ? "IDLE" : "ACTIVE");
  }
  std::vector<std::string> Take() { return std::exchange(events, {}); }

  std::vector<std::string> events;
};

}  // namespace keyflow::test
