// RocksDbKeyedState: the RocksDB backend's InternalKeyedState (state/keyed_state.h) — one
// registered state over its column family, acting on the KeyContext's current key and the
// state's current namespace (Flink's RocksDBValueState, RocksDBListState, RocksDBMapState, ...).
//
// Get() reads the row(s) of (current key, namespace) and deserialises them into a buffer the
// state owns (valid until the next call on the state). Writes serialise and go through the
// backend's write gate (BeforeWrite) first:
//   value, reducing, aggregating  Update = Put; Modify = Get, fn, Put (or Delete)
//   list                          Update = Put; Modify (ListState::Add/AddAll, the only callers)
//                                 hands fn an EMPTY list and appends what fn added with a
//                                 merge operand: no read of the stored list
//   map                           Get = prefix iteration; Modify = Get, fn, then Put/Delete of
//                                 the user keys that changed (the handle API hands out the whole
//                                 map, so a map access costs O(entries of that key))
// Value, reducing and aggregating states go through the backend's write-back cache when it is
// on (RocksDbStateOptions::write_cache_bytes > 0): a read is a hash lookup by (key, namespace),
// as on the heap backend (a miss builds the rocks key and reads RocksDB
// once and caches the row, present or absent), a write changes the cached row and marks it
// dirty; the backend writes dirty rows in one batch when the cache is full and before anything
// else reads or replaces RocksDB's rows. Lists and maps always go to RocksDB.
// The backend's per-(state, key group) entry counters are kept exact: a write learns whether
// the entry existed from the read that preceded it (the cache, the last lookup of a list or
// map state, or a point lookup).
//
// Owned by RocksDbKeyedStateBackend. Threading: task thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "state/heap/state_map.h"
#include "state/key_context.h"
#include "state/keyed_state.h"
#include "state/namespace.h"
#include "state/rocksdb/rocksdb_value_format.h"
#include "state/state_descriptor.h"
#include "state/type_ops.h"

namespace rocksdb {
class ColumnFamilyHandle;
}

namespace keyflow {

class RocksDbKeyedStateBackend;

// A row of the backend's write-back cache (point states only): the stored bytes, or absent;
// dirty = not yet written to RocksDB (absent and dirty = a delete to write). With its (key,
// namespace) a cache slot is 64 bytes: one cache line.
struct RocksDbCachedRow {
  std::string value;
  int32_t key_group = 0;  // of the row's key: with the key and namespace, its rocks key
  bool present = false;
  bool dirty = false;
};
// The cached rows of one state, by (key, namespace): the heap backend's hash table, so a hit
// costs what a heap state's lookup costs (no rocks key is built, one cache line is read).
using RocksDbRowCache = StateMap<RocksDbCachedRow>;
static_assert(sizeof(RocksDbRowCache::Entry) == 64);

// What the backend keeps of one registration.
struct RocksDbStateInfo {
  std::string name;
  StateKind kind;
  std::string type_description;
  const TypeOps* value_ops;
  const TypeOps* element_ops;    // list T, map UK
  const TypeOps* map_value_ops;  // map UV
  rocksdb::ColumnFamilyHandle* column_family = nullptr;
  std::vector<int64_t> counts;  // (key, namespace) entries per key-group index
  // The write-back cache's rows of this state (value, reducing, aggregating), and the entry of
  // the last cache access: a hint that makes a read-modify-write of one key one probe.
  RocksDbRowCache cache;
  const void* last_row = nullptr;
};

class RocksDbKeyedState final : public InternalKeyedState {
 public:
  RocksDbKeyedState(RocksDbKeyedStateBackend* backend, const KeyContext* key_context,
                    RocksDbStateInfo* info);

  const std::string& name() const override { return info_->name; }
  void SetCurrentNamespace(Namespace ns) override {
    ns_ = ns;
    ns_hash_ = NamespaceHash(ns);
  }
  Namespace current_namespace() const override { return ns_; }

  const void* Get() const override;
  void Update(void* value) override;
  void Modify(bool create_if_absent, ModifyFn fn) override;
  void Clear() override;

  // Whether this state's point rows go through the backend's write-back cache.
  bool cached() const { return cached_; }

 private:
  using Rows = std::vector<std::pair<std::string, std::string>>;  // map: (UK bytes, UV bytes)

  // Aborts without a current key; builds prefix_ for (current key, namespace) unless the state
  // is cached (its cache is keyed by Lookup(); rocks keys are built only on a miss or a write).
  int32_t PrepareKey() const;
  StateEntryLookup Lookup() const {
    return StateEntryLookup{&key_context_->current_key(), ns_,
                            StateEntryHashOf(key_context_->current_key_hash(), ns_hash_)};
  }
  int32_t KeyGroup() const { return key_context_->current_key_group().value(); }
  // Whether (current key, namespace) has an entry: the last lookup's answer if it was for this
  // prefix, else a point lookup.
  bool Exists() const;
  void Remember(bool exists) const;
  // Map rows of prefix_ into map_rows_ (ascending UK bytes). False if there are none.
  bool ReadMapRows() const;
  // Writes `value` (of the stored type) as the entry of prefix_; `existed` for the counter.
  void Write(const void* value, bool existed);
  void Erase(bool existed);
  void Count(int32_t index, int delta) { info_->counts[static_cast<size_t>(index)] += delta; }

  RocksDbKeyedStateBackend* const backend_;
  const KeyContext* const key_context_;
  RocksDbStateInfo* const info_;
  const bool cached_;
  Namespace ns_ = kVoidNamespace;
  uint64_t ns_hash_ = NamespaceHash(kVoidNamespace);
  mutable std::string prefix_;  // rocks key (prefix, for maps) of (current key, namespace)
  mutable TypedBuffer value_;   // what Get() returns
  mutable std::string scratch_;
  mutable Rows map_rows_;  // rows of the last map read
  // The last lookup of a state that does not use the cache: for which rocks key, in which
  // backend epoch, and its answer.
  mutable std::string cached_prefix_;
  mutable uint64_t cached_epoch_ = ~uint64_t{0};
  mutable bool cached_exists_ = false;
};

}  // namespace keyflow
