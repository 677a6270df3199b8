// KeyedStateHandle: what every heap state handle (ValueState, ListState, MapState,
// ReducingState, AggregatingState) shares — the key context it reads the current key from and
// the namespace it acts in.
//
// A handle is owned by its HeapKeyedStateBackend and lives as long as it; the operator keeps
// the raw pointer GetState() & co. returned. Every call acts on the KeyContext's current key
// and the handle's current namespace (kVoidNamespace until SetCurrentNamespace). Using a
// handle while the context has no current key is a bug and aborts (CHECK).
//
// Threading: task thread only.
#pragma once

#include <cstdint>
#include <string>

#include "state/heap/state_table.h"
#include "state/key_context.h"
#include "state/namespace.h"

namespace keyflow {

class HeapKeyedStateBackend;

class KeyedStateHandle {
 public:
  virtual ~KeyedStateHandle() = default;
  KeyedStateHandle(const KeyedStateHandle&) = delete;
  KeyedStateHandle& operator=(const KeyedStateHandle&) = delete;

  // Later calls act on namespace `ns` (e.g. the window being processed).
  void SetCurrentNamespace(Namespace ns) {
    ns_ = ns;
    ns_hash_ = NamespaceHash(ns);
  }
  Namespace current_namespace() const { return ns_; }
  // The descriptor's name.
  const std::string& name() const { return table_base_->name(); }

 protected:
  KeyedStateHandle(HeapKeyedStateBackend* backend, const KeyContext* key_context,
                   const StateTableBase* table)
      : backend_(backend), key_context_(key_context), table_base_(table) {}

  // current_key_group() - range().start() of the current key; aborts without a current key.
  int32_t KeyGroupIndex() const {
    if (!key_context_->has_current_key()) [[unlikely]] {
      FailNoCurrentKey();
    }
    return key_context_->current_key_group_index();
  }
  // The probe for (current key, current namespace), with the key's hash reused.
  StateEntryLookup Lookup() const {
    return StateEntryLookup{&key_context_->current_key(), ns_,
                            StateEntryHashOf(key_context_->current_key_hash(), ns_hash_)};
  }

  // Finds the entry of the current key and namespace for a write: with FindHinted, so a write
  // right after a read of the same key (Value() then Update()) does not probe again.
  template <typename Map>
  typename Map::Entry* FindForWrite(Map& map, const StateEntryLookup& lookup) const {
    return map.FindHinted(lookup, last_entry_);
  }
  // For reads: a Find that remembers the entry as the next write's hint.
  template <typename Map>
  const typename Map::Entry* FindForRead(const Map& map) const {
    const auto* entry = map.Find(Lookup());
    last_entry_ = entry;
    return entry;
  }

  HeapKeyedStateBackend* const backend_;
  // The entry the last read found (possibly stale; only ever used as a hint).
  mutable const void* last_entry_ = nullptr;

 private:
  [[noreturn]] void FailNoCurrentKey() const;

  const KeyContext* const key_context_;
  const StateTableBase* const table_base_;
  Namespace ns_ = kVoidNamespace;
  uint64_t ns_hash_ = NamespaceHash(kVoidNamespace);
};

}  // namespace keyflow
