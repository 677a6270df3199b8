// HeapKeyedStateBackend: keyed state of one keyed subtask, in memory, organised per key group
// (Flink's HeapKeyedStateBackend). Implements KeyedStateBackend
// (state/keyed_state_backend.h), through which the operator and user code use it.
//
// Owns every registered state's tables (one hash table per key group of the local range, keyed
// by (key, namespace); see state_table.h), their HeapKeyedState (the InternalKeyedState the
// typed handles call) and the handles. Values are kept as objects — inline in the hash-table
// slot for small trivially copyable types, boxed otherwise (heap_value.h) — and encoded with
// their TypeOps' serializer only for snapshots. The per-key-group layout makes snapshotting or
// restoring one key group touch only that key group's data (byte format in state/README.md).
//
//   HeapKeyedStateBackend backend(key_context);
//   KF_ASSIGN_OR_RETURN(ValueState<int64_t>* count, backend.GetState(count_descriptor));
//   KF_RETURN_IF_ERROR(key_context.SetCurrentKey(record.key, record.key_group));
//   count->Update(count->Value().value_or(0) + 1);
//
// Writes: every change to a key group's data — by a handle, ClearAll or RestoreKeyGroup —
// obtains the key group's table from the private MutableTable(), the single write gate.
// Asynchronous snapshots hook copy-on-write in there (serialise key group k before its first
// change while a snapshot of k is pending); the write paths are in
// heap_keyed_state_backend_inl.h.
//
// Threading: task thread, except SerializeKeyGroup(g), which may run on another thread as long
// as the task thread neither changes key group g nor registers a state meanwhile.
#pragma once

// Job libraries must not compile backend code: tests/state/sdk_only_job.cc checks this macro.
#define KEYFLOW_STATE_HEAP_INCLUDED 1

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
#include "state/heap/heap_keyed_state.h"
#include "state/heap/state_table.h"
#include "state/key_context.h"
#include "state/key_group_copy.h"
#include "state/key_group_write_guard.h"
#include "state/keyed_state_backend.h"
#include "state/namespace.h"
#include "state/state_descriptor.h"

namespace keyflow {

// The per-key-group state format version SerializeKeyGroup writes (state/README.md). Version 1
// (no leading marker, no declared types) is still restored.
inline constexpr int32_t kKeyGroupStateFormatVersion = 2;

class HeapKeyedStateBackend final : public KeyedStateBackend {
 public:
  // `key_context` is owned by the caller and must outlive the backend; its range is the
  // backend's key-group range.
  explicit HeapKeyedStateBackend(KeyContext& key_context);
  ~HeapKeyedStateBackend() override;

  Result<KeyedStateHandle*> GetOrRegisterState(const StateRegistration& r,
                                               HandleFactory make) override;

  Status ApplyToAllKeys(std::string_view state_name, Namespace ns,
                        absl::FunctionRef<Status(const Key&)> fn) override;
  size_t NumKeys(KeyGroupId g) const override;
  size_t NumEntries() const override;
  void ClearAll() override;

  // Prefetches the key's slot (void namespace) in every registered state, so that the record's
  // state accesses find it in cache.
  void Prefetch(uint64_t key_hash, KeyGroupId g) const override {
    if (!range().contains(g)) [[unlikely]]
      return;
    const int32_t index = range().IndexOf(g);
    for (const StateTableBase* table : tables_) table->Prefetch(index, key_hash);
  }

  void SetWriteGuard(KeyGroupWriteGuard* guard) override { write_guard_ = guard; }

  // Appends key group g's state in format version 2: every registered state that has entries in
  // g (by name ascending) with its declared type, each with its entries in ascending (key bytes,
  // namespace) order, so equal state gives equal bytes. Precondition: range().contains(g).
  void SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const override;
  std::unique_ptr<KeyGroupCopy> CopyKeyGroup(KeyGroupId g) const override;
  // Reads format version 2 or 1. A state whose declared type in the snapshot (version 2) differs
  // from its registration is FailedPrecondition naming the state and both types.
  Status RestoreKeyGroup(KeyGroupId g, BinaryReader& in) override;

  std::string_view backend_name() const override { return "heap"; }

 private:
  // The internal states and tables write through MutableTable().
  template <typename>
  friend class StateTable;
  template <typename>
  friend class HeapKeyedState;

  struct RegisteredState {
    std::type_index signature;  // typeid of the descriptor type: kind + value types
    std::unique_ptr<StateTableBase> table;
    std::unique_ptr<InternalKeyedState> state;
    std::unique_ptr<KeyedStateHandle> handle;  // over `state`
  };

  // THE write gate: the only way to a mutable key-group table. `kg_index` is
  // key group - range().start().
  template <typename V>
  StateMap<V>& MutableTable(StateTable<V>& table, int32_t kg_index) {
    KF_DCHECK(kg_index >= 0 && kg_index < range().size());
    // Copy-on-write for asynchronous snapshots: if a snapshot still has to write key group
    // kg_index, it is serialised now, before the caller changes it.
    if (write_guard_ != nullptr) write_guard_->BeforeWrite(kg_index);
    return table.key_groups_[kg_index];
  }

  // The table and internal state of a new registration, with the value representation its
  // TypeOps allow.
  template <typename V>
  RegisteredState MakeState(const StateRegistration& r);

  KeyGroupWriteGuard* write_guard_ = nullptr;
  // By name, so snapshots list states in name order.
  std::map<std::string, RegisteredState, std::less<>> states_;
  std::vector<const StateTableBase*> tables_;  // the tables of states_, for Prefetch
};

}  // namespace keyflow

#include "state/heap/heap_keyed_state_backend_inl.h"  // IWYU pragma: export
