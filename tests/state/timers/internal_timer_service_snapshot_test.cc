// Snapshot and restore of timers per key group: SerializeKeyGroup / RestoreKeyGroup /
// StartTimerService.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "state/timers/internal_timer_service.h"
#include "tests/state/timers/timer_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using testing_timers::Fired;
using testing_timers::FiredTimer;
using testing_timers::KeyInGroup;
using testing_timers::OrderKey;
using testing_timers::TimerHarness;

constexpr Namespace kNs0{0};

std::string Serialize(const InternalTimerService& service, int32_t g) {
  std::string bytes;
  BinaryWriter out(&bytes);
  service.SerializeKeyGroup(KeyGroupId(g), out);
  return bytes;
}

Status Restore(InternalTimerService& service, int32_t g, std::string_view bytes) {
  BinaryReader in(bytes);
  return service.RestoreKeyGroup(KeyGroupId(g), in);
}

using TimerSet = std::set<std::tuple<int64_t, int32_t, std::string, int64_t>>;
TimerSet TimersOf(const KeyGroupPartitionedTimerQueue& q, int32_t g) {
  TimerSet out;
  q.KeyGroupQueue(KeyGroupId(g)).ForEach([&](const TimerEntry& t) { out.insert(OrderKey(t)); });
  return out;
}

void AppendLe64(std::string* s, int64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian host
  s->append(b, 8);
}

TEST(InternalTimerServiceSnapshotTest, SerializedBytesFollowTheDocumentedFormat) {
  TimerHarness h;
  const int64_t k = KeyInGroup(3);
  h.SetKey(k);
  h.service.RegisterEventTimeTimer(Namespace(-1), Timestamp(5));
  h.service.RegisterEventTimeTimer(Namespace(2), Timestamp(5));
  h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(7));
  std::string expected;
  expected += '\x01';  // format version
  expected += '\x02';  // varint: 2 event-time timers, sorted by (timestamp, key, namespace)
  for (int64_t ns : {-1, 2}) {
    AppendLe64(&expected, 5);  // timestamp
    expected += '\x08';        // varint key length
    AppendLe64(&expected, k);  // key bytes (an int64 key: 8 little-endian bytes)
    AppendLe64(&expected, ns);
  }
  expected += '\x01';  // 1 processing-time timer
  AppendLe64(&expected, 7);
  expected += '\x08';
  AppendLe64(&expected, k);
  AppendLe64(&expected, 0);
  ASSERT_EQ(expected.size(), 78u);  // the README's example
  EXPECT_EQ(Serialize(h.service, 3), expected);
  EXPECT_EQ(Serialize(h.service, 4), std::string("\x01\x00\x00", 3));  // an empty key group
}

TEST(InternalTimerServiceSnapshotTest, EqualTimerSetsSerializeToEqualBytesWhateverTheirHistory) {
  TimerHarness a, b;
  std::vector<std::pair<int64_t, int64_t>> timers;  // (key, ts), all in key group 17
  for (int n = 0; n < 40; ++n) timers.emplace_back(KeyInGroup(17, n % 8), n % 5);
  for (const auto& [key, ts] : timers) {
    a.SetKey(key);
    a.service.RegisterEventTimeTimer(kNs0, Timestamp(ts));
    a.service.RegisterProcessingTimeTimer(kNs0, Timestamp(ts + 1000));
  }
  for (auto it = timers.rbegin(); it != timers.rend(); ++it) {
    b.SetKey(it->first);
    b.service.RegisterEventTimeTimer(kNs0, Timestamp(99));  // noise, removed again
    b.service.RegisterProcessingTimeTimer(kNs0, Timestamp(it->second + 1000));
    b.service.RegisterEventTimeTimer(kNs0, Timestamp(it->second));
    b.service.DeleteEventTimeTimer(kNs0, Timestamp(99));
  }
  ASSERT_EQ(a.service.NumTimers(KeyGroupId(17)), b.service.NumTimers(KeyGroupId(17)));
  EXPECT_EQ(Serialize(a.service, 17), Serialize(b.service, 17));
}

TEST(InternalTimerServiceSnapshotTest, RoundTripRestoresTheOwnedSubsetOfKeyGroups) {
  TimerHarness source;  // the whole range, as before a rescale from P=1 to P=4
  for (int64_t key = 0; key < 2000; ++key) {
    source.SetKey(key);
    source.service.RegisterEventTimeTimer(Namespace(key % 3), Timestamp(key % 97));
    if (key % 2 == 0) source.service.RegisterProcessingTimeTimer(kNs0, Timestamp(key % 13));
  }
  TimerHarness target(KeyGroupRange::Of(32, 63));  // subtask 1 of 4
  for (int32_t g = 32; g <= 63; ++g) {
    ASSERT_OK(Restore(target.service, g, Serialize(source.service, g))) << g;
  }
  size_t event_count = 0, processing_count = 0;
  for (int32_t g = 32; g <= 63; ++g) {
    EXPECT_EQ(TimersOf(target.service.event_time_queue(), g),
              TimersOf(source.service.event_time_queue(), g));
    EXPECT_EQ(TimersOf(target.service.processing_time_queue(), g),
              TimersOf(source.service.processing_time_queue(), g));
    EXPECT_EQ(target.service.NumTimers(KeyGroupId(g)), source.service.NumTimers(KeyGroupId(g)));
    EXPECT_EQ(Serialize(target.service, g), Serialize(source.service, g));
    event_count += source.service.event_time_queue().NumTimers(KeyGroupId(g));
    processing_count += source.service.processing_time_queue().NumTimers(KeyGroupId(g));
  }
  EXPECT_GT(event_count, 0u);
  EXPECT_EQ(target.service.NumEventTimers(), event_count);
  EXPECT_EQ(target.service.NumProcessingTimers(), processing_count);

  // The restored timers fire in the same order as the source's timers of those key groups.
  source.service.AdvanceWatermark(kMaxWatermark);
  target.service.AdvanceWatermark(kMaxWatermark);
  std::vector<FiredTimer> expected;
  for (const FiredTimer& f : source.target.fired) {
    if (f.context_key_group >= 32 && f.context_key_group <= 63) expected.push_back(f);
  }
  EXPECT_EQ(target.target.fired, expected);
}

TEST(InternalTimerServiceSnapshotTest, RestoringAKeyGroupOutsideTheLocalRangeIsOutOfRange) {
  TimerHarness source;
  source.SetKey(KeyInGroup(10));
  source.service.RegisterEventTimeTimer(kNs0, Timestamp(1));
  TimerHarness target(KeyGroupRange::Of(32, 63));
  const Status s = Restore(target.service, 10, Serialize(source.service, 10));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("Key Group 10 does not belong to the local range"), std::string::npos)
      << s.ToString();
  EXPECT_EQ(target.service.NumEventTimers(), 0u);
}

TEST(InternalTimerServiceSnapshotTest, RestoreDeduplicatesAgainstExistingTimers) {
  TimerHarness source;
  const int64_t k = KeyInGroup(5);
  source.SetKey(k);
  source.service.RegisterEventTimeTimer(kNs0, Timestamp(1));
  source.service.RegisterEventTimeTimer(kNs0, Timestamp(2));
  const std::string bytes = Serialize(source.service, 5);
  TimerHarness target;
  target.SetKey(k);
  target.service.RegisterEventTimeTimer(kNs0, Timestamp(2));
  ASSERT_OK(Restore(target.service, 5, bytes));
  ASSERT_OK(Restore(target.service, 5, bytes));
  EXPECT_EQ(target.service.NumEventTimers(), 2u);
  target.service.AdvanceWatermark(Timestamp(10));
  EXPECT_EQ(target.target.fired, (std::vector<FiredTimer>{Fired('E', 1, k), Fired('E', 2, k)}));
}

TEST(InternalTimerServiceSnapshotTest, EveryTruncationIsCorruptionAndRestoresNothing) {
  TimerHarness source;
  for (int n = 0; n < 3; ++n) {
    source.SetKey(KeyInGroup(8, n));
    source.service.RegisterEventTimeTimer(Namespace(n), Timestamp(100 + n));
    source.service.RegisterProcessingTimeTimer(Namespace(n), Timestamp(200 + n));
  }
  const std::string bytes = Serialize(source.service, 8);
  for (size_t len = 0; len < bytes.size(); ++len) {
    TimerHarness target;
    const Status s = Restore(target.service, 8, std::string_view(bytes).substr(0, len));
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << "length " << len << ": " << s.ToString();
    EXPECT_EQ(target.service.NumTimers(KeyGroupId(8)), 0u) << "length " << len;
  }
}

TEST(InternalTimerServiceSnapshotTest, MalformedBytesAreCorruption) {
  TimerHarness target;
  const int64_t k = KeyInGroup(8);
  auto one_timer = [](std::string_view key_bytes) {
    std::string s("\x01\x01", 2);
    AppendLe64(&s, 5);
    s += static_cast<char>(key_bytes.size());
    s.append(key_bytes);
    AppendLe64(&s, 0);
    s += '\x00';
    return s;
  };
  std::string good_key(8, '\0');
  std::memcpy(good_key.data(), &k, 8);
  ASSERT_OK(Restore(target.service, 8, one_timer(good_key)));  // the control case
  ASSERT_EQ(target.service.NumTimers(KeyGroupId(8)), 1u);

  struct Case {
    const char* what;
    int32_t key_group;
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {"unknown version", 8, std::string("\x02\x00\x00", 3)},
      // A count of 2^62 timers in a 12-byte buffer: refused before any allocation.
      {"impossible count", 8, std::string("\x01\x80\x80\x80\x80\x80\x80\x80\x80\x40\x00\x00", 12)},
      {"4-byte long key", 8, one_timer(good_key.substr(0, 4))},
      {"key of another key group", 9, one_timer(good_key)},
  };
  for (const Case& c : cases) {
    const Status s = Restore(target.service, c.key_group, c.bytes);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << c.what << ": " << s.ToString();
    EXPECT_NE(s.message().find("key group"), std::string::npos) << c.what << ": " << s.ToString();
  }
  EXPECT_EQ(target.service.NumEventTimers(), 1u);  // failed restores added nothing
}

TEST(InternalTimerServiceSnapshotTest, MalformedKeysOfIntAndStringTypesAreCorruption) {
  ManualProcessingTimeService clock;
  KeyContext int_context(KeyType::kInt, 128, KeyGroupRange::Of(0, 127));
  testing_timers::RecordingTarget int_target(int_context);
  InternalTimerService int_service(int_context, clock, int_target);
  const int64_t too_big = int64_t{1} << 40;
  std::string bytes("\x01\x01", 2);
  AppendLe64(&bytes, 5);
  bytes += '\x08';
  AppendLe64(&bytes, too_big);
  AppendLe64(&bytes, 0);
  bytes += '\x00';
  const int32_t g = int_context.assigner().Assign(Key::FromInt64(too_big)).value();
  EXPECT_EQ(Restore(int_service, g, bytes).code(), StatusCode::kCorruption);

  KeyContext string_context(KeyType::kString, 128, KeyGroupRange::Of(0, 127));
  testing_timers::RecordingTarget string_target(string_context);
  InternalTimerService string_service(string_context, clock, string_target);
  std::string invalid_utf8("\x01\x01", 2);
  AppendLe64(&invalid_utf8, 5);
  invalid_utf8 += "\x02\xC3\x28";  // 2-byte key: an invalid UTF-8 sequence
  AppendLe64(&invalid_utf8, 0);
  invalid_utf8 += '\x00';
  EXPECT_EQ(Restore(string_service, 0, invalid_utf8).code(), StatusCode::kCorruption);
  EXPECT_EQ(string_service.NumEventTimers(), 0u);
}

TEST(InternalTimerServiceSnapshotTest, StartAfterRestoreArmsTheHeadAndOverdueTimersFireNext) {
  TimerHarness source;
  const int64_t a = KeyInGroup(40), b = KeyInGroup(41), c = KeyInGroup(42);
  source.SetKey(a);
  source.service.RegisterProcessingTimeTimer(kNs0, Timestamp(800));
  source.SetKey(b);
  source.service.RegisterProcessingTimeTimer(kNs0, Timestamp(500));
  source.service.RegisterEventTimeTimer(kNs0, Timestamp(5));
  source.SetKey(c);
  source.service.RegisterProcessingTimeTimer(kNs0, Timestamp(2000));

  TimerHarness target(KeyGroupRange::Of(32, 63), Timestamp(1000));  // restarted later
  for (int32_t g : {40, 41, 42}) {
    ASSERT_OK(Restore(target.service, g, Serialize(source.service, g)));
  }
  EXPECT_EQ(target.clock.NumScheduled(), 0u);  // restore alone schedules nothing
  target.service.StartTimerService();
  target.service.StartTimerService();  // idempotent
  EXPECT_EQ(target.clock.NumScheduled(), 1u);
  EXPECT_EQ(target.clock.NextScheduledTime(), Timestamp(500));
  EXPECT_EQ(target.clock.schedules, 1);
  EXPECT_TRUE(target.target.fired.empty());  // never inline

  target.clock.SetCurrentTime(Timestamp(1000));  // the next time advance
  EXPECT_EQ(target.target.fired, (std::vector<FiredTimer>{Fired('P', 500, b), Fired('P', 800, a)}));
  EXPECT_EQ(target.clock.NumScheduled(), 1u);
  EXPECT_EQ(target.clock.NextScheduledTime(), Timestamp(2000));
  // Restored event-time timers wait for a watermark.
  target.service.AdvanceWatermark(Timestamp(5));
  EXPECT_EQ(target.target.fired.back(), Fired('E', 5, b));
}

TEST(InternalTimerServiceSnapshotTest, RestoreAfterStartMovesThePhysicalCallbackEarlier) {
  TimerHarness source;
  const int64_t a = KeyInGroup(7), b = KeyInGroup(9);
  source.SetKey(a);
  source.service.RegisterProcessingTimeTimer(kNs0, Timestamp(100));
  TimerHarness target;
  target.service.StartTimerService();
  target.SetKey(b);
  target.service.RegisterProcessingTimeTimer(kNs0, Timestamp(300));
  EXPECT_EQ(target.clock.NextScheduledTime(), Timestamp(300));
  ASSERT_OK(Restore(target.service, 7, Serialize(source.service, 7)));
  EXPECT_EQ(target.clock.NumScheduled(), 1u);
  EXPECT_EQ(target.clock.NextScheduledTime(), Timestamp(100));
  target.clock.SetCurrentTime(Timestamp(300));
  EXPECT_EQ(target.target.fired, (std::vector<FiredTimer>{Fired('P', 100, a), Fired('P', 300, b)}));
}

// Issue 4's asynchronous snapshots serialise key group k on a writer thread while the task
// thread keeps working on other key groups. Run under TSan to check for races.
TEST(InternalTimerServiceSnapshotTest, AnUntouchedKeyGroupCanBeSerialisedOnAnotherThread) {
  TimerHarness h;
  for (int n = 0; n < 50; ++n) {
    h.SetKey(KeyInGroup(5, n % 10));
    h.service.RegisterEventTimeTimer(Namespace(n), Timestamp(1'000'000 + n));
    h.service.RegisterProcessingTimeTimer(Namespace(n), Timestamp(1'000'000 + n));
  }
  const std::string expected = Serialize(h.service, 5);
  std::atomic<bool> started{false};
  std::atomic<int> mismatches{0};
  std::thread writer([&] {
    started.store(true);
    for (int i = 0; i < 200; ++i) {
      if (Serialize(h.service, 5) != expected) mismatches.fetch_add(1);
      if (h.service.NumTimers(KeyGroupId(5)) != 100u) mismatches.fetch_add(1);
    }
  });
  while (!started.load()) {
  }
  for (int64_t i = 0; i < 20'000; ++i) {
    const int64_t key = KeyInGroup(static_cast<int32_t>(6 + i % 100));
    h.SetKey(key);
    h.service.RegisterEventTimeTimer(kNs0, Timestamp(i));
    h.service.RegisterProcessingTimeTimer(kNs0, Timestamp(i));
    if (i % 3 == 0) h.service.DeleteEventTimeTimer(kNs0, Timestamp(i));
    if (i % 100 == 99) h.service.AdvanceWatermark(Timestamp(i));
  }
  writer.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(Serialize(h.service, 5), expected);
}

}  // namespace
}  // namespace keyflow
