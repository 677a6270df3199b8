#include "worker/watermark/watermark_strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/clock.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/watermark/recording_outputs.h"
#include "worker/watermark/watermark_to_data_output.h"

namespace keyflow {
namespace {

using test::RecordingDataOutput;
using ::testing::ElementsAre;

TEST(WatermarkStrategy, ValidateNamesTheBadField) {
  WatermarkStrategy s;
  EXPECT_OK(s.Validate());
  s.max_out_of_orderness = Duration::Millis(-3);
  EXPECT_EQ(s.Validate().message(),
            "the maximum out-of-orderness must not be "
            "negative, got -3ms; use 0 for ascending "
            "timestamps");
  s = WatermarkStrategy{};
  s.idle_timeout = Duration::Millis(0);
  EXPECT_EQ(s.Validate().message(),
            "the idleness timeout must be greater than "
            "0, got 0ms; leave idleness unset to never "
            "mark the source idle");
  s = WatermarkStrategy{};
  s.auto_watermark_interval = Duration::Millis(0);
  EXPECT_EQ(s.Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Validate().message(),
            "the auto-watermark interval must be greater than 0, got 0ms "
            "(Flink's default is "
            "200ms)");
  ManualClock clock;
  EXPECT_EQ(s.CreateGenerator(clock).status().code(), StatusCode::kInvalidArgument);
}

// A whole source subtask's watermark path: generator -> WatermarkToDataOutput
// -> downstream, with the source loop calling OnPeriodicEmit every interval.
TEST(WatermarkStrategy, SourcePathEmitsEachWatermarkAndStatusChangeOnce) {
  ManualClock clock(Timestamp(0));
  WatermarkStrategy strategy;
  strategy.max_out_of_orderness = Duration::Millis(5);
  strategy.idle_timeout = Duration::Millis(300);
  auto gen = strategy.CreateGenerator(clock);
  ASSERT_OK(gen);
  RecordingDataOutput down;
  WatermarkToDataOutput out(down);
  auto periodic = [&] {
    (*gen)->OnPeriodicEmit(out);
    clock.Advance(strategy.auto_watermark_interval);
  };

  periodic();  // t=0: kMin, suppressed
  (*gen)->OnEvent(Timestamp(100), out);
  (*gen)->OnEvent(Timestamp(90), out);
  periodic();                           // t=200: 94
  periodic();                           // t=400: 94 again, suppressed; inactivity starts at 400
  periodic();                           // t=600: 200 > 300 is false
  periodic();                           // t=800: 400 > 300: idle
  periodic();                           // t=1000: still idle
  (*gen)->OnEvent(Timestamp(95), out);  // active again, no new maximum
  periodic();                           // 94 again: suppressed
  (*gen)->OnEvent(Timestamp(150), out);
  periodic();
  EXPECT_THAT(down.events, ElementsAre("W:94", "IDLE", "ACTIVE", "W:144"));
}

TEST(WatermarkStrategy, WithoutIdleTimeoutNeverMarksIdle) {
  ManualClock clock(Timestamp(0));
  WatermarkStrategy strategy;  // bound 0, no idleness
  auto gen = strategy.CreateGenerator(clock);
  ASSERT_OK(gen);
  RecordingDataOutput down;
  WatermarkToDataOutput out(down);
  (*gen)->OnEvent(Timestamp(10), out);
  for (int i = 0; i < 10; ++i) {
    (*gen)->OnPeriodicEmit(out);
    clock.Advance(Duration::Seconds(3600));
  }
  EXPECT_THAT(down.events, ElementsAre("W:9"));
}

}  // namespace
}  // namespace keyflow
