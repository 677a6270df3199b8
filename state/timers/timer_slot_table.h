// TimerSlotTable: the dedup index of one key group's timer heap (an implementation detail of
// TimerPriorityQueueSet; nothing else uses it).
//
// An open-addressing table of 32-bit values (heap positions) in the SwissTable layout: one
// control byte per slot (empty / deleted / 7 bits of the hash) scanned 16 at a time, plus a
// parallel array of values. It stores no keys: Find() asks the caller whether a value's
// element equals the one looked up, so the table costs 5 bytes per slot. Capacity is any
// multiple of 16 (a hash picks its home slot by multiply-shift; probing moves on 16 slots at a
// time and wraps) and at most 7/8 of it is used. The owner rebuilds the table (Reset + Insert
// of every element) when growth_left() reaches 0, growing by 1.5x, so it costs 5.7-8.6 bytes
// per element rather than the 5.7-11.4 of power-of-two capacities.
//
// Threading: none (owned by one queue). Const methods touch no mutable state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/check.h"
#include "common/prefetch.h"
#include "state/timers/large_array_allocator.h"

namespace keyflow {

class TimerSlotTable {
 public:
  static constexpr uint32_t kNotFound = ~0u;

  // Smallest capacity (a multiple of 16) that holds `n` elements under the 7/8 load limit.
  static uint32_t CapacityFor(uint64_t n) {
    uint64_t cap = (n * 8 + 6) / 7;
    cap = std::max<uint64_t>(kGroupWidth, (cap + kGroupWidth - 1) / kGroupWidth * kGroupWidth);
    while (MaxLoad(cap) < n) cap += kGroupWidth;
    KF_CHECK_LE(cap, uint64_t{1} << 31) << "too many timers in one key group: " << n;
    return static_cast<uint32_t>(cap);
  }
  // The capacity to grow to from `capacity` (1.5x).
  static uint32_t GrownCapacity(uint32_t capacity) {
    return CapacityFor(MaxLoad(capacity) + MaxLoad(capacity) / 2 + 1);
  }
  static uint64_t MaxLoad(uint64_t capacity) { return capacity - capacity / 8; }

  uint32_t capacity() const { return capacity_; }
  // Inserts that may still go to an empty slot before the table must be rebuilt.
  uint32_t growth_left() const { return growth_left_; }
  size_t MemoryBytes() const { return ctrl_.capacity() + values_.capacity() * sizeof(uint32_t); }

  // Drops every entry; afterwards capacity() == capacity (>= 16, or 0).
  void Reset(uint32_t capacity) {
    KF_CHECK(capacity == 0 || capacity >= kGroupWidth) << capacity;
    capacity_ = capacity;
    growth_left_ = static_cast<uint32_t>(MaxLoad(capacity));
    // Fresh vectors: old contents are not copied and a smaller table releases memory.
    ctrl_ = LargeArray<int8_t>(capacity == 0 ? 0 : capacity + kGroupWidth, kEmpty);
    values_ = LargeArray<uint32_t>(capacity);
  }

  // The slot whose value v satisfies eq(v), among values inserted with this hash; kNotFound
  // if none.
  template <typename Eq>
  uint32_t Find(uint64_t hash, Eq&& eq) const {
    if (capacity_ == 0) return kNotFound;
    const int8_t tag = H2(hash);
    for (uint32_t pos = Home(hash);; pos = Next(pos)) {
      const Group g(&ctrl_[pos]);
      for (uint32_t m = g.Match(tag); m != 0; m &= m - 1) {
        const uint32_t slot = Wrap(pos + static_cast<uint32_t>(__builtin_ctz(m)));
        if (eq(values_[slot])) return slot;
      }
      if (g.MatchEmpty() != 0) return kNotFound;
    }
  }

  // Stores `value` under `hash` and returns its slot.
  // Preconditions: growth_left() > 0; no equal element is stored (check with Find first).
  uint32_t Insert(uint64_t hash, uint32_t value) {
    KF_DCHECK(growth_left_ > 0);
    for (uint32_t pos = Home(hash);; pos = Next(pos)) {
      const uint32_t m = Group(&ctrl_[pos]).MatchEmptyOrDeleted();
      if (m == 0) continue;
      const uint32_t slot = Wrap(pos + static_cast<uint32_t>(__builtin_ctz(m)));
      if (ctrl_[slot] == kEmpty) --growth_left_;
      SetCtrl(slot, H2(hash));
      values_[slot] = value;
      return slot;
    }
  }

  // Frees `slot`. It becomes empty again if no probe sequence can have passed over it (a run
  // of fewer than 16 full slots around it — SwissTable's rule), otherwise a tombstone.
  void Erase(uint32_t slot) {
    KF_DCHECK(slot < capacity_ && ctrl_[slot] >= 0);
    const uint32_t before =
        slot >= kGroupWidth ? slot - kGroupWidth : slot + capacity_ - kGroupWidth;
    const uint32_t empty_after = Group(&ctrl_[slot]).MatchEmpty();
    const uint32_t empty_before = Group(&ctrl_[before]).MatchEmpty();
    const bool never_full = empty_before != 0 && empty_after != 0 &&
                            static_cast<uint32_t>(__builtin_ctz(empty_after)) +
                                    static_cast<uint32_t>(__builtin_clz(empty_before) - 16) <
                                kGroupWidth;
    SetCtrl(slot, never_full ? kEmpty : kDeleted);
    if (never_full) ++growth_left_;
  }

  // Hints the cache lines that Erase(slot) reads.
  void PrefetchForErase(uint32_t slot) const {
    PrefetchForRead(&ctrl_[slot]);
    PrefetchForRead(
        &ctrl_[slot >= kGroupWidth ? slot - kGroupWidth : slot + capacity_ - kGroupWidth]);
  }

  uint32_t value(uint32_t slot) const { return values_[slot]; }
  void set_value(uint32_t slot, uint32_t value) { values_[slot] = value; }

 private:
  static constexpr uint32_t kGroupWidth = 16;
  static constexpr int8_t kEmpty = -128;  // 0b10000000
  static constexpr int8_t kDeleted = -2;  // 0b11111110
  // Full slots hold 0..127: the top 7 bits of the hash.

  static int8_t H2(uint64_t hash) { return static_cast<int8_t>(hash >> 57); }
  // Home slot: the low 32 hash bits scaled to [0, capacity) (multiply-shift, no division).
  uint32_t Home(uint64_t hash) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(static_cast<uint32_t>(hash)) * capacity_) >>
                                 32);
  }
  // Probing: the next 16 slots. Visits every slot before coming back (an empty one is always
  // found: at most 7/8 are in use).
  uint32_t Next(uint32_t pos) const { return Wrap(pos + kGroupWidth); }
  uint32_t Wrap(uint32_t pos) const { return pos >= capacity_ ? pos - capacity_ : pos; }

  // Slots [0, 16) are mirrored at [capacity, capacity + 16) so that a group load at any slot
  // reads 16 consecutive (wrapping) control bytes.
  void SetCtrl(uint32_t slot, int8_t c) {
    ctrl_[slot] = c;
    if (slot < kGroupWidth) ctrl_[capacity_ + slot] = c;
  }

  // 16 control bytes starting at a slot; bit i of a mask is slot + i.
  class Group {
   public:
    explicit Group(const int8_t* p) {
#ifdef __SSE2__
      v_ = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
#else
      std::memcpy(b_, p, kGroupWidth);
#endif
    }
#ifdef __SSE2__
    uint32_t Match(int8_t c) const {
      return Mask(_mm_cmpeq_epi8(v_, _mm_set1_epi8(c)));
    }
    uint32_t MatchEmpty() const {
      return Match(kEmpty);
    }
    uint32_t MatchEmptyOrDeleted() const {
      return Mask(v_);
    }  // the sign bit marks both

   private:
    static uint32_t Mask(__m128i v) {
      return static_cast<uint32_t>(_mm_movemask_epi8(v));
    }
    __m128i v_;
#else
    uint32_t Match(int8_t c) const {
      uint32_t m = 0;
      for (uint32_t i = 0; i < kGroupWidth; ++i) m |= uint32_t{b_[i] == c} << i;
      return m;
    }
    uint32_t MatchEmpty() const {
      return Match(kEmpty);
    }
    uint32_t MatchEmptyOrDeleted() const {
      uint32_t m = 0;
      for (uint32_t i = 0; i < kGroupWidth; ++i) m |= uint32_t{b_[i] < 0} << i;
      return m;
    }

   private:
    int8_t b_[kGroupWidth];
#endif
  };

  uint32_t capacity_ = 0;
  uint32_t growth_left_ = 0;
  LargeArray<int8_t> ctrl_;      // capacity_ + 16 bytes (or empty)
  LargeArray<uint32_t> values_;  // capacity_ values
};

}  // namespace keyflow
