// Keyed records for the state benchmarks: `num_keys` distinct keys "uid-%08d" (12 bytes) in a
// fixed pseudo-random order, with their key groups (M = kBenchMaxParallelism) precomputed as the
// router does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "common/key.h"
#include "common/key_group_assignment.h"

namespace keyflow {

inline constexpr int32_t kBenchMaxParallelism = 128;

struct KeyedRecord {
  Key key;
  KeyGroupId key_group;
};

inline std::vector<KeyedRecord> MakeRecords(int64_t num_keys) {
  KeyGroupAssigner assigner(KeyType::kString, kBenchMaxParallelism);
  std::vector<KeyedRecord> records;
  records.reserve(static_cast<size_t>(num_keys));
  char buf[32];
  for (int64_t i = 0; i < num_keys; ++i) {
    std::snprintf(buf, sizeof(buf), "uid-%08lld", static_cast<long long>(i));
    Key key = Key::FromBytes(buf);
    KeyGroupId g = assigner.Assign(key);
    records.push_back(KeyedRecord{std::move(key), g});
  }
  std::mt19937_64 rng(42);
  std::shuffle(records.begin(), records.end(), rng);
  return records;
}

}  // namespace keyflow
