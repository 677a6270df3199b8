// KeyContext: the current key of a keyed subtask (Flink's InternalKeyContext).
//
// The runtime sets the current key before every processElement and onTimer call; keyed state
// and timers always act on it, so user code never passes a key. A subtask owns the key groups
// of its range only: setting a key from another key group is refused (the record was routed
// to the wrong subtask — the same error Flink raises), and nothing is ever stored for it.
//
// Threading: owned by the task thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "common/key_group_range.h"
#include "common/status.h"

namespace keyflow {

class KeyContext {
 public:
  // Preconditions: max_parallelism valid; range non-empty and inside [0, max_parallelism).
  KeyContext(KeyType key_type, int32_t max_parallelism, KeyGroupRange range)
      : assigner_(key_type, max_parallelism), range_(range) {
    KF_CHECK(!range.empty() && range.end() < max_parallelism) << range << " M=" << max_parallelism;
  }

  // Sets the current key, whose key group the caller already knows (the router computed it).
  // Precondition: key_group == assigner().Assign(key) (checked in debug builds).
  // Fails with OutOfRange when key_group is not in range(); the current key is then unchanged.
  [[nodiscard]] Status SetCurrentKey(const Key& key, KeyGroupId key_group) {
    KF_DCHECK(assigner_.Assign(key) == key_group);
    if (!range_.contains(key_group)) [[unlikely]] {
      return IllegalKeyGroup(key_group);
    }
    key_ = key;
    key_group_ = key_group;
    key_hash_ = key.Hash();
    has_key_ = true;
    return Status::Ok();
  }
  // Computes the key group first.
  [[nodiscard]] Status SetCurrentKey(const Key& key) {
    return SetCurrentKey(key, assigner_.Assign(key));
  }

  bool has_current_key() const { return has_key_; }
  const Key& current_key() const { return key_; }
  KeyGroupId current_key_group() const { return key_group_; }
  // Key::Hash() of the current key, computed once per SetCurrentKey for state lookups.
  uint64_t current_key_hash() const { return key_hash_; }
  // current_key_group() - range().start(): the index into per-key-group arrays.
  int32_t current_key_group_index() const { return key_group_.value() - range_.start(); }

  const KeyGroupRange& range() const { return range_; }
  const KeyGroupAssigner& assigner() const { return assigner_; }
  KeyType key_type() const { return assigner_.key_type(); }
  int32_t max_parallelism() const { return assigner_.max_parallelism(); }

  // Flink's KeyGroupRangeOffsets.newIllegalKeyGroupException message.
  Status IllegalKeyGroup(KeyGroupId g) const {
    return OutOfRange("Key group " + std::to_string(g.value()) + " is not in " + range_.ToString() +
                      ". Unless you're directly using low level state access APIs, this is most "
                      "likely caused by non-deterministic shuffle key (hashCode and equals "
                      "implementation).");
  }

 private:
  KeyGroupAssigner assigner_;
  KeyGroupRange range_;
  Key key_;
  KeyGroupId key_group_{0};
  uint64_t key_hash_ = 0;
  bool has_key_ = false;
};

}  // namespace keyflow
