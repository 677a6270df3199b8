#include "state/timers/internal_timer_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "tests/state/timers/timer_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using testing_timers::Fired;
using testing_timers::FiredTimer;
using testing_timers::GroupOf;
using testing_timers::KeyInGroup;
using testing_timers::OrderKey;
using testing_timers::Timer;
using testing_timers::TimerHarness;

constexpr Namespace kNs0{0};
constexpr Namespace kNs1{1};

TEST(InternalTimerServiceTest, StartsAtTheMinimumWatermarkAndReadsTheProcessingClock) {
  TimerHarness h(KeyGroupRange::Of(0, 127), Timestamp(1234));
  EXPECT_EQ(h.service.CurrentWatermark(), kMinWatermark);
  EXPECT_EQ(h.service.CurrentProcessingTime(), Timestamp(1234));
  h.clock.SetCurrentTime(Timestamp(2000));
  EXPECT_EQ(h.service.CurrentProcessingTime(), Timestamp(2000));
}

TEST(InternalTimerServiceTest, RegisteringTheSameTimerTwiceKeepsOneThatFiresOnce) {
  TimerHarness h;
  h.SetKey(7);
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(10));
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(10));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(10));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(10));
  EXPECT_EQ(h.service.NumEventTimers(), 1u);
  EXPECT_EQ(h.service.NumProcessingTimers(), 1u);
  EXPECT_EQ(h.service.NumTimers(GroupOf(7)), 2u);
  h.service.AdvanceWatermark(Timestamp(10));
  h.clock.SetCurrentTime(Timestamp(10));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('E', 10, 7), Fired('P', 10, 7)}));
  h.service.AdvanceWatermark(Timestamp(20));
  h.clock.SetCurrentTime(Timestamp(20));
  EXPECT_EQ(h.target.fired.size(), 2u);  // fired once each
}

TEST(InternalTimerServiceTest, DeletedTimersDoNotFire) {
  TimerHarness h;
  h.SetKey(7);
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(10));
  h.service.RegisterEventTimeTimer(kNs1, Timestamp(10));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(10));
  h.service.DeleteEventTimeTimer(kNs1, Timestamp(10));
  h.service.DeleteEventTimeTimer(kNs1, Timestamp(11));  // never registered: no-op
  h.service.DeleteProcessingTimeTimer(kNs0, Timestamp(10));
  h.SetKey(8);
  h.service.DeleteEventTimeTimer(kNs0, Timestamp(10));  // other key: no-op
  EXPECT_EQ(h.service.NumEventTimers(), 1u);
  EXPECT_EQ(h.service.NumProcessingTimers(), 0u);
  h.service.AdvanceWatermark(Timestamp(100));
  h.clock.SetCurrentTime(Timestamp(100));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('E', 10, 7)}));
}

// Random timers over many key groups with many timestamp ties: the firing sequence must be
// exactly the documented order (timestamp, key group, key bytes, namespace), in both domains.
TEST(InternalTimerServiceTest, FiresTimersInTimestampOrderWithTiesBrokenByKeyGroupKeyNamespace) {
  TimerHarness h;
  std::mt19937_64 rng(3);
  std::vector<TimerEntry> timers;
  for (int i = 0; i < 600; ++i) {
    const int64_t key = static_cast<int64_t>(rng() % 400);
    const TimerEntry t =
        Timer(static_cast<int64_t>(rng() % 6), key, static_cast<int64_t>(rng() % 2));
    h.SetKey(key);
    h.service.RegisterEventTimeTimer(t.ns, t.timestamp);
    h.service.RegisterProcessingTimeTimer(t.ns, t.timestamp);
    timers.push_back(t);
  }
  std::sort(timers.begin(), timers.end(),
            [](const TimerEntry& a, const TimerEntry& b) { return OrderKey(a) < OrderKey(b); });
  timers.erase(std::unique(timers.begin(), timers.end()), timers.end());
  std::vector<FiredTimer> expected_event, expected_processing;
  for (const TimerEntry& t : timers) {
    expected_event.push_back(Fired('E', t.timestamp.millis(), t.key.AsInt64(), t.ns.value()));
    expected_processing.push_back(Fired('P', t.timestamp.millis(), t.key.AsInt64(), t.ns.value()));
  }
  h.service.AdvanceWatermark(Timestamp(5));
  EXPECT_EQ(h.target.fired, expected_event);
  h.target.fired.clear();
  h.clock.SetCurrentTime(Timestamp(5));
  EXPECT_EQ(h.target.fired, expected_processing);
}

TEST(InternalTimerServiceTest, SetsTheKeyContextToEachTimersKeyBeforeItsCallback) {
  TimerHarness h;
  const int64_t a = KeyInGroup(1), b = KeyInGroup(64), c = KeyInGroup(127);
  for (int64_t key : {a, b, c}) {
    h.SetKey(key);
    h.service.RegisterEventTimeTimer(kNs0, Timestamp(key % 3));
  }
  h.SetKey(KeyInGroup(50));  // some unrelated current key
  h.service.AdvanceWatermark(Timestamp(10));
  ASSERT_EQ(h.target.fired.size(), 3u);
  for (const FiredTimer& f : h.target.fired) {
    EXPECT_EQ(f.context_key, f.key);
    EXPECT_EQ(f.context_key_group, GroupOf(f.key).value());
  }
  EXPECT_EQ(h.key_context.current_key().AsInt64(), h.target.fired.back().key);
}

TEST(InternalTimerServiceTest, EventTimersFireUpToTheWatermarkInclusive) {
  TimerHarness h;
  h.SetKey(1);
  for (int64_t ts : {30, 10, 20, 40}) h.service.RegisterEventTimeTimer(kNs0, Timestamp(ts));
  h.service.AdvanceWatermark(Timestamp(19));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('E', 10, 1)}));
  h.service.AdvanceWatermark(Timestamp(30));
  EXPECT_EQ(h.target.fired,
            (std::vector<FiredTimer>{Fired('E', 10, 1), Fired('E', 20, 1), Fired('E', 30, 1)}));
  EXPECT_EQ(h.service.NumEventTimers(), 1u);
  EXPECT_EQ(h.service.CurrentWatermark(), Timestamp(30));
}

TEST(InternalTimerServiceTest, CallbacksSeeTheNewWatermark) {
  TimerHarness h;
  std::vector<Timestamp> seen;
  h.target.on_fire = [&](char, const TimerEntry&) { seen.push_back(h.service.CurrentWatermark()); };
  h.SetKey(1);
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(5));
  h.service.AdvanceWatermark(Timestamp(8));
  EXPECT_EQ(seen, (std::vector<Timestamp>{Timestamp(8)}));
}

TEST(InternalTimerServiceTest, EventTimersRegisteredByACallbackFireInTheSameLoopIfDue) {
  TimerHarness h;
  const int64_t a = KeyInGroup(3), b = KeyInGroup(90);
  h.target.on_fire = [&](char, const TimerEntry& t) {
    if (t.timestamp == Timestamp(100) && t.ns == kNs0) {
      // Current key is a (set by the service).
      h.service.RegisterEventTimeTimer(kNs0, Timestamp(80));   // already due
      h.service.RegisterEventTimeTimer(kNs1, Timestamp(100));  // due (equal to W)
      h.service.RegisterEventTimeTimer(kNs0, Timestamp(101));  // not due
      h.SetKey(b);
      h.service.RegisterEventTimeTimer(kNs0, Timestamp(90));  // due, another key
    }
  };
  h.SetKey(a);
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(100));
  h.service.AdvanceWatermark(Timestamp(100));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('E', 100, a, 0), Fired('E', 80, a, 0),
                                                     Fired('E', 90, b, 0), Fired('E', 100, a, 1)}));
  EXPECT_EQ(h.service.NumEventTimers(), 1u);  // the one at 101
  h.service.AdvanceWatermark(Timestamp(101));
  EXPECT_EQ(h.target.fired.back(), Fired('E', 101, a, 0));
}

TEST(InternalTimerServiceTest, ATimerAtOrBelowTheCurrentWatermarkWaitsForTheNextWatermark) {
  TimerHarness h;
  h.service.AdvanceWatermark(Timestamp(100));
  h.SetKey(4);
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(50));
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(100));
  EXPECT_TRUE(h.target.fired.empty());
  EXPECT_EQ(h.service.NumEventTimers(), 2u);
  h.service.AdvanceWatermark(Timestamp(101));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('E', 50, 4), Fired('E', 100, 4)}));
}

TEST(InternalTimerServiceTest, TheMaxWatermarkFiresEveryEventTimer) {
  TimerHarness h;
  for (int64_t key = 0; key < 50; ++key) {
    h.SetKey(key);
    h.service.RegisterEventTimeTimer(kNs0, Timestamp(key * 1'000'000'000));
    h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(key));
  }
  h.SetKey(99);
  h.service.RegisterEventTimeTimer(kNs0, kMaxWatermark);
  h.service.AdvanceWatermark(kMaxWatermark);
  EXPECT_EQ(h.target.fired.size(), 51u);
  EXPECT_EQ(h.target.fired.back(), Fired('E', kMaxWatermark.millis(), 99));
  EXPECT_EQ(h.service.NumEventTimers(), 0u);
  EXPECT_EQ(h.service.NumProcessingTimers(), 50u);  // the other domain is untouched
}

// --- processing time: the single physical callback --------------------------------------------

TEST(InternalTimerServiceTest, KeepsExactlyOnePhysicalCallbackAtTheEarliestProcessingTimer) {
  TimerHarness h;
  h.SetKey(1);
  EXPECT_EQ(h.clock.NumScheduled(), 0u);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(100));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(300));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(100));
  h.SetKey(2);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(200));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(100));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(50));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(50));

  h.clock.SetCurrentTime(Timestamp(50));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('P', 50, 2)}));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(100));
  h.clock.SetCurrentTime(Timestamp(250));  // 100 and 200 are due
  EXPECT_EQ(h.target.fired,
            (std::vector<FiredTimer>{Fired('P', 50, 2), Fired('P', 100, 1), Fired('P', 200, 2)}));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(300));
  h.clock.SetCurrentTime(Timestamp(300));
  EXPECT_EQ(h.target.fired.back(), Fired('P', 300, 1));
  EXPECT_EQ(h.clock.NumScheduled(), 0u);
  EXPECT_EQ(h.service.NumProcessingTimers(), 0u);
}

TEST(InternalTimerServiceTest, ReschedulesOnlyWhenANewTimerIsEarlierThanTheHead) {
  TimerHarness h;
  h.SetKey(1);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));
  EXPECT_EQ(h.clock.schedules, 1);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));  // duplicate
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(150));  // later
  h.SetKey(KeyInGroup(0));  // a key that orders first at a tie...
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));  // ...but not earlier in time
  EXPECT_EQ(h.clock.schedules, 1);
  EXPECT_EQ(h.clock.cancels, 0);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(99));  // earlier: move the callback
  EXPECT_EQ(h.clock.schedules, 2);
  EXPECT_EQ(h.clock.cancels, 1);
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(99));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(99));  // duplicate of the head
  EXPECT_EQ(h.clock.schedules, 2);
}

TEST(InternalTimerServiceTest, DeletingDoesNotRescheduleAndTheEarlyWakeUpFiresNothing) {
  TimerHarness h;
  h.SetKey(1);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(200));
  h.service.DeleteProcessingTimeTimer(kNs0, Timestamp(100));
  EXPECT_EQ(h.clock.schedules, 1);
  EXPECT_EQ(h.clock.cancels, 0);
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(100));
  h.clock.SetCurrentTime(Timestamp(100));  // early wake-up
  EXPECT_TRUE(h.target.fired.empty());
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(200));  // re-armed for the head
  h.service.DeleteProcessingTimeTimer(kNs0, Timestamp(200));
  h.clock.SetCurrentTime(Timestamp(200));
  EXPECT_TRUE(h.target.fired.empty());
  EXPECT_EQ(h.clock.NumScheduled(), 0u);  // nothing left to arm for
}

TEST(InternalTimerServiceTest, APhysicalCallbackFiresOnlyTimersUpToItsScheduledTime) {
  TimerHarness h;
  std::vector<Timestamp> now_at_fire;
  h.target.on_fire = [&](char, const TimerEntry&) {
    now_at_fire.push_back(h.service.CurrentProcessingTime());
  };
  h.SetKey(1);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(500));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(2000));
  // The manual service runs callback(100) at 1000; it fires 100 only and arms 500, which is
  // also due and runs next; then 2000 is armed.
  h.clock.SetCurrentTime(Timestamp(1000));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('P', 100, 1), Fired('P', 500, 1)}));
  EXPECT_EQ(now_at_fire, (std::vector<Timestamp>{Timestamp(1000), Timestamp(1000)}));
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(2000));
  EXPECT_EQ(h.clock.schedules, 3);
}

TEST(InternalTimerServiceTest, ProcessingTimersRegisteredByACallbackFireInTheSamePassIfDue) {
  TimerHarness h;
  const int64_t a = KeyInGroup(3), b = KeyInGroup(90);
  h.target.on_fire = [&](char, const TimerEntry& t) {
    if (t.timestamp == Timestamp(100) && t.ns == kNs0) {
      h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(150));  // future
      h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(90));   // in the past
      h.service.RegisterProcessingTimeTimer(kNs1, Timestamp(100));  // due now
      h.SetKey(b);
      h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(95));  // due, another key
    }
  };
  h.SetKey(a);
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));
  h.clock.SetCurrentTime(Timestamp(100));
  EXPECT_EQ(h.target.fired, (std::vector<FiredTimer>{Fired('P', 100, a, 0), Fired('P', 90, a, 0),
                                                     Fired('P', 95, b, 0), Fired('P', 100, a, 1)}));
  // Exactly one physical callback remains, at the remaining head.
  EXPECT_EQ(h.service.NumProcessingTimers(), 1u);
  EXPECT_EQ(h.clock.NumScheduled(), 1u);
  EXPECT_EQ(h.clock.NextScheduledTime(), Timestamp(150));
  h.clock.SetCurrentTime(Timestamp(150));
  EXPECT_EQ(h.target.fired.back(), Fired('P', 150, a, 0));
  EXPECT_EQ(h.clock.NumScheduled(), 0u);
}

TEST(InternalTimerServiceTest, ATwelveHourTimerFiresWhenTheManualClockReachesIt) {
  const Timestamp start(1'700'000'000'000);
  const Duration twelve_hours = Duration::Seconds(12 * 3600);
  TimerHarness h(KeyGroupRange::Of(0, 127), start);
  h.SetKey(42);
  h.service.RegisterProcessingTimeTimer(kNs0, start + twelve_hours);
  h.service.RegisterEventTimeTimer(kNs0, start + twelve_hours);
  EXPECT_EQ(h.clock.NextScheduledTime(), start + twelve_hours);
  h.clock.Advance(Duration::Millis(twelve_hours.millis() - 1));
  h.service.AdvanceWatermark(start + twelve_hours - Duration::Millis(1));
  EXPECT_TRUE(h.target.fired.empty());
  h.clock.Advance(Duration::Millis(1));
  h.service.AdvanceWatermark(start + twelve_hours);
  EXPECT_EQ(h.target.fired,
            (std::vector<FiredTimer>{Fired('P', (start + twelve_hours).millis(), 42),
                                     Fired('E', (start + twelve_hours).millis(), 42)}));
}

TEST(InternalTimerServiceTest, DestroyingTheServiceCancelsItsPhysicalCallback) {
  testing_timers::CountingProcessingTimeService clock(Timestamp(0));
  KeyContext key_context(KeyType::kLong, 128, KeyGroupRange::Of(0, 127));
  testing_timers::RecordingTarget target(key_context);
  {
    InternalTimerService service(key_context, clock, target);
    ASSERT_OK(key_context.SetCurrentKey(Key::FromInt64(1)));
    service.RegisterProcessingTimeTimer(kNs0, Timestamp(10));
    EXPECT_EQ(clock.NumScheduled(), 1u);
  }
  EXPECT_EQ(clock.NumScheduled(), 0u);
  clock.SetCurrentTime(Timestamp(10));  // would call into the destroyed service otherwise
  EXPECT_TRUE(target.fired.empty());
}

TEST(InternalTimerServiceDeathTest, RegisteringWithoutACurrentKeyAborts) {
  TimerHarness h;
  EXPECT_DEATH(h.service.RegisterEventTimeTimer(kNs0, Timestamp(1)), "current key");
}

TEST(InternalTimerServiceDeathTest, AWatermarkGoingBackAborts) {
  TimerHarness h;
  h.service.AdvanceWatermark(Timestamp(10));
  EXPECT_DEATH(h.service.AdvanceWatermark(Timestamp(9)), "watermarks never go back");
}

TEST(InternalTimerServiceDeathTest, AdvancingTheWatermarkFromACallbackAborts) {
  TimerHarness h;
  h.target.on_fire = [&](char, const TimerEntry&) { h.service.AdvanceWatermark(Timestamp(20)); };
  h.SetKey(1);
  h.service.RegisterEventTimeTimer(kNs0, Timestamp(5));
  EXPECT_DEATH(h.service.AdvanceWatermark(Timestamp(10)), "from a timer callback");
}

}  // namespace
}  // namespace keyflow
