#include "worker/watermark/status_watermark_valve.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/worker/watermark/recording_outputs.h"

namespace keyflow {
namespace {

using test::RecordingDataOutput;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr WatermarkStatus kIdle = WatermarkStatus::kIdle;
constexpr WatermarkStatus kActive = WatermarkStatus::kActive;

// Drives a valve and returns what each input produced.
class ValveDriver {
 public:
  explicit ValveDriver(int32_t channels) : valve(channels) {}
  std::vector<std::string> W(int32_t channel, int64_t ms) {
    valve.InputWatermark(Timestamp(ms), SubtaskIndex(channel), out);
    return out.Take();
  }
  std::vector<std::string> Max(int32_t channel) {
    valve.InputWatermark(kMaxWatermark, SubtaskIndex(channel), out);
    return out.Take();
  }
  std::vector<std::string> S(int32_t channel, WatermarkStatus status) {
    valve.InputWatermarkStatus(status, SubtaskIndex(channel), out);
    return out.Take();
  }

  StatusWatermarkValve valve;
  RecordingDataOutput out;
};

TEST(StatusWatermarkValve, StartsAtMinWatermarkActiveAndAligned) {
  StatusWatermarkValve valve(3);
  EXPECT_EQ(valve.num_channels(), 3);
  EXPECT_EQ(valve.last_output_watermark(), kMinWatermark);
  EXPECT_EQ(valve.last_output_status(), kActive);
  for (int32_t c = 0; c < 3; ++c) {
    EXPECT_EQ(valve.channel_watermark(SubtaskIndex(c)), kMinWatermark);
    EXPECT_EQ(valve.channel_status(SubtaskIndex(c)), kActive);
    EXPECT_TRUE(valve.channel_aligned(SubtaskIndex(c)));
  }
}

TEST(StatusWatermarkValve, SingleChannelForwardsIncreasingWatermarksAndDropsEqualOrDecreasing) {
  ValveDriver v(1);
  EXPECT_THAT(v.W(0, 0), ElementsAre("W:0"));
  EXPECT_THAT(v.W(0, 25), ElementsAre("W:25"));
  EXPECT_THAT(v.W(0, 25), IsEmpty());  // equal: dropped
  EXPECT_THAT(v.W(0, 18), IsEmpty());  // decreasing: dropped
  EXPECT_EQ(v.valve.channel_watermark(SubtaskIndex(0)), Timestamp(25));
  EXPECT_THAT(v.W(0, 26), ElementsAre("W:26"));
}

TEST(StatusWatermarkValve, EmitsTheMinimumOverChannelsOnlyWhenItAdvances) {
  ValveDriver v(3);
  EXPECT_THAT(v.W(0, 10), IsEmpty());  // channels 1 and 2 still at MIN
  EXPECT_THAT(v.W(1, 5), IsEmpty());
  EXPECT_THAT(v.W(2, 3), ElementsAre("W:3"));
  EXPECT_THAT(v.W(2, 7), ElementsAre("W:5"));
  EXPECT_THAT(v.W(1, 6), ElementsAre("W:6"));
  EXPECT_THAT(v.W(0, 12), IsEmpty());  // not the minimum
  EXPECT_THAT(v.W(1, 20), ElementsAre("W:7"));
  EXPECT_THAT(v.W(2, 30), ElementsAre("W:12"));
  EXPECT_THAT(v.W(2, 8),
              IsEmpty());  // decreasing on channel 2: dropped, channel keeps 30
  EXPECT_THAT(v.W(0, 25), ElementsAre("W:20"));
  EXPECT_EQ(v.valve.last_output_watermark(), Timestamp(20));
}

TEST(StatusWatermarkValve, IdleChannelDropsOutOfTheMinimum) {
  ValveDriver v(3);
  EXPECT_THAT(v.W(0, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 15), IsEmpty());
  // Channel 2 (at MIN == last output) goes idle: the minimum of 0 and 1 is
  // emitted.
  EXPECT_THAT(v.S(2, kIdle), ElementsAre("W:10"));
  EXPECT_FALSE(v.valve.channel_aligned(SubtaskIndex(2)));
  EXPECT_THAT(v.W(0, 20), ElementsAre("W:15"));
  // Channel 1 (at 15 == last output) goes idle: channel 0 alone decides.
  EXPECT_THAT(v.S(1, kIdle), ElementsAre("W:20"));
  EXPECT_THAT(v.W(0, 21), ElementsAre("W:21"));
}

TEST(StatusWatermarkValve, ChannelGoingIdleAboveTheOutputEmitsNothing) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 4), ElementsAre("W:4"));
  EXPECT_THAT(v.S(0, kIdle),
              IsEmpty());  // 10 != last output 4: the minimum cannot move
  EXPECT_THAT(v.W(1, 12), ElementsAre("W:12"));
}

TEST(StatusWatermarkValve, IdleChannelIgnoresWatermarks) {
  ValveDriver v(2);
  EXPECT_THAT(v.S(1, kIdle),
              IsEmpty());  // channel 0 still at MIN: nothing to emit
  EXPECT_THAT(v.W(1, 50), IsEmpty());
  EXPECT_EQ(v.valve.channel_watermark(SubtaskIndex(1)), kMinWatermark);
  EXPECT_THAT(v.W(0, 5), ElementsAre("W:5"));
}

TEST(StatusWatermarkValve, AllIdleFlushesTheMaxWatermarkWhenTheLastIdleChannelHeldTheOutput) {
  ValveDriver v(3);
  EXPECT_THAT(v.W(0, 30), IsEmpty());
  EXPECT_THAT(v.W(1, 20), IsEmpty());
  EXPECT_THAT(v.W(2, 10), ElementsAre("W:10"));
  EXPECT_THAT(v.S(0, kIdle), IsEmpty());  // 30 != 10
  EXPECT_THAT(v.S(1, kIdle), IsEmpty());  // 20 != 10
  // Channel 2 holds the output (10) and is the last active one: flush max(30,
  // 20, 10), then IDLE.
  EXPECT_THAT(v.S(2, kIdle), ElementsAre("W:30", "IDLE"));
  EXPECT_EQ(v.valve.last_output_watermark(), Timestamp(30));
  EXPECT_EQ(v.valve.last_output_status(), kIdle);
}

TEST(StatusWatermarkValve, AllIdleWithoutFlushWhenTheLastIdleChannelWasAboveTheOutput) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 20), ElementsAre("W:10"));
  // Channel 0 (== output) goes idle: the minimum moves to channel 1's 20.
  EXPECT_THAT(v.S(0, kIdle), ElementsAre("W:20"));
  EXPECT_THAT(v.W(1, 25), ElementsAre("W:25"));
  // Channel 1 is the output holder again: flush max = 25 -> not greater; only
  // IDLE.
  EXPECT_THAT(v.S(1, kIdle), ElementsAre("IDLE"));

  ValveDriver u(2);
  EXPECT_THAT(u.W(0, 10), IsEmpty());
  EXPECT_THAT(u.W(1, 5), ElementsAre("W:5"));
  EXPECT_THAT(u.S(1, kIdle), ElementsAre("W:10"));  // channel 0 alone: 10
  EXPECT_THAT(u.W(0, 40), ElementsAre("W:40"));
  EXPECT_THAT(u.S(0, kIdle),
              ElementsAre("IDLE"));  // 40 == output, max 40 not greater
}

TEST(StatusWatermarkValve, AllIdleDoesNotFlushWhenTheLastIdleChannelWasNotHoldingTheOutput) {
  ValveDriver v(3);
  EXPECT_THAT(v.W(0, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 30), IsEmpty());
  EXPECT_THAT(v.W(2, 5), ElementsAre("W:5"));
  EXPECT_THAT(v.S(2, kIdle), ElementsAre("W:10"));
  EXPECT_THAT(v.S(2, kActive),
              IsEmpty());                 // back at 5 < 10: active but unaligned
  EXPECT_THAT(v.S(1, kIdle), IsEmpty());  // 30 != 10
  EXPECT_THAT(v.S(0, kIdle),
              IsEmpty());  // holds 10, but no aligned channel is left
  // The last active channel (unaligned, at 5) goes idle: 5 != 10, so no max
  // flush even though channel 1 saw 30 (Flink's rule: the flush only replaces
  // the last holder's advance).
  EXPECT_THAT(v.S(2, kIdle), ElementsAre("IDLE"));
  EXPECT_EQ(v.valve.last_output_watermark(), Timestamp(10));
}

TEST(StatusWatermarkValve, IdleValveIgnoresWatermarksAndRepeatedStatuses) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 7), IsEmpty());
  EXPECT_THAT(v.W(1, 9), ElementsAre("W:7"));
  EXPECT_THAT(v.S(0, kIdle), ElementsAre("W:9"));
  EXPECT_THAT(v.S(0, kIdle), IsEmpty());  // repeated IDLE
  EXPECT_THAT(v.S(1, kIdle), ElementsAre("IDLE"));
  EXPECT_THAT(v.S(1, kIdle), IsEmpty());
  EXPECT_THAT(v.W(0, 100), IsEmpty());
  EXPECT_THAT(v.W(1, 100), IsEmpty());
  EXPECT_EQ(v.valve.last_output_watermark(), Timestamp(9));
  EXPECT_EQ(v.valve.last_output_status(), kIdle);
}

TEST(StatusWatermarkValve, RepeatedActiveStatusProducesNoOutput) {
  ValveDriver v(2);
  EXPECT_THAT(v.S(0, kActive), IsEmpty());
  EXPECT_THAT(v.S(0, kIdle), IsEmpty());
  EXPECT_THAT(v.S(0, kActive),
              IsEmpty());  // valve never went idle: no ACTIVE output
  EXPECT_THAT(v.S(0, kActive), IsEmpty());
}

TEST(StatusWatermarkValve, ReactivatedChannelBehindTheOutputMustCatchUpBeforeItCounts) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 10), ElementsAre("W:10"));
  EXPECT_THAT(v.S(0, kIdle),
              IsEmpty());  // 10 == output, but min of channel 1 is 10 too
  EXPECT_THAT(v.W(1, 50), ElementsAre("W:50"));
  // Channel 0 comes back at 10 < 50: active but unaligned; it does not hold the
  // output back.
  EXPECT_THAT(v.S(0, kActive), IsEmpty());
  EXPECT_FALSE(v.valve.channel_aligned(SubtaskIndex(0)));
  EXPECT_THAT(v.W(1, 60), ElementsAre("W:60"));
  EXPECT_THAT(v.W(0, 40), IsEmpty());  // still behind (60): unaligned
  EXPECT_FALSE(v.valve.channel_aligned(SubtaskIndex(0)));
  EXPECT_THAT(v.W(0, 60),
              IsEmpty());  // caught up (>= 60): aligned, minimum 60 not > 60
  EXPECT_TRUE(v.valve.channel_aligned(SubtaskIndex(0)));
  EXPECT_THAT(v.W(1, 90), IsEmpty());  // now channel 0 holds the output at 60
  EXPECT_THAT(v.W(0, 70), ElementsAre("W:70"));
}

TEST(StatusWatermarkValve, ReactivatedChannelAtOrAboveTheOutputIsAlignedAtOnce) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 30), IsEmpty());
  EXPECT_THAT(v.W(1, 20), ElementsAre("W:20"));
  EXPECT_THAT(v.S(0, kIdle), IsEmpty());
  EXPECT_THAT(v.S(0, kActive),
              IsEmpty());  // 30 >= 20: aligned again, no output by itself
  EXPECT_TRUE(v.valve.channel_aligned(SubtaskIndex(0)));
  EXPECT_THAT(v.W(1, 40),
              ElementsAre("W:30"));  // channel 0 holds the output back again
}

TEST(StatusWatermarkValve, ValveBecomesActiveWhenAnyChannelReturnsAndNeverEmitsWhileAllUnaligned) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 20), IsEmpty());
  EXPECT_THAT(v.W(1, 5), ElementsAre("W:5"));
  EXPECT_THAT(v.S(0, kIdle), IsEmpty());
  EXPECT_THAT(v.S(1, kIdle), ElementsAre("W:20", "IDLE"));  // channel 1 held 5: flush 20
  // Channel 1 returns at 5 < 20: the valve is ACTIVE again, but its only active
  // channel is unaligned, so nothing is emitted however it moves until it
  // reaches 20.
  EXPECT_THAT(v.S(1, kActive), ElementsAre("ACTIVE"));
  EXPECT_THAT(v.W(1, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 19), IsEmpty());
  EXPECT_THAT(v.S(1, kActive), IsEmpty());
  EXPECT_THAT(v.W(1, 21), ElementsAre("W:21"));
  EXPECT_EQ(v.valve.last_output_status(), kActive);
}

TEST(StatusWatermarkValve, EndOfInputOnEveryChannelEmitsMaxWatermark) {
  ValveDriver v(3);
  EXPECT_THAT(v.W(0, 10), IsEmpty());
  EXPECT_THAT(v.W(1, 20), IsEmpty());
  EXPECT_THAT(v.W(2, 30), ElementsAre("W:10"));
  EXPECT_THAT(v.Max(0),
              ElementsAre("W:20"));  // an ended channel never holds back again
  EXPECT_THAT(v.Max(2), IsEmpty());
  EXPECT_THAT(v.Max(1), ElementsAre("W:MAX"));
  EXPECT_THAT(v.W(1, 5), IsEmpty());
}

TEST(StatusWatermarkValve, EndOfInputOfAnIdleSourceArrivesAsActiveThenMax) {
  ValveDriver v(2);
  EXPECT_THAT(v.W(0, 8), IsEmpty());
  EXPECT_THAT(v.S(1, kIdle), ElementsAre("W:8"));
  EXPECT_THAT(v.Max(0), ElementsAre("W:MAX"));
  // Channel 1 ends while idle: WatermarkToDataOutput sends ACTIVE, then MAX.
  // Nothing changes.
  EXPECT_THAT(v.S(1, kActive), IsEmpty());
  EXPECT_THAT(v.Max(1), IsEmpty());
  EXPECT_EQ(v.valve.last_output_watermark(), kMaxWatermark);
}

// A literal, O(channels) transcription of the rules, to check the heap-based
// valve against on random inputs with many channels.
class ReferenceValve {
 public:
  explicit ReferenceValve(int32_t n) : wm_(n, kMinWatermark), idle_(n, false), aligned_(n, true) {}

  void Watermark(Timestamp w, int32_t c, RecordingDataOutput& out) {
    if (valve_idle_ || idle_[c] || w <= wm_[c]) return;
    wm_[c] = w;
    if (!aligned_[c] && w >= last_) aligned_[c] = true;
    EmitMin(out);
  }
  void Status(WatermarkStatus s, int32_t c, RecordingDataOutput& out) {
    const int32_t n = static_cast<int32_t>(wm_.size());
    if (s == kIdle && !idle_[c]) {
      idle_[c] = true;
      aligned_[c] = false;
      bool all_idle = true;
      for (int32_t i = 0; i < n; ++i) all_idle = all_idle && idle_[i];
      if (all_idle) {
        if (wm_[c] == last_) {
          Timestamp max = *std::max_element(wm_.begin(), wm_.end());
          if (max > last_) {
            last_ = max;
            out.EmitWatermark(max);
          }
        }
        valve_idle_ = true;
        out.EmitWatermarkStatus(kIdle);
      } else if (wm_[c] == last_) {
        EmitMin(out);
      }
    } else if (s == kActive && idle_[c]) {
      idle_[c] = false;
      if (wm_[c] >= last_) aligned_[c] = true;
      if (valve_idle_) {
        valve_idle_ = false;
        out.EmitWatermarkStatus(kActive);
      }
    }
  }

 private:
  void EmitMin(RecordingDataOutput& out) {
    bool any = false;
    Timestamp min = kMaxWatermark;
    for (size_t i = 0; i < wm_.size(); ++i) {
      if (aligned_[i]) {
        any = true;
        min = std::min(min, wm_[i]);
      }
    }
    if (any && min > last_) {
      last_ = min;
      out.EmitWatermark(min);
    }
  }

  std::vector<Timestamp> wm_;
  std::vector<bool> idle_;
  std::vector<bool> aligned_;
  Timestamp last_ = kMinWatermark;
  bool valve_idle_ = false;
};

// Random inputs: few channels reach "all idle" and realignment often, 300 channels stress the
// heap.
TEST(StatusWatermarkValve, MatchesAReferenceTranscriptionOnRandomInput) {
  for (int32_t channels : {1, 2, 3, 7, 300}) {
    for (uint32_t seed = 1; seed <= 8; ++seed) {
      std::mt19937 rng(seed);
      // Few channels: mostly idle, so "all idle" and reactivation happen often.
      const int32_t idle_percent = channels <= 7 ? 8 : 4;
      StatusWatermarkValve valve(channels);
      ReferenceValve reference(channels);
      RecordingDataOutput got;
      RecordingDataOutput want;
      std::vector<int64_t> next(channels, 0);
      std::uniform_int_distribution<int32_t> channel(0, channels - 1);
      std::uniform_int_distribution<int32_t> action(0, 99);
      int64_t watermarks = 0;
      int64_t idles = 0;
      for (int step = 0; step < 20000; ++step) {
        const int32_t c = channel(rng);
        const int32_t a = action(rng);
        if (a < idle_percent) {
          valve.InputWatermarkStatus(kIdle, SubtaskIndex(c), got);
          reference.Status(kIdle, c, want);
        } else if (a < 12) {
          valve.InputWatermarkStatus(kActive, SubtaskIndex(c), got);
          reference.Status(kActive, c, want);
        } else {
          // Mostly increasing per channel, sometimes equal or decreasing.
          const int64_t w = next[c] + static_cast<int64_t>(action(rng)) - 10;
          next[c] = std::max(next[c], w);
          valve.InputWatermark(Timestamp(w), SubtaskIndex(c), got);
          reference.Watermark(Timestamp(w), c, want);
        }
        ASSERT_EQ(got.events, want.events)
            << channels << " channels, seed " << seed << ", step " << step;
        for (const std::string& e : got.events) (e == "IDLE" ? idles : watermarks) += 1;
        got.events.clear();
        want.events.clear();
      }
      // The run really exercised the output.
      EXPECT_GT(watermarks, 20) << channels << " channels, seed " << seed;
      if (channels <= 7) {
        EXPECT_GT(idles, 10) << channels << " channels, seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace keyflow
