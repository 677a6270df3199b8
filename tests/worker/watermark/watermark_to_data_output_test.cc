#include "worker/watermark/watermark_to_data_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/worker/watermark/recording_outputs.h"

namespace keyflow {
namespace {

using test::RecordingDataOutput;
using ::testing::ElementsAre;

TEST(WatermarkToDataOutput, ForwardsOnlyStrictlyIncreasingWatermarks) {
  RecordingDataOutput down;
  WatermarkToDataOutput out(down);
  out.EmitWatermark(kMinWatermark);  // the initial bound: never forwarded
  out.EmitWatermark(Timestamp(10));
  out.EmitWatermark(Timestamp(10));
  out.EmitWatermark(Timestamp(5));
  out.EmitWatermark(Timestamp(11));
  out.EmitWatermark(kMaxWatermark);
  out.EmitWatermark(kMaxWatermark);
  EXPECT_THAT(down.events, ElementsAre("W:10", "W:11", "W:MAX"));
  EXPECT_EQ(out.max_watermark_so_far(), kMaxWatermark);
}

TEST(WatermarkToDataOutput, ForwardsEachStatusTransitionOnce) {
  RecordingDataOutput down;
  WatermarkToDataOutput out(down);
  out.MarkActive();  // starts active: nothing to say
  out.MarkIdle();
  out.MarkIdle();
  EXPECT_TRUE(out.is_idle());
  out.MarkActive();
  out.MarkActive();
  EXPECT_THAT(down.events, ElementsAre("IDLE", "ACTIVE"));
}

TEST(WatermarkToDataOutput, AnAdvancingWatermarkReactivatesAnIdleStreamFirst) {
  RecordingDataOutput down;
  WatermarkToDataOutput out(down);
  out.EmitWatermark(Timestamp(20));
  out.MarkIdle();
  out.EmitWatermark(Timestamp(20));  // not advancing: the stream stays idle, nothing forwarded
  EXPECT_TRUE(out.is_idle());
  EXPECT_THAT(down.Take(), ElementsAre("W:20", "IDLE"));
  out.EmitWatermark(Timestamp(21));
  EXPECT_FALSE(out.is_idle());
  EXPECT_THAT(down.Take(), ElementsAre("ACTIVE", "W:21"));
}

TEST(WatermarkToDataOutput, EndOfInputFromAnIdleSourceIsActiveThenMaxWatermark) {
  RecordingDataOutput down;
  WatermarkToDataOutput out(down);
  out.MarkIdle();
  out.EmitWatermark(kMaxWatermark);
  EXPECT_THAT(down.events, ElementsAre("IDLE", "ACTIVE", "W:MAX"));
}

}  // namespace
}  // namespace keyflow
