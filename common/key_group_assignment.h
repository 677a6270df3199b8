// Key → key group → subtask, exactly as Flink's KeyGroupRangeAssignment:
//   keyGroup(key)         = FlinkMurmurHash(javaHashCode(key)) % maxParallelism
//   range(i of P)         = [ceil(i*M/P), floor(((i+1)*M - 1)/P)]
//   operatorIndex(g)      = g * P / M
//   defaultMaxParallelism = min(max(roundUpToPowerOfTwo(P + P/2), 128), 32768)
// Bound violations are user errors (Status), not CHECKs: they come from flags and config.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/hashing.h"
#include "common/key.h"
#include "common/key_group_range.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

inline constexpr int32_t kUpperBoundMaxParallelism = 1 << 15;        // 32768, inclusive
inline constexpr int32_t kDefaultLowerBoundMaxParallelism = 1 << 7;  // 128

// OK iff 0 < maxParallelism <= 32768.
Status ValidateMaxParallelism(int64_t max_parallelism);
// OK iff 0 < parallelism <= 32768, max parallelism valid and parallelism <= maxParallelism.
Status ValidateParallelism(int64_t parallelism, int64_t max_parallelism);

int32_t RoundUpToPowerOfTwo(int32_t x);  // 0 -> 0, 1 -> 1, 3 -> 4, 17 -> 32
// Precondition: 0 < parallelism <= 32768.
int32_t ComputeDefaultMaxParallelism(int32_t parallelism);

// Java hashCode of a key of the given type. Returns false only for a kString key that is not
// valid UTF-8 (which never reaches the runtime: sources validate text).
bool JavaHashCode(const Key& key, KeyType type, int32_t* hash);

inline KeyGroupId ComputeKeyGroupForKeyHash(int32_t java_hash, int32_t max_parallelism) {
  return KeyGroupId(FlinkMurmurHash(java_hash) % max_parallelism);
}

// Precondition: max parallelism valid (see ValidateMaxParallelism).
Result<KeyGroupId> AssignToKeyGroup(const Key& key, KeyType type, int32_t max_parallelism);

// Preconditions: ValidateParallelism(parallelism, maxParallelism).ok(), 0 <= index < parallelism.
KeyGroupRange ComputeKeyGroupRangeForOperatorIndex(int32_t max_parallelism, int32_t parallelism,
                                                   SubtaskIndex index);
// The ranges of all subtasks, in index order; they tile [0, maxParallelism).
std::vector<KeyGroupRange> CreateKeyGroupPartitions(int32_t max_parallelism, int32_t parallelism);

inline SubtaskIndex ComputeOperatorIndexForKeyGroup(int32_t max_parallelism, int32_t parallelism,
                                                    KeyGroupId g) {
  return SubtaskIndex(
      static_cast<int32_t>(static_cast<int64_t>(g.value()) * parallelism / max_parallelism));
}

// Hot-path router: key → key group for one job's key type and max parallelism.
class KeyGroupAssigner {
 public:
  KeyGroupAssigner(KeyType type, int32_t max_parallelism);
  KeyType key_type() const { return type_; }
  int32_t max_parallelism() const { return max_parallelism_; }

  // Precondition for kString keys: valid UTF-8 (checked: an invalid key aborts; sources reject
  // invalid text before it gets here).
  KeyGroupId Assign(const Key& key) const;
  // String fast path without building a Key. Returns false for invalid UTF-8.
  bool AssignString(std::string_view utf8, KeyGroupId* out) const;

 private:
  KeyType type_;
  int32_t max_parallelism_;
};

}  // namespace keyflow
