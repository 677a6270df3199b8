// SplitWatermarkMultiplexer: the minimum over splits, ended splits, idleness when every split
// ended, and per-split idleness on a manual clock (no sleeping): an idle split stops holding back
// the watermark, comes back with its next record, and all idle splits make the output idle.
#include "worker/watermark/split_watermark_multiplexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/worker/watermark/recording_outputs.h"

namespace keyflow {
namespace {

using test::RecordingWatermarkOutput;
using Events = std::vector<std::string>;

constexpr Duration kBound = Duration::Millis(100);

TEST(SplitWatermarkMultiplexerTest, TheWatermarkIsTheMinimumOverSplitsThatHaveNotEnded) {
  SplitWatermarkMultiplexer mux(2, kBound);
  RecordingWatermarkOutput out;
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:MIN"}) << "a split without records holds it at the minimum";
  mux.OnSplitEvent(0, Timestamp(1'000));
  mux.OnSplitEvent(1, Timestamp(5'000));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:899"});
  mux.SplitFinished(0);
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:4899"});
  mux.SplitFinished(1);
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{}) << "the end of input emits the final watermark itself";
  mux.set_idle_when_all_ended(true);
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"IDLE"}) << "waiting for more splits";
  const size_t added = mux.AddSplit();
  EXPECT_EQ(added, 2u);
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:MIN"});
}

TEST(SplitWatermarkMultiplexerTest, AnIdleSplitStopsHoldingBackTheWatermarkUntilItsNextRecord) {
  ManualClock clock(Timestamp(0));
  SplitWatermarkMultiplexer mux(2, kBound);
  mux.set_split_idle_timeout(Duration::Millis(500), &clock);
  RecordingWatermarkOutput out;
  mux.OnSplitEvent(0, Timestamp(1'000));
  mux.OnSplitEvent(1, Timestamp(9'000));
  mux.OnPeriodicEmit(out);  // both had records
  EXPECT_EQ(out.Take(), Events{"W:899"});
  // Split 1 goes on; split 0 has nothing more: the first check starts its timer, ...
  mux.OnSplitEvent(1, Timestamp(9'100));
  clock.Advance(Duration::Millis(200));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:899"});
  // ... it is idle only once more than the timeout passed (strictly, as WatermarksWithIdleness).
  mux.OnSplitEvent(1, Timestamp(9'200));
  clock.Advance(Duration::Millis(500));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:899"});
  EXPECT_FALSE(mux.split_idle(0));
  mux.OnSplitEvent(1, Timestamp(9'300));
  clock.Advance(Duration::Millis(1));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"W:9199"}) << "split 0 no longer holds it back";
  EXPECT_TRUE(mux.split_idle(0));
  EXPECT_FALSE(mux.split_idle(1));
  EXPECT_EQ(mux.CurrentWatermark(), Timestamp(9'199));
  // Split 0's next record makes it count again (the generator never goes back: the output
  // drops a lower watermark).
  mux.OnSplitEvent(0, Timestamp(1'500));
  mux.OnSplitEvent(1, Timestamp(9'400));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), (Events{"ACTIVE", "W:1399"}));
  EXPECT_FALSE(mux.split_idle(0));
}

TEST(SplitWatermarkMultiplexerTest, WhenEverySplitIsIdleTheOutputIsIdleAndARecordEndsIt) {
  ManualClock clock(Timestamp(0));
  SplitWatermarkMultiplexer mux(2, kBound);
  mux.set_split_idle_timeout(Duration::Millis(100), &clock);
  RecordingWatermarkOutput out;
  mux.OnPeriodicEmit(out);  // no records at all: the timers start
  EXPECT_EQ(out.Take(), Events{"W:MIN"});
  clock.Advance(Duration::Millis(101));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"IDLE"}) << "a partition that never had data does not stall";
  mux.OnSplitEvent(1, Timestamp(2'000));
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), (Events{"ACTIVE", "W:1899"}));
  // A finished split is neither idle nor active; the other one decides.
  mux.SplitFinished(1);
  mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), Events{"IDLE"});
}

TEST(SplitWatermarkMultiplexerTest, WithoutATimeoutASplitWithoutRecordsHoldsTheWatermarkForever) {
  SplitWatermarkMultiplexer mux(2, kBound);
  RecordingWatermarkOutput out;
  mux.OnSplitEvent(1, Timestamp(2'000));
  for (int i = 0; i < 3; ++i) mux.OnPeriodicEmit(out);
  EXPECT_EQ(out.Take(), (Events{"W:MIN", "W:MIN", "W:MIN"}));
  EXPECT_FALSE(mux.split_idle(0));
}

}  // namespace
}  // namespace keyflow
