// Timer service throughput and memory (state/timers). Single thread, Release build.
//
//   build-<you>/bin/timer_bench
//
// Targets (task): 1 M live timers over 128 key groups: register (with dedup) >= 10 M/s and
// fire via AdvanceWatermark >= 10 M/s; <= 48 bytes resident per timer at 10 M timers with
// int64 keys (BM_MemoryPerTimer, counter bytes_per_timer from /proc/self/statm).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "common/hashing.h"
#include "common/key_group_assignment.h"
#include "common/processing_time_service.h"
#include "state/key_context.h"
#include "state/timers/internal_timer_service.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;

class CountingTarget final : public Triggerable {
 public:
  void OnEventTime(const TimerEntry& timer) override { sum += timer.timestamp.millis(); }
  void OnProcessingTime(const TimerEntry& timer) override { sum += timer.timestamp.millis(); }
  int64_t sum = 0;
};

// One keyed subtask owning all 128 key groups.
struct Subtask {
  Subtask()
      : key_context(KeyType::kLong, kMaxParallelism, KeyGroupRange::Of(0, kMaxParallelism - 1)),
        service(key_context, clock, target) {}
  KeyContext key_context;
  ManualProcessingTimeService clock;
  CountingTarget target;
  InternalTimerService service;
};

// n timers: random int64 keys out of n/4 distinct ones, random timestamps in [0, 10^9).
struct Workload {
  explicit Workload(size_t n) {
    const KeyGroupAssigner assigner(KeyType::kLong, kMaxParallelism);
    for (size_t i = 0; i < n; ++i) {
      const auto key = static_cast<int64_t>(Mix64(i, 1) % (n / 4 + 1));
      keys.push_back(Key::FromInt64(key));
      groups.push_back(assigner.Assign(keys.back()));
      timestamps.push_back(Timestamp(static_cast<int64_t>(Mix64(i, 2) % 1'000'000'000)));
    }
  }
  std::vector<Key> keys;
  std::vector<KeyGroupId> groups;
  std::vector<Timestamp> timestamps;
};

const Workload& OneMillion() {
  static const Workload* w = new Workload(1'000'000);
  return *w;
}

void RegisterAll(Subtask& s, const Workload& w, bool processing_time) {
  for (size_t i = 0; i < w.keys.size(); ++i) {
    s.key_context.SetCurrentKey(w.keys[i], w.groups[i]).IgnoreError();
    if (processing_time) {
      s.service.RegisterProcessingTimeTimer(kVoidNamespace, w.timestamps[i]);
    } else {
      s.service.RegisterEventTimeTimer(kVoidNamespace, w.timestamps[i]);
    }
  }
}

// Per iteration: a fresh Subtask that `setup` fills, then `timed` (the only timed part), then
// `after`, then the subtask is freed.
template <typename Setup, typename Timed, typename After>
void TimeOnFreshSubtasks(benchmark::State& state, Setup setup, Timed timed, After after) {
  for (auto _ : state) {
    state.PauseTiming();
    auto s = std::make_unique<Subtask>();
    setup(*s);
    state.ResumeTiming();
    timed(*s);
    state.PauseTiming();
    after(*s);
    s.reset();
    state.ResumeTiming();
  }
}

void Nothing(Subtask&) {}

// Set the key (known key group) and register: what processElement does per record.
void BM_RegisterEventTimers(benchmark::State& state) {
  const Workload& w = OneMillion();
  TimeOnFreshSubtasks(
      state, Nothing, [&](Subtask& s) { RegisterAll(s, w, /*processing_time=*/false); },
      [](Subtask& s) { benchmark::DoNotOptimize(s.service.NumEventTimers()); });
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.keys.size()));
}
BENCHMARK(BM_RegisterEventTimers)->Unit(benchmark::kMillisecond);

// Same, but every timer is already present: the pure dedup path.
void BM_RegisterDuplicateEventTimers(benchmark::State& state) {
  const Workload& w = OneMillion();
  Subtask s;
  RegisterAll(s, w, false);
  for (auto _ : state) RegisterAll(s, w, false);
  benchmark::DoNotOptimize(s.service.NumEventTimers());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.keys.size()));
}
BENCHMARK(BM_RegisterDuplicateEventTimers)->Unit(benchmark::kMillisecond);

// Processing time also peeks the head and (rarely) moves the physical callback.
void BM_RegisterProcessingTimers(benchmark::State& state) {
  const Workload& w = OneMillion();
  TimeOnFreshSubtasks(
      state, Nothing, [&](Subtask& s) { RegisterAll(s, w, /*processing_time=*/true); }, Nothing);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.keys.size()));
}
BENCHMARK(BM_RegisterProcessingTimers)->Unit(benchmark::kMillisecond);

// 1 M live timers fired in order by one AdvanceWatermark(kMaxWatermark); each firing sets the
// key context and makes a virtual call into the target.
void BM_FireEventTimers(benchmark::State& state) {
  const Workload& w = OneMillion();
  size_t fired = 0;
  TimeOnFreshSubtasks(
      state,
      [&](Subtask& s) {
        RegisterAll(s, w, false);
        fired += s.service.NumEventTimers();
      },
      [](Subtask& s) { s.service.AdvanceWatermark(kMaxWatermark); },
      [](Subtask& s) { benchmark::DoNotOptimize(s.target.sum); });
  state.SetItemsProcessed(static_cast<int64_t>(fired));
}
BENCHMARK(BM_FireEventTimers)->Unit(benchmark::kMillisecond);

// The same through the physical processing-time callback.
void BM_FireProcessingTimers(benchmark::State& state) {
  const Workload& w = OneMillion();
  size_t fired = 0;
  TimeOnFreshSubtasks(
      state,
      [&](Subtask& s) {
        RegisterAll(s, w, true);
        fired += s.service.NumProcessingTimers();
      },
      [](Subtask& s) { s.clock.SetCurrentTime(Timestamp(1'000'000'000)); },
      [](Subtask& s) { benchmark::DoNotOptimize(s.target.sum); });
  state.SetItemsProcessed(static_cast<int64_t>(fired));
}
BENCHMARK(BM_FireProcessingTimers)->Unit(benchmark::kMillisecond);

// Delete every timer by value (random order relative to the heaps).
void BM_DeleteEventTimers(benchmark::State& state) {
  const Workload& w = OneMillion();
  TimeOnFreshSubtasks(
      state, [&](Subtask& s) { RegisterAll(s, w, false); },
      [&](Subtask& s) {
        for (size_t i = 0; i < w.keys.size(); ++i) {
          s.key_context.SetCurrentKey(w.keys[i], w.groups[i]).IgnoreError();
          s.service.DeleteEventTimeTimer(kVoidNamespace, w.timestamps[i]);
        }
      },
      [&](Subtask& s) {
        if (s.service.NumEventTimers() != 0) state.SkipWithError("timers left after deleting all");
      });
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(w.keys.size()));
}
BENCHMARK(BM_DeleteEventTimers)->Unit(benchmark::kMillisecond);

int64_t ResidentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

// Resident memory per timer at 10 M event-time timers with int64 keys (10 M distinct keys, so
// every timer is new), generated on the fly so that no input array is counted.
void BM_MemoryPerTimer(benchmark::State& state) {
  constexpr int64_t kTimers = 10'000'000;
  const KeyGroupAssigner assigner(KeyType::kLong, kMaxParallelism);
  for (auto _ : state) {
    auto s = std::make_unique<Subtask>();
    const int64_t before = ResidentBytes();
    for (int64_t i = 0; i < kTimers; ++i) {
      const Key key = Key::FromInt64(i);
      s->key_context.SetCurrentKey(key, assigner.Assign(key)).IgnoreError();
      s->service.RegisterEventTimeTimer(
          kVoidNamespace,
          Timestamp(static_cast<int64_t>(Mix64(static_cast<uint64_t>(i), 3) % 1'000'000'000)));
    }
    const int64_t after = ResidentBytes();
    if (before < 0 || after < 0) state.SkipWithError("cannot read /proc/self/statm");
    state.counters["timers"] = static_cast<double>(s->service.NumEventTimers());
    state.counters["bytes_per_timer"] = static_cast<double>(after - before) / kTimers;
    state.counters["allocated_bytes_per_timer"] =
        static_cast<double>(s->service.event_time_queue().MemoryBytes()) / kTimers;
  }
  state.SetItemsProcessed(state.iterations() * kTimers);
}
BENCHMARK(BM_MemoryPerTimer)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
