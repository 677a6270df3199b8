#include "state/timers/key_group_partitioned_timer_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "tests/state/timers/timer_test_util.h"

namespace keyflow {
namespace {

using testing_timers::GroupOf;
using testing_timers::KeyInGroup;
using testing_timers::OrderKey;
using testing_timers::Timer;

struct GlobalOrderLess {
  bool operator()(const TimerEntry& a, const TimerEntry& b) const {
    return OrderKey(a) < OrderKey(b);
  }
};

// Adds a timer for `key` into its own key group.
bool AddTimer(KeyGroupPartitionedTimerQueue& q, int64_t ts, int64_t key, int64_t ns = 0) {
  return q.Add(GroupOf(key), Timer(ts, key, ns));
}

std::vector<TimerEntry> Drain(KeyGroupPartitionedTimerQueue& q,
                              std::vector<int32_t>* groups = nullptr) {
  std::vector<TimerEntry> out;
  while (!q.empty()) {
    const KeyGroupId peeked = q.PeekKeyGroup();
    KeyGroupId g;
    out.push_back(q.Poll(&g));
    EXPECT_EQ(g, peeked);
    EXPECT_EQ(GroupOf(out.back().key.AsInt64()), g);
    if (groups != nullptr) groups->push_back(g.value());
  }
  return out;
}

TEST(KeyGroupPartitionedTimerQueueTest, PeekReturnsTheGlobalEarliestTimer) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(0, 127));
  EXPECT_EQ(q.Peek(), nullptr);
  EXPECT_TRUE(q.empty());
  AddTimer(q, 50, KeyInGroup(3));
  AddTimer(q, 20, KeyInGroup(90));
  AddTimer(q, 70, KeyInGroup(0));
  ASSERT_NE(q.Peek(), nullptr);
  EXPECT_EQ(*q.Peek(), Timer(20, KeyInGroup(90)));
  EXPECT_EQ(q.PeekKeyGroup(), KeyGroupId(90));
  EXPECT_EQ(q.size(), 3u);
}

TEST(KeyGroupPartitionedTimerQueueTest, TiesBreakByKeyGroupThenKeyBytesThenNamespace) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(0, 127));
  const int64_t k7a = KeyInGroup(7, 0), k7b = KeyInGroup(7, 1), k2 = KeyInGroup(2),
                k100 = KeyInGroup(100);
  // Inserted in an order that is none of the expected ones.
  AddTimer(q, 10, k100, 0);
  AddTimer(q, 10, k7b, 1);
  AddTimer(q, 10, k7a, 1);
  AddTimer(q, 10, k7a, 0);
  AddTimer(q, 10, k2, 5);
  AddTimer(q, 9, k100, 0);
  std::vector<TimerEntry> expected = {Timer(9, k100, 0), Timer(10, k2, 5),  Timer(10, k7a, 0),
                                      Timer(10, k7a, 1), Timer(10, k7b, 1), Timer(10, k100, 0)};
  // k7a vs k7b: by key bytes (little-endian), which is not necessarily numeric order.
  std::sort(expected.begin(), expected.end(), GlobalOrderLess());
  std::vector<int32_t> groups;
  EXPECT_EQ(Drain(q, &groups), expected);
  EXPECT_EQ(groups, (std::vector<int32_t>{100, 2, 7, 7, 7, 100}));
}

TEST(KeyGroupPartitionedTimerQueueTest, EmptyKeyGroupsSortAfterNonEmptyOnes) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(0, 127));
  AddTimer(q, 1, KeyInGroup(0));
  AddTimer(q, 1000, KeyInGroup(127));
  KeyGroupId g;
  EXPECT_EQ(q.Poll(&g), Timer(1, KeyInGroup(0)));  // key group 0 is now empty
  EXPECT_EQ(g, KeyGroupId(0));
  ASSERT_NE(q.Peek(), nullptr);
  EXPECT_EQ(*q.Peek(), Timer(1000, KeyInGroup(127)));
  AddTimer(q, kMaxWatermark.millis(),
           KeyInGroup(5));  // the largest timestamp still precedes "empty"
  EXPECT_EQ(q.Poll(&g), Timer(1000, KeyInGroup(127)));
  EXPECT_EQ(q.Poll(&g), Timer(kMaxWatermark.millis(), KeyInGroup(5)));
  EXPECT_EQ(q.Peek(), nullptr);
}

TEST(KeyGroupPartitionedTimerQueueTest, AddAndRemoveReportChangesOfTheGlobalHead) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(0, 127));
  const int64_t a = KeyInGroup(10), b = KeyInGroup(20);
  EXPECT_TRUE(AddTimer(q, 100, a));   // first timer
  EXPECT_FALSE(AddTimer(q, 100, a));  // duplicate
  EXPECT_TRUE(AddTimer(q, 50, b));    // earlier, other key group
  EXPECT_FALSE(AddTimer(q, 60, a));   // new head of group 10, not global
  // A timestamp tie: (50, group 10) orders before (50, group 20), so the global head changes.
  EXPECT_TRUE(AddTimer(q, 50, a, 1));
  EXPECT_EQ(q.PeekKeyGroup(), KeyGroupId(10));
  EXPECT_EQ(q.size(), 4u);
  EXPECT_FALSE(q.Remove(KeyGroupId(20), Timer(50, b)));    // head of its group, not global
  EXPECT_FALSE(q.Remove(KeyGroupId(10), Timer(77, a)));    // absent
  EXPECT_TRUE(q.Remove(KeyGroupId(10), Timer(50, a, 1)));  // the global head
  EXPECT_EQ(*q.Peek(), Timer(60, a));
  EXPECT_EQ(q.size(), 2u);
}

TEST(KeyGroupPartitionedTimerQueueTest, CountsTimersPerKeyGroupAndIteratesKeyGroupsAscending) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(32, 63));
  for (int n = 0; n < 3; ++n) AddTimer(q, 10 - n, KeyInGroup(40, n));
  AddTimer(q, 5, KeyInGroup(33));
  AddTimer(q, 5, KeyInGroup(63));
  EXPECT_EQ(q.NumTimers(KeyGroupId(40)), 3u);
  EXPECT_EQ(q.NumTimers(KeyGroupId(33)), 1u);
  EXPECT_EQ(q.NumTimers(KeyGroupId(32)), 0u);
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.KeyGroupQueue(KeyGroupId(40)).size(), 3u);
  std::vector<int32_t> groups;
  q.ForEach([&](KeyGroupId g, const TimerEntry& t) {
    EXPECT_EQ(GroupOf(t.key.AsInt64()), g);
    groups.push_back(g.value());
  });
  EXPECT_EQ(groups, (std::vector<int32_t>{33, 40, 40, 40, 63}));
}

TEST(KeyGroupPartitionedTimerQueueTest, AddAllRestoresOneKeyGroupWithDedup) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(0, 127));
  const int64_t k = KeyInGroup(9);
  AddTimer(q, 30, KeyInGroup(8));
  AddTimer(q, 20, k);
  q.AddAll(KeyGroupId(9), {Timer(20, k), Timer(10, k), Timer(10, k), Timer(40, k)});
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.NumTimers(KeyGroupId(9)), 3u);
  EXPECT_EQ(Drain(q), (std::vector<TimerEntry>{Timer(10, k), Timer(20, k), Timer(30, KeyInGroup(8)),
                                               Timer(40, k)}));
}

TEST(KeyGroupPartitionedTimerQueueTest, MatchesAReferenceModelAcrossKeyGroups) {
  std::mt19937_64 rng(11);
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(16, 47));
  std::vector<int64_t> keys;
  for (int32_t g = 16; g <= 47; ++g) {
    for (int n = 0; n < 3; ++n) keys.push_back(KeyInGroup(g, n));
  }
  std::set<TimerEntry, GlobalOrderLess> model;
  for (int step = 0; step < 50'000; ++step) {
    const int64_t key = keys[rng() % keys.size()];
    const TimerEntry t =
        Timer(static_cast<int64_t>(rng() % 30), key, static_cast<int64_t>(rng() % 2));
    const uint64_t op = rng() % 10;
    if (op < 5) {
      const bool becomes_head = model.empty() || GlobalOrderLess()(t, *model.begin());
      const bool inserted = model.insert(t).second;
      ASSERT_EQ(q.Add(GroupOf(key), t), inserted && becomes_head) << step;
    } else if (op < 7) {
      const bool was_head = !model.empty() && *model.begin() == t;
      model.erase(t);
      ASSERT_EQ(q.Remove(GroupOf(key), t), was_head) << step;
    } else if (!model.empty()) {
      KeyGroupId g;
      ASSERT_EQ(q.Poll(&g), *model.begin()) << step;
      model.erase(model.begin());
    }
    ASSERT_EQ(q.size(), model.size());
  }
  EXPECT_EQ(Drain(q), std::vector<TimerEntry>(model.begin(), model.end()));
}

TEST(KeyGroupPartitionedTimerQueueDeathTest, RefusesAKeyGroupOutsideTheRange) {
  KeyGroupPartitionedTimerQueue q(KeyGroupRange::Of(32, 63));
  EXPECT_DEATH(q.Add(KeyGroupId(31), Timer(1, KeyInGroup(31))), "key group 31 is not in");
  EXPECT_DEATH(q.Remove(KeyGroupId(64), Timer(1, KeyInGroup(64))), "key group 64 is not in");
  EXPECT_DEATH(q.NumTimers(KeyGroupId(0)), "key group 0 is not in");
}

}  // namespace
}  // namespace keyflow
