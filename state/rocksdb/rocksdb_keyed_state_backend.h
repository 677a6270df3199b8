// RocksDbKeyedStateBackend: keyed state of one keyed subtask in an embedded RocksDB instance, for
// state larger than memory (Flink's RocksDBKeyedStateBackend). Implements KeyedStateBackend
// (state/keyed_state_backend.h) with the heap backend's semantics; the per-key-group snapshot
// bytes are the canonical ones of state/README.md, equal to the heap's for equal state, so
// checkpoints, rescales and savepoints move between the two backends unchanged.
//
//   KF_ASSIGN_OR_RETURN(auto backend, RocksDbKeyedStateBackend::Open(key_context, options));
//   KF_ASSIGN_OR_RETURN(ValueState<int64_t>* count, backend->GetState(count_descriptor));
//
// Layout (rocksdb_key_layout.h): one column family per state; rows keyed by key group (1 or 2
// bytes big-endian), escaped key, namespace [, map user key], so a key group is a contiguous
// key range in canonical order. Values are TypeSerializer bytes; a list is a sequence of
// length-prefixed elements that ListState::Add appends to with a merge operator (no read);
// a map has one row per user key. The WAL is off: checkpoints are the durability, and a failed
// subtask restarts from one into a fresh directory.
//
// Owns the directory `options.dir` (created on Open, deleted with the backend): the database is
// in `db/`, native snapshots' local checkpoints in `chk-<n>/`, restores stage in `restore/`.
//
// Native incremental snapshots (state/snapshot/native_snapshot.h, format: state/rocksdb/README.md):
// SnapshotNative takes the write-back cache's dirty rows out as one write batch (they stay
// cached, clean) and defers writing it, the memtable flush and the RocksDB checkpoint of hard
// links to the part's Write on the snapshot thread (rocksdb_native::DeferredSync), which then
// uploads the SST files its base (this instance's last completed checkpoint) does not hold and
// references the others. RestoreNative reopens one overlapping snapshot as the database and
// clips it with range deletes, and ingests the others' rows of range() as SST files.
//
// THE WRITE GATE: until the deferred writes have run, RocksDB must not change (its checkpoint
// is the barrier's state) and may lack the batch's rows, which the cache still holds. So every
// RocksDB write (Apply, a new column family) and every SyncCache (the iterations, clears,
// restores and cache drops behind it) first calls AwaitNativeSync, which waits for the deferred
// writes or runs them on the task thread if the snapshot thread has not started them. Until
// then a point state's reads hit the cache or read rows that are not in the batch, and its
// writes stay in the cache, which may grow to twice write_cache_bytes meanwhile.
//
// Write-back cache (RocksDbStateOptions::write_cache_bytes; Kafka Streams' record cache): the
// rows of value, reducing and aggregating states are cached in memory, present or absent, and
// written to RocksDB only when the cache is full (every dirty row at once, ingested as SST files
// or as ONE write batch, then the whole cache is dropped: no per-access bookkeeping) or
// when something else needs RocksDB to hold the current state. THE RULE: every path that reads
// RocksDB other than a point state's own Get/Exists, or writes or replaces RocksDB's rows
// directly, first calls SyncCache — iterations (ApplyToAllKeys, SerializeKeyGroup, CopyKeyGroup,
// NumKeys), snapshots (SnapshotNative, and SetWriteGuard: a snapshot's start), restores and
// clears (RestoreKeyGroup, RestoreNative, ClearAll, DropAllRows), closing the database.
// Counters and the write guard are unchanged: a cached write calls BeforeWrite first, as any
// write. The cache's bytes count in ApproximateSize().memory_bytes.
//
// Threading: task thread, except SerializeKeyGroup(g), NumKeys(g) and the copies of
// CopyKeyGroup, which may run on another thread (they only read RocksDB, which is thread-safe,
// through their own iterators) while the task thread neither changes key group g nor registers
// a state, and only while a snapshot is the write guard: SetWriteGuard writes the cache's dirty
// rows, and from then on a row of key group g becomes dirty only after BeforeWrite(g), so such
// a call finds g clean (a per-key-group atomic counter) and does not touch the cache. (No native
// snapshot's deferred writes are pending then: one snapshot at a time, and Write runs them.)
// A native part's deferred writes run on the snapshot thread, or under the write gate on the
// task thread; they touch only RocksDB (thread-safe) and members that do not change.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "common/status.h"
#include "state/heap/heap_keyed_state_backend.h"
#include "state/keyed_state_backend.h"
#include "state/rocksdb/rocksdb_keyed_state.h"
#include "state/rocksdb/rocksdb_native_snapshot.h"
#include "state/rocksdb/rocksdb_state_options.h"

namespace rocksdb {
class Cache;
class ColumnFamilyHandle;
struct ColumnFamilyOptions;
struct DBOptions;
struct Options;
class DB;
class Snapshot;
class Status;
class WriteBatch;
class WriteBufferManager;
}  // namespace rocksdb

namespace keyflow {

class RocksDbKeyedStateBackend final : public KeyedStateBackend {
 public:
  // Opens a new database in options.dir. FailedPrecondition with a sentence naming the directory
  // if it cannot be created or written ("... pass --state-dir a writable directory").
  static Result<std::unique_ptr<RocksDbKeyedStateBackend>> Open(KeyContext& key_context,
                                                                RocksDbStateOptions options);
  ~RocksDbKeyedStateBackend() override;  // closes the database and deletes its directory

  Result<KeyedStateHandle*> GetOrRegisterState(const StateRegistration& r,
                                               HandleFactory make) override;
  Status ApplyToAllKeys(std::string_view state_name, Namespace ns,
                        absl::FunctionRef<Status(const Key&)> fn) override;
  // Iterates key group g of every state (snapshots call it once per key group).
  size_t NumKeys(KeyGroupId g) const override;
  // Per-(state, key group) counters maintained on write: O(states x key groups), no I/O.
  size_t NumEntries() const override;
  void ClearAll() override;
  // Prefetches the key's write-back cache slot (void namespace) in every cached state, as the
  // heap backend does with its tables. RocksDB itself is not prefetched: a lookup of a key
  // whose blocks are cached costs ~1 µs of CPU (memtable and index searches), not a DRAM miss
  // that a prefetch could hide; see state/README.md.
  void Prefetch(uint64_t key_hash, KeyGroupId) const override {
    const uint64_t hash = StateEntryHashOf(key_hash, kVoidNamespaceHash);
    for (const RocksDbRowCache* cache : caches_) cache->Prefetch(hash);
  }
  // A guard (a full snapshot starts): writes the cache's dirty rows first. nullptr: no I/O.
  void SetWriteGuard(KeyGroupWriteGuard* guard) override;

  void SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const override;
  // Holds a RocksDB snapshot (no data is copied); the copy serialises from it.
  std::unique_ptr<KeyGroupCopy> CopyKeyGroup(KeyGroupId g) const override;
  // Validated exactly as the heap backend does (the bytes go through a staging heap backend
  // first, then into one atomic write batch): a failed restore leaves key group g unchanged.
  Status RestoreKeyGroup(KeyGroupId g, BinaryReader& in) override;

  std::string_view backend_name() const override { return "rocksdb"; }
  // Memory: memtables of every column family + block cache usage + write-back cache. Disk: live
  // SST files.
  StateSize ApproximateSize() const override;

  bool SupportsNativeSnapshots() const override { return true; }
  // Captures the barrier: the states' counters and the dirty cached rows (one batch, no I/O).
  // The part's Write writes the rows, flushes the memtables and creates a RocksDB checkpoint
  // (hard links) in dir()/chk-<n> (see THE WRITE GATE above), then uploads. FailedPrecondition
  // without a shared directory; the backend's failure() if it has one.
  Result<std::unique_ptr<NativeSnapshotPart>> SnapshotNative(
      const NativeSnapshotTarget& target) override;
  void NotifyNativeCheckpointComplete(CheckpointId id) override;
  void NotifyNativeCheckpointAborted(CheckpointId id) override;
  Status RestoreNative(const std::vector<NativeRestoreSource>& sources) override;

  const std::string& dir() const { return dir_; }
  // The UUID that names this instance's shared files (IncrementalKeyedStateHandle::backend_id).
  const std::string& backend_id() const { return backend_id_; }
  // How the last RestoreNative went (tests, logs).
  struct NativeRestoreStats {
    int base_source = -1;      // index of the source reopened as the database; -1: none
    uint64_t rows_copied = 0;  // rows copied from the other sources
  };
  const NativeRestoreStats& last_native_restore() const { return last_restore_; }
  // Microseconds of the last SnapshotNative, the synchronous part (the deferred writes not
  // included).
  int64_t last_native_sync_micros() const { return last_sync_micros_; }
  // Whether a native snapshot's deferred writes are still pending (tests).
  bool native_sync_pending() const;
  // Bytes the write-back cache holds (keys, values, slots; tests).
  int64_t write_cache_bytes_used() const { return cache_bytes_; }
  // How many times the cache's dirty rows were ingested as SST files (WriteCacheRows; tests).
  uint64_t cache_ingests() const { return cache_ingests_; }

 private:
  friend class RocksDbKeyedState;
  struct RegisteredState {
    std::type_index signature;
    RocksDbStateInfo info;
    std::unique_ptr<RocksDbKeyedState> state;
    std::unique_ptr<KeyedStateHandle> handle;  // over `state`
  };
  class KeyGroupSnapshotCopy;
  class KeyGroupRows;

  RocksDbKeyedStateBackend(KeyContext& key_context, RocksDbStateOptions options);

  rocksdb::DBOptions DbOptions() const;
  rocksdb::ColumnFamilyOptions CfOptions() const;
  // Opens db_ at db_dir_: a new database, or (existing) the one there, with a column family for
  // every registered state (created if missing; those of unregistered states are dropped).
  Status OpenDatabase(bool existing);
  void CloseDatabase();
  // Removes every row of every state, whatever the counters say.
  void DropAllRows();
  // The states at this moment, for KEYFLOW-STATES.
  std::vector<rocksdb_native::SnapshotState> SnapshotStates() const;
  // RestoreNative's steps (rocksdb_native_restore.cc).
  Status CheckSnapshotStates(const std::vector<rocksdb_native::SnapshotState>& states,
                             const KeyGroupRange& source_range) const;
  Status ReopenAsDatabase(const std::string& staged_dir);
  Status CopyRows(const std::string& staged_dir, const KeyGroupRange& groups, uint64_t* rows);

  // The write-back cache (see the top of this file).
  bool write_cache_enabled() const { return options_.write_cache_bytes > 0; }
  enum class CacheSync {
    kWrite,         // write the dirty rows to RocksDB; the rows stay cached (clean)
    kWriteAndDrop,  // write the dirty rows, then empty the cache (rows are replaced next)
    kDrop,          // empty the cache without writing (every row is deleted next)
  };
  // THE cache barrier: every path that reads RocksDB other than a point state's Get/Exists, or
  // writes RocksDB directly, calls it first. `index` >= 0: only if key group range().start() +
  // index has dirty rows (then every dirty row is written); touches nothing else when it has
  // none, so another thread may call it for a clean key group (see Threading above).
  void SyncCache(CacheSync how, int32_t index = -1) const;
  // Marks every dirty row clean, adding its Put/Delete to `batch` (nullptr: forgets them), and
  // zeroes the dirty counters.
  void TakeDirtyRows(rocksdb::WriteBatch* batch) const;
  // The cached row of (key, namespace) `l` of key group `key_group` in `info`: a hit, or one
  // RocksDB read whose answer (present or absent) is cached. Valid until the next cache call.
  const RocksDbCachedRow& CachedRow(RocksDbStateInfo& info, const StateEntryLookup& l,
                                    int32_t key_group);
  // Sets the cached row of `l` (key group `key_group`, at index `index`) to `value` / absent,
  // dirty. The caller has called BeforeWrite(index) and keeps the counters.
  void CachePut(RocksDbStateInfo& info, const StateEntryLookup& l, int32_t key_group, int32_t index,
                std::string value);
  void CacheDelete(RocksDbStateInfo& info, const StateEntryLookup& l, int32_t key_group,
                   int32_t index);
  RocksDbCachedRow& CacheSlot(RocksDbStateInfo& info, const StateEntryLookup& l, int32_t key_group,
                              int32_t index);
  // Inserts the absent row `l` into `info`'s cache and accounts for it (callers MakeRoom first).
  RocksDbCachedRow& CacheInsert(RocksDbStateInfo& info, const StateEntryLookup& l,
                                RocksDbCachedRow row);
  void MakeRoom() {
    if (cache_bytes_ >= cache_limit_) SyncCache(CacheSync::kWriteAndDrop);
  }
  // THE WRITE GATE (see the top of this file).
  void AwaitNativeSync() const {
    if (native_sync_ != nullptr) [[unlikely]]
      FinishNativeSync();
  }
  void FinishNativeSync() const;
  // The deferred writes of a native snapshot (any thread): `rows` (ingested as SST files built
  // with `sst_options` if set, else written), a flush of `families` and a RocksDB checkpoint in
  // `local_dir`.
  rocksdb_native::DeferredSync::Outcome RunDeferredSync(
      rocksdb::WriteBatch& rows, const std::vector<rocksdb::ColumnFamilyHandle*>& families,
      const std::optional<rocksdb::Options>& sst_options, const std::string& local_dir,
      CheckpointId checkpoint) const;
  // `rows` (Put and Delete of a write batch, each key at most once per column family) as one
  // sorted SST file per column family in dir() (named after `tag`), ingested into the database
  // at once.
  Status IngestRows(rocksdb::WriteBatch& rows,
                    const std::vector<rocksdb::ColumnFamilyHandle*>& families,
                    const rocksdb::Options& sst_options, const std::string& tag) const;
  // The options of the SST files `rows` rows are ingested as; none below
  // RocksDbStateOptions::ingest_rows_at_least (they are then written through the memtables).
  std::optional<rocksdb::Options> IngestOptions(size_t rows) const;
  // Writes the cache's dirty rows (TakeDirtyRows) to RocksDB: ingested as SST files from
  // ingest_rows_at_least rows (no memtable inserts, no flush), else one write batch. A failure
  // is recorded (failure()).
  void WriteCacheRows(rocksdb::WriteBatch& rows) const;
  // The sentence of a storage error `s` of `what` (see Check).
  Status StorageFailure(const rocksdb::Status& s, const std::string& what) const;

  // The write gate: every change to key group range().start() + index calls it first.
  void BeforeWrite(int32_t index) {
    if (write_guard_ != nullptr) write_guard_->BeforeWrite(index);
  }
  // Records the first storage error (a full disk, an I/O error, a corrupted file) of a read or
  // write on the task thread as failure(), a sentence naming the directory; `what` says what
  // was being done.
  void Check(const rocksdb::Status& s, const std::string& what) const;
  // Writes `batch` (WAL off); a failure is recorded.
  void Apply(rocksdb::WriteBatch& batch, const std::string& what);
  // Appends key group g's state as of `snapshot` (nullptr: now) in the canonical format.
  void WriteKeyGroup(KeyGroupId g, const rocksdb::Snapshot* snapshot, BinaryWriter& out) const;
  size_t CountKeys(KeyGroupId g, const rocksdb::Snapshot* snapshot) const;
  // Adds the rows of canonical key-group bytes (trusted: written by the staging backend) to
  // `batch`; (*counts)[state name] = its entries.
  void StageKeyGroup(std::string_view bytes, rocksdb::WriteBatch& batch,
                     std::map<std::string, int64_t, std::less<>>* counts) const;

  std::string dir_;
  std::string db_dir_;  // dir_/db
  RocksDbStateOptions options_;
  FileSystem* fs_;
  std::string backend_id_;
  std::shared_ptr<rocksdb_native::UploadedFiles> uploaded_;
  NativeRestoreStats last_restore_;
  int64_t last_sync_micros_ = 0;
  int prefix_bytes_;
  int64_t memtable_bytes_ = 0;
  std::shared_ptr<rocksdb::Cache> block_cache_;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers_;
  std::unique_ptr<rocksdb::DB> db_;
  KeyGroupWriteGuard* write_guard_ = nullptr;
  // The write-back cache's accounting: bytes of cached rows (keys, values, slots), dirty rows,
  // dirty rows per key-group index (atomic: read by SerializeKeyGroup on a snapshot thread).
  mutable int64_t cache_bytes_ = 0;
  // When MakeRoom empties the cache: write_cache_bytes, twice that while native_sync_ pends.
  mutable int64_t cache_limit_ = 0;
  // The deferred writes of the last native snapshot until the gate has seen them run.
  mutable std::shared_ptr<rocksdb_native::DeferredSync> native_sync_;
  mutable int64_t dirty_rows_ = 0;
  mutable uint64_t cache_ingests_ = 0;  // names the SST files of WriteCacheRows
  std::unique_ptr<std::atomic<int32_t>[]> dirty_groups_;
  // Bumped by ClearAll and RestoreKeyGroup: the states' cached lookups are then stale.
  uint64_t epoch_ = 0;
  std::map<std::string, std::unique_ptr<RegisteredState>, std::less<>> states_;  // by name
  std::vector<const RocksDbRowCache*> caches_;  // of the cached states in states_, for Prefetch
  mutable std::string miss_key_;                // the rocks key of a cache miss (CachedRow)
  static inline const uint64_t kVoidNamespaceHash = NamespaceHash(kVoidNamespace);
  // RestoreKeyGroup parses and validates through it (same checks and messages as the heap).
  KeyContext staging_context_;
  HeapKeyedStateBackend staging_;
};

}  // namespace keyflow
