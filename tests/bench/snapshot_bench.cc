// Per-key-group snapshot and restore throughput (state/snapshot/): one keyed subtask owning all
// M = 128 key groups, holding 1 M keys of ValueState<int64_t> and 1 M event-time timers (one per
// key), keys "uid-%08d" (12 bytes). Single thread, Release build, in memory (no disk: the
// checkpoint file path is measured by checkpoint_bench).
//
//   build/bin/snapshot_bench              (target: >= 300 MB/s each way)
//
//   BM_WriteKeyedSnapshot        WriteKeyedSnapshot of the whole range into a string
//   BM_AsyncKeyedSnapshotWriteTo the checkpoint path: construct an AsyncKeyedSnapshot, install
//                                it as the write guard, WriteTo a string sink (on this thread)
//   BM_RestoreKeyedSnapshot      KeyedSnapshotReader::Open + Restore of every key group into a
//                                fresh backend and timer service
//   BM_SerializeSection/0, /1    one section alone (keyed state, timers): where the time goes
//   BM_FlatCopyOfAllKeyGroups    for comparison: copying every key group's data flat
// Counters: bytes_per_second = snapshot bytes per CPU second (MB/s = bytes_per_second / 1e6),
// snapshot_MB = size of one snapshot.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/hashing.h"
#include "common/key_group_assignment.h"
#include "common/processing_time_service.h"
#include "state/heap/heap_keyed_state_backend.h"
#include "state/key_context.h"
#include "state/snapshot/async_keyed_snapshot.h"
#include "state/snapshot/keyed_snapshot_format.h"
#include "state/timers/internal_timer_service.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;
constexpr int64_t kNumKeys = 1'000'000;
constexpr int64_t kStartMs = 1'700'000'000'000;
constexpr int64_t kTwelveHoursMs = 12LL * 3600 * 1000;
const KeyGroupRange kAllKeyGroups = KeyGroupRange::Of(0, kMaxParallelism - 1);

void CheckOk(const Status& s) {
  if (!s.ok()) [[unlikely]] {
    std::fprintf(stderr, "snapshot_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

class NoTimerTarget final : public Triggerable {
 public:
  void OnEventTime(const TimerEntry&) override {}
  void OnProcessingTime(const TimerEntry&) override {}
};

// A keyed subtask's state as the keyed operator holds it: key context, heap backend with one
// ValueState<int64_t>, timer service; the two snapshot sections wired as in
// KeyedProcessOperator (ids 1 = keyed state, 2 = timers).
struct Subtask {
  Subtask()
      : context(KeyType::kString, kMaxParallelism, kAllKeyGroups),
        backend(context),
        timers(context, clock, target) {
    auto v = backend.GetState(ValueStateDescriptor<int64_t>("value"));
    CheckOk(v.status());
    value = *v;
    sections.resize(2);
    sections[0].id = 1;
    sections[0].name = "keyed state";
    sections[0].write = [this](KeyGroupId g, BinaryWriter& w) { backend.SerializeKeyGroup(g, w); };
    sections[0].count = [this](KeyGroupId g) -> uint64_t { return backend.NumKeys(g); };
    sections[0].restore = [this](KeyGroupId g, BinaryReader& r) {
      return backend.RestoreKeyGroup(g, r);
    };
    sections[1].id = 2;
    sections[1].name = "timers";
    sections[1].write = [this](KeyGroupId g, BinaryWriter& w) { timers.SerializeKeyGroup(g, w); };
    sections[1].count = [this](KeyGroupId g) -> uint64_t { return timers.NumTimers(g); };
    sections[1].restore = [this](KeyGroupId g, BinaryReader& r) {
      return timers.RestoreKeyGroup(g, r);
    };
    section_ptrs = {&sections[0], &sections[1]};
  }

  // 1 M keys in a pseudo-random order: a value and an event timer within 12 h for each.
  void Fill() {
    std::vector<int64_t> ids(kNumKeys);
    for (int64_t i = 0; i < kNumKeys; ++i) ids[static_cast<size_t>(i)] = i;
    std::mt19937_64 rng(42);
    std::shuffle(ids.begin(), ids.end(), rng);
    char buf[32];
    for (int64_t id : ids) {
      std::snprintf(buf, sizeof(buf), "uid-%08lld", static_cast<long long>(id));
      CheckOk(context.SetCurrentKey(Key::FromBytes(buf)));
      value->Update(id);
      const auto jitter =
          static_cast<int64_t>(Mix64(static_cast<uint64_t>(id), 7) % kTwelveHoursMs);
      timers.RegisterEventTimeTimer(kVoidNamespace, Timestamp(kStartMs + jitter));
    }
  }

  KeyContext context;
  ManualProcessingTimeService clock;
  NoTimerTarget target;
  HeapKeyedStateBackend backend;
  InternalTimerService timers;
  ValueState<int64_t>* value = nullptr;
  std::vector<SnapshotSection> sections;
  std::vector<const SnapshotSection*> section_ptrs;
};

Subtask& Filled() {
  static Subtask* s = [] {
    auto* t = new Subtask();
    t->Fill();
    return t;
  }();
  return *s;
}

void BM_WriteKeyedSnapshot(benchmark::State& state) {
  Subtask& s = Filled();
  std::string out;
  int64_t bytes = 0;
  for (auto _ : state) {
    out.clear();  // keeps the capacity, like a reused write buffer
    auto info =
        WriteKeyedSnapshot(kMaxParallelism, KeyType::kString, kAllKeyGroups, s.section_ptrs, &out);
    CheckOk(info.status());
    bytes += static_cast<int64_t>(out.size());
  }
  state.SetBytesProcessed(bytes);
  state.counters["snapshot_MB"] = static_cast<double>(out.size()) / 1e6;
}
BENCHMARK(BM_WriteKeyedSnapshot)->Unit(benchmark::kMillisecond)->MinTime(2);

void BM_AsyncKeyedSnapshotWriteTo(benchmark::State& state) {
  Subtask& s = Filled();
  std::string out;
  int64_t bytes = 0;
  for (auto _ : state) {
    out.clear();
    AsyncKeyedSnapshot snapshot(kMaxParallelism, KeyType::kString, kAllKeyGroups, s.section_ptrs);
    s.backend.SetWriteGuard(&snapshot);
    s.timers.SetWriteGuard(&snapshot);
    auto info = snapshot.WriteTo([&out](std::string_view b) {
      out.append(b);
      return Status::Ok();
    });
    CheckOk(info.status());
    s.backend.SetWriteGuard(nullptr);
    s.timers.SetWriteGuard(nullptr);
    bytes += static_cast<int64_t>(out.size());
  }
  state.SetBytesProcessed(bytes);
  state.counters["snapshot_MB"] = static_cast<double>(out.size()) / 1e6;
}
BENCHMARK(BM_AsyncKeyedSnapshotWriteTo)->Unit(benchmark::kMillisecond)->MinTime(2);

// One section alone over all key groups (where the write time goes): 0 = keyed state, 1 = timers.
void BM_SerializeSection(benchmark::State& state) {
  Subtask& s = Filled();
  const SnapshotSection& section = *s.section_ptrs[static_cast<size_t>(state.range(0))];
  std::string out;
  int64_t bytes = 0;
  for (auto _ : state) {
    out.clear();
    BinaryWriter w(&out);
    for (KeyGroupId g : kAllKeyGroups.key_groups()) section.write(g, w);
    bytes += static_cast<int64_t>(out.size());
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel(section.name);
}
BENCHMARK(BM_SerializeSection)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(1);

// What the task thread pays under copy-on-write when it changes a key group the snapshot writer
// has not reached yet: HeapKeyedStateBackend::CopyKeyGroup and InternalTimerService::
// CopyKeyGroup (clones, no sorting or encoding), here for every key group; compare with
// BM_WriteKeyedSnapshot, which serialises them all.
void BM_CopyAllKeyGroups(benchmark::State& state) {
  Subtask& s = Filled();
  int64_t timers = 0;
  for (auto _ : state) {
    for (KeyGroupId g : kAllKeyGroups.key_groups()) {
      auto state_copy = s.backend.CopyKeyGroup(g);
      auto timers_copy = s.timers.CopyKeyGroup(g);
      timers += static_cast<int64_t>(timers_copy->Count());
      benchmark::DoNotOptimize(state_copy.get());
    }
  }
  state.SetItemsProcessed(timers);
}
BENCHMARK(BM_CopyAllKeyGroups)->Unit(benchmark::kMillisecond)->MinTime(1);

void BM_RestoreKeyedSnapshot(benchmark::State& state) {
  std::string bytes;
  CheckOk(WriteKeyedSnapshot(kMaxParallelism, KeyType::kString, kAllKeyGroups,
                             Filled().section_ptrs, &bytes)
              .status());
  const StringSource source(std::move(bytes), "snapshot_bench");
  int64_t total = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = std::make_unique<Subtask>();
    state.ResumeTiming();
    auto reader = KeyedSnapshotReader::Open(source);
    CheckOk(reader.status());
    CheckOk(reader->Restore(kAllKeyGroups, fresh->section_ptrs));
    state.PauseTiming();
    if (fresh->backend.NumEntries() != static_cast<size_t>(kNumKeys) ||
        fresh->timers.NumEventTimers() != static_cast<size_t>(kNumKeys)) {
      state.SkipWithError("restore did not bring back 1 M keys and 1 M timers");
    }
    total += static_cast<int64_t>(source.size());
    fresh.reset();  // freeing 1 M entries is not part of a restore
    state.ResumeTiming();
  }
  state.SetBytesProcessed(total);
  state.counters["snapshot_MB"] = static_cast<double>(source.size()) / 1e6;
}
BENCHMARK(BM_RestoreKeyedSnapshot)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
