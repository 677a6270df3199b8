// StateTable<V>: the heap storage of one registered keyed state (Flink's StateTable).
//
// One StateMap (a flat hash table keyed by (Key, Namespace); state_map.h) per key group of
// the backend's range (index = key group - range start). What one (key, namespace) holds — T
// for value and reducing state, std::vector<T> for list state, a flat map for map state, ACC for
// aggregating state — is known through its TypeOps only; V is how it is kept (InlineValue<N> or
// BoxedValue, heap_value.h) and the TypeOps' serializer encodes it in snapshots. Lists and maps
// are never stored empty.
//
// Lookups reuse the key's hash from the KeyContext: the handle passes a StateEntryLookup that
// carries the precomputed hash, so a record hashes its key once whatever number of states it
// touches.
//
// Ownership and writes: owned by HeapKeyedStateBackend. Anyone may read a key group through
// KeyGroup(); a mutable key-group table is only handed out by the backend's
// MutableTable() (its one write gate, where copy-on-write for asynchronous snapshots hooks
// in), which is why the mutating operations here take the backend.
//
// Threading: task thread. Reads of one key group's table from another thread are safe while
// the task thread does not mutate that key group (the key-group tables are separate objects
// that never move after construction).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/binary_io.h"
#include "common/key.h"
#include "common/key_group_assignment.h"
#include "common/status.h"
#include "state/heap/heap_value.h"
#include "state/heap/state_map.h"
#include "state/namespace.h"
#include "state/state_descriptor.h"
#include "state/type_ops.h"

namespace keyflow {

class HeapKeyedStateBackend;

// Entries parsed from a snapshot, not yet installed (so a failed restore changes nothing).
struct StagedKeyGroup {
  virtual ~StagedKeyGroup() = default;
};

// Corruption("<what>: data is truncated or malformed"), the wording of BinaryReader::status.
Status MalformedSnapshot(const std::string& what);

// OK if `key` may be stored in key group `g`: a well-formed key of the job's key type whose key
// group is g. Otherwise Corruption saying why.
Status CheckRestoredKey(const Key& key, KeyGroupId g, const KeyGroupAssigner& assigner);

// The type-independent face of a state table, used by the backend for snapshots, restore,
// inspection and ClearAll.
class StateTableBase {
 public:
  StateTableBase(std::string name, StateKind kind, std::string type_description,
                 int32_t num_key_groups)
      : name_(std::move(name)),
        kind_(kind),
        type_description_(std::move(type_description)),
        num_key_groups_(num_key_groups) {}
  virtual ~StateTableBase() = default;
  StateTableBase(const StateTableBase&) = delete;
  StateTableBase& operator=(const StateTableBase&) = delete;

  const std::string& name() const { return name_; }
  StateKind kind() const { return kind_; }
  // The declared type, "ValueState<long>" (StateRegistration::type_description).
  const std::string& type_description() const { return type_description_; }
  int32_t num_key_groups() const { return num_key_groups_; }

  // Number of (key, namespace) entries in key group `kg_index`.
  virtual size_t Size(int32_t kg_index) const = 0;
  // Prefetches the slot of (key, void namespace) given the key's Key::Hash() (StateMap::
  // Prefetch): a hint only, no effect on the contents.
  virtual void Prefetch(int32_t kg_index, uint64_t key_hash) const = 0;
  // Appends (unsorted) the keys that have an entry in namespace `ns`.
  virtual void CollectKeys(int32_t kg_index, Namespace ns, std::vector<Key>* out) const = 0;
  // Inserts the keys that have an entry in any namespace.
  virtual void CollectKeys(int32_t kg_index, absl::flat_hash_set<Key>* out) const = 0;

  // Writes the entries of the key group (format in state/README.md): varint count, then the
  // entries in ascending (key bytes, namespace) order. Precondition: Size(kg_index) > 0.
  virtual void WriteKeyGroup(int32_t kg_index, BinaryWriter& out) const = 0;

  // A copy of one key group's entries, taken as they are (no sorting, no encoding), that can
  // be serialised later on another thread (state/key_group_copy.h).
  class EntriesCopy {
   public:
    virtual ~EntriesCopy() = default;
    // What WriteKeyGroup wrote at the time of the copy.
    virtual void Write(BinaryWriter& out) const = 0;
    virtual void CollectKeys(absl::flat_hash_set<Key>* out) const = 0;
  };
  virtual std::unique_ptr<EntriesCopy> CopyKeyGroup(int32_t kg_index) const = 0;
  // Parses what WriteKeyGroup wrote for key group `g` into `*staged`; the table is untouched.
  // Corruption when the bytes are truncated or malformed, out of order, or hold a key that
  // does not belong to `g`.
  virtual Status ReadKeyGroup(BinaryReader& in, KeyGroupId g, const KeyGroupAssigner& assigner,
                              std::unique_ptr<StagedKeyGroup>* staged) const = 0;

  // Writes, through backend.MutableTable(): empty the key group / replace it by staged entries.
  virtual void ClearKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index) = 0;
  virtual void InstallKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index,
                               StagedKeyGroup& staged) = 0;

 private:
  std::string name_;
  StateKind kind_;
  std::string type_description_;
  int32_t num_key_groups_;
};

template <typename V>
class StateTable final : public StateTableBase {
 public:
  using Table = StateMap<V>;

  // `ops` describes the stored values and must outlive the table.
  StateTable(std::string name, StateKind kind, std::string type_description, int32_t num_key_groups,
             const TypeOps& ops)
      : StateTableBase(std::move(name), kind, std::move(type_description), num_key_groups),
        ops_(ops),
        key_groups_(static_cast<size_t>(num_key_groups)) {}

  const TypeOps& ops() const { return ops_; }

  // Read access to one key group. Precondition: 0 <= kg_index < num_key_groups().
  const Table& KeyGroup(int32_t kg_index) const { return key_groups_[kg_index]; }

  size_t Size(int32_t kg_index) const override { return key_groups_[kg_index].size(); }
  void Prefetch(int32_t kg_index, uint64_t key_hash) const override {
    static const uint64_t void_namespace_hash = NamespaceHash(kVoidNamespace);
    key_groups_[kg_index].Prefetch(StateEntryHashOf(key_hash, void_namespace_hash));
  }
  void CollectKeys(int32_t kg_index, Namespace ns, std::vector<Key>* out) const override {
    key_groups_[kg_index].ForEach([&](const typename Table::Entry& e) {
      if (e.key.ns == ns) out->push_back(e.key.key);
    });
  }
  void CollectKeys(int32_t kg_index, absl::flat_hash_set<Key>* out) const override {
    CollectKeysOf(key_groups_[kg_index], out);
  }
  void WriteKeyGroup(int32_t kg_index, BinaryWriter& out) const override {
    WriteEntries(ops_, key_groups_[kg_index], out);
  }
  std::unique_ptr<EntriesCopy> CopyKeyGroup(int32_t kg_index) const override {
    return std::make_unique<Copy>(ops_, key_groups_[kg_index].Clone());
  }
  Status ReadKeyGroup(BinaryReader& in, KeyGroupId g, const KeyGroupAssigner& assigner,
                      std::unique_ptr<StagedKeyGroup>* staged) const override;
  // Defined in heap_keyed_state_backend_inl.h (they need the complete backend).
  void ClearKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index) override;
  void InstallKeyGroup(HeapKeyedStateBackend& backend, int32_t kg_index,
                       StagedKeyGroup& staged) override;

 private:
  friend class HeapKeyedStateBackend;  // MutableTable() is the only writer of key_groups_.

  struct Staged final : StagedKeyGroup {
    Table table;
  };
  struct Copy final : EntriesCopy {
    Copy(const TypeOps& o, Table t) : ops(o), table(std::move(t)) {}
    void Write(BinaryWriter& out) const override { WriteEntries(ops, table, out); }
    void CollectKeys(absl::flat_hash_set<Key>* out) const override { CollectKeysOf(table, out); }
    const TypeOps& ops;
    Table table;
  };

  static void CollectKeysOf(const Table& table, absl::flat_hash_set<Key>* out) {
    table.ForEach([&](const typename Table::Entry& e) { out->insert(e.key.key); });
  }
  static void WriteEntries(const TypeOps& ops, const Table& table, BinaryWriter& out);

  // Lists and maps are never stored empty; a snapshot holding one is malformed.
  bool IsEmptyCollection(const V& v) const {
    return (kind() == StateKind::kList || kind() == StateKind::kMap) && ops_.empty != nullptr &&
           ops_.empty(v.get());
  }

  const TypeOps& ops_;
  std::vector<Table> key_groups_;  // sized once; never reallocated
};

// ---- snapshot encoding of one key group's entries ----

template <typename V>
void StateTable<V>::WriteEntries(const TypeOps& ops, const Table& table, BinaryWriter& out) {
  std::vector<const typename Table::Entry*> sorted;
  table.SortedEntries(&sorted);  // ascending (key bytes, namespace)
  out.VarU64(sorted.size());
  for (const auto* e : sorted) {
    out.KeyBytes(e->key.key);
    out.I64(e->key.ns.value());
    ops.write(out, e->value.get());
  }
}

template <typename V>
Status StateTable<V>::ReadKeyGroup(BinaryReader& in, KeyGroupId g, const KeyGroupAssigner& assigner,
                                   std::unique_ptr<StagedKeyGroup>* staged) const {
  // An entry takes at least: key length (1) + namespace (8) + the value's minimum.
  const size_t min_entry_bytes = 1 + 8 + ops_.min_serialized_bytes;
  const std::string what = "state '" + name() + "'";
  uint64_t n = in.Count(min_entry_bytes);
  if (!in.ok()) return MalformedSnapshot(what);
  if (n == 0) return Corruption(what + ": a state is written only with at least one entry");
  auto result = std::make_unique<Staged>();
  result->table.Reserve(n);
  Key previous;
  int64_t previous_ns = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view key_bytes = in.Bytes();
    int64_t ns = in.I64();
    if (!in.ok()) return MalformedSnapshot(what);
    if (i > 0) {
      int c = key_bytes.compare(previous.bytes());
      if (c < 0 || (c == 0 && ns <= previous_ns)) {
        return Corruption(what + ": entries are not in ascending (key, namespace) order");
      }
    }
    Key key = Key::FromBytes(key_bytes);
    KF_RETURN_IF_ERROR_CTX(CheckRestoredKey(key, g, assigner), what);
    V value(ops_);
    if (!ops_.read(in, value.get())) return MalformedSnapshot(what);
    if (IsEmptyCollection(value)) {
      return Corruption(what + ": an empty " + std::string(StateKindName(kind())) +
                        " entry (empty collections are never stored)");
    }
    previous = key;
    previous_ns = ns;
    result->table.InsertNew(StateEntryKey{std::move(key), Namespace(ns)}, std::move(value));
  }
  *staged = std::move(result);
  return Status::Ok();
}

}  // namespace keyflow
