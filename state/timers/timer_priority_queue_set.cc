#include "state/timers/timer_priority_queue_set.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace keyflow {

namespace {

// How many run entries ahead of the front Poll prefetches the table lines (and twice that
// the entries themselves): enough to hide a memory access between two polls of one key group.
constexpr size_t kPrefetchDistance = 4;

}  // namespace

bool TimerPriorityQueueSet::Add(TimerEntry timer) {
  const uint64_t hash = TimerHash(timer);
  if (FindSlot(timer, hash) != TimerSlotTable::kNotFound) return false;
  if (table_.growth_left() == 0) {
    // Full of elements and tombstones: drop the tombstones if that leaves enough room (at least
    // a quarter of the load limit, so rebuilds stay amortised O(1)), otherwise grow.
    const uint32_t cap = table_.capacity();
    const bool room = cap != 0 && (size() + 1) * 4 <= TimerSlotTable::MaxLoad(cap) * 3;
    RebuildTable(room ? cap : TimerSlotTable::GrownCapacity(cap));
  }
  const auto pos = static_cast<uint32_t>(heap_.size());
  heap_.push_back(std::move(timer));
  heap_slot_.push_back(table_.Insert(hash, pos));
  if (SiftUp(pos) != 0) return false;
  return run_live_ == 0 || TimerLess(heap_[0], run_[run_head_]);
}

bool TimerPriorityQueueSet::Remove(const TimerEntry& timer) {
  const uint32_t slot = FindSlot(timer, TimerHash(timer));
  if (slot == TimerSlotTable::kNotFound) return false;
  const uint32_t location = table_.value(slot);
  const bool was_head = Peek() == &At(location);
  table_.Erase(slot);
  if ((location & kInRun) != 0) {
    RemoveFromRun(location & ~kInRun);
  } else {
    RemoveFromHeap(location);
  }
  return was_head;
}

bool TimerPriorityQueueSet::Contains(const TimerEntry& timer) const {
  return FindSlot(timer, TimerHash(timer)) != TimerSlotTable::kNotFound;
}

TimerEntry TimerPriorityQueueSet::Poll() {
  KF_CHECK(!empty()) << "Poll() on an empty timer queue";
  if (run_live_ == 0 && heap_.size() >= kMinRunSize) ConvertHeapToRun();
  if (run_live_ > 0 && (heap_.empty() || TimerLess(run_[run_head_], heap_[0]))) {
    TimerEntry head = std::move(run_[run_head_]);
    table_.Erase(run_slot_[run_head_]);
    run_slot_[run_head_] = kDeadSlot;
    --run_live_;
    AdvanceRunHead();
    return head;
  }
  TimerEntry head = std::move(heap_[0]);
  table_.Erase(heap_slot_[0]);
  RemoveFromHeap(0);
  return head;
}

void TimerPriorityQueueSet::AddAll(std::vector<TimerEntry> timers) {
  if (timers.empty()) return;
  const size_t need = size() + timers.size();
  RebuildTable(std::max(table_.capacity(), TimerSlotTable::CapacityFor(need)));
  heap_.reserve(heap_.size() + timers.size());
  heap_slot_.reserve(heap_.size() + timers.size());
  const size_t first_new = heap_.size();
  for (TimerEntry& timer : timers) {
    const uint64_t hash = TimerHash(timer);
    if (FindSlot(timer, hash) != TimerSlotTable::kNotFound) continue;
    const auto pos = static_cast<uint32_t>(heap_.size());
    heap_.push_back(std::move(timer));
    heap_slot_.push_back(table_.Insert(hash, pos));
  }
  const size_t added = heap_.size() - first_new;
  const size_t n = heap_.size();
  if (added * static_cast<size_t>(std::bit_width(n)) < n) {
    // A few timers into a large heap: sift each up, O(added * log n).
    for (size_t i = first_new; i < n; ++i) SiftUp(static_cast<uint32_t>(i));
  } else {
    // Floyd's heap construction, O(n).
    for (size_t i = n / 2; i-- > 0;) SiftDown(static_cast<uint32_t>(i));
  }
}

size_t TimerPriorityQueueSet::MemoryBytes() const {
  return heap_.capacity() * sizeof(TimerEntry) + heap_slot_.capacity() * sizeof(uint32_t) +
         run_.capacity() * sizeof(TimerEntry) + run_slot_.capacity() * sizeof(uint32_t) +
         table_.MemoryBytes();
}

uint32_t TimerPriorityQueueSet::FindSlot(const TimerEntry& timer, uint64_t hash) const {
  return table_.Find(hash, [&](uint32_t location) { return At(location) == timer; });
}

// --- heap part ---------------------------------------------------------------------------

void TimerPriorityQueueSet::Place(uint32_t pos, TimerEntry&& timer, uint32_t slot) {
  heap_[pos] = std::move(timer);
  heap_slot_[pos] = slot;
  table_.set_value(slot, pos);
}

uint32_t TimerPriorityQueueSet::SiftUp(uint32_t pos) {
  if (pos == 0 || !TimerLess(heap_[pos], heap_[(pos - 1) / 2])) return pos;
  TimerEntry moving = std::move(heap_[pos]);
  const uint32_t slot = heap_slot_[pos];
  do {
    const uint32_t parent = (pos - 1) / 2;
    Place(pos, std::move(heap_[parent]), heap_slot_[parent]);
    pos = parent;
  } while (pos > 0 && TimerLess(moving, heap_[(pos - 1) / 2]));
  Place(pos, std::move(moving), slot);
  return pos;
}

void TimerPriorityQueueSet::SiftDown(uint32_t pos) {
  const auto n = static_cast<uint32_t>(heap_.size());
  TimerEntry moving = std::move(heap_[pos]);
  const uint32_t slot = heap_slot_[pos];
  for (uint32_t child = 2 * pos + 1; child < n; child = 2 * pos + 1) {
    if (child + 1 < n && TimerLess(heap_[child + 1], heap_[child])) ++child;
    if (!TimerLess(heap_[child], moving)) break;
    Place(pos, std::move(heap_[child]), heap_slot_[child]);
    pos = child;
  }
  Place(pos, std::move(moving), slot);
}

void TimerPriorityQueueSet::RemoveFromHeap(uint32_t pos) {
  const auto last = static_cast<uint32_t>(heap_.size() - 1);
  if (pos == last) {
    heap_.pop_back();
    heap_slot_.pop_back();
    return;
  }
  TimerEntry moving = std::move(heap_.back());
  const uint32_t slot = heap_slot_.back();
  heap_.pop_back();
  heap_slot_.pop_back();
  const uint32_t n = last;
  // Bottom-up deletion: walk the hole down to a leaf along the smaller children (one
  // comparison per level), then sift the former last element up from there. The last element
  // usually belongs near the leaves, so this does fewer comparisons than a plain sift-down.
  uint32_t hole = pos;
  for (uint32_t child = 2 * hole + 1; child < n; child = 2 * hole + 1) {
    if (child + 1 < n && TimerLess(heap_[child + 1], heap_[child])) ++child;
    Place(hole, std::move(heap_[child]), heap_slot_[child]);
    hole = child;
  }
  while (hole > 0) {
    const uint32_t parent = (hole - 1) / 2;
    if (!TimerLess(moving, heap_[parent])) break;
    Place(hole, std::move(heap_[parent]), heap_slot_[parent]);
    hole = parent;
  }
  Place(hole, std::move(moving), slot);
}

// --- run part ----------------------------------------------------------------------------

void TimerPriorityQueueSet::ConvertHeapToRun() {
  KF_DCHECK(run_live_ == 0 && run_.empty());
  const auto n = static_cast<uint32_t>(heap_.size());
  // Sort compact (timestamp, index) keys — timestamps decide almost every comparison — then
  // apply the permutation in place, so no entry is copied more than once and nothing is
  // allocated for the entries themselves.
  struct SortKey {
    int64_t timestamp;
    uint32_t index;
  };
  std::vector<SortKey> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = SortKey{heap_[i].timestamp.millis(), i};
  std::sort(order.begin(), order.end(), [this](const SortKey& a, const SortKey& b) {
    if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp;
    return TimerLess(heap_[a.index], heap_[b.index]);
  });
  constexpr uint32_t kPlaced = ~0u;
  for (uint32_t start = 0; start < n; ++start) {
    if (order[start].index == kPlaced || order[start].index == start) continue;
    // Follow the cycle: position p receives the element at order[p].index.
    TimerEntry first = std::move(heap_[start]);
    const uint32_t first_slot = heap_slot_[start];
    uint32_t p = start;
    while (order[p].index != start) {
      const uint32_t from = order[p].index;
      heap_[p] = std::move(heap_[from]);
      heap_slot_[p] = heap_slot_[from];
      order[p].index = kPlaced;
      p = from;
    }
    heap_[p] = std::move(first);
    heap_slot_[p] = first_slot;
    order[p].index = kPlaced;
  }
  run_.swap(heap_);  // the heap takes the run's released (empty) vectors
  run_slot_.swap(heap_slot_);
  for (uint32_t p = 0; p < n; ++p) table_.set_value(run_slot_[p], kInRun | p);
  run_head_ = 0;
  run_live_ = n;
  for (size_t p = 0; p < std::min<size_t>(n, kPrefetchDistance); ++p) {
    table_.PrefetchForErase(run_slot_[p]);
  }
}

void TimerPriorityQueueSet::RemoveFromRun(uint32_t pos) {
  run_slot_[pos] = kDeadSlot;
  run_[pos] = TimerEntry{};  // frees a long key now rather than when the run is released
  --run_live_;
  if (pos == run_head_) AdvanceRunHead();
}

void TimerPriorityQueueSet::AdvanceRunHead() {
  if (run_live_ == 0) {
    run_ = {};
    run_slot_ = {};
    run_head_ = 0;
    return;
  }
  while (run_slot_[run_head_] == kDeadSlot) ++run_head_;
  // Prefetch the entry 2*D ahead, and the table lines of the entry D ahead.
  const size_t entry_ahead = run_head_ + 2 * kPrefetchDistance;
  if (entry_ahead < run_.size()) PrefetchForRead(&run_[entry_ahead]);
  const size_t table_ahead = run_head_ + kPrefetchDistance;
  if (table_ahead < run_.size() && run_slot_[table_ahead] != kDeadSlot) {
    table_.PrefetchForErase(run_slot_[table_ahead]);
  }
}

void TimerPriorityQueueSet::RebuildTable(size_t capacity) {
  KF_CHECK_GE(TimerSlotTable::MaxLoad(capacity), size() + 1) << "table too small";
  table_.Reset(static_cast<uint32_t>(capacity));
  for (size_t i = 0; i < heap_.size(); ++i) {
    heap_slot_[i] = table_.Insert(TimerHash(heap_[i]), static_cast<uint32_t>(i));
  }
  for (size_t p = run_head_; p < run_.size(); ++p) {
    if (run_slot_[p] == kDeadSlot) continue;
    run_slot_[p] = table_.Insert(TimerHash(run_[p]), kInRun | static_cast<uint32_t>(p));
  }
}

}  // namespace keyflow
