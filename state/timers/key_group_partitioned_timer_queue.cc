#include "state/timers/key_group_partitioned_timer_queue.h"

#include <algorithm>
#include <utility>

namespace keyflow {

KeyGroupPartitionedTimerQueue::KeyGroupPartitionedTimerQueue(KeyGroupRange range)
    : range_(range), leaves_(1) {
  KF_CHECK(!range.empty()) << "a timer queue needs at least one key group";
  queues_.resize(static_cast<size_t>(range.size()));
  while (leaves_ < range.size()) leaves_ *= 2;
  // Every leaf empty (padding leaves too, with indexes past the range that never win against
  // a real key group); inner nodes are the minimum of their children.
  tree_.assign(2 * static_cast<size_t>(leaves_), 0);
  for (int32_t i = 0; i < leaves_; ++i) tree_[leaves_ + i] = MakeHeadKey(nullptr, i);
  for (int32_t node = leaves_ - 1; node >= 1; --node) {
    tree_[node] = std::min(tree_[2 * node], tree_[2 * node + 1]);
  }
}

bool KeyGroupPartitionedTimerQueue::Add(KeyGroupId key_group, TimerEntry timer) {
  const int32_t index = IndexOf(key_group);
  TimerPriorityQueueSet& queue = MutableKeyGroup(index);
  const size_t before = queue.size();
  const bool head_changed = queue.Add(std::move(timer));
  size_ += queue.size() - before;
  if (!head_changed) return false;
  UpdateHead(index);
  return HeadIndex() == index;
}

bool KeyGroupPartitionedTimerQueue::Remove(KeyGroupId key_group, const TimerEntry& timer) {
  const int32_t index = IndexOf(key_group);
  TimerPriorityQueueSet& queue = MutableKeyGroup(index);
  const size_t before = queue.size();
  const bool head_changed = queue.Remove(timer);
  size_ -= before - queue.size();
  if (!head_changed) return false;
  const bool was_global_head = HeadIndex() == index;
  UpdateHead(index);
  return was_global_head;
}

bool KeyGroupPartitionedTimerQueue::Contains(KeyGroupId key_group, const TimerEntry& timer) const {
  return queues_[IndexOf(key_group)].Contains(timer);
}

void KeyGroupPartitionedTimerQueue::AddAll(KeyGroupId key_group, std::vector<TimerEntry> timers) {
  const int32_t index = IndexOf(key_group);
  TimerPriorityQueueSet& queue = MutableKeyGroup(index);
  const size_t before = queue.size();
  queue.AddAll(std::move(timers));
  size_ += queue.size() - before;
  UpdateHead(index);
}

TimerEntry KeyGroupPartitionedTimerQueue::Poll(KeyGroupId* key_group) {
  KF_CHECK(!empty()) << "Poll() on an empty timer queue";
  const int32_t index = HeadIndex();
  TimerEntry timer = MutableKeyGroup(index).Poll();
  --size_;
  UpdateHead(index);
  *key_group = KeyGroupId(range_.start() + index);
  return timer;
}

size_t KeyGroupPartitionedTimerQueue::MemoryBytes() const {
  size_t bytes =
      tree_.capacity() * sizeof(HeadKey) + queues_.capacity() * sizeof(TimerPriorityQueueSet);
  for (const TimerPriorityQueueSet& q : queues_) bytes += q.MemoryBytes();
  return bytes;
}

void KeyGroupPartitionedTimerQueue::UpdateHead(int32_t index) {
  size_t node = static_cast<size_t>(leaves_) + static_cast<size_t>(index);
  HeadKey winner = MakeHeadKey(queues_[index].Peek(), index);
  tree_[node] = winner;
  // Carry the path's winner in a register: each step reads only the sibling, so the steps do
  // not wait for each other's stores.
  for (; node > 1; node /= 2) {
    winner = std::min(winner, tree_[node ^ 1]);
    tree_[node / 2] = winner;
  }
}

}  // namespace keyflow
