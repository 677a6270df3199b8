#include "state/snapshot/key_group_change_tracker.h"

namespace keyflow {

KeyGroupChangeTracker::KeyGroupChangeTracker(int32_t num_key_groups)
    : KeyGroupWriteGuard(num_key_groups), num_key_groups_(num_key_groups) {
  current_.changed.assign(static_cast<size_t>(num_key_groups), false);
}

void KeyGroupChangeTracker::SerializeBeforeWrite(int32_t index) {
  current_.changed[static_cast<size_t>(index)] = true;
  if (snapshot_ != nullptr) snapshot_->BeforeWrite(index);
  state_[index].store(kSerialized, std::memory_order_relaxed);
}

void KeyGroupChangeTracker::StartInterval(CheckpointId id) {
  Interval next{id, std::vector<bool>(static_cast<size_t>(num_key_groups_), false)};
  closed_.push_back(std::move(current_));
  current_ = std::move(next);
  for (int32_t i = 0; i < num_key_groups_; ++i)
    state_[i].store(kPending, std::memory_order_relaxed);
  snapshot_ = nullptr;
}

std::vector<bool> KeyGroupChangeTracker::ChangedSince(CheckpointId base) const {
  std::vector<bool> changed(static_cast<size_t>(num_key_groups_), false);
  bool known = base.value() != 0 && current_.start == base;
  for (const Interval& in : closed_) known |= base.value() != 0 && in.start == base;
  if (!known) return std::vector<bool>(static_cast<size_t>(num_key_groups_), true);
  auto add = [&](const Interval& in) {
    if (in.start < base) return;
    for (size_t i = 0; i < changed.size(); ++i) {
      if (in.changed[i]) changed[i] = true;
    }
  };
  for (const Interval& in : closed_) add(in);
  add(current_);
  return changed;
}

void KeyGroupChangeTracker::DropBefore(CheckpointId base) {
  while (!closed_.empty() && closed_.front().start < base) closed_.pop_front();
}

}  // namespace keyflow
