// HeapKeyedState<V>: the heap backend's InternalKeyedState (state/keyed_state.h) — one registered
// state over its StateTable<V>, acting on the KeyContext's current key and the state's current
// namespace. V is InlineValue<N> or BoxedValue (heap_value.h); the user's type is known only
// through the table's TypeOps, so one instantiation per V serves every user type.
//
// Lookups reuse the key's hash from the KeyContext and the namespace hash computed when the
// namespace changes. A write right after a read of the same key reuses the entry the read found
// (FindHinted), so Value() then Update() probes once. Every write gets the key group's map from
// HeapKeyedStateBackend::MutableTable(), the backend's write gate (copy-on-write snapshots).
//
// Owned by HeapKeyedStateBackend. Threading: task thread only.
#pragma once

#include <cstdint>
#include <string>

#include "state/heap/state_table.h"
#include "state/key_context.h"
#include "state/keyed_state.h"
#include "state/namespace.h"

namespace keyflow {

class HeapKeyedStateBackend;

// Aborts: a handle was used without a current key (a bug of the caller).
[[noreturn]] void FailNoCurrentKey(const std::string& state_name);

template <typename V>
class HeapKeyedState final : public InternalKeyedState {
 public:
  HeapKeyedState(HeapKeyedStateBackend* backend, const KeyContext* key_context,
                 StateTable<V>* table)
      : backend_(backend), key_context_(key_context), table_(table), ops_(table->ops()) {}

  const std::string& name() const override { return table_->name(); }
  void SetCurrentNamespace(Namespace ns) override {
    ns_ = ns;
    ns_hash_ = NamespaceHash(ns);
  }
  Namespace current_namespace() const override { return ns_; }

  const void* Get() const override {
    const auto* entry = table_->KeyGroup(KeyGroupIndex()).Find(Lookup());
    last_entry_ = entry;
    return entry == nullptr ? nullptr : entry->value.get();
  }
  // Defined in heap_keyed_state_backend_inl.h (they write through the backend's gate).
  void Update(void* value) override;
  void Modify(bool create_if_absent, ModifyFn fn) override;
  void Clear() override;

 private:
  // current_key_group() - range().start() of the current key; aborts without a current key.
  int32_t KeyGroupIndex() const {
    if (!key_context_->has_current_key()) [[unlikely]] {
      FailNoCurrentKey(name());
    }
    return key_context_->current_key_group_index();
  }
  // The probe for (current key, current namespace), with the key's hash reused.
  StateEntryLookup Lookup() const {
    return StateEntryLookup{&key_context_->current_key(), ns_,
                            StateEntryHashOf(key_context_->current_key_hash(), ns_hash_)};
  }

  HeapKeyedStateBackend* const backend_;
  const KeyContext* const key_context_;
  StateTable<V>* const table_;
  const TypeOps& ops_;
  // The entry the last read found (possibly stale; only ever used as a hint).
  mutable const void* last_entry_ = nullptr;
  Namespace ns_ = kVoidNamespace;
  uint64_t ns_hash_ = NamespaceHash(kVoidNamespace);
};

}  // namespace keyflow
