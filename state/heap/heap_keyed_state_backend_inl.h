// Template definitions of HeapKeyedStateBackend: every write to keyed state. Included at the end
// of heap_keyed_state_backend.h; do not include directly.
//
// Every function below that changes state gets the key group's table from
// HeapKeyedStateBackend::MutableTable() — keep it that way: the copy-on-write of asynchronous
// snapshots relies on it.
#pragma once

#include <utility>

#include "state/heap/heap_keyed_state_backend.h"

namespace keyflow {

// ---- table-wide writes (ClearAll, RestoreKeyGroup) ----

template <typename V>
void StateTable<V>::ClearKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index) {
  backend.MutableTable(*this, kg_index).Clear();
}

template <typename V>
void StateTable<V>::InstallKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index,
                                    StagedKeyGroup& staged) {
  backend.MutableTable(*this, kg_index) = std::move(static_cast<Staged&>(staged).table);
}

// ---- handle writes ----
// Each write gets the key group's table from MutableTable(), then finds the entry with the hint
// of the last read (FindHinted) and inserts with InsertAbsent when it is missing.

template <typename V>
void HeapKeyedState<V>::Update(void* value) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  if (auto* entry = table.FindHinted(lookup, last_entry_)) {
    entry->value.Assign(ops_, value);
  } else {
    last_entry_ = table.InsertAbsent(lookup, ops_, value);
  }
}

template <typename V>
void HeapKeyedState<V>::Modify(bool create_if_absent, ModifyFn fn) {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  const StateEntryLookup lookup = Lookup();
  auto* entry = table.FindHinted(lookup, last_entry_);
  bool created = false;
  if (entry == nullptr) {
    if (!create_if_absent) return;
    last_entry_ = entry = table.InsertAbsent(lookup, ops_);
    created = true;
  }
  if (!fn(entry->value.get(), created)) table.Erase(entry);
}

template <typename V>
void HeapKeyedState<V>::Clear() {
  auto& table = backend_->MutableTable(*table_, KeyGroupIndex());
  if (auto* entry = table.FindHinted(Lookup(), last_entry_)) table.Erase(entry);
}

}  // namespace keyflow
