#include "worker/watermark/bounded_out_of_orderness_watermarks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tests/testutil/status_matchers.h"
#include "tests/worker/watermark/recording_outputs.h"

namespace keyflow {
namespace {

using test::RecordingWatermarkOutput;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(BoundedOutOfOrdernessWatermarks, RejectsANegativeBound) {
  auto r = BoundedOutOfOrdernessWatermarks::Create(Duration::Millis(-1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "the maximum out-of-orderness of the watermark generator must not "
            "be negative, got "
            "-1ms; use 0 for ascending timestamps");
}

TEST(BoundedOutOfOrdernessWatermarks, EmitsExactlyMinWatermarkBeforeAnyEvent) {
  for (int64_t bound : {0L, 1L, 200L, 43200000L, std::numeric_limits<int64_t>::max()}) {
    auto gen = BoundedOutOfOrdernessWatermarks::Create(Duration::Millis(bound));
    ASSERT_OK(gen);
    RecordingWatermarkOutput out;
    gen->OnPeriodicEmit(out);
    EXPECT_THAT(out.events, ElementsAre("W:MIN")) << "bound " << bound;
  }
}

TEST(BoundedOutOfOrdernessWatermarks, EmitsMaxTimestampMinusBoundMinusOneOnlyPeriodically) {
  auto gen = BoundedOutOfOrdernessWatermarks::Create(Duration::Millis(10));
  ASSERT_OK(gen);
  RecordingWatermarkOutput out;
  gen->OnEvent(Timestamp(100), out);
  gen->OnEvent(Timestamp(50), out);    // late: does not lower the maximum
  EXPECT_THAT(out.events, IsEmpty());  // nothing per event
  gen->OnPeriodicEmit(out);
  gen->OnEvent(Timestamp(120), out);
  gen->OnEvent(Timestamp(115), out);
  gen->OnPeriodicEmit(out);
  gen->OnPeriodicEmit(out);  // no new events: the same value again (the output dedups)
  EXPECT_THAT(out.events, ElementsAre("W:89", "W:109", "W:109"));
  EXPECT_EQ(gen->CurrentWatermark(), Timestamp(109));
}

TEST(BoundedOutOfOrdernessWatermarks, ZeroBoundIsAscendingTimestamps) {
  auto gen = BoundedOutOfOrdernessWatermarks::Create(Duration::Millis(0));
  ASSERT_OK(gen);
  RecordingWatermarkOutput out;
  gen->OnEvent(Timestamp(7), out);
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.events, ElementsAre("W:6"));
}

TEST(BoundedOutOfOrdernessWatermarks, HandlesTimestampsAtTheBounds) {
  auto gen = BoundedOutOfOrdernessWatermarks::Create(Duration::Millis(5));
  ASSERT_OK(gen);
  RecordingWatermarkOutput out;
  gen->OnEvent(kMinWatermark, out);  // below the initial maximum: ignored
  gen->OnPeriodicEmit(out);
  gen->OnEvent(kMaxWatermark, out);
  gen->OnPeriodicEmit(out);
  EXPECT_THAT(out.events,
              ElementsAre("W:MIN", "W:" + std::to_string(std::numeric_limits<int64_t>::max() - 6)));
}

}  // namespace
}  // namespace keyflow
