// KeyGroupPartitionedTimerQueue: the timers of one time domain for every key group of a
// subtask's range (Flink's KeyGroupPartitionedPriorityQueue).
//
// One TimerPriorityQueueSet per local key group, plus a small heap over the sub-queues' heads
// that yields the global earliest timer: a tournament tree (a min-heap whose leaves are the
// key groups at fixed positions; each inner node holds the smaller of its children), so a head
// change is one branch-free walk of log2(key groups) steps to the root. An empty sub-queue
// sorts after every non-empty one. Keeping the timers per key group is what makes
// snapshotting, restoring and rescaling one key group touch only that key group's timers.
//
// Global order (deterministic, independent of insertion history): timestamp, then key group,
// then key bytes (unsigned lexicographic), then namespace. Peek/Poll follow it.
//
// Used by InternalTimerService (one queue per time domain).
//
// Every mutation of a key group's sub-queue goes through the private MutableKeyGroup(), the
// single place where copy-on-write for asynchronous snapshots hooks in. Const accessors of one
// key group (KeyGroupQueue, NumTimers) read only that sub-queue, so another thread may read an
// untouched key group while the owning thread mutates other key groups.
//
// Threading: owned by the task thread (see above for the one cross-thread read).
#pragma once

#include "state/key_group_write_guard.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/check.h"
#include "common/key_group_range.h"
#include "common/types.h"
#include "state/timers/timer_entry.h"
#include "state/timers/timer_priority_queue_set.h"

namespace keyflow {

class KeyGroupPartitionedTimerQueue {
 public:
  // Precondition: `range` is not empty.
  explicit KeyGroupPartitionedTimerQueue(KeyGroupRange range);

  KeyGroupPartitionedTimerQueue(const KeyGroupPartitionedTimerQueue&) = delete;
  KeyGroupPartitionedTimerQueue& operator=(const KeyGroupPartitionedTimerQueue&) = delete;

  const KeyGroupRange& range() const { return range_; }

  // All mutators and per-key-group accessors: precondition range().contains(key_group)
  // (CHECKed: a timer of a foreign key group is a routing bug, never stored). `key_group` must
  // be the key group of timer.key.

  // Adds `timer` unless an equal one is present. Returns true iff it is now the global head.
  bool Add(KeyGroupId key_group, TimerEntry timer);
  // Removes the equal timer if present. Returns true iff it was the global head.
  bool Remove(KeyGroupId key_group, const TimerEntry& timer);
  bool Contains(KeyGroupId key_group, const TimerEntry& timer) const;
  // Bulk add with dedup, for restore.
  void AddAll(KeyGroupId key_group, std::vector<TimerEntry> timers);

  // The global earliest timer, or nullptr when empty. Valid until the next mutation.
  const TimerEntry* Peek() const {
    return queues_[HeadIndex()].Peek();  // an empty head sub-queue means all are empty
  }
  // Key group of Peek(). Precondition: !empty().
  KeyGroupId PeekKeyGroup() const {
    KF_DCHECK(!empty());
    return KeyGroupId(range_.start() + HeadIndex());
  }
  // Removes and returns the global earliest timer; stores its key group in *key_group.
  // Precondition: !empty().
  TimerEntry Poll(KeyGroupId* key_group);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The sub-queue of one key group, read-only (iteration: KeyGroupQueue(g).ForEach(fn)).
  const TimerPriorityQueueSet& KeyGroupQueue(KeyGroupId key_group) const {
    return queues_[IndexOf(key_group)];
  }
  size_t NumTimers(KeyGroupId key_group) const { return KeyGroupQueue(key_group).size(); }

  // Calls fn(KeyGroupId, const TimerEntry&) for every timer: key groups ascending (as Flink's
  // iterator), unspecified order inside a key group. fn must not mutate this queue.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (int32_t i = 0; i < range_.size(); ++i) {
      const KeyGroupId g(range_.start() + i);
      queues_[i].ForEach([&](const TimerEntry& t) { fn(g, t); });
    }
  }

  // Bytes held by all sub-queues and the head heap, for memory accounting.
  size_t MemoryBytes() const;

 public:
  // Every later change of key group i first calls guard->BeforeWrite(i) (asynchronous
  // snapshots); nullptr removes it. Task thread only.
  void SetWriteGuard(KeyGroupWriteGuard* guard) { write_guard_ = guard; }

 private:
  // The order of sub-queue heads as one unsigned 128-bit number: high 64 bits the head's
  // timestamp with the sign bit flipped (all ones when empty); low 64 bits (empty << 32) |
  // index. So: timestamp, then non-empty before empty, then key group.
  using HeadKey = unsigned __int128;
  static HeadKey MakeHeadKey(const TimerEntry* head, int32_t index) {
    const auto low = static_cast<uint64_t>(static_cast<uint32_t>(index));
    if (head == nullptr) return (~HeadKey{0} << 64) | (uint64_t{1} << 32) | low;
    const uint64_t biased = static_cast<uint64_t>(head->timestamp.millis()) ^ (uint64_t{1} << 63);
    return (HeadKey{biased} << 64) | low;
  }
  int32_t HeadIndex() const { return static_cast<int32_t>(static_cast<uint32_t>(tree_[1])); }

  int32_t IndexOf(KeyGroupId key_group) const {
    KF_CHECK(range_.contains(key_group)) << "key group " << key_group << " is not in " << range_;
    return range_.IndexOf(key_group);
  }
  // THE accessor for every mutation of a key group's timers (copy-on-write hook point).
  KeyGroupWriteGuard* write_guard_ = nullptr;
  TimerPriorityQueueSet& MutableKeyGroup(int32_t index) {
    if (write_guard_ != nullptr) write_guard_->BeforeWrite(index);
    return queues_[index];
  }
  // Re-reads sub-queue `index`'s head and recomputes its path to the root of the tree.
  void UpdateHead(int32_t index);

  KeyGroupRange range_;
  std::vector<TimerPriorityQueueSet> queues_;  // indexed by key group - range.start(); fixed size
  int32_t leaves_;                             // power of two >= range.size()
  std::vector<HeadKey> tree_;  // [1] root, [leaves_ + index] leaf of sub-queue index, [0] unused
  size_t size_ = 0;
};

}  // namespace keyflow
