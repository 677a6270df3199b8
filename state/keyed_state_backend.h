// KeyedStateBackend: the keyed state of one keyed subtask, as the operator and RuntimeContext see
// it (Flink's KeyedStateBackend). Implemented by HeapKeyedStateBackend (state/heap/); a RocksDB
// backend implements the same interface.
//
//   KeyedStateBackend& backend = ...;                 // built on the operator's KeyContext
//   KF_ASSIGN_OR_RETURN(ValueState<int64_t>* count, backend.GetState(count_descriptor));
//   KF_RETURN_IF_ERROR(backend.SetCurrentKey(record.key, record.key_group));
//   count->Update(count->Value().value_or(0) + 1);
//
// Registration is type-erased: the templates below (compiled in the caller's translation unit,
// e.g. a job library) describe the state with a StateRegistration (name, kind, declared type,
// TypeOps of the stored values) and build the typed handle (state/keyed_state.h) over the
// backend's InternalKeyedState. Everything else is per key group (snapshots, restore, counts),
// which is what makes rescaling a matter of handing key groups to other subtasks. The
// per-key-group byte format is in state/README.md.
//
// Threading: task thread, except SerializeKeyGroup(g), which may run on another thread while the
// task thread neither changes key group g nor registers a state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/binary_io.h"
#include "common/key.h"
#include "common/key_group_range.h"
#include "common/status.h"
#include "common/types.h"
#include "state/key_context.h"
#include "state/key_group_copy.h"
#include "state/key_group_write_guard.h"
#include "state/keyed_state.h"
#include "state/namespace.h"
#include "state/state_descriptor.h"
#include "state/type_ops.h"

namespace keyflow {

// state/snapshot/native_snapshot.h (not part of the SDK: job libraries never snapshot).
struct NativeSnapshotTarget;
class NativeSnapshotPart;
struct NativeRestoreSource;

// A state as its descriptor declares it, for KeyedStateBackend::GetOrRegisterState.
struct StateRegistration {
  std::string name;
  StateKind kind;
  // The declared type, "ValueState<CountWindow>": in error messages and in snapshots (a
  // restore into a state of the same name with another declared type is refused).
  std::string type_description;
  // Identity of the descriptor type (kind + value types): registering a name again must match.
  const std::type_info* signature;
  // What one (key, namespace) holds: T (value, reducing), std::vector<T> (list),
  // absl::flat_hash_map<UK, UV> (map), ACC (aggregating).
  const TypeOps* value_ops;
  // For backends that store collection elements separately: list T / map UK, and map UV.
  const TypeOps* element_ops = nullptr;
  const TypeOps* map_value_ops = nullptr;
  // Non-empty: the descriptor cannot be registered (InvalidArgument with this text) unless the
  // name is registered already (a missing reduce or aggregate function).
  std::string invalid_reason;
};

// What a backend's state occupies, approximately (status, metrics). 0 = not measured.
struct StateSize {
  int64_t memory_bytes = 0;
  int64_t disk_bytes = 0;
};

class KeyedStateBackend {
 public:
  virtual ~KeyedStateBackend() = default;
  KeyedStateBackend(const KeyedStateBackend&) = delete;
  KeyedStateBackend& operator=(const KeyedStateBackend&) = delete;

  KeyContext& key_context() { return key_context_; }
  const KeyContext& key_context() const { return key_context_; }
  const KeyGroupRange& range() const { return key_context_.range(); }

  // Sets the context's current key (KeyContext::SetCurrentKey): OutOfRange with Flink's
  // "Key group %d is not in KeyGroupRange{...}" message when the key belongs to another
  // subtask; nothing is then stored for it.
  [[nodiscard]] Status SetCurrentKey(const Key& key, KeyGroupId key_group) {
    return key_context_.SetCurrentKey(key, key_group);
  }
  [[nodiscard]] Status SetCurrentKey(const Key& key) { return key_context_.SetCurrentKey(key); }

  // ---- registration ----
  // Returns the state of `descriptor.name()`, registering it on first use; the pointer is owned
  // by the backend and valid for its lifetime. Errors: InvalidArgument for an empty name (or a
  // missing reduce/aggregate function); AlreadyExists when the name is registered with another
  // kind or other types.
  template <typename T>
  Result<ValueState<T>*> GetState(const ValueStateDescriptor<T>& d) {
    using D = ValueStateDescriptor<T>;
    return Typed<ValueState<T>>(Registration<D>(d.name(), &TypeOpsOf<T>()),
                                [&](InternalKeyedState* s) {
                                  return std::make_unique<ValueState<T>>(s, d.default_value());
                                });
  }
  template <typename T>
  Result<ListState<T>*> GetListState(const ListStateDescriptor<T>& d) {
    using D = ListStateDescriptor<T>;
    StateRegistration r = Registration<D>(d.name(), &TypeOpsOf<std::vector<T>>());
    r.element_ops = &TypeOpsOf<T>();
    return Typed<ListState<T>>(
        r, [](InternalKeyedState* s) { return std::make_unique<ListState<T>>(s); });
  }
  template <typename UK, typename UV>
  Result<MapState<UK, UV>*> GetMapState(const MapStateDescriptor<UK, UV>& d) {
    using D = MapStateDescriptor<UK, UV>;
    using Handle = MapState<UK, UV>;
    StateRegistration r = Registration<D>(d.name(), &TypeOpsOf<typename Handle::UserMap>());
    r.element_ops = &TypeOpsOf<UK>();
    r.map_value_ops = &TypeOpsOf<UV>();
    return Typed<Handle>(r, [](InternalKeyedState* s) { return std::make_unique<Handle>(s); });
  }
  template <typename T>
  Result<ReducingState<T>*> GetReducingState(const ReducingStateDescriptor<T>& d) {
    using D = ReducingStateDescriptor<T>;
    StateRegistration r = Registration<D>(d.name(), &TypeOpsOf<T>());
    if (!d.reduce_function())
      r.invalid_reason = "ReducingState '" + d.name() + "' needs a reduce function";
    return Typed<ReducingState<T>>(r, [&](InternalKeyedState* s) {
      return std::make_unique<ReducingState<T>>(s, d.reduce_function());
    });
  }
  template <typename IN, typename ACC, typename OUT>
  Result<AggregatingState<IN, OUT>*> GetAggregatingState(
      const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
    using D = AggregatingStateDescriptor<IN, ACC, OUT>;
    using Handle = AggregatingStateImpl<IN, ACC, OUT>;
    StateRegistration r = Registration<D>(d.name(), &TypeOpsOf<ACC>());
    if (d.aggregate_function() == nullptr) {
      r.invalid_reason = "AggregatingState '" + d.name() + "' needs an aggregate function";
    }
    KF_ASSIGN_OR_RETURN(Handle * h, Typed<Handle>(r, [&](InternalKeyedState* s) {
                          return std::make_unique<Handle>(s, d.aggregate_function());
                        }));
    return static_cast<AggregatingState<IN, OUT>*>(h);
  }

  // The type-erased registration the templates above use. Returns the handle registered under
  // r.name (if r.signature matches) or registers the state and keeps make(internal state) as its
  // handle. InvalidArgument for an empty name; AlreadyExists for a conflicting registration.
  using HandleFactory =
      absl::FunctionRef<std::unique_ptr<KeyedStateHandle>(InternalKeyedState* state)>;
  virtual Result<KeyedStateHandle*> GetOrRegisterState(const StateRegistration& r,
                                                       HandleFactory make) = 0;

  // ---- whole-backend operations ----
  // Flink's applyToAllKeys: for every key that has an entry in state `state_name` and namespace
  // `ns`, sets the key context to it and calls fn(key) — key groups ascending, then key bytes
  // ascending. Stops at and returns the first error of fn. fn may read and write state of the
  // current key. Afterwards the context is back on its previous key (if it had one). NotFound if
  // no state of that name is registered.
  virtual Status ApplyToAllKeys(std::string_view state_name, Namespace ns,
                                absl::FunctionRef<Status(const Key&)> fn) = 0;
  // Distinct keys with state (any state, any namespace) in key group `g`.
  // Precondition: range().contains(g).
  virtual size_t NumKeys(KeyGroupId g) const = 0;
  // (state, key, namespace) entries over all states and key groups.
  virtual size_t NumEntries() const = 0;
  // Removes every entry of every state; registrations and handles stay valid.
  virtual void ClearAll() = 0;

  // A hint that a record of the key with Key::Hash() `key_hash` (in key group g) comes soon
  // (the keyed task calls it a few records ahead). Changes nothing; a key group outside range()
  // is ignored.
  virtual void Prefetch(uint64_t key_hash, KeyGroupId g) const = 0;

  // Every later change of key group range().start() + i first calls guard->BeforeWrite(i)
  // (asynchronous snapshots, state/snapshot/async_keyed_snapshot.h); nullptr removes it.
  virtual void SetWriteGuard(KeyGroupWriteGuard* guard) = 0;

  // ---- per-key-group snapshots (format: state/README.md) ----
  // Appends key group g's state; equal state gives equal bytes. Precondition: range() has g.
  virtual void SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const = 0;
  // A cheap copy of key group g's state for copy-on-write snapshots: its Write appends what
  // SerializeKeyGroup(g) appends now, its Count is NumKeys(g) now.
  virtual std::unique_ptr<KeyGroupCopy> CopyKeyGroup(KeyGroupId g) const = 0;
  // Reads what SerializeKeyGroup(g) wrote (this or an older format version) and makes it key
  // group g's state, replacing what g held. Every state in the snapshot must be registered
  // first, with the same declared type. Errors, after which g is unchanged: OutOfRange (Flink's
  // wording) if g is not in range(); FailedPrecondition for a state that is not registered or
  // is registered with another kind or type; Corruption for truncated or malformed bytes.
  virtual Status RestoreKeyGroup(KeyGroupId g, BinaryReader& in) = 0;

  // ---- native incremental snapshots (state/snapshot/native_snapshot.h) ----
  // true: SnapshotNative works, and a checkpoint that allows it writes the keyed state in the
  // backend's native format (the canonical snapshot then holds only the timers).
  virtual bool SupportsNativeSnapshots() const { return false; }
  // The synchronous part of a native snapshot (task thread). Unimplemented unless supported.
  virtual Result<std::unique_ptr<NativeSnapshotPart>> SnapshotNative(
      const NativeSnapshotTarget& target);
  virtual void NotifyNativeCheckpointComplete(CheckpointId id) { (void)id; }
  virtual void NotifyNativeCheckpointAborted(CheckpointId id) { (void)id; }
  // Replaces all keyed state with the key groups of range() held by `sources` (old subtasks'
  // native handles; their ranges may overlap range() partly: only range() is read, Flink's
  // "clip" of a base plus range copies of the others). Every state must be registered first,
  // as for RestoreKeyGroup. Errors (after which the backend holds no restored state): Corruption
  // naming the file for a missing, truncated or checksum-failing file; FailedPrecondition for
  // an unknown format version or another backend's handle.
  virtual Status RestoreNative(const std::vector<NativeRestoreSource>& sources);

  // ---- inspection ----
  // "heap" or "rocksdb" (JobSpec::state_backend).
  virtual std::string_view backend_name() const = 0;
  // Bytes the state occupies in memory and on local disk; cheap (no iteration). Task thread.
  virtual StateSize ApproximateSize() const { return {}; }
  // A storage failure (a full disk, an I/O error) that made state unreliable, as a sentence;
  // OK while there is none (always, for the heap). The operator checks it after every element
  // and timer, fails the task with it, and the job recovers from its last checkpoint.
  // Task thread.
  const Status& failure() const { return failure_; }

 protected:
  // `key_context` must outlive the backend; its range is the backend's key-group range.
  explicit KeyedStateBackend(KeyContext& key_context) : key_context_(key_context) {}

  // Set by a backend whose storage failed (failure()); mutable because reads can fail too.
  mutable Status failure_;

 private:
  template <typename D>
  static StateRegistration Registration(const std::string& name, const TypeOps* value_ops) {
    return StateRegistration{name, D::kKind, D::TypeDescription(), &typeid(D), value_ops};
  }
  // GetOrRegisterState with the handle type known: the signature check makes the cast safe.
  template <typename Handle, typename Make>
  Result<Handle*> Typed(const StateRegistration& r, Make&& make) {
    KF_ASSIGN_OR_RETURN(KeyedStateHandle * h, GetOrRegisterState(r, [&](InternalKeyedState* s) {
                          return std::unique_ptr<KeyedStateHandle>(make(s));
                        }));
    return static_cast<Handle*>(h);
  }

  KeyContext& key_context_;
};

}  // namespace keyflow
