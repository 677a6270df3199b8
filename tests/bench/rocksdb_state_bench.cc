// RocksDB keyed state backend throughput against the heap backend in the same binary and run:
// ValueState<int64_t> Value() + Update(v + 1) on keys "uid-%08d" visited in a fixed pseudo-random
// order, one keyed subtask owning all M = 128 key groups, the current key set per operation as
// the runtime does. Every key exists before timing.
//
//   rocksdb_state_bench       (args: keys, block cache MiB, write-back cache MiB; memtables 8 MiB)
//
// The RocksDB state (~40 bytes per key in SST files) is 5x its block cache at 1 M keys, so reads
// also go to (the page cache of) SST files, as for state larger than memory. Each RocksDB case
// runs with the write-back cache of point state off (0) and on, same keys and block cache; at
// 20 k keys every row fits in the cache (and in the memtables), at 1 M keys they do not: the
// keys are visited in a fixed cyclic order, the worst case for any cache smaller than the state.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "state/heap/heap_keyed_state_backend.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"
#include "tests/bench/keyed_records.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = kBenchMaxParallelism;

void SetKey(KeyedStateBackend& backend, const KeyedRecord& r) {
  Status s = backend.SetCurrentKey(r.key, r.key_group);
  if (!s.ok()) [[unlikely]] {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
}

void ReadUpdate(benchmark::State& state, KeyedStateBackend& backend) {
  const std::vector<KeyedRecord> records = MakeRecords(state.range(0));
  ValueState<int64_t>* count = *backend.GetState(ValueStateDescriptor<int64_t>("count"));
  for (const KeyedRecord& r : records) {
    SetKey(backend, r);
    count->Update(0);
  }
  size_t i = 0;
  const size_t n = records.size();
  for (auto _ : state) {
    SetKey(backend, records[i]);
    count->Update(count->Value().value_or(0) + 1);
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  const StateSize size = backend.ApproximateSize();
  state.counters["memory_MB"] = static_cast<double>(size.memory_bytes) / 1e6;
  state.counters["disk_MB"] = static_cast<double>(size.disk_bytes) / 1e6;
}

void BM_HeapValueStateReadUpdate(benchmark::State& state) {
  KeyContext context(KeyType::kString, kMaxParallelism, KeyGroupRange::Of(0, kMaxParallelism - 1));
  HeapKeyedStateBackend backend(context);
  ReadUpdate(state, backend);
}
BENCHMARK(BM_HeapValueStateReadUpdate)
    ->Args({20'000, 0})
    ->Args({1'000'000, 0})
    ->Iterations(10'000'000)
    ->Unit(benchmark::kNanosecond);

void BM_RocksDbValueStateReadUpdate(benchmark::State& state) {
  KeyContext context(KeyType::kString, kMaxParallelism, KeyGroupRange::Of(0, kMaxParallelism - 1));
  RocksDbStateOptions options;
  options.dir = (std::filesystem::temp_directory_path() /
                 ("keyflow-rocksdb-bench-" + std::to_string(::getpid())))
                    .string();
  options.block_cache_bytes = state.range(1) << 20;
  options.memtable_bytes = int64_t{8} << 20;
  options.write_cache_bytes = state.range(2) << 20;
  auto backend = RocksDbKeyedStateBackend::Open(context, options);
  if (!backend.ok()) {
    state.SkipWithError(backend.status().ToString().c_str());
    return;
  }
  ReadUpdate(state, **backend);
}
BENCHMARK(BM_RocksDbValueStateReadUpdate)
    ->ArgNames({"keys", "block_cache_MiB", "write_cache_MiB"})
    ->Args({20'000, 8, 0})
    ->Args({20'000, 8, 8})
    ->Args({1'000'000, 8, 0})
    ->Args({1'000'000, 8, 8})
    ->Args({1'000'000, 8, 64})
    ->Iterations(500'000)
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
