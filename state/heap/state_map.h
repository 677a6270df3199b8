// StateMap<V>: the entries of one state in one key group — a flat open-addressing hash table
// keyed by (Key, Namespace) (Flink's StateMap; see state_table.h for how they are organised).
//
// Why not absl::flat_hash_map: a Swiss table reads its control bytes and then, depending on
// them, the slot — two dependent cache misses per lookup once state outgrows the caches. Here a
// lookup goes straight to the home slot (linear probing; 32-byte slots for a (key, namespace)
// of 24 bytes and an 8-byte value, aligned to 32 bytes so a slot is one cache line), and the
// occupancy bitmap it checks in parallel is small enough to stay cached (1 bit per slot). Erase
// uses backward shifting, so there are no tombstones and probe sequences stay short. Max load
// factor 3/4.
//
// Lookups take a StateEntryLookup whose hash was computed by the caller (key hash from the
// KeyContext, namespace hash from the handle). Entry pointers are invalidated by any insert or
// erase; values themselves move (keep pointers into a value's own heap storage, e.g. a
// vector's elements, not to the value).
//
// Threading: not synchronised. Concurrent const access is safe while nobody mutates.
#pragma once

// Job libraries must not compile backend code: tests/state/sdk_only_job.cc checks this macro.
#define KEYFLOW_STATE_HEAP_INCLUDED 1

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/hashing.h"
#include "common/key.h"
#include "common/prefetch.h"
#include "state/heap/key_order_prefix.h"
#include "state/namespace.h"

namespace keyflow {

// A lookup probe: the key by pointer, with the combined (key, namespace) hash precomputed.
struct StateEntryLookup {
  const Key* key;
  Namespace ns;
  uint64_t hash;  // StateEntryHashOf(key.Hash(), NamespaceHash(ns))
};

// The stored identity of an entry.
struct StateEntryKey {
  Key key;
  Namespace ns;
};

// Namespaces are mixed once (when a handle switches namespace), keys once per record.
inline uint64_t NamespaceHash(Namespace ns) {
  return Mix64(static_cast<uint64_t>(ns.value()), 0x9e3779b97f4a7c15ull);
}
inline uint64_t StateEntryHashOf(uint64_t key_hash, uint64_t namespace_hash) {
  return key_hash ^ namespace_hash;
}
inline uint64_t StateEntryHashOf(const StateEntryKey& k) {
  return StateEntryHashOf(k.key.Hash(), NamespaceHash(k.ns));
}

namespace state_map_internal {
template <typename V>
struct UnalignedEntry {
  StateEntryKey key;
  V value;
};
// Slots of 16, 32 or 64 bytes are aligned to their size, so that no slot straddles two cache
// lines (a lookup then touches one line); other sizes keep their natural alignment.
template <typename V>
constexpr size_t EntryAlignment() {
  constexpr size_t size = sizeof(UnalignedEntry<V>);
  return size == 16 || size == 32 || size == 64 ? size : alignof(UnalignedEntry<V>);
}
}  // namespace state_map_internal

template <typename V>
class StateMap {
 public:
  struct alignas(state_map_internal::EntryAlignment<V>()) Entry {
    StateEntryKey key;  // never change it through a mutable Entry
    V value;
  };

  StateMap() = default;
  ~StateMap() { Destroy(); }
  StateMap(StateMap&& o) noexcept { Steal(o); }
  StateMap& operator=(StateMap&& o) noexcept {
    if (this != &o) {
      Destroy();
      Steal(o);
    }
    return *this;
  }
  StateMap(const StateMap&) = delete;
  StateMap& operator=(const StateMap&) = delete;

  // A copy with the same capacity and layout: every entry copied into the same slot (no
  // rehashing). Used by copy-on-write snapshots (state/key_group_copy.h).
  StateMap Clone() const {
    StateMap copy;
    if (capacity_ == 0) return copy;
    copy.Allocate(capacity_);
    std::copy_n(occupied_, BitmapWords(), copy.occupied_);
    for (size_t w = 0; w < BitmapWords(); ++w) {
      for (uint64_t bits = occupied_[w]; bits != 0; bits &= bits - 1) {
        const size_t i = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
        ::new (static_cast<void*>(copy.slots_ + i)) Entry(slots_[i]);
      }
    }
    copy.size_ = size_;
    return copy;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }

  const Entry* Find(const StateEntryLookup& l) const {
    if (size_ == 0) return nullptr;
    for (size_t i = l.hash & mask_;; i = (i + 1) & mask_) {
      if (!Occupied(i)) return nullptr;
      const Entry& e = slots_[i];
      if (e.key.ns == l.ns && e.key.key == *l.key) return &e;
    }
  }
  Entry* Find(const StateEntryLookup& l) {
    return const_cast<Entry*>(static_cast<const StateMap*>(this)->Find(l));
  }
  // Asks the CPU to start loading the home slot of `hash` and its occupancy word, so that a
  // lookup issued a little later finds them in cache (the runtime calls it some records ahead).
  void Prefetch(uint64_t hash) const {
    if (capacity_ == 0) return;
    const size_t i = hash & mask_;
    PrefetchForRead(slots_ + i);
    PrefetchForRead(occupied_ + (i >> 6));
  }
  // Find(l), but first tries `hint` — an entry pointer from an earlier Find, possibly stale or
  // null: if it still points at the live entry of `l` no probing is needed. This makes the
  // read-modify-write of one key (Value() then Update()) cost one probe.
  Entry* FindHinted(const StateEntryLookup& l, const void* hint) {
    const uintptr_t offset =
        reinterpret_cast<uintptr_t>(hint) - reinterpret_cast<uintptr_t>(slots_);
    if (offset < capacity_ * sizeof(Entry) && offset % sizeof(Entry) == 0) {
      const size_t i = offset / sizeof(Entry);
      Entry& e = slots_[i];
      if (Occupied(i) && e.key.ns == l.ns && e.key.key == *l.key) return &e;
    }
    return Find(l);
  }

  // The entry of `l`, constructing its value from `args` if absent; second = inserted.
  template <typename... Args>
  std::pair<Entry*, bool> TryEmplace(const StateEntryLookup& l, Args&&... args) {
    if (Entry* e = Find(l)) return {e, false};
    return {InsertAbsent(l, std::forward<Args>(args)...), true};
  }
  // Inserts the entry of `l`, which must be absent (checked in debug builds).
  template <typename... Args>
  Entry* InsertAbsent(const StateEntryLookup& l, Args&&... args) {
    KF_DCHECK(Find(l) == nullptr);
    GrowIfFull();
    size_t i = FreeSlot(l.hash);
    Entry* e = ::new (static_cast<void*>(slots_ + i))
        Entry{StateEntryKey{*l.key, l.ns}, V(std::forward<Args>(args)...)};
    MarkOccupied(i);
    ++size_;
    return e;
  }
  template <typename U>
  void InsertOrAssign(const StateEntryLookup& l, U&& value) {
    auto [e, inserted] = TryEmplace(l, std::forward<U>(value));
    if (!inserted) e->value = std::forward<U>(value);
  }
  // Inserts an entry whose key is absent (checked in debug builds); for restore.
  void InsertNew(StateEntryKey key, V value) {
    const uint64_t hash = StateEntryHashOf(key);
    KF_DCHECK(Find(StateEntryLookup{&key.key, key.ns, hash}) == nullptr);
    GrowIfFull();
    size_t i = FreeSlot(hash);
    ::new (static_cast<void*>(slots_ + i)) Entry{std::move(key), std::move(value)};
    MarkOccupied(i);
    ++size_;
  }

  // Removes the entry of `l`; false if there was none.
  bool Erase(const StateEntryLookup& l) {
    Entry* e = Find(l);
    if (e == nullptr) return false;
    EraseSlot(static_cast<size_t>(e - slots_));
    return true;
  }
  // Precondition: `e` points to an entry of this map.
  void Erase(Entry* e) { EraseSlot(static_cast<size_t>(e - slots_)); }

  // Removes every entry and releases the memory.
  void Clear() { Destroy(); }
  // Makes room for `n` entries without rehashing.
  void Reserve(size_t n) {
    size_t cap = kMinCapacity;
    while (n * 4 > cap * 3) cap *= 2;
    if (cap > capacity_) Rehash(cap);
  }

  // Appends a pointer to every entry to *out in ascending (key bytes, namespace) order: the
  // order of snapshots. Reads only (a snapshot thread may call it while nobody mutates the
  // map); the pointers are valid until the next insert or erase.
  void SortedEntries(std::vector<const Entry*>* out) const {
    // Sorts compact (prefix, namespace) items, not entry pointers: no indirection and no memcmp
    // call per comparison (snapshot_bench: the keyed-state section serialises 1.5x faster).
    struct Item {
      KeyOrderPrefix prefix;
      int64_t ns;
      const Entry* entry;
    };
    std::vector<Item> items;
    items.reserve(size_);
    ForEach([&](const Entry& e) {
      items.push_back(Item{KeyOrderPrefix::Of(e.key.key), e.key.ns.value(), &e});
    });
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.prefix.hi != b.prefix.hi) return a.prefix.hi < b.prefix.hi;
      if (a.prefix.lo != b.prefix.lo) return a.prefix.lo < b.prefix.lo;
      if (a.prefix.is_long()) [[unlikely]] {
        const int c = a.entry->key.key.bytes().compare(b.entry->key.key.bytes());
        if (c != 0) return c < 0;
      }
      return a.ns < b.ns;
    });
    out->reserve(out->size() + items.size());
    for (const Item& item : items) out->push_back(item.entry);
  }

  // fn(const Entry&) for every entry, in unspecified order. fn must not modify the map.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t w = 0; w < BitmapWords(); ++w) {
      for (uint64_t bits = occupied_[w]; bits != 0; bits &= bits - 1) {
        fn(static_cast<const Entry&>(slots_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))]));
      }
    }
  }
  // fn(Entry&) for every entry, in unspecified order. fn may change values, not keys, and must
  // not insert or erase.
  template <typename Fn>
  void ForEachMutable(Fn&& fn) {
    for (size_t w = 0; w < BitmapWords(); ++w) {
      for (uint64_t bits = occupied_[w]; bits != 0; bits &= bits - 1) {
        fn(slots_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))]);
      }
    }
  }

 private:
  static constexpr size_t kMinCapacity = 16;

  size_t BitmapWords() const { return (capacity_ + 63) / 64; }
  bool Occupied(size_t i) const { return (occupied_[i >> 6] >> (i & 63)) & 1; }
  void MarkOccupied(size_t i) { occupied_[i >> 6] |= uint64_t{1} << (i & 63); }
  void MarkFree(size_t i) { occupied_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }

  // First free slot on the probe sequence of `hash`. Precondition: size_ < capacity_.
  size_t FreeSlot(uint64_t hash) const {
    size_t i = hash & mask_;
    while (Occupied(i)) i = (i + 1) & mask_;
    return i;
  }
  void GrowIfFull() {
    if ((size_ + 1) * 4 > capacity_ * 3) Rehash(capacity_ == 0 ? kMinCapacity : capacity_ * 2);
  }

  // Backward-shift deletion: later entries of the probe run move up into the hole when their
  // home slot allows it, so lookups never need tombstones.
  void EraseSlot(size_t hole) {
    slots_[hole].~Entry();
    for (size_t j = (hole + 1) & mask_; Occupied(j); j = (j + 1) & mask_) {
      const size_t home = StateEntryHashOf(slots_[j].key) & mask_;
      // Entry j may move to `hole` iff the hole lies on its probe path: [home, j).
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        ::new (static_cast<void*>(slots_ + hole)) Entry(std::move(slots_[j]));
        slots_[j].~Entry();
        hole = j;
      }
    }
    MarkFree(hole);
    --size_;
  }

  void Rehash(size_t new_capacity) {
    StateMap bigger;
    bigger.Allocate(new_capacity);
    for (size_t w = 0; w < BitmapWords(); ++w) {
      for (uint64_t bits = occupied_[w]; bits != 0; bits &= bits - 1) {
        Entry& e = slots_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))];
        size_t i = bigger.FreeSlot(StateEntryHashOf(e.key));
        ::new (static_cast<void*>(bigger.slots_ + i)) Entry(std::move(e));
        bigger.MarkOccupied(i);
        e.~Entry();  // NOLINT(bugprone-use-after-move): destroying the moved-from entry
      }
    }
    bigger.size_ = size_;
    Release();  // entries already destroyed above
    Steal(bigger);
  }

  void Allocate(size_t capacity) {
    KF_CHECK((capacity & (capacity - 1)) == 0) << capacity;
    slots_ = static_cast<Entry*>(
        ::operator new(capacity * sizeof(Entry), std::align_val_t(alignof(Entry))));
    occupied_ = new uint64_t[(capacity + 63) / 64]();
    capacity_ = capacity;
    mask_ = capacity - 1;
  }
  // Destroys the entries and frees the arrays.
  void Destroy() {
    if (size_ > 0) {
      for (size_t w = 0; w < BitmapWords(); ++w) {
        for (uint64_t bits = occupied_[w]; bits != 0; bits &= bits - 1) {
          slots_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))].~Entry();
        }
      }
    }
    Release();
  }
  // Frees the arrays without destroying entries.
  void Release() {
    if (slots_ != nullptr) ::operator delete(slots_, std::align_val_t(alignof(Entry)));
    delete[] occupied_;
    slots_ = nullptr;
    occupied_ = nullptr;
    capacity_ = mask_ = size_ = 0;
  }
  void Steal(StateMap& o) {
    slots_ = std::exchange(o.slots_, nullptr);
    occupied_ = std::exchange(o.occupied_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    mask_ = std::exchange(o.mask_, 0);
    size_ = std::exchange(o.size_, 0);
  }

  Entry* slots_ = nullptr;        // capacity_ slots, constructed where occupied
  uint64_t* occupied_ = nullptr;  // 1 bit per slot
  size_t capacity_ = 0;           // 0 or a power of two >= kMinCapacity
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace keyflow
