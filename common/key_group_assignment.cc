#include "common/key_group_assignment.h"

#include <algorithm>
#include <string>

#include "common/hashing.h"

namespace keyflow {

Status ValidateMaxParallelism(int64_t max_parallelism) {
  if (max_parallelism <= 0 || max_parallelism > kUpperBoundMaxParallelism) {
    return InvalidArgument("max parallelism " + std::to_string(max_parallelism) +
                           " is not within bounds: it must be between 1 and " +
                           std::to_string(kUpperBoundMaxParallelism));
  }
  return Status::Ok();
}

Status ValidateParallelism(int64_t parallelism, int64_t max_parallelism) {
  if (parallelism <= 0 || parallelism > kUpperBoundMaxParallelism) {
    return InvalidArgument("parallelism " + std::to_string(parallelism) +
                           " is not within bounds: it must be between 1 and " +
                           std::to_string(kUpperBoundMaxParallelism));
  }
  KF_RETURN_IF_ERROR(ValidateMaxParallelism(max_parallelism));
  if (parallelism > max_parallelism) {
    return InvalidArgument("parallelism " + std::to_string(parallelism) +
                           " is larger than the max parallelism " +
                           std::to_string(max_parallelism) +
                           ": each subtask needs at least one key group; lower the parallelism "
                           "or raise --max-parallelism");
  }
  return Status::Ok();
}

int32_t RoundUpToPowerOfTwo(int32_t x) {
  uint32_t v = static_cast<uint32_t>(x) - 1;
  v |= v >> 1;
  v |= v >> 2;
  v |= v >> 4;
  v |= v >> 8;
  v |= v >> 16;
  return static_cast<int32_t>(v + 1);
}

int32_t ComputeDefaultMaxParallelism(int32_t parallelism) {
  KF_CHECK(parallelism > 0 && parallelism <= kUpperBoundMaxParallelism) << parallelism;
  return std::min(std::max(RoundUpToPowerOfTwo(parallelism + parallelism / 2),
                           kDefaultLowerBoundMaxParallelism),
                  kUpperBoundMaxParallelism);
}

bool JavaHashCode(const Key& key, KeyType type, int32_t* hash) {
  switch (type) {
    case KeyType::kString:
      return JavaStringHashUtf8(key.bytes(), hash);
    case KeyType::kInt:
      *hash = static_cast<int32_t>(key.AsInt64());
      return true;
    case KeyType::kLong:
      *hash = JavaLongHash(key.AsInt64());
      return true;
  }
  return false;
}

Result<KeyGroupId> AssignToKeyGroup(const Key& key, KeyType type, int32_t max_parallelism) {
  KF_RETURN_IF_ERROR(ValidateMaxParallelism(max_parallelism));
  int32_t h;
  if (!JavaHashCode(key, type, &h)) {
    return ValidateUtf8(key.bytes()).WithContext("cannot assign a key group");
  }
  return ComputeKeyGroupForKeyHash(h, max_parallelism);
}

KeyGroupRange ComputeKeyGroupRangeForOperatorIndex(int32_t max_parallelism, int32_t parallelism,
                                                   SubtaskIndex index) {
  KF_CHECK(ValidateParallelism(parallelism, max_parallelism).ok())
      << "P=" << parallelism << " M=" << max_parallelism;
  KF_CHECK(index.value() >= 0 && index.value() < parallelism) << index;
  int64_t i = index.value(), m = max_parallelism, p = parallelism;
  int32_t start = static_cast<int32_t>((i * m + p - 1) / p);
  int32_t end = static_cast<int32_t>(((i + 1) * m - 1) / p);
  return KeyGroupRange::Of(start, end);
}

std::vector<KeyGroupRange> CreateKeyGroupPartitions(int32_t max_parallelism, int32_t parallelism) {
  std::vector<KeyGroupRange> out;
  out.reserve(static_cast<size_t>(parallelism));
  for (int32_t i = 0; i < parallelism; ++i) {
    out.push_back(
        ComputeKeyGroupRangeForOperatorIndex(max_parallelism, parallelism, SubtaskIndex(i)));
  }
  return out;
}

KeyGroupAssigner::KeyGroupAssigner(KeyType type, int32_t max_parallelism)
    : type_(type), max_parallelism_(max_parallelism) {
  KF_CHECK(ValidateMaxParallelism(max_parallelism).ok()) << max_parallelism;
}

KeyGroupId KeyGroupAssigner::Assign(const Key& key) const {
  int32_t h;
  KF_CHECK(JavaHashCode(key, type_, &h)) << "key is not valid UTF-8";
  return ComputeKeyGroupForKeyHash(h, max_parallelism_);
}

bool KeyGroupAssigner::AssignString(std::string_view utf8, KeyGroupId* out) const {
  int32_t h;
  if (!JavaStringHashUtf8(utf8, &h)) return false;
  *out = ComputeKeyGroupForKeyHash(h, max_parallelism_);
  return true;
}

}  // namespace keyflow
