// Key -> key group throughput (common/key_group_assignment.h): what every source record pays
// once, in the router. Single thread, Release build, M = 128.
//
//   build/bin/key_group_bench            (target: >= 50 M keys/s for 12-byte string keys)
//
// Keys are "uid-%08d" (12 bytes of ASCII) for 1 M distinct ids in a fixed pseudo-random order,
// read sequentially as a source reads its records. Counter: items_per_second = keys/s.
//   BM_AssignStringKey        KeyGroupAssigner::Assign on precomputed Keys (the shuffle path)
//   BM_AssignStringView       KeyGroupAssigner::AssignString on string_views (a parser's path:
//                             no Key is built)
//   BM_AssignIntKey/LongKey   Assign on int32 / int64 keys
//   BM_JavaStringHash         only the Java String.hashCode over UTF-8 (where the time goes)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/hashing.h"
#include "common/key.h"
#include "common/key_group_assignment.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;
constexpr int64_t kNumKeys = 1'000'000;

// The ids 0..n-1 in a fixed pseudo-random order.
std::vector<int64_t> ShuffledIds(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(42);
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

// The 12-byte text of every key, back to back, and views into it.
struct StringKeys {
  StringKeys() {
    const std::vector<int64_t> ids = ShuffledIds(kNumKeys);
    text.reserve(ids.size() * 12);
    char buf[32];
    for (int64_t id : ids) {
      std::snprintf(buf, sizeof(buf), "uid-%08lld", static_cast<long long>(id));
      text.append(buf, 12);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      views.emplace_back(text.data() + i * 12, 12);
      keys.push_back(Key::FromBytes(views.back()));
    }
  }
  std::string text;
  std::vector<std::string_view> views;
  std::vector<Key> keys;
};

const StringKeys& Strings() {
  static const StringKeys* k = new StringKeys();
  return *k;
}

// Sums the key groups so that no call can be optimised away.
template <typename Fn>
void RunOverKeys(benchmark::State& state, size_t n, Fn&& assign_one) {
  int64_t sum = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) sum += assign_one(i);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

void BM_AssignStringKey(benchmark::State& state) {
  const StringKeys& s = Strings();
  const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  RunOverKeys(state, s.keys.size(), [&](size_t i) { return assigner.Assign(s.keys[i]).value(); });
}
BENCHMARK(BM_AssignStringKey)->Unit(benchmark::kMillisecond);

void BM_AssignStringView(benchmark::State& state) {
  const StringKeys& s = Strings();
  const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  RunOverKeys(state, s.views.size(), [&](size_t i) {
    KeyGroupId g(0);
    if (!assigner.AssignString(s.views[i], &g)) [[unlikely]]
      std::abort();
    return g.value();
  });
}
BENCHMARK(BM_AssignStringView)->Unit(benchmark::kMillisecond);

void BM_JavaStringHash(benchmark::State& state) {
  const StringKeys& s = Strings();
  RunOverKeys(state, s.views.size(), [&](size_t i) {
    int32_t h = 0;
    if (!JavaStringHashUtf8(s.views[i], &h)) [[unlikely]]
      std::abort();
    return h;
  });
}
BENCHMARK(BM_JavaStringHash)->Unit(benchmark::kMillisecond);

std::vector<Key> IntegerKeys() {
  std::vector<Key> keys;
  for (int64_t id : ShuffledIds(kNumKeys)) keys.push_back(Key::FromInt64(id * 7919 - 3'000'000));
  return keys;
}

void BM_AssignIntKey(benchmark::State& state) {
  const std::vector<Key> keys = IntegerKeys();
  const KeyGroupAssigner assigner(KeyType::kInt, kMaxParallelism);
  RunOverKeys(state, keys.size(), [&](size_t i) { return assigner.Assign(keys[i]).value(); });
}
BENCHMARK(BM_AssignIntKey)->Unit(benchmark::kMillisecond);

void BM_AssignLongKey(benchmark::State& state) {
  const std::vector<Key> keys = IntegerKeys();
  const KeyGroupAssigner assigner(KeyType::kLong, kMaxParallelism);
  RunOverKeys(state, keys.size(), [&](size_t i) { return assigner.Assign(keys[i]).value(); });
}
BENCHMARK(BM_AssignLongKey)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
