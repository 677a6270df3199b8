// Helpers shared by the timer tests: keys of a chosen key group, a reference order, a
// Triggerable that records every callback, and a harness with a manual clock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "common/processing_time_service.h"
#include "state/key_context.h"
#include "state/timers/internal_timer_service.h"
#include "state/timers/timer_entry.h"
#include "state/timers/triggerable.h"

namespace keyflow::testing_timers {

inline constexpr int32_t kMaxParallelism = 128;

inline KeyGroupId GroupOf(int64_t key) {
  static const KeyGroupAssigner assigner(KeyType::kLong, kMaxParallelism);
  return assigner.Assign(Key::FromInt64(key));
}

// The n-th (0-based) non-negative int64 key whose key group (M = 128) is g.
inline int64_t KeyInGroup(int32_t g, int n = 0) {
  for (int64_t k = 0;; ++k) {
    if (GroupOf(k).value() == g && n-- == 0) return k;
  }
}

inline TimerEntry Timer(int64_t ts, int64_t key, int64_t ns = 0) {
  return TimerEntry{Timestamp(ts), Key::FromInt64(key), Namespace(ns)};
}

// The documented global order, written independently of the code under test:
// (timestamp, key group, key bytes unsigned, namespace).
inline auto OrderKey(const TimerEntry& t) {
  return std::make_tuple(t.timestamp.millis(), GroupOf(t.key.AsInt64()).value(),
                         std::string(t.key.bytes()), t.ns.value());
}

struct FiredTimer {
  char domain;  // 'E' event time, 'P' processing time
  int64_t timestamp;
  int64_t key;
  int64_t ns;
  int64_t context_key;        // the key context's current key during the callback
  int32_t context_key_group;  // and its key group
  friend bool operator==(const FiredTimer&, const FiredTimer&) = default;
};

class RecordingTarget : public Triggerable {
 public:
  explicit RecordingTarget(const KeyContext& key_context) : key_context_(key_context) {}

  void OnEventTime(const TimerEntry& timer) override { Record('E', timer); }
  void OnProcessingTime(const TimerEntry& timer) override { Record('P', timer); }

  std::vector<FiredTimer> fired;
  // Runs after recording, e.g. to register timers from inside a callback.
  std::function<void(char domain, const TimerEntry&)> on_fire;

 private:
  void Record(char domain, const TimerEntry& timer) {
    fired.push_back(FiredTimer{domain, timer.timestamp.millis(), timer.key.AsInt64(),
                               timer.ns.value(), key_context_.current_key().AsInt64(),
                               key_context_.current_key_group().value()});
    if (on_fire) on_fire(domain, timer);
  }
  const KeyContext& key_context_;
};

}  // namespace keyflow::testing_timers

namespace keyflow::testing_timers {

// A ManualProcessingTimeService that also counts Schedule and Cancel calls, so tests can tell
// "re-scheduled at the same time" from "left alone".
class CountingProcessingTimeService final : public ProcessingTimeService {
 public:
  explicit CountingProcessingTimeService(Timestamp start) : manual_(start) {}
  Timestamp CurrentProcessingTime() const override { return manual_.CurrentProcessingTime(); }
  TimerId Schedule(Timestamp ts, ProcessingTimeCallback callback) override {
    ++schedules;
    return manual_.Schedule(ts, std::move(callback));
  }
  void Cancel(TimerId id) override {
    ++cancels;
    manual_.Cancel(id);
  }
  void SetCurrentTime(Timestamp t) { manual_.SetCurrentTime(t); }
  void Advance(Duration d) { manual_.Advance(d); }
  size_t NumScheduled() const { return manual_.NumScheduled(); }
  Timestamp NextScheduledTime() const { return manual_.NextScheduledTime(); }

  int schedules = 0;
  int cancels = 0;

 private:
  ManualProcessingTimeService manual_;
};

// A keyed subtask's timer service over `range` (M = 128, int64 keys) with a manual clock.
struct TimerHarness {
  explicit TimerHarness(KeyGroupRange range = KeyGroupRange::Of(0, kMaxParallelism - 1),
                        Timestamp start = Timestamp(0))
      : key_context(KeyType::kLong, kMaxParallelism, range),
        clock(start),
        target(key_context),
        service(key_context, clock, target) {}

  void SetKey(int64_t key) {
    const Status s = key_context.SetCurrentKey(Key::FromInt64(key));
    KF_CHECK(s.ok()) << s.ToString();
  }

  KeyContext key_context;
  CountingProcessingTimeService clock;
  RecordingTarget target;
  InternalTimerService service;
};

// What a callback for this timer must have recorded: the context key is the timer's key.
inline FiredTimer Fired(char domain, int64_t ts, int64_t key, int64_t ns = 0) {
  return FiredTimer{domain, ts, key, ns, key, GroupOf(key).value()};
}

}  // namespace keyflow::testing_timers
