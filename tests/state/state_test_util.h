// Helpers shared by the heap state backend tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "state/heap/heap_keyed_state_backend.h"

namespace keyflow::testing_util {

inline Key K(std::string_view s) {
  return Key::FromBytes(s);
}

// The first `n` keys "k-0", "k-1", ... (in that order) whose key group is `g` (M = max_p).
inline std::vector<Key> KeysInGroup(int32_t g, int n, int32_t max_p = 128) {
  KeyGroupAssigner assigner(KeyType::kString, max_p);
  std::vector<Key> keys;
  for (int i = 0; static_cast<int>(keys.size()) < n; ++i) {
    Key k = K("k-" + std::to_string(i));
    if (assigner.Assign(k).value() == g) keys.push_back(k);
  }
  return keys;
}

// Average of int64 inputs; a user struct serialised by its own Write/Read.
struct AvgAcc {
  int64_t sum = 0;
  int64_t count = 0;
  void Write(BinaryWriter& out) const {
    out.I64(sum);
    out.I64(count);
  }
  bool Read(BinaryReader& in) {
    sum = in.I64();
    count = in.I64();
    return in.ok() && count >= 0;
  }
};

class Average final : public AggregateFunction<int64_t, AvgAcc, double> {
 public:
  AvgAcc CreateAccumulator() const override { return {}; }
  void Add(const int64_t& v, AvgAcc& acc) const override {
    acc.sum += v;
    acc.count += 1;
  }
  double GetResult(const AvgAcc& acc) const override {
    return acc.count == 0 ? 0.0 : static_cast<double>(acc.sum) / static_cast<double>(acc.count);
  }
};

inline int64_t Sum(const int64_t& a, const int64_t& b) {
  return a + b;
}

}  // namespace keyflow::testing_util
