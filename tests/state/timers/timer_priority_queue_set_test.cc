#include "state/timers/timer_priority_queue_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/state/timers/timer_test_util.h"

namespace keyflow {
namespace {

using testing_timers::Timer;

// Reference order inside one key group: (timestamp, key bytes unsigned, namespace).
auto LocalOrderKey(const TimerEntry& t) {
  return std::make_tuple(t.timestamp.millis(), std::string(t.key.bytes()), t.ns.value());
}
struct LocalOrderLess {
  bool operator()(const TimerEntry& a, const TimerEntry& b) const {
    return LocalOrderKey(a) < LocalOrderKey(b);
  }
};

std::vector<TimerEntry> DrainInOrder(TimerPriorityQueueSet& q) {
  std::vector<TimerEntry> out;
  while (!q.empty()) out.push_back(q.Poll());
  return out;
}

TEST(TimerPriorityQueueSetTest, AddingAnEqualTimerIsANoOp) {
  TimerPriorityQueueSet q;
  EXPECT_TRUE(q.Add(Timer(10, 1, 0)));
  EXPECT_FALSE(q.Add(Timer(10, 1, 0)));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.Poll(), Timer(10, 1, 0));
  EXPECT_TRUE(q.empty());
}

TEST(TimerPriorityQueueSetTest, TimersDifferingInAnyFieldAreDistinct) {
  TimerPriorityQueueSet q;
  EXPECT_TRUE(q.Add(Timer(10, 1, 0)));
  EXPECT_FALSE(q.Add(Timer(11, 1, 0)));  // later: inserted, head unchanged
  EXPECT_FALSE(q.Add(Timer(10, 2, 0)));
  EXPECT_FALSE(q.Add(Timer(10, 1, 1)));
  EXPECT_EQ(q.size(), 4u);
  EXPECT_TRUE(q.Contains(Timer(10, 2, 0)));
  EXPECT_FALSE(q.Contains(Timer(10, 2, 1)));
}

TEST(TimerPriorityQueueSetTest, AddReturnsTrueExactlyWhenTheHeadChanges) {
  TimerPriorityQueueSet q;
  EXPECT_TRUE(q.Add(Timer(50, 1)));   // empty queue
  EXPECT_FALSE(q.Add(Timer(60, 1)));  // later
  EXPECT_TRUE(q.Add(Timer(40, 1)));   // earlier
  EXPECT_FALSE(q.Add(Timer(40, 1)));  // duplicate of the head
  ASSERT_NE(q.Peek(), nullptr);
  EXPECT_EQ(*q.Peek(), Timer(40, 1));
}

TEST(TimerPriorityQueueSetTest, RemoveByValueReportsWhetherTheHeadWasRemoved) {
  TimerPriorityQueueSet q;
  for (int64_t ts : {30, 10, 20, 40}) q.Add(Timer(ts, 7));
  EXPECT_FALSE(q.Remove(Timer(30, 7)));  // not the head
  EXPECT_FALSE(q.Remove(Timer(30, 7)));  // already gone: no-op
  EXPECT_FALSE(q.Remove(Timer(10, 8)));  // other key: no-op
  EXPECT_EQ(q.size(), 3u);
  EXPECT_TRUE(q.Remove(Timer(10, 7)));  // the head
  EXPECT_EQ(*q.Peek(), Timer(20, 7));
  EXPECT_EQ(DrainInOrder(q), (std::vector<TimerEntry>{Timer(20, 7), Timer(40, 7)}));
}

TEST(TimerPriorityQueueSetTest, PeekOfEmptyQueueIsNull) {
  TimerPriorityQueueSet q;
  EXPECT_EQ(q.Peek(), nullptr);
  q.Add(Timer(1, 1));
  q.Poll();
  EXPECT_EQ(q.Peek(), nullptr);
}

TEST(TimerPriorityQueueSetTest, PollsByTimestampThenKeyBytesThenNamespace) {
  TimerPriorityQueueSet q;
  // Keys 1 and 256: little-endian bytes 01 00.. and 00 01.., so 256 sorts first by bytes.
  q.Add(Timer(5, 1, 2));
  q.Add(Timer(5, 1, -3));
  q.Add(Timer(5, 256, 9));
  q.Add(Timer(4, 1000, 0));
  q.Add(Timer(6, 0, 0));
  EXPECT_EQ(DrainInOrder(q),
            (std::vector<TimerEntry>{Timer(4, 1000, 0), Timer(5, 256, 9), Timer(5, 1, -3),
                                     Timer(5, 1, 2), Timer(6, 0, 0)}));
}

TEST(TimerPriorityQueueSetTest, PollOrderDoesNotDependOnInsertionHistory) {
  std::vector<TimerEntry> timers;
  for (int64_t key = 0; key < 20; ++key) {
    for (int64_t ns = 0; ns < 3; ++ns) timers.push_back(Timer(key % 4, key * 7919, ns));
  }
  std::vector<TimerEntry> expected = timers;
  std::sort(expected.begin(), expected.end(), LocalOrderLess());
  std::mt19937_64 rng(42);
  for (int round = 0; round < 10; ++round) {
    std::shuffle(timers.begin(), timers.end(), rng);
    TimerPriorityQueueSet q;
    // Different histories: add a prefix of decoys, remove them again, then the real timers.
    for (int i = 0; i < round * 5; ++i) q.Add(Timer(-i, 1'000'000 + i));
    for (const TimerEntry& t : timers) q.Add(t);
    for (int i = 0; i < round * 5; ++i) q.Remove(Timer(-i, 1'000'000 + i));
    EXPECT_EQ(DrainInOrder(q), expected) << "round " << round;
  }
}

TEST(TimerPriorityQueueSetTest, EntriesListsEveryTimerOnce) {
  TimerPriorityQueueSet q;
  std::set<std::tuple<int64_t, std::string, int64_t>> expected;
  for (int64_t i = 0; i < 100; ++i) {
    q.Add(Timer(i % 10, i, i % 3));
    q.Add(Timer(i % 10, i, i % 3));
    expected.insert(LocalOrderKey(Timer(i % 10, i, i % 3)));
  }
  std::set<std::tuple<int64_t, std::string, int64_t>> seen;
  q.ForEach([&](const TimerEntry& t) { EXPECT_TRUE(seen.insert(LocalOrderKey(t)).second); });
  EXPECT_EQ(seen, expected);
}

TEST(TimerPriorityQueueSetTest, AddAllDeduplicatesAgainstQueueAndWithinTheBatch) {
  TimerPriorityQueueSet q;
  q.Add(Timer(5, 1));
  q.Add(Timer(9, 1));
  q.AddAll({Timer(5, 1), Timer(3, 2), Timer(3, 2), Timer(7, 3), Timer(1, 4)});
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(DrainInOrder(q), (std::vector<TimerEntry>{Timer(1, 4), Timer(3, 2), Timer(5, 1),
                                                      Timer(7, 3), Timer(9, 1)}));
}

TEST(TimerPriorityQueueSetTest, AddAllOfAFewTimersIntoALargeQueueKeepsOrder) {
  TimerPriorityQueueSet q;
  for (int64_t i = 0; i < 1000; ++i) q.Add(Timer(2 * i, i));
  q.AddAll({Timer(-1, 5), Timer(501, 5)});  // sift-up path
  EXPECT_EQ(q.size(), 1002u);
  EXPECT_EQ(q.Poll(), Timer(-1, 5));
  int64_t last = -1;
  while (!q.empty()) {
    const TimerEntry t = q.Poll();
    EXPECT_GE(t.timestamp.millis(), last);
    last = t.timestamp.millis();
  }
}

TEST(TimerPriorityQueueSetTest, LongHeapAllocatedKeysSurviveHeapMoves) {
  TimerPriorityQueueSet q;
  std::vector<TimerEntry> expected;
  for (int i = 0; i < 300; ++i) {
    TimerEntry t{Timestamp(299 - i),
                 Key::FromBytes("a-long-key-that-is-not-inline-" + std::to_string(i)),
                 Namespace(0)};
    expected.push_back(t);
    q.Add(t);
  }
  std::sort(expected.begin(), expected.end(), LocalOrderLess());
  for (int i = 0; i < 300; i += 3) EXPECT_FALSE(q.Remove(expected[static_cast<size_t>(i + 1)]));
  std::vector<TimerEntry> remaining;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (i % 3 != 1) remaining.push_back(expected[i]);
  }
  EXPECT_EQ(DrainInOrder(q), remaining);
}

// Polling a heap of >= kMinRunSize timers sorts it into a run; everything else must behave
// exactly as before: order, dedup against run timers, removal of run timers (head or not),
// re-adding removed ones, iteration and table growth that re-links run positions.
TEST(TimerPriorityQueueSetTest, BehavesTheSameAfterTheHeapIsSortedIntoARun) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> ts(200);
  for (int64_t i = 0; i < 200; ++i) ts[static_cast<size_t>(i)] = 2 * i;  // even timestamps
  std::shuffle(ts.begin(), ts.end(), rng);
  TimerPriorityQueueSet q;
  std::set<TimerEntry, LocalOrderLess> model;
  for (int64_t t : ts) {
    q.Add(Timer(t, 1));
    model.insert(Timer(t, 1));
  }
  ASSERT_GE(q.size(), TimerPriorityQueueSet::kMinRunSize);
  EXPECT_EQ(q.Poll(), Timer(0, 1));  // sorts the heap into a run
  model.erase(Timer(0, 1));

  EXPECT_FALSE(q.Add(Timer(10, 1)));  // duplicate of a run timer
  EXPECT_TRUE(q.Contains(Timer(10, 1)));
  EXPECT_TRUE(q.Remove(Timer(2, 1)));    // the run front is the head
  EXPECT_FALSE(q.Remove(Timer(50, 1)));  // a run timer in the middle
  EXPECT_FALSE(q.Remove(Timer(50, 1)));  // already removed
  EXPECT_FALSE(q.Contains(Timer(50, 1)));
  EXPECT_FALSE(q.Add(Timer(50, 1)));   // re-added: now in the heap
  EXPECT_TRUE(q.Add(Timer(3, 1)));     // heap top before the run front
  EXPECT_FALSE(q.Add(Timer(7, 1)));    // between run timers
  EXPECT_TRUE(q.Remove(Timer(3, 1)));  // the heap top is the head
  model.erase(Timer(2, 1));
  model.insert(Timer(7, 1));
  EXPECT_EQ(q.size(), model.size());
  ASSERT_NE(q.Peek(), nullptr);
  EXPECT_EQ(*q.Peek(), Timer(4, 1));

  // Enough new timers to grow the table several times while the run is live.
  for (int64_t i = 0; i < 5000; ++i) {
    const TimerEntry t = Timer(static_cast<int64_t>(rng() % 1000), 2 + i % 7, i % 2);
    q.Add(t);
    model.insert(t);
  }
  for (int64_t t = 100; t < 200; t += 4) {  // run timers found through the rebuilt table
    EXPECT_TRUE(q.Contains(Timer(t, 1))) << t;
    q.Remove(Timer(t, 1));
    model.erase(Timer(t, 1));
  }
  std::set<TimerEntry, LocalOrderLess> listed;
  q.ForEach([&](const TimerEntry& t) { EXPECT_TRUE(listed.insert(t).second); });
  EXPECT_EQ(listed, model);
  EXPECT_EQ(DrainInOrder(q), std::vector<TimerEntry>(model.begin(), model.end()));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.Peek(), nullptr);
}

TEST(TimerPriorityQueueSetTest, AddAllWhileARunIsLiveKeepsOrder) {
  TimerPriorityQueueSet q;
  for (int64_t i = 0; i < 100; ++i) q.Add(Timer(i * 10, 1));
  EXPECT_EQ(q.Poll(), Timer(0, 1));  // run of 99 live timers
  q.AddAll({Timer(5, 2), Timer(10, 1), Timer(995, 2), Timer(5, 2)});
  EXPECT_EQ(q.size(), 101u);
  EXPECT_EQ(q.Poll(), Timer(5, 2));
  EXPECT_EQ(q.Poll(), Timer(10, 1));
  TimerPriorityQueueSet copy = q;  // a copy carries the run too
  std::vector<TimerEntry> rest = DrainInOrder(q);
  ASSERT_EQ(rest.size(), 99u);
  EXPECT_EQ(rest.back(), Timer(995, 2));
  EXPECT_EQ(DrainInOrder(copy), rest);
}

// Random operations against std::set as the reference: covers heap sifts, table growth,
// tombstones and their clean-up under heavy churn (many more operations than live timers).
TEST(TimerPriorityQueueSetTest, MatchesAReferenceModelUnderRandomChurn) {
  std::mt19937_64 rng(7);
  TimerPriorityQueueSet q;
  std::set<TimerEntry, LocalOrderLess> model;
  auto random_timer = [&] {
    return Timer(static_cast<int64_t>(rng() % 50), static_cast<int64_t>(rng() % 40),
                 static_cast<int64_t>(rng() % 3));
  };
  for (int step = 0; step < 200'000; ++step) {
    const uint64_t op = rng() % 10;
    if (op < 4) {
      const TimerEntry t = random_timer();
      const bool was_head = model.empty() || LocalOrderLess()(t, *model.begin());
      const bool inserted = model.insert(t).second;
      ASSERT_EQ(q.Add(t), inserted && was_head) << "step " << step;
    } else if (op < 7) {
      const TimerEntry t = random_timer();
      const bool is_head = !model.empty() && *model.begin() == t;
      model.erase(t);
      ASSERT_EQ(q.Remove(t), is_head) << "step " << step;
    } else if (op < 9) {
      if (model.empty()) continue;
      ASSERT_EQ(q.Poll(), *model.begin()) << "step " << step;
      model.erase(model.begin());
    } else {
      const TimerEntry t = random_timer();
      ASSERT_EQ(q.Contains(t), model.count(t) == 1) << "step " << step;
    }
    ASSERT_EQ(q.size(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(*q.Peek(), *model.begin());
    }
  }
  // Grow well past the churn size, then drain.
  for (int64_t i = 0; i < 20'000; ++i) {
    const TimerEntry t = Timer(static_cast<int64_t>(rng() % 100'000), i);
    model.insert(t);
    q.Add(t);
  }
  ASSERT_EQ(q.size(), model.size());
  EXPECT_EQ(DrainInOrder(q), std::vector<TimerEntry>(model.begin(), model.end()));
}

TEST(TimerPriorityQueueSetTest, CopyIsIndependent) {
  TimerPriorityQueueSet a;
  for (int64_t i = 0; i < 50; ++i) a.Add(Timer(i, i));
  TimerPriorityQueueSet b = a;
  a.Poll();
  b.Remove(Timer(49, 49));
  EXPECT_EQ(a.size(), 49u);
  EXPECT_EQ(b.size(), 49u);
  EXPECT_EQ(*a.Peek(), Timer(1, 1));
  EXPECT_EQ(*b.Peek(), Timer(0, 0));
  EXPECT_TRUE(b.Contains(Timer(0, 0)));
  EXPECT_FALSE(a.Contains(Timer(0, 0)));
}

}  // namespace
}  // namespace keyflow
