// ListState<T>: a list of values per (key, namespace) (Flink's ListState), from
// HeapKeyedStateBackend::GetListState(ListStateDescriptor<T>). An empty list is never stored:
// Get() of a key without elements is an empty span.
//
// Include state/heap/heap_keyed_state_backend.h, which defines the writes.
// Threading: task thread only (see keyed_state_handle.h).
#pragma once

#include <span>
#include <vector>

#include "state/heap/keyed_state_handle.h"

namespace keyflow {

template <typename T>
class ListState final : public KeyedStateHandle {
 public:
  // The elements of the current key and namespace, in insertion order. The span is valid until
  // the next write to this state.
  std::span<const T> Get() const {
    const auto* entry = FindForRead(table_->KeyGroup(KeyGroupIndex()));
    if (entry == nullptr) return {};
    return std::span<const T>(entry->value);
  }
  // Appends one element.
  void Add(T value);
  // Appends every element of `values` (nothing if empty).
  void AddAll(std::span<const T> values);
  // Replaces the list by `values`; an empty `values` clears it.
  void Update(std::vector<T> values);
  void Clear();

 private:
  friend class HeapKeyedStateBackend;
  ListState(HeapKeyedStateBackend* backend, const KeyContext* key_context,
            StateTable<std::vector<T>>* table)
      : KeyedStateHandle(backend, key_context, table), table_(table) {}

  StateTable<std::vector<T>>* const table_;
};

}  // namespace keyflow
