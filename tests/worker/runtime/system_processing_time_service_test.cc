#include "worker/runtime/system_processing_time_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/clock.h"

namespace keyflow {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class SystemProcessingTimeServiceTest : public ::testing::Test {
 protected:
  // A callback that logs "<name>@<ts it received>".
  ProcessingTimeCallback Log(std::string name) {
    return [this, name](Timestamp ts) { log.push_back(name + "@" + std::to_string(ts.millis())); };
  }

  ManualClock clock{Timestamp(0)};
  SystemProcessingTimeService service{clock};
  std::vector<std::string> log;
};

TEST_F(SystemProcessingTimeServiceTest, ReadsProcessingTimeFromTheInjectedClock) {
  clock.Set(Timestamp(1234));
  EXPECT_EQ(service.CurrentProcessingTime(), Timestamp(1234));
}

TEST_F(SystemProcessingTimeServiceTest, CallbackBecomesDueOneMilliAfterItsTimestamp) {
  service.Schedule(Timestamp(100), Log("a"));
  EXPECT_EQ(service.NextDueTime(), Timestamp(101));
  EXPECT_EQ(service.RunDueCallbacks(Timestamp(99)), 0u);
  EXPECT_EQ(service.RunDueCallbacks(Timestamp(100)),
            0u);  // ts itself is not enough
  EXPECT_THAT(log, IsEmpty());
  EXPECT_EQ(service.RunDueCallbacks(Timestamp(101)), 1u);
  EXPECT_THAT(log, ElementsAre("a@100"));  // the scheduled ts, not the clock
  EXPECT_EQ(service.NextDueTime(), std::nullopt);
  EXPECT_EQ(service.NumScheduled(), 0u);
}

TEST_F(SystemProcessingTimeServiceTest, RunsDueCallbacksInTimestampThenSchedulingOrder) {
  service.Schedule(Timestamp(30), Log("a"));
  service.Schedule(Timestamp(10), Log("b"));
  service.Schedule(Timestamp(30), Log("c"));
  service.Schedule(Timestamp(20), Log("d"));
  service.Schedule(Timestamp(30), Log("e"));
  EXPECT_EQ(service.NextDueTime(), Timestamp(11));
  EXPECT_EQ(service.RunDueCallbacks(Timestamp(1000)), 5u);
  EXPECT_THAT(log, ElementsAre("b@10", "d@20", "a@30", "c@30", "e@30"));
}

TEST_F(SystemProcessingTimeServiceTest, PastTimestampIsDueAtOnceButNeverRunsInline) {
  clock.Set(Timestamp(500));
  service.Schedule(Timestamp(100), Log("late"));
  EXPECT_THAT(log, IsEmpty());
  EXPECT_LE(*service.NextDueTime(), clock.Now());
  EXPECT_EQ(service.RunDueCallbacks(clock.Now()), 1u);
  EXPECT_THAT(log, ElementsAre("late@100"));
}

TEST_F(SystemProcessingTimeServiceTest, CancelRemovesOnlyThatCallbackAndIsANoOpOtherwise) {
  auto a = service.Schedule(Timestamp(10), Log("a"));
  auto b = service.Schedule(Timestamp(10), Log("b"));
  service.Schedule(Timestamp(5), Log("c"));
  service.Cancel(b);
  service.Cancel(b);       // twice
  service.Cancel(999999);  // unknown
  EXPECT_EQ(service.NumScheduled(), 2u);
  EXPECT_EQ(service.RunDueCallbacks(Timestamp(100)), 2u);
  service.Cancel(a);  // already ran
  EXPECT_THAT(log, ElementsAre("c@5", "a@10"));
}

TEST_F(SystemProcessingTimeServiceTest, CallbacksMayScheduleAndCancelWithinTheSamePass) {
  ProcessingTimeService::TimerId victim = 0;
  service.Schedule(Timestamp(10), [&](Timestamp ts) {
    log.push_back("first@" + std::to_string(ts.millis()));
    service.Schedule(Timestamp(5),
                     Log("due-now"));  // due at 100: same pass, before 40
    service.Schedule(Timestamp(100),
                     Log("future"));  // due at 101: not in this pass
    service.Cancel(victim);
  });
  victim = service.Schedule(Timestamp(20), Log("victim"));
  service.Schedule(Timestamp(40), Log("last"));
  EXPECT_EQ(service.RunDueCallbacks(Timestamp(100)), 3u);
  EXPECT_THAT(log, ElementsAre("first@10", "due-now@5", "last@40"));
  EXPECT_EQ(service.NextDueTime(), Timestamp(101));
}

TEST_F(SystemProcessingTimeServiceTest, RunNextDueCallbackRunsOneAtATime) {
  service.Schedule(Timestamp(1), Log("a"));
  service.Schedule(Timestamp(2), Log("b"));
  EXPECT_TRUE(service.RunNextDueCallback(Timestamp(10)));
  EXPECT_THAT(log, ElementsAre("a@1"));
  EXPECT_TRUE(service.RunNextDueCallback(Timestamp(10)));
  EXPECT_FALSE(service.RunNextDueCallback(Timestamp(10)));
  EXPECT_THAT(log, ElementsAre("a@1", "b@2"));
}

TEST_F(SystemProcessingTimeServiceTest, TimerAtMaxTimestampIsNeverDue) {
  service.Schedule(kMaxWatermark, Log("never"));
  EXPECT_EQ(service.NextDueTime(), kMaxWatermark);
  EXPECT_FALSE(service.RunNextDueCallback(kMaxWatermark));
}

}  // namespace
}  // namespace keyflow
