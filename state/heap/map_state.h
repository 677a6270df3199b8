// MapState<UK, UV>: a map per (key, namespace) (Flink's MapState), from
// HeapKeyedStateBackend::GetMapState(MapStateDescriptor<UK, UV>). An empty map is never
// stored: removing the last entry removes the map.
//
// Include state/heap/heap_keyed_state_backend.h, which defines the writes.
// Threading: task thread only (see keyed_state_handle.h).
#pragma once

#include "absl/container/flat_hash_map.h"
#include "state/heap/keyed_state_handle.h"

namespace keyflow {

template <typename UK, typename UV>
class MapState final : public KeyedStateHandle {
 public:
  using UserMap = absl::flat_hash_map<UK, UV>;

  // The value under `user_key` for the current key and namespace, or nullptr. The pointer is
  // valid until the next write to this state.
  const UV* Get(const UK& user_key) const {
    const UserMap* m = Find();
    if (m == nullptr) return nullptr;
    auto it = m->find(user_key);
    return it == m->end() ? nullptr : &it->second;
  }
  bool Contains(const UK& user_key) const { return Get(user_key) != nullptr; }
  bool IsEmpty() const { return Find() == nullptr; }
  // All entries of the current key and namespace (an empty map if none), in unspecified
  // order; valid until the next write to this state.
  const UserMap& Entries() const {
    static const UserMap kEmpty;
    const UserMap* m = Find();
    return m == nullptr ? kEmpty : *m;
  }

  // Inserts or overwrites the value under `user_key`.
  void Put(UK user_key, UV value);
  // Removes `user_key` (nothing if absent).
  void Remove(const UK& user_key);
  // Removes every entry of the current key and namespace.
  void Clear();

 private:
  friend class HeapKeyedStateBackend;
  MapState(HeapKeyedStateBackend* backend, const KeyContext* key_context,
           StateTable<UserMap>* table)
      : KeyedStateHandle(backend, key_context, table), table_(table) {}

  const UserMap* Find() const {
    const auto* entry = FindForRead(table_->KeyGroup(KeyGroupIndex()));
    return entry == nullptr ? nullptr : &entry->value;
  }

  StateTable<UserMap>* const table_;
};

}  // namespace keyflow
