// TimerPriorityQueueSet: the timers of ONE key group — a priority queue with a dedup set
// (Flink's HeapPriorityQueueSet, but per key group instead of one heap for the whole range).
//
// Used by KeyGroupPartitionedTimerQueue (one per local key group and time domain).
//
// Order: TimerLess (timestamp, key bytes, namespace) — a total order, so Peek/Poll results do
// not depend on insertion history. Identity: (timestamp, key, namespace); adding a timer that
// is already present is a no-op.
//
// Layout (README.md, "Memory layout"): timers live in one of two flat arrays,
//   * the heap: a binary min-heap of 32-byte TimerEntry values (+ a parallel array of 4-byte
//     dedup-table slots); every new timer goes here;
//   * the run: a sorted array the heap is turned into when Poll finds the run exhausted and
//     the heap has at least kMinRunSize timers. Polling the run is a sequential read with
//     prefetching instead of a heap descent through memory that is not in cache; a removed
//     run timer is only marked dead. Each timer is sorted into a run at most once.
// The head is the smaller of heap top and run front. The dedup table (TimerSlotTable) maps
// each timer to its position (heap index, or run index with kInRun set), and every move
// updates it, so Remove(timer) is O(1) to find and O(log n) to restore the heap.
//
// Threading: not synchronised. Const methods only read this object, so a thread may read an
// instance while another thread mutates a different instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "state/timers/large_array_allocator.h"
#include "state/timers/timer_entry.h"
#include "state/timers/timer_slot_table.h"

namespace keyflow {

class TimerPriorityQueueSet {
 public:
  // Polling a heap of at least this many timers first sorts it into a run.
  static constexpr size_t kMinRunSize = 64;

  TimerPriorityQueueSet() = default;
  // Copyable (e.g. for a copy-on-write snapshot of one key group) and movable.

  // Adds `timer` unless an equal timer is present (then nothing changes).
  // Returns true iff `timer` is now the head (so: it was inserted and orders before the old
  // head, or the queue was empty).
  // (By value: a caller's temporary is moved in, not copied.)
  bool Add(TimerEntry timer);

  // Removes the timer equal to `timer`, if present. Returns true iff it was the head.
  bool Remove(const TimerEntry& timer);

  bool Contains(const TimerEntry& timer) const;

  // The earliest timer, or nullptr when empty. Valid until the next mutation.
  const TimerEntry* Peek() const {
    const TimerEntry* heap_top = heap_.empty() ? nullptr : &heap_[0];
    if (run_live_ == 0) return heap_top;
    const TimerEntry* run_front = &run_[run_head_];
    return heap_top == nullptr || TimerLess(*run_front, *heap_top) ? run_front : heap_top;
  }

  // Removes and returns the earliest timer. Precondition: !empty().
  TimerEntry Poll();

  // Adds every timer of `timers` with dedup (against the queue and within `timers`), then
  // restores the heap in O(n). For restore: cheaper than n calls of Add.
  void AddAll(std::vector<TimerEntry> timers);

  size_t size() const { return heap_.size() + run_live_; }
  bool empty() const { return size() == 0; }

  // Calls fn(const TimerEntry&) for every timer, in unspecified order. fn must not mutate
  // this queue.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const TimerEntry& t : heap_) fn(t);
    for (size_t i = run_head_; i < run_.size(); ++i) {
      if (run_slot_[i] != kDeadSlot) fn(run_[i]);
    }
  }

  // Bytes held by the arrays (heap, run, table), for memory accounting.
  size_t MemoryBytes() const;

 private:
  static constexpr uint32_t kInRun = 1u << 31;  // table value flag: a run index
  static constexpr uint32_t kDeadSlot = ~0u;    // run_slot_ of a polled/removed timer

  // The timer at a table value: a heap position, or kInRun + a run position.
  const TimerEntry& At(uint32_t location) const {
    return (location & kInRun) != 0 ? run_[location & ~kInRun] : heap_[location];
  }
  // Table slot of the timer equal to `timer` (hash: TimerHash(timer)), or kNotFound.
  uint32_t FindSlot(const TimerEntry& timer, uint64_t hash) const;

  // --- heap part ---
  // Moves `timer` (whose table slot is `slot`) into heap position `pos` and links both ways.
  void Place(uint32_t pos, TimerEntry&& timer, uint32_t slot);
  // Sifts the element at `pos` towards the root; returns its final position.
  uint32_t SiftUp(uint32_t pos);
  // Sifts the element at `pos` towards the leaves (used by AddAll's heapify).
  void SiftDown(uint32_t pos);
  // Removes the heap element at `pos` (its table slot is already erased).
  void RemoveFromHeap(uint32_t pos);

  // --- run part ---
  // Precondition: the run is empty. Sorts the heap in place and makes it the run; the heap
  // becomes empty.
  void ConvertHeapToRun();
  // Marks run entry `pos` dead (its table slot is already erased).
  void RemoveFromRun(uint32_t pos);
  // Skips dead entries at the run front, releases an exhausted run, prefetches ahead.
  void AdvanceRunHead();

  // Rebuilds the table at `capacity` (dropping tombstones), re-linking every live timer.
  void RebuildTable(size_t capacity);

  LargeArray<TimerEntry> heap_;     // min-heap under TimerLess, root at 0
  LargeArray<uint32_t> heap_slot_;  // heap_slot_[i]: table slot of heap_[i]
  LargeArray<TimerEntry> run_;      // sorted under TimerLess; live ones from run_head_ on
  LargeArray<uint32_t> run_slot_;   // run_slot_[i]: table slot of run_[i], or kDeadSlot
  size_t run_head_ = 0;             // first live run entry (when run_live_ > 0)
  size_t run_live_ = 0;             // live entries in run_
  TimerSlotTable table_;            // slot -> heap position | kInRun + run position
};

}  // namespace keyflow
