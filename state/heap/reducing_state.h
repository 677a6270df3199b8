// ReducingState<T>: one value per (key, namespace) that every Add folds in with the
// descriptor's reduce function (Flink's ReducingState), from
// HeapKeyedStateBackend::GetReducingState(ReducingStateDescriptor<T>).
//
// Include state/heap/heap_keyed_state_backend.h, which defines the writes.
// Threading: task thread only (see keyed_state_handle.h).
#pragma once

#include <optional>

#include "state/heap/keyed_state_handle.h"
#include "state/state_descriptor.h"

namespace keyflow {

template <typename T>
class ReducingState final : public KeyedStateHandle {
 public:
  // The reduced value of the current key and namespace; nullopt if nothing was added.
  std::optional<T> Get() const {
    const auto* entry = FindForRead(table_->KeyGroup(KeyGroupIndex()));
    if (entry == nullptr) return std::nullopt;
    return entry->value;
  }
  // The first value is stored as is; later ones become reduce(stored, value).
  void Add(T value);
  void Clear();

 private:
  friend class HeapKeyedStateBackend;
  using ReduceFunction = typename ReducingStateDescriptor<T>::ReduceFunction;
  ReducingState(HeapKeyedStateBackend* backend, const KeyContext* key_context, StateTable<T>* table,
                ReduceFunction reduce)
      : KeyedStateHandle(backend, key_context, table), table_(table), reduce_(std::move(reduce)) {}

  StateTable<T>* const table_;
  const ReduceFunction reduce_;
};

}  // namespace keyflow
