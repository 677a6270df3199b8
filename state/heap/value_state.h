// ValueState<T>: one value per (key, namespace) (Flink's ValueState), from
// HeapKeyedStateBackend::GetState(ValueStateDescriptor<T>).
//
// Include state/heap/heap_keyed_state_backend.h, which defines the writes (Update, Clear).
// Threading: task thread only (see keyed_state_handle.h).
#pragma once

#include <optional>

#include "state/heap/keyed_state_handle.h"

namespace keyflow {

template <typename T>
class ValueState final : public KeyedStateHandle {
 public:
  // The value of the current key and namespace; the descriptor's default (nullopt if it has
  // none) when there is no value.
  std::optional<T> Value() const {
    const auto* entry = FindForRead(table_->KeyGroup(KeyGroupIndex()));
    if (entry == nullptr) return default_;
    return entry->value;
  }
  // Sets the value; a later Value() returns it.
  void Update(T value);
  // Removes the value; a later Value() returns the default.
  void Clear();

 private:
  friend class HeapKeyedStateBackend;
  ValueState(HeapKeyedStateBackend* backend, const KeyContext* key_context, StateTable<T>* table,
             std::optional<T> default_value)
      : KeyedStateHandle(backend, key_context, table),
        table_(table),
        default_(std::move(default_value)) {}

  StateTable<T>* const table_;
  const std::optional<T> default_;
};

}  // namespace keyflow
