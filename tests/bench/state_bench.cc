// Heap keyed state backend throughput: one keyed subtask owning all M = 128 key groups, keys
// "uid-%08d" (12 bytes) visited in a fixed pseudo-random order, the current key set per
// operation as the runtime does (key group precomputed by the router).
//
//   state_bench --benchmark_filter=ValueState   (target: >= 15 M ops/s on 1 M keys)
//
// Each benchmark builds its data outside the timed loop and runs a fixed number of
// iterations once (the setup of 1 M keys is not repeated for iteration-count estimation).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "state/heap/heap_keyed_state_backend.h"
#include "tests/bench/keyed_records.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = kBenchMaxParallelism;

struct Env {
  explicit Env(int64_t num_keys)
      : context(KeyType::kString, kMaxParallelism, KeyGroupRange::Of(0, kMaxParallelism - 1)),
        backend(context),
        records(MakeRecords(num_keys)) {}

  void SetKey(const KeyedRecord& r) {
    Status s = context.SetCurrentKey(r.key, r.key_group);
    if (!s.ok()) [[unlikely]] {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::abort();
    }
  }

  KeyContext context;
  HeapKeyedStateBackend backend;
  std::vector<KeyedRecord> records;
};

// Value() then Update(v + 1) of a ValueState<int64_t>; every key exists before timing. With
// kPrefetchDistance > 0, records are processed the way the keyed task processes a batch: the
// state slot of the record kPrefetchDistance ahead is prefetched
// (HeapKeyedStateBackend::Prefetch) before the current record is processed, so the memory
// latency of random keys overlaps.
template <size_t kPrefetchDistance>
void ValueStateReadUpdate(benchmark::State& state) {
  Env env(state.range(0));
  ValueState<int64_t>* count = *env.backend.GetState(ValueStateDescriptor<int64_t>("count"));
  for (const KeyedRecord& r : env.records) {
    env.SetKey(r);
    count->Update(0);
  }
  size_t i = 0;
  const size_t n = env.records.size();
  for (auto _ : state) {
    if constexpr (kPrefetchDistance > 0) {
      const size_t a = i + kPrefetchDistance;
      const KeyedRecord& ahead = env.records[a < n ? a : a - n];
      env.backend.Prefetch(ahead.key.Hash(), ahead.key_group);
    }
    env.SetKey(env.records[i]);
    count->Update(count->Value().value_or(0) + 1);
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  env.SetKey(env.records[0]);
  benchmark::DoNotOptimize(count->Value());
}

void BM_ValueStateReadUpdate(benchmark::State& state) {
  ValueStateReadUpdate<0>(state);
}
BENCHMARK(BM_ValueStateReadUpdate)
    ->Arg(1'000'000)
    ->Iterations(20'000'000)
    ->Unit(benchmark::kNanosecond);
BENCHMARK(BM_ValueStateReadUpdate)
    ->Arg(10'000)
    ->Iterations(20'000'000)
    ->Unit(benchmark::kNanosecond);

void BM_ValueStateReadUpdatePrefetched(benchmark::State& state) {
  ValueStateReadUpdate<8>(state);  // the distance of worker/task/keyed_task.cc
}
BENCHMARK(BM_ValueStateReadUpdatePrefetched)
    ->Arg(1'000'000)
    ->Iterations(20'000'000)
    ->Unit(benchmark::kNanosecond);

// ListState<int64_t>::Add; lists grow to ~10 elements per key.
void BM_ListStateAdd(benchmark::State& state) {
  Env env(state.range(0));
  ListState<int64_t>* list = *env.backend.GetListState(ListStateDescriptor<int64_t>("list"));
  size_t i = 0;
  const size_t n = env.records.size();
  int64_t v = 0;
  for (auto _ : state) {
    env.SetKey(env.records[i]);
    list->Add(++v);
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ListStateAdd)->Arg(1'000'000)->Iterations(10'000'000)->Unit(benchmark::kNanosecond);

// MapState<int64_t, int64_t>::Put with 8 user keys per key.
void BM_MapStatePut(benchmark::State& state) {
  Env env(state.range(0));
  auto* map = *env.backend.GetMapState(MapStateDescriptor<int64_t, int64_t>("map"));
  size_t i = 0;
  const size_t n = env.records.size();
  int64_t v = 0;
  for (auto _ : state) {
    env.SetKey(env.records[i]);
    map->Put(v & 7, v);
    ++v;
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MapStatePut)->Arg(1'000'000)->Iterations(10'000'000)->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
