// HeapKeyedStateBackend: keyed state of one keyed subtask, in memory, organised per key group
// (Flink's HeapKeyedStateBackend; DESIGN §4, FLINK-SEMANTICS §2).
//
// Owns every registered state's tables (one hash table per key group of the local range, keyed
// by (key, namespace); see state_table.h) and the handles it gives out. Built on the
// operator's KeyContext: the handles act on its current key, so user code never passes a key.
// The per-key-group layout makes snapshotting or restoring one key group touch only that key
// group's data (SerializeKeyGroup / RestoreKeyGroup; byte format in state/README.md).
//
//   HeapKeyedStateBackend backend(key_context);
//   ASSIGN_OR_RETURN(ValueState<int64_t>* count, backend.GetState(count_descriptor));
//   RETURN_IF_ERROR(key_context.SetCurrentKey(record.key, record.key_group));
//   count->Update(count->Value().value_or(0) + 1);
//
// Writes: every change to a key group's data — by a handle, ClearAll or RestoreKeyGroup —
// obtains the key group's table from the private MutableTable(), the single write gate.
// Asynchronous snapshots hook copy-on-write in there (serialise key group k before its first
// change while a snapshot of k is pending); the handles' write paths are in
// heap_keyed_state_backend_inl.h.
//
// Threading: task thread, except SerializeKeyGroup(g), which may run on another thread as long
// as the task thread neither changes key group g nor registers a state meanwhile.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/binary_io.h"
#include "common/key.h"
#include "common/key_group_range.h"
#include "common/status.h"
#include "common/types.h"
#include "state/heap/aggregating_state.h"
#include "state/heap/keyed_state_handle.h"
#include "state/heap/list_state.h"
#include "state/heap/map_state.h"
#include "state/heap/reducing_state.h"
#include "state/heap/state_table.h"
#include "state/heap/value_state.h"
#include "state/key_context.h"
#include "state/key_group_copy.h"
#include "state/key_group_write_guard.h"
#include "state/namespace.h"
#include "state/state_descriptor.h"

namespace keyflow {

class HeapKeyedStateBackend {
 public:
  // `key_context` is owned by the caller and must outlive the backend; its range is the
  // backend's key-group range.
  explicit HeapKeyedStateBackend(KeyContext& key_context);
  ~HeapKeyedStateBackend();
  HeapKeyedStateBackend(const HeapKeyedStateBackend&) = delete;
  HeapKeyedStateBackend& operator=(const HeapKeyedStateBackend&) = delete;

  KeyContext& key_context() { return key_context_; }
  const KeyGroupRange& range() const { return key_context_.range(); }

  // Sets the context's current key (KeyContext::SetCurrentKey): OutOfRange with Flink's
  // "Key group %d is not in KeyGroupRange{...}" message when the key belongs to another
  // subtask; nothing is then stored for it.
  [[nodiscard]] Status SetCurrentKey(const Key& key, KeyGroupId key_group) {
    return key_context_.SetCurrentKey(key, key_group);
  }
  [[nodiscard]] Status SetCurrentKey(const Key& key) { return key_context_.SetCurrentKey(key); }

  // ---- registration ----
  // Returns the state of `descriptor.name()`, registering it on first use; the pointer is
  // owned by the backend and valid for its lifetime. Errors: InvalidArgument for an empty
  // name (or a missing reduce/aggregate function); AlreadyExists when the name is registered
  // with another kind or other types.
  template <typename T>
  Result<ValueState<T>*> GetState(const ValueStateDescriptor<T>& descriptor);
  template <typename T>
  Result<ListState<T>*> GetListState(const ListStateDescriptor<T>& descriptor);
  template <typename UK, typename UV>
  Result<MapState<UK, UV>*> GetMapState(const MapStateDescriptor<UK, UV>& descriptor);
  template <typename T>
  Result<ReducingState<T>*> GetReducingState(const ReducingStateDescriptor<T>& descriptor);
  template <typename IN, typename ACC, typename OUT>
  Result<AggregatingState<IN, OUT>*> GetAggregatingState(
      const AggregatingStateDescriptor<IN, ACC, OUT>& descriptor);

  // ---- whole-backend operations ----
  // Flink's applyToAllKeys: for every key that has an entry in state `state_name` and
  // namespace `ns`, sets the key context to it and calls fn(key) — key groups ascending, then
  // key bytes ascending. Stops at and returns the first error of fn. fn may read and write
  // state of the current key. Afterwards the context is back on its previous key (if it had
  // one). NotFound if no state of that name is registered.
  Status ApplyToAllKeys(std::string_view state_name, Namespace ns,
                        absl::FunctionRef<Status(const Key&)> fn);

  // Distinct keys with state (any state, any namespace) in key group `g`.
  // Precondition: range().contains(g).
  size_t NumKeys(KeyGroupId g) const;
  // (state, key, namespace) entries over all states and key groups.
  size_t NumEntries() const;
  // Removes every entry of every state; registrations and handles stay valid.
  void ClearAll();

  // A hint that a record of the key with Key::Hash() `key_hash` (in key group g) comes soon:
  // prefetches the key's slot (void namespace) in every registered state, so that the
  // record's state accesses find it in cache. The keyed task calls it a few records ahead of
  // processing. Changes nothing; a key group outside range() is ignored.
  void Prefetch(uint64_t key_hash, KeyGroupId g) const {
    if (!range().contains(g)) [[unlikely]]
      return;
    const int32_t index = range().IndexOf(g);
    for (const StateTableBase* table : tables_) table->Prefetch(index, key_hash);
  }

  // Every later change of key group range().start() + i first calls guard->BeforeWrite(i)
  // (asynchronous snapshots, state/snapshot/async_keyed_snapshot.h); nullptr removes it.
  void SetWriteGuard(KeyGroupWriteGuard* guard) { write_guard_ = guard; }

  // ---- per-key-group snapshots (format: state/README.md) ----
  // Appends key group g's state: every registered state that has entries in g (by name
  // ascending), each with its entries in ascending (key bytes, namespace) order, so equal
  // state gives equal bytes. Precondition: range().contains(g).
  void SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const;
  // A copy of key group g's state, cheap to take (no sorting, no encoding), for copy-on-write
  // snapshots: its Write appends what SerializeKeyGroup(g) appends now, its Count is NumKeys(g)
  // now. Precondition: range().contains(g).
  std::unique_ptr<KeyGroupCopy> CopyKeyGroup(KeyGroupId g) const;
  // Reads exactly the bytes SerializeKeyGroup(g) wrote and makes them key group g's state,
  // replacing what g held. Every state in the snapshot must be registered first. The source
  // may have had another range (rescaling): only g must be ours. Errors, after which g is
  // unchanged: OutOfRange (Flink's wording) if g is not in range(); FailedPrecondition for a
  // state name that is not registered or is registered as another kind; Corruption for
  // truncated or malformed bytes.
  Status RestoreKeyGroup(KeyGroupId g, BinaryReader& in);

 private:
  // The handles and tables write through MutableTable().
  template <typename>
  friend class StateTable;
  template <typename>
  friend class ValueState;
  template <typename>
  friend class ListState;
  template <typename, typename>
  friend class MapState;
  template <typename>
  friend class ReducingState;
  template <typename, typename, typename>
  friend class HeapAggregatingState;

  struct RegisteredState {
    std::type_index signature;  // typeid of the descriptor type: kind + value types
    std::string type_description;
    std::unique_ptr<StateTableBase> table;
    std::unique_ptr<KeyedStateHandle> handle;
  };

  // THE write gate: the only way to a mutable key-group table. `kg_index` is
  // key group - range().start().
  template <typename V>
  StateMap<V>& MutableTable(StateTable<V>& table, int32_t kg_index) {
    DCHECK(kg_index >= 0 && kg_index < range().size());
    // Copy-on-write for asynchronous snapshots: if a snapshot still has to write key group
    // kg_index, it is serialised now, before the caller changes it.
    if (write_guard_ != nullptr) write_guard_->BeforeWrite(kg_index);
    return table.key_groups_[kg_index];
  }

  // The registered state `name` if its signature matches (nullptr if unregistered);
  // InvalidArgument for an empty name, AlreadyExists for a conflicting registration.
  Result<RegisteredState*> FindRegistered(const std::string& name, const std::type_info& signature,
                                          std::string (*describe)()) const;
  template <typename Handle>
  Handle* Register(std::unique_ptr<StateTableBase> table, std::unique_ptr<Handle> handle,
                   const std::type_info& signature, std::string type_description);

  KeyContext& key_context_;
  KeyGroupWriteGuard* write_guard_ = nullptr;
  // By name, so snapshots list states in name order.
  std::map<std::string, RegisteredState, std::less<>> states_;
  std::vector<const StateTableBase*> tables_;  // the tables of states_, for Prefetch
};

}  // namespace keyflow

#include "state/heap/heap_keyed_state_backend_inl.h"  // IWYU pragma: export
