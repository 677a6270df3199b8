#include "worker/watermark/watermarks_with_idleness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "common/clock.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/watermark/recording_outputs.h"
#include "worker/watermark/bounded_out_of_orderness_watermarks.h"

namespace keyflow {
namespace {

using test::RecordingWatermarkOutput;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::unique_ptr<WatermarkGenerator> Bounded(int64_t bound_ms) {
  return std::make_unique<BoundedOutOfOrdernessWatermarks>(
      BoundedOutOfOrdernessWatermarks::Create(Duration::Millis(bound_ms)).value());
}

TEST(WatermarksWithIdleness, RejectsANonPositiveTimeout) {
  ManualClock clock;
  for (int64_t timeout : {0L, -5L}) {
    auto r = WatermarksWithIdleness::Create(Bounded(0), Duration::Millis(timeout), clock);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "the idleness timeout must be greater than 0, got " +
                                        std::to_string(timeout) +
                                        "ms; leave idleness unset to never mark the source idle");
  }
}

TEST(WatermarksWithIdleness, BecomesIdleOnlyWhenInactivityIsStrictlyLongerThanTimeout) {
  ManualClock clock(Timestamp(1000));
  auto gen = WatermarksWithIdleness::Create(Bounded(10), Duration::Millis(100), clock);
  ASSERT_OK(gen);
  RecordingWatermarkOutput out;

  gen->OnEvent(Timestamp(500), out);
  gen->OnPeriodicEmit(out);  // activity since the last check: not idle, delegates
  EXPECT_THAT(out.Take(), ElementsAre("W:489"));

  gen->OnPeriodicEmit(out);  // no activity: starts the inactivity timer at 1000, not idle
  EXPECT_THAT(out.Take(), ElementsAre("W:489"));

  clock.Set(Timestamp(1100));  // exactly the timeout: 100 > 100 is false
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.Take(), ElementsAre("W:489"));
  EXPECT_FALSE(gen->is_idle());

  clock.Set(Timestamp(1101));  // 101 > 100: idle; the wrapped generator is not asked
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.Take(), ElementsAre("IDLE"));
  EXPECT_TRUE(gen->is_idle());

  clock.Set(Timestamp(5000));  // still idle: no second IDLE, no watermark
  gen->OnPeriodicEmit(out);
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.Take(), IsEmpty());
}

TEST(WatermarksWithIdleness, ActivityMarksActiveOnceAndResumesPeriodicEmission) {
  ManualClock clock(Timestamp(0));
  auto gen = WatermarksWithIdleness::Create(Bounded(0), Duration::Millis(50), clock);
  ASSERT_OK(gen);
  RecordingWatermarkOutput out;
  gen->OnPeriodicEmit(out);  // starts the inactivity timer at 0
  clock.Set(Timestamp(51));
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.Take(), ElementsAre("W:MIN", "IDLE"));

  gen->OnEvent(Timestamp(300), out);
  gen->OnEvent(Timestamp(301), out);
  EXPECT_THAT(out.Take(), ElementsAre("ACTIVE"));  // once, on the transition
  EXPECT_FALSE(gen->is_idle());
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.Take(), ElementsAre("W:300"));
}

TEST(WatermarksWithIdleness, ActivityBetweenChecksRestartsTheInactivityTimer) {
  ManualClock clock(Timestamp(0));
  auto gen = WatermarksWithIdleness::Create(Bounded(0), Duration::Millis(50), clock);
  ASSERT_OK(gen);
  RecordingWatermarkOutput out;
  gen->OnPeriodicEmit(out);  // timer starts at 0
  clock.Set(Timestamp(40));
  gen->OnEvent(Timestamp(10), out);
  gen->OnPeriodicEmit(out);  // activity: reset
  clock.Set(Timestamp(80));
  gen->OnPeriodicEmit(out);  // timer starts at 80 (not at 0)
  clock.Set(Timestamp(130));
  gen->OnPeriodicEmit(out);  // 50 > 50 is false
  clock.Set(Timestamp(131));
  gen->OnPeriodicEmit(out);  // 51 > 50: idle
  EXPECT_THAT(out.events, ElementsAre("W:MIN", "W:9", "W:9", "W:9", "IDLE"));
}

}  // namespace
}  // namespace keyflow
