#include "common/logging/log_rate_limiter.h"

#include <gtest/gtest.h>

#include <string>

namespace keyflow {
namespace {

LogRateLimiterOptions Options(const Clock* clock) {
  LogRateLimiterOptions o;
  o.interval = Duration::Seconds(60);
  o.clock = clock;
  return o;
}

TEST(LogRateLimiterTest, LogsOncePerKeyPerIntervalThenReportsTheSuppressedCount) {
  ManualClock clock(Timestamp(1'000'000));
  LogRateLimiter limiter(Options(&clock));
  LogDecision first = limiter.ShouldLog("peer-a/bad frame");
  EXPECT_TRUE(first.log);
  EXPECT_EQ(first.suppressed, 0u);
  for (int i = 0; i < 41; ++i) EXPECT_FALSE(limiter.ShouldLog("peer-a/bad frame").log);
  clock.Advance(Duration::Millis(59'999));
  EXPECT_FALSE(limiter.ShouldLog("peer-a/bad frame").log);  // 42 suppressed
  clock.Advance(Duration::Millis(1));
  LogDecision next = limiter.ShouldLog("peer-a/bad frame");
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.suppressed, 42u);
  // The count starts again after a logged line.
  clock.Advance(Duration::Seconds(60));
  LogDecision quiet = limiter.ShouldLog("peer-a/bad frame");
  EXPECT_TRUE(quiet.log);
  EXPECT_EQ(quiet.suppressed, 0u);
  EXPECT_EQ(limiter.suppressed_total(), 42u);
}

TEST(LogRateLimiterTest, KeysAreLimitedIndependently) {
  ManualClock clock;
  LogRateLimiter limiter(Options(&clock));
  EXPECT_TRUE(limiter.ShouldLog("a").log);
  EXPECT_TRUE(limiter.ShouldLog("b").log);
  EXPECT_FALSE(limiter.ShouldLog("a").log);
  EXPECT_FALSE(limiter.ShouldLog("b").log);
  EXPECT_TRUE(limiter.ShouldLog("c").log);
  EXPECT_EQ(limiter.tracked_keys(), 3u);
}

TEST(LogRateLimiterTest, AFloodOfFreshKeysIsCappedPerIntervalOverAllKeys) {
  ManualClock clock;
  LogRateLimiterOptions o = Options(&clock);
  o.max_lines_per_interval = 5;
  LogRateLimiter limiter(o);
  int logged = 0;
  for (int i = 0; i < 1000; ++i) logged += limiter.ShouldLog("peer-" + std::to_string(i)).log;
  EXPECT_EQ(logged, 5);
  EXPECT_EQ(limiter.suppressed_total(), 995u);
  EXPECT_EQ(limiter.tracked_keys(), 5u);  // keys the budget suppressed are not tracked
  clock.Advance(Duration::Seconds(60));
  EXPECT_TRUE(limiter.ShouldLog("peer-999").log);
}

TEST(LogRateLimiterTest, KeyMapStaysWithinItsCapDroppingExpiredThenOldestKeys) {
  ManualClock clock;
  LogRateLimiterOptions o = Options(&clock);
  o.max_keys = 3;
  o.max_lines_per_interval = 1000;
  LogRateLimiter limiter(o);
  EXPECT_TRUE(limiter.ShouldLog("old").log);
  clock.Advance(Duration::Seconds(61));
  EXPECT_TRUE(limiter.ShouldLog("a").log);
  clock.Advance(Duration::Seconds(1));
  EXPECT_TRUE(limiter.ShouldLog("b").log);
  EXPECT_EQ(limiter.tracked_keys(), 3u);
  // "old" has expired: it goes first; a, b stay limited.
  EXPECT_TRUE(limiter.ShouldLog("c").log);
  EXPECT_EQ(limiter.tracked_keys(), 3u);
  EXPECT_FALSE(limiter.ShouldLog("a").log);
  EXPECT_FALSE(limiter.ShouldLog("b").log);
  // Nothing expired: the oldest ("a") is dropped for "d", so "a" logs again (its count is gone).
  EXPECT_TRUE(limiter.ShouldLog("d").log);
  EXPECT_EQ(limiter.tracked_keys(), 3u);
  EXPECT_FALSE(limiter.ShouldLog("b").log);
  LogDecision a = limiter.ShouldLog("a");
  EXPECT_TRUE(a.log);
  EXPECT_EQ(a.suppressed, 0u);
  EXPECT_EQ(limiter.tracked_keys(), 3u);
}

TEST(LogRateLimiterTest, SuppressedNoteIsEmptyForZeroAndCountsOtherwise) {
  EXPECT_EQ(SuppressedNote(0), "");
  EXPECT_EQ(SuppressedNote(1), " (1 similar message suppressed since the last one)");
  EXPECT_EQ(SuppressedNote(1700000), " (1700000 similar messages suppressed since the last one)");
}

}  // namespace
}  // namespace keyflow
