#include "state/rocksdb/rocksdb_keyed_state_backend.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/file_system.h"
#include "state/apply_to_keys.h"
#include "state/rocksdb/rocksdb_info_logger.h"
#include "state/rocksdb/rocksdb_key_layout.h"
#include "state/rocksdb/rocksdb_keyed_state.h"
#include "state/rocksdb/rocksdb_native_snapshot.h"
#include "state/rocksdb/rocksdb_tsan_env.h"
#include "state/rocksdb/rocksdb_value_format.h"

namespace keyflow {

namespace {

namespace fs = std::filesystem;

// The list merge operator: a stored list is a concatenation of length-prefixed elements, so
// appending is concatenation (rocksdb_value_format.h).
class ListAppendOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* new_value, rocksdb::Logger*) const override {
    new_value->clear();
    if (existing != nullptr) new_value->assign(existing->data(), existing->size());
    new_value->append(value.data(), value.size());
    return true;
  }
  const char* Name() const override { return "keyflow.ListAppend"; }
};

rocksdb::WriteOptions NoWal() {
  rocksdb::WriteOptions w;
  w.disableWAL = true;  // checkpoints are the durability
  return w;
}

// A handle for the staging heap backend's registrations (never used by anyone).
class StagingHandle final : public KeyedStateHandle {
 public:
  explicit StagingHandle(InternalKeyedState* s) : KeyedStateHandle(s) {}
};

// A random (version 4) UUID: names this instance's shared files.
std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 rng((uint64_t{rd()} << 32) ^ rd());
  const uint64_t hi = rng();
  const uint64_t lo = rng();
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFF),
                static_cast<unsigned>(0x8000 | (lo >> 50)),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

std::string StateDirSentence(const std::string& dir, const std::string& why) {
  return "cannot use the RocksDB state directory " + dir + " (" + why +
         "): pass --state-dir a directory on a local disk that the worker can write";
}

// `dir` exists, private (0700) and empty: a leftover's entries (a killed process's, whose state
// is in a checkpoint) are removed, the directory itself is kept (its owner may have made it).
std::error_code ResetPrivateDirectory(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      fs::remove_all(entry.path(), ec);
      if (ec) return ec;
    }
  } else {
    fs::create_directories(dir, ec);
  }
  // Owner only; a setgid bit the directory inherited (a group's run dir) is kept.
  if (!ec) {
    fs::permissions(dir, fs::perms::group_all | fs::perms::others_all, fs::perm_options::remove,
                    ec);
  }
  return ec;
}

// Per level: LZ4 for L0 and L1, Snappy below (CfOptions says why); a library built without one
// of them gets the next in that order, down to none.
std::vector<rocksdb::CompressionType> LevelCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  auto has = [&](rocksdb::CompressionType t) {
    return std::find(supported.begin(), supported.end(), t) != supported.end();
  };
  const rocksdb::CompressionType below =
      has(rocksdb::kSnappyCompression) ? rocksdb::kSnappyCompression : rocksdb::kNoCompression;
  const rocksdb::CompressionType top =
      has(rocksdb::kLZ4Compression) ? rocksdb::kLZ4Compression : below;
  std::vector<rocksdb::CompressionType> levels(rocksdb::ColumnFamilyOptions().num_levels, below);
  levels[0] = levels[1] = top;
  return levels;
}

}  // namespace

// An iterator over the rows of key group g of one column family, as of `snapshot` (nullptr: now).
// Reads of snapshots and inspection do not fill the block cache: they read everything once.
class RocksDbKeyedStateBackend::KeyGroupRows {
 public:
  KeyGroupRows(const RocksDbKeyedStateBackend& backend, KeyGroupId g,
               const rocksdb::Snapshot* snapshot, rocksdb::ColumnFamilyHandle* column_family)
      : begin_(rocksdb_layout::KeyGroupBegin(g.value(), backend.prefix_bytes_)),
        end_(rocksdb_layout::KeyGroupEnd(g.value(), backend.prefix_bytes_)),
        upper_(end_) {
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper_;
    ro.snapshot = snapshot;
    ro.fill_cache = false;
    it_.reset(backend.db_->NewIterator(ro, column_family));
  }
  void SeekToFirst() { it_->Seek(begin_); }
  rocksdb::Iterator* operator->() const { return it_.get(); }
  std::string_view key() const { return std::string_view(it_->key().data(), it_->key().size()); }

 private:
  std::string begin_;
  std::string end_;
  rocksdb::Slice upper_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

// CopyKeyGroup's result: a RocksDB snapshot; serialised from on the writer thread.
class RocksDbKeyedStateBackend::KeyGroupSnapshotCopy final : public KeyGroupCopy {
 public:
  KeyGroupSnapshotCopy(const RocksDbKeyedStateBackend* backend, KeyGroupId g)
      : backend_(backend), g_(g), snapshot_(backend->db_->GetSnapshot()) {}
  ~KeyGroupSnapshotCopy() override { backend_->db_->ReleaseSnapshot(snapshot_); }
  void Write(BinaryWriter& out) const override { backend_->WriteKeyGroup(g_, snapshot_, out); }
  uint64_t Count() const override { return backend_->CountKeys(g_, snapshot_); }

 private:
  const RocksDbKeyedStateBackend* backend_;
  KeyGroupId g_;
  const rocksdb::Snapshot* snapshot_;
};

RocksDbKeyedStateBackend::RocksDbKeyedStateBackend(KeyContext& key_context,
                                                   RocksDbStateOptions options)
    : KeyedStateBackend(key_context),
      dir_(options.dir),
      db_dir_(options.dir + "/db"),
      options_(std::move(options)),
      fs_(options_.file_system != nullptr ? options_.file_system : &FileSystem::Default()),
      backend_id_(NewUuid()),
      uploaded_(std::make_shared<rocksdb_native::UploadedFiles>()),
      prefix_bytes_(rocksdb_layout::KeyGroupPrefixBytes(key_context.max_parallelism())),
      cache_limit_(options_.write_cache_bytes),
      dirty_groups_(std::make_unique<std::atomic<int32_t>[]>(
          static_cast<size_t>(key_context.range().size()))),
      staging_context_(key_context.key_type(), key_context.max_parallelism(), key_context.range()),
      staging_(staging_context_) {}

Result<std::unique_ptr<RocksDbKeyedStateBackend>> RocksDbKeyedStateBackend::Open(
    KeyContext& key_context, RocksDbStateOptions options) {
  if (options.dir.empty()) {
    return InvalidArgument("the RocksDB state backend needs a directory: pass --state-dir DIR");
  }
  std::error_code ec = ResetPrivateDirectory(options.dir);
  if (ec) return FailedPrecondition(StateDirSentence(options.dir, ec.message()));

  std::unique_ptr<RocksDbKeyedStateBackend> backend(
      new RocksDbKeyedStateBackend(key_context, options));
  backend->block_cache_ =
      rocksdb::NewLRUCache(static_cast<size_t>(std::max<int64_t>(options.block_cache_bytes, 1)));
  backend->write_buffers_ = std::make_shared<rocksdb::WriteBufferManager>(
      static_cast<size_t>(std::max<int64_t>(options.memtable_bytes, 1 << 20)));
  backend->memtable_bytes_ = std::max<int64_t>(options.memtable_bytes, 1 << 20);
  // RocksDB's per-thread perf counters (on by default: a dynamic-TLS access per counter, ~10 %
  // of a point read) are never read; off for the task thread that opens and uses the backend.
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  if (Status s = backend->OpenDatabase(/*existing=*/false); !s.ok()) {
    backend.reset();
    fs::remove_all(options.dir, ec);
    return s;
  }
  return backend;
}

rocksdb::DBOptions RocksDbKeyedStateBackend::DbOptions() const {
  rocksdb::DBOptions db_options;
  db_options.write_buffer_manager = write_buffers_;
  db_options.avoid_flush_during_shutdown = true;
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 2;
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // RocksDB's statistics dump writes to the info log at INFO level, which nobody reads (the
  // logger keeps warnings and errors): no dump thread work every 10 minutes.
  db_options.stats_dump_period_sec = 0;
  // One writer (the task thread): the concurrent memtable insert's atomics buy nothing.
  db_options.allow_concurrent_memtable_write = false;
  db_options.env = RocksDbBackgroundEnv();
  // Not a LOG file on the state disk (rocksdb_info_logger.h: a full disk would abort).
  db_options.info_log = std::make_shared<RocksDbInfoLogger>(dir_);
  return db_options;
}

rocksdb::ColumnFamilyOptions RocksDbKeyedStateBackend::CfOptions() const {
  rocksdb::ColumnFamilyOptions cf_options;
  static const auto* merge =
      new std::shared_ptr<rocksdb::MergeOperator>(std::make_shared<ListAppendOperator>());
  cf_options.merge_operator = *merge;
  cf_options.write_buffer_size = static_cast<size_t>(memtable_bytes_ / 2);
  // A bloom filter over the memtable's keys: a read of a key the memtable does not hold (most
  // reads once the state outgrows it) skips the skiplist search.
  cf_options.memtable_prefix_bloom_size_ratio = 0.1;
  cf_options.memtable_whole_key_filtering = true;
  // LZ4 for the levels a point read of a state larger than memory mostly lands in (L0 and L1,
  // flushed and first compacted; a miss decompresses one data block), Snappy below them; the
  // measured gain is in the README ("RocksDB state backend"). A block names its own
  // compression, so files of either kind restore into either setting.
  cf_options.compression_per_level = LevelCompression();
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = block_cache_;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.cache_index_and_filter_blocks = true;  // counted in the cache budget
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  // Partitioned index and filters (Flink's bounded-memory setting): a file's filter and index
  // are split into 4 KiB partitions behind a small pinned top level, so a point read loads one
  // partition, not the whole multi-MB filter, when the state is larger than the cache. Without
  // this, a state 2x the cache read each file's full filter from disk on every Get.
  table.index_type = rocksdb::BlockBasedTableOptions::IndexType::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  table.pin_top_level_index_and_filter = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return cf_options;
}

Status RocksDbKeyedStateBackend::OpenDatabase(bool existing) {
  KF_CHECK(db_ == nullptr);
  rocksdb::DBOptions db_options = DbOptions();
  db_options.create_if_missing = !existing;
  db_options.error_if_exists = !existing;
  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName};
  if (!existing) {
    // RocksDB logs an error ("Error when reading ... dir NotFound") for a directory it creates.
    std::error_code ec = ResetPrivateDirectory(db_dir_);
    if (ec) return FailedPrecondition(StateDirSentence(dir_, ec.message()));
  }
  if (existing) {
    names.clear();
    rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, db_dir_, &names);
    if (!s.ok()) {
      return Corruption("cannot open the restored RocksDB database in " + db_dir_ + " (" +
                        s.ToString() + "): restore from an earlier checkpoint");
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) descriptors.emplace_back(name, CfOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, db_dir_, descriptors, &handles, &db);
  if (!s.ok()) {
    return existing ? Corruption("cannot open the restored RocksDB database in " + db_dir_ + " (" +
                                 s.ToString() + "): restore from an earlier checkpoint")
                    : FailedPrecondition(StateDirSentence(dir_, s.ToString()));
  }
  db_.reset(db);
  for (auto& [name, state] : states_) state->info.column_family = nullptr;
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    const std::string& name = h->GetName();
    auto it = name.rfind("state:", 0) == 0 ? states_.find(name.substr(6)) : states_.end();
    if (it != states_.end()) {
      it->second->info.column_family = h;
      continue;
    }
    // The default column family, or a state nobody registered (it has no rows in range()).
    if (name != rocksdb::kDefaultColumnFamilyName) db_->DropColumnFamily(h).PermitUncheckedError();
    db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  for (auto& [name, state] : states_) {
    if (state->info.column_family != nullptr) continue;
    rocksdb::ColumnFamilyHandle* cf = nullptr;
    s = db_->CreateColumnFamily(CfOptions(), "state:" + name, &cf);
    if (!s.ok()) {
      return Unavailable("cannot create the RocksDB column family of keyed state '" + name +
                         "' in " + db_dir_ + " (" + s.ToString() +
                         "): check that --state-dir is writable and has free space");
    }
    state->info.column_family = cf;
  }
  return Status::Ok();
}

void RocksDbKeyedStateBackend::CloseDatabase() {
  if (db_ == nullptr) return;
  SyncCache(CacheSync::kDrop);  // the database is deleted or replaced
  for (auto& [name, state] : states_) {
    if (state->info.column_family != nullptr) {
      db_->DestroyColumnFamilyHandle(state->info.column_family).PermitUncheckedError();
    }
    state->info.column_family = nullptr;
  }
  db_->Close().PermitUncheckedError();
  db_.reset();
}

RocksDbKeyedStateBackend::~RocksDbKeyedStateBackend() {
  CloseDatabase();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Status RocksDbKeyedStateBackend::StorageFailure(const rocksdb::Status& s,
                                                const std::string& what) const {
  const std::string why = s.ToString();
  return s.IsNoSpace() || s.IsIOError()
             ? Unavailable("the RocksDB state backend failed " + what + " in " + dir_ + " (" + why +
                           "): free disk space or fix the disk of --state-dir; the job "
                           "restarts from its last completed checkpoint")
             : Internal("the RocksDB state backend failed " + what + " in " + dir_ + " (" + why +
                        "); the job restarts from its last completed checkpoint");
}

void RocksDbKeyedStateBackend::Check(const rocksdb::Status& s, const std::string& what) const {
  if (s.ok() || !failure_.ok()) return;
  failure_ = StorageFailure(s, what);
}

void RocksDbKeyedStateBackend::Apply(rocksdb::WriteBatch& batch, const std::string& what) {
  AwaitNativeSync();
  Check(db_->Write(NoWal(), &batch), what);
}

void RocksDbKeyedStateBackend::FinishNativeSync() const {
  const rocksdb_native::DeferredSync::Outcome outcome = native_sync_->Run();
  if (!outcome.rows.ok() && failure_.ok()) failure_ = outcome.rows;
  native_sync_.reset();
  cache_limit_ = options_.write_cache_bytes;
}

bool RocksDbKeyedStateBackend::native_sync_pending() const {
  return native_sync_ != nullptr && !native_sync_->ran();
}

namespace {
// The `what` of a failed write of the cache's dirty rows (StorageFailure).
constexpr char kWritingCacheChanges[] = "writing the state cache's changes";

// What a cached row costs: its slot (key, namespace and row objects), the key's bytes when
// they do not fit in the slot, and the value's bytes.
int64_t CachedRowBytes(const Key& key, const RocksDbCachedRow& row) {
  const size_t key_heap = key.size() > Key::kInlineCapacity ? key.size() : 0;
  return static_cast<int64_t>(sizeof(RocksDbRowCache::Entry) + key_heap + row.value.size());
}
}  // namespace

void RocksDbKeyedStateBackend::SyncCache(CacheSync how, int32_t index) const {
  AwaitNativeSync();  // RocksDB is read or written next: it must hold the barrier's rows
  if (index >= 0 &&
      dirty_groups_[static_cast<size_t>(index)].load(std::memory_order_relaxed) == 0) {
    return;  // key group clean: nothing of it to write (and maybe not the task thread)
  }
  if (how != CacheSync::kDrop && dirty_rows_ > 0) {
    rocksdb::WriteBatch batch;
    TakeDirtyRows(&batch);
    WriteCacheRows(batch);
  }
  if (how != CacheSync::kWrite) {
    for (const auto& [name, state] : states_) {
      state->info.cache.Clear();
      state->info.last_row = nullptr;
    }
    cache_bytes_ = 0;
  }
  TakeDirtyRows(nullptr);  // kDrop: the dirty rows are gone with the cache
}

void RocksDbKeyedStateBackend::WriteCacheRows(rocksdb::WriteBatch& rows) const {
  if (std::optional<rocksdb::Options> sst = IngestOptions(rows.Count())) {
    std::vector<rocksdb::ColumnFamilyHandle*> families;
    for (const auto& [name, state] : states_) families.push_back(state->info.column_family);
    Status ingested = IngestRows(rows, families, *sst, "cache-" + std::to_string(++cache_ingests_));
    if (!ingested.ok() && failure_.ok()) failure_ = std::move(ingested);
    return;
  }
  Check(db_->Write(NoWal(), &rows), kWritingCacheChanges);
}

std::optional<rocksdb::Options> RocksDbKeyedStateBackend::IngestOptions(size_t rows) const {
  if (static_cast<int64_t>(rows) < options_.ingest_rows_at_least) return std::nullopt;
  rocksdb::Options sst(rocksdb::DBOptions(), CfOptions());
  // SstFileWriter would take the last level's compression; the files are ingested into L0
  // when they overlap the database (they mostly do), so they get L0's, as a flush would.
  sst.compression = sst.compression_per_level.front();
  sst.compression_per_level.clear();
  return sst;
}

void RocksDbKeyedStateBackend::TakeDirtyRows(rocksdb::WriteBatch* batch) const {
  if (dirty_rows_ == 0) return;
  for (const auto& [name, state] : states_) {
    std::string key;
    // A local: clang does not let a lambda capture a structured binding.
    rocksdb::ColumnFamilyHandle* const family = state->info.column_family;
    state->info.cache.ForEachMutable([&](RocksDbRowCache::Entry& e) {
      RocksDbCachedRow& row = e.value;
      if (!row.dirty) return;
      row.dirty = false;
      if (batch == nullptr) return;
      key.clear();
      rocksdb_layout::AppendEntryPrefix(&key, row.key_group, prefix_bytes_, e.key.key.bytes(),
                                        e.key.ns.value());
      if (row.present) {
        batch->Put(family, key, row.value);
      } else {
        batch->Delete(family, key);
      }
    });
  }
  for (int32_t i = 0; i < range().size(); ++i) {
    dirty_groups_[static_cast<size_t>(i)].store(0, std::memory_order_relaxed);
  }
  dirty_rows_ = 0;
}

const RocksDbCachedRow& RocksDbKeyedStateBackend::CachedRow(RocksDbStateInfo& info,
                                                            const StateEntryLookup& l,
                                                            int32_t key_group) {
  if (RocksDbRowCache::Entry* e = info.cache.FindHinted(l, info.last_row)) {
    info.last_row = e;
    return e->value;
  }
  MakeRoom();
  RocksDbCachedRow row;
  row.key_group = key_group;
  miss_key_.clear();
  rocksdb_layout::AppendEntryPrefix(&miss_key_, key_group, prefix_bytes_, l.key->bytes(),
                                    l.ns.value());
  rocksdb::PinnableSlice v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), info.column_family, miss_key_, &v);
  if (s.ok()) {
    row.present = true;
    row.value.assign(v.data(), v.size());
  } else if (!s.IsNotFound()) {
    Check(s, "reading state '" + info.name + "'");
    static const RocksDbCachedRow kAbsent;
    return kAbsent;  // not cached: the failure ends the attempt
  }
  return CacheInsert(info, l, std::move(row));
}

RocksDbCachedRow& RocksDbKeyedStateBackend::CacheInsert(RocksDbStateInfo& info,
                                                        const StateEntryLookup& l,
                                                        RocksDbCachedRow row) {
  cache_bytes_ += CachedRowBytes(*l.key, row);
  RocksDbRowCache::Entry* e = info.cache.InsertAbsent(l, std::move(row));
  info.last_row = e;
  return e->value;
}

RocksDbCachedRow& RocksDbKeyedStateBackend::CacheSlot(RocksDbStateInfo& info,
                                                      const StateEntryLookup& l, int32_t key_group,
                                                      int32_t index) {
  RocksDbCachedRow* found = nullptr;
  if (RocksDbRowCache::Entry* e = info.cache.FindHinted(l, info.last_row)) {
    info.last_row = e;
    found = &e->value;
  } else {
    MakeRoom();
    RocksDbCachedRow fresh;
    fresh.key_group = key_group;
    found = &CacheInsert(info, l, std::move(fresh));
  }
  RocksDbCachedRow& row = *found;
  if (!row.dirty) {
    row.dirty = true;
    ++dirty_rows_;
    std::atomic<int32_t>& group = dirty_groups_[static_cast<size_t>(index)];
    group.store(group.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  return row;
}

void RocksDbKeyedStateBackend::CachePut(RocksDbStateInfo& info, const StateEntryLookup& l,
                                        int32_t key_group, int32_t index, std::string value) {
  RocksDbCachedRow& row = CacheSlot(info, l, key_group, index);
  cache_bytes_ += static_cast<int64_t>(value.size()) - static_cast<int64_t>(row.value.size());
  row.value = std::move(value);
  row.present = true;
}

void RocksDbKeyedStateBackend::CacheDelete(RocksDbStateInfo& info, const StateEntryLookup& l,
                                           int32_t key_group, int32_t index) {
  RocksDbCachedRow& row = CacheSlot(info, l, key_group, index);
  cache_bytes_ -= static_cast<int64_t>(row.value.size());
  row.value = std::string();
  row.present = false;
}

void RocksDbKeyedStateBackend::SetWriteGuard(KeyGroupWriteGuard* guard) {
  // A full snapshot's rows are RocksDB's from here on; without a guard nothing else reads it.
  if (guard != nullptr) SyncCache(CacheSync::kWrite);
  write_guard_ = guard;
}

Result<KeyedStateHandle*> RocksDbKeyedStateBackend::GetOrRegisterState(const StateRegistration& r,
                                                                       HandleFactory make) {
  if (r.name.empty()) {
    return InvalidArgument("a keyed state needs a non-empty name (" + r.type_description + ")");
  }
  if (auto it = states_.find(r.name); it != states_.end()) {
    if (it->second->signature != std::type_index(*r.signature)) {
      return AlreadyExists("keyed state '" + r.name + "' is already registered as " +
                           it->second->info.type_description +
                           "; it cannot also be registered as " + r.type_description +
                           ". State names are unique per operator: use another name");
    }
    return it->second->handle.get();
  }
  if (!r.invalid_reason.empty()) return InvalidArgument(r.invalid_reason);
  KF_CHECK(r.kind != StateKind::kList || r.element_ops != nullptr);
  KF_CHECK(r.kind != StateKind::kMap || (r.element_ops != nullptr && r.map_value_ops != nullptr));

  // The staging backend validates restores: it knows every state.
  KF_RETURN_IF_ERROR(
      staging_
          .GetOrRegisterState(
              r, [](InternalKeyedState* s) { return std::make_unique<StagingHandle>(s); })
          .status());

  rocksdb::ColumnFamilyHandle* cf = nullptr;
  AwaitNativeSync();  // a pending native snapshot's checkpoint must not hold the new family
  // "state:" keeps a state named "default" apart from RocksDB's default column family.
  rocksdb::Status s = db_->CreateColumnFamily(CfOptions(), "state:" + r.name, &cf);
  if (!s.ok()) {
    return Unavailable("cannot create the RocksDB column family of keyed state '" + r.name +
                       "' in " + dir_ + " (" + s.ToString() +
                       "): check that --state-dir is writable and has free space");
  }

  auto registered = std::make_unique<RegisteredState>(RegisteredState{
      std::type_index(*r.signature),
      RocksDbStateInfo{r.name, r.kind, r.type_description, r.value_ops, r.element_ops,
                       r.map_value_ops, cf, std::vector<int64_t>(range().size(), 0)},
      nullptr, nullptr});
  registered->state = std::make_unique<RocksDbKeyedState>(this, &key_context(), &registered->info);
  if (registered->state->cached()) caches_.push_back(&registered->info.cache);
  registered->handle = make(registered->state.get());
  KeyedStateHandle* handle = registered->handle.get();
  states_.emplace(r.name, std::move(registered));
  return handle;
}

Status RocksDbKeyedStateBackend::ApplyToAllKeys(std::string_view state_name, Namespace ns,
                                                absl::FunctionRef<Status(const Key&)> fn) {
  auto it = states_.find(state_name);
  if (it == states_.end()) {
    return NotFound("ApplyToAllKeys: no keyed state named '" + std::string(state_name) +
                    "' is registered; register it (GetState & co.) first");
  }
  const RocksDbStateInfo& info = it->second->info;
  rocksdb_layout::DecodedKey decoded;
  return ApplyToCollectedKeys(
      key_context(),
      [&](KeyGroupId g, std::vector<Key>* keys) {
        SyncCache(CacheSync::kWrite, range().IndexOf(g));  // fn may write any key group
        if (info.counts[static_cast<size_t>(range().IndexOf(g))] == 0) return Status::Ok();
        // Rows come in ascending (key, namespace[, user key]) order: a key's rows are adjacent.
        KeyGroupRows rows(*this, g, nullptr, info.column_family);
        for (rows.SeekToFirst(); rows->Valid(); rows->Next()) {
          KF_CHECK(rocksdb_layout::DecodeKey(rows.key(), prefix_bytes_, &decoded));
          if (decoded.ns != ns.value()) continue;
          if (!keys->empty() && keys->back().bytes() == decoded.key) continue;
          keys->push_back(Key::FromBytes(decoded.key));
        }
        Check(rows->status(), "iterating state '" + info.name + "'");
        return failure_;
      },
      fn);
}

size_t RocksDbKeyedStateBackend::CountKeys(KeyGroupId g, const rocksdb::Snapshot* snapshot) const {
  absl::flat_hash_set<std::string> keys;
  rocksdb_layout::DecodedKey decoded;
  for (const auto& [name, state] : states_) {
    KeyGroupRows rows(*this, g, snapshot, state->info.column_family);
    for (rows.SeekToFirst(); rows->Valid(); rows->Next()) {
      KF_CHECK(rocksdb_layout::DecodeKey(rows.key(), prefix_bytes_, &decoded));
      keys.insert(decoded.key);
    }
    KF_CHECK(rows->status().ok()) << "reading state '" << name << "' in " << dir_ << ": "
                                  << rows->status().ToString();
  }
  return keys.size();
}

size_t RocksDbKeyedStateBackend::NumKeys(KeyGroupId g) const {
  KF_CHECK(range().contains(g)) << "key group " << g << " is not in " << range();
  SyncCache(CacheSync::kWrite, range().IndexOf(g));
  return CountKeys(g, nullptr);
}

size_t RocksDbKeyedStateBackend::NumEntries() const {
  int64_t n = 0;
  for (const auto& [name, state] : states_) {
    for (int64_t c : state->info.counts) n += c;
  }
  return static_cast<size_t>(n);
}

void RocksDbKeyedStateBackend::ClearAll() {
  SyncCache(CacheSync::kWriteAndDrop);  // a cached delete may be of a row the counters miss
  ++epoch_;
  for (int32_t i = 0; i < range().size(); ++i) {
    const int32_t g = range().start() + i;
    rocksdb::WriteBatch batch;
    bool any = false;
    for (auto& [name, state] : states_) {
      int64_t& count = state->info.counts[static_cast<size_t>(i)];
      if (count == 0) continue;
      batch.DeleteRange(state->info.column_family, rocksdb_layout::KeyGroupBegin(g, prefix_bytes_),
                        rocksdb_layout::KeyGroupEnd(g, prefix_bytes_));
      count = 0;
      any = true;
    }
    if (!any) continue;
    BeforeWrite(i);
    Apply(batch, "clearing key group " + std::to_string(g));
  }
}

void RocksDbKeyedStateBackend::SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const {
  KF_CHECK(range().contains(g)) << "SerializeKeyGroup: key group " << g << " is not in " << range();
  SyncCache(CacheSync::kWrite, range().IndexOf(g));
  WriteKeyGroup(g, nullptr, out);
}

std::unique_ptr<KeyGroupCopy> RocksDbKeyedStateBackend::CopyKeyGroup(KeyGroupId g) const {
  KF_CHECK(range().contains(g)) << "CopyKeyGroup: key group " << g << " is not in " << range();
  SyncCache(CacheSync::kWrite, range().IndexOf(g));
  return std::make_unique<KeyGroupSnapshotCopy>(this, g);
}

void RocksDbKeyedStateBackend::WriteKeyGroup(KeyGroupId g, const rocksdb::Snapshot* snapshot,
                                             BinaryWriter& out) const {
  rocksdb_layout::DecodedKey decoded;

  struct Part {
    const RocksDbStateInfo* info;
    uint64_t entries = 0;
    std::string bytes;
  };
  std::vector<Part> parts;
  for (const auto& [name, state] : states_) {
    const RocksDbStateInfo& info = state->info;
    Part part{&info};
    BinaryWriter w(&part.bytes);
    KeyGroupRows rows(*this, g, snapshot, info.column_family);
    // A map's rows of one (key, namespace) are adjacent: gathered, then written as one map.
    std::optional<TypedBuffer> map;
    if (info.kind == StateKind::kMap) map.emplace(*info.value_ops);
    std::string map_prefix;
    std::string map_pairs;
    uint64_t map_size = 0;
    auto flush_map = [&] {
      if (map_size == 0) return;
      KF_CHECK(rocksdb_format::RowsToCanonicalMap(map_size, map_pairs, *map, *info.value_ops, w))
          << "map state '" << info.name << "' holds rows this backend did not write";
      map_size = 0;
      map_pairs.clear();
    };
    for (rows.SeekToFirst(); rows->Valid(); rows->Next()) {
      std::string_view rocks_key = rows.key();
      std::string_view value(rows->value().data(), rows->value().size());
      KF_CHECK(rocksdb_layout::DecodeKey(rocks_key, prefix_bytes_, &decoded));
      if (info.kind == StateKind::kMap) {
        std::string_view prefix = rocks_key.substr(0, decoded.prefix_length);
        if (map_size > 0 && prefix == map_prefix) {
          map_pairs.append(decoded.rest).append(value);
          ++map_size;
          continue;
        }
        flush_map();
        map_prefix.assign(prefix);
        map_pairs.append(decoded.rest).append(value);
        map_size = 1;
      }
      ++part.entries;
      w.Bytes(decoded.key);
      w.I64(decoded.ns);
      if (info.kind == StateKind::kList) {
        KF_CHECK(rocksdb_format::StoredListToCanonical(value, w))
            << "list state '" << info.name << "' holds a value this backend did not write";
      } else if (info.kind != StateKind::kMap) {
        w.Raw(value.data(), value.size());
      }
    }
    flush_map();
    KF_CHECK(rows->status().ok()) << "reading state '" << info.name << "' in " << dir_ << ": "
                                  << rows->status().ToString();
    if (part.entries > 0) parts.push_back(std::move(part));
  }
  // Format version 2 (state/README.md), the bytes the heap backend writes for the same state.
  out.I32(-kKeyGroupStateFormatVersion);
  out.I32(g.value());
  out.VarU64(parts.size());
  for (const Part& p : parts) {
    out.Bytes(p.info->name);
    out.U8(static_cast<uint8_t>(p.info->kind));
    out.Bytes(p.info->type_description);
    out.VarU64(p.entries);
    out.Raw(p.bytes.data(), p.bytes.size());
  }
}

void RocksDbKeyedStateBackend::StageKeyGroup(
    std::string_view bytes, rocksdb::WriteBatch& batch,
    std::map<std::string, int64_t, std::less<>>* counts) const {
  BinaryReader in(bytes);
  KF_CHECK(in.I32() == -kKeyGroupStateFormatVersion);
  const int32_t g = in.I32();
  const uint64_t num_states = in.VarU64();
  std::string rocks_key;
  std::string stored;
  std::vector<std::pair<std::string_view, std::string_view>> rows;
  for (uint64_t i = 0; i < num_states; ++i) {
    const std::string_view name = in.Bytes();
    in.U8();     // kind: as registered (the staging backend checked)
    in.Bytes();  // declared type: likewise
    const uint64_t n = in.VarU64();
    const RocksDbStateInfo& info = states_.find(name)->second->info;
    (*counts)[std::string(name)] = static_cast<int64_t>(n);
    TypedBuffer scratch(*info.value_ops);
    for (uint64_t e = 0; e < n; ++e) {
      const std::string_view key = in.Bytes();
      const int64_t ns = in.I64();
      rocks_key.clear();
      rocksdb_layout::AppendEntryPrefix(&rocks_key, g, prefix_bytes_, key, ns);
      if (info.kind == StateKind::kList) {
        stored.clear();
        KF_CHECK(rocksdb_format::CanonicalListToStored(in, *info.element_ops, &stored));
        batch.Put(info.column_family, rocks_key, stored);
      } else if (info.kind == StateKind::kMap) {
        KF_CHECK(
            rocksdb_format::CanonicalMapToRows(in, *info.element_ops, *info.map_value_ops, &rows));
        const size_t prefix_length = rocks_key.size();
        for (const auto& [uk, uv] : rows) {
          rocks_key.resize(prefix_length);
          rocks_key.append(uk);
          batch.Put(info.column_family, rocks_key, rocksdb::Slice(uv.data(), uv.size()));
        }
      } else {
        std::string_view value;
        KF_CHECK(rocksdb_format::ReadValueSlice(in, scratch, &value));
        batch.Put(info.column_family, rocks_key, rocksdb::Slice(value.data(), value.size()));
      }
    }
  }
  KF_CHECK(in.ok() && in.at_end());
}

Status RocksDbKeyedStateBackend::RestoreKeyGroup(KeyGroupId g, BinaryReader& in) {
  if (!range().contains(g)) return key_context().IllegalKeyGroup(g);
  KF_RETURN_IF_ERROR(failure_);
  // Parsed and validated by the heap backend (same checks, same sentences); a failure leaves
  // both untouched. Its canonical bytes are then trusted.
  KF_RETURN_IF_ERROR(staging_.RestoreKeyGroup(g, in));
  std::string canonical;
  BinaryWriter w(&canonical);
  staging_.SerializeKeyGroup(g, w);
  staging_.ClearAll();

  const int32_t index = range().IndexOf(g);
  SyncCache(CacheSync::kWriteAndDrop);  // the rows of g are replaced: cached ones are stale
  rocksdb::WriteBatch batch;
  for (auto& [name, state] : states_) {
    if (state->info.counts[static_cast<size_t>(index)] == 0) continue;
    batch.DeleteRange(state->info.column_family,
                      rocksdb_layout::KeyGroupBegin(g.value(), prefix_bytes_),
                      rocksdb_layout::KeyGroupEnd(g.value(), prefix_bytes_));
  }
  std::map<std::string, int64_t, std::less<>> counts;
  StageKeyGroup(canonical, batch, &counts);
  BeforeWrite(index);
  rocksdb::Status s = db_->Write(NoWal(), &batch);
  if (!s.ok()) {
    return Unavailable("cannot restore key group " + std::to_string(g.value()) +
                       " into the RocksDB state backend in " + dir_ + " (" + s.ToString() +
                       "): free disk space or fix the disk of --state-dir");
  }
  ++epoch_;
  for (auto& [name, state] : states_) {
    auto c = counts.find(name);
    state->info.counts[static_cast<size_t>(index)] = c == counts.end() ? 0 : c->second;
  }
  return Status::Ok();
}

StateSize RocksDbKeyedStateBackend::ApproximateSize() const {
  uint64_t memtables = 0;
  uint64_t sst = 0;
  db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &memtables);
  db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &sst);
  return StateSize{static_cast<int64_t>(memtables + block_cache_->GetUsage()) + cache_bytes_,
                   static_cast<int64_t>(sst)};
}

std::vector<rocksdb_native::SnapshotState> RocksDbKeyedStateBackend::SnapshotStates() const {
  std::vector<rocksdb_native::SnapshotState> states;
  for (const auto& [name, state] : states_) {
    states.push_back(rocksdb_native::SnapshotState{
        name, state->info.kind, state->info.type_description, state->info.counts});
  }
  return states;
}

Result<std::unique_ptr<NativeSnapshotPart>> RocksDbKeyedStateBackend::SnapshotNative(
    const NativeSnapshotTarget& target) {
  AwaitNativeSync();  // an earlier part's, if it was neither written nor destroyed
  KF_RETURN_IF_ERROR(failure_);
  if (target.shared_dir.empty() || target.checkpoint_dir.empty()) {
    return FailedPrecondition(
        "a native RocksDB snapshot needs a checkpoint and a shared directory; take a full "
        "snapshot (SerializeKeyGroup) instead");
  }
  const auto start = std::chrono::steady_clock::now();
  // The dirty cached rows at the barrier, as SyncCache(kWrite) would write them; they stay
  // cached (clean) until the gate has seen them written.
  auto rows = std::make_unique<rocksdb::WriteBatch>();
  TakeDirtyRows(rows.get());
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const auto& [name, state] : states_) families.push_back(state->info.column_family);
  rocksdb_native::LocalSnapshot local;
  local.local_dir = dir_ + "/chk-" + std::to_string(target.checkpoint.value());
  local.target = target;
  local.backend_id = backend_id_;
  local.range = range();
  local.total_keys = NumEntries();
  const std::vector<rocksdb_native::SnapshotState> states = SnapshotStates();
  local.states_bytes = rocksdb_native::EncodeStates(states);
  local.entries_per_key_group.assign(static_cast<size_t>(range().size()), 0);
  for (const rocksdb_native::SnapshotState& state : states) {
    for (size_t i = 0; i < local.entries_per_key_group.size(); ++i) {
      local.entries_per_key_group[i] += static_cast<uint64_t>(state.counts[i]);
    }
  }
  local.base = uploaded_->Base();
  std::optional<rocksdb::Options> sst_options = IngestOptions(rows->Count());
  auto deferred = std::make_shared<rocksdb_native::DeferredSync>(
      [this, rows = std::move(rows), families = std::move(families),
       sst_options = std::move(sst_options), local_dir = local.local_dir,
       checkpoint = target.checkpoint] {
        return RunDeferredSync(*rows, families, sst_options, local_dir, checkpoint);
      });
  native_sync_ = deferred;
  cache_limit_ = 2 * options_.write_cache_bytes;
  last_sync_micros_ = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  return rocksdb_native::MakeSnapshotPart(std::move(local), *fs_, uploaded_, std::move(deferred));
}

namespace {

// A write batch's Put and Delete entries per column family id, as slices into the batch.
class BatchRows : public rocksdb::WriteBatch::Handler {
 public:
  struct Row {
    rocksdb::Slice key;
    rocksdb::Slice value;
    bool put;
  };
  std::map<uint32_t, std::vector<Row>> by_family;

  rocksdb::Status PutCF(uint32_t family, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    by_family[family].push_back(Row{key, value, true});
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t family, const rocksdb::Slice& key) override {
    by_family[family].push_back(Row{key, rocksdb::Slice(), false});
    return rocksdb::Status::OK();
  }
};

}  // namespace

Status RocksDbKeyedStateBackend::IngestRows(
    rocksdb::WriteBatch& rows, const std::vector<rocksdb::ColumnFamilyHandle*>& families,
    const rocksdb::Options& sst_options, const std::string& tag) const {
  BatchRows collected;
  if (rocksdb::Status s = rows.Iterate(&collected); !s.ok()) {
    return StorageFailure(s, kWritingCacheChanges);
  }
  std::vector<rocksdb::IngestExternalFileArg> args;
  std::vector<std::string> written;
  rocksdb::Status s;
  for (auto& [id, list] : collected.by_family) {
    auto family =
        std::find_if(families.begin(), families.end(),
                     [id = id](rocksdb::ColumnFamilyHandle* h) { return h->GetID() == id; });
    if (family == families.end()) {
      s = rocksdb::Status::InvalidArgument("a row of an unknown column family");
      break;
    }
    // The column families compare bytewise; a key is in the batch once (the cache's map).
    std::sort(list.begin(), list.end(), [](const BatchRows::Row& a, const BatchRows::Row& b) {
      return a.key.compare(b.key) < 0;
    });
    const std::string path = dir_ + "/ingest-" + tag + "-" + std::to_string(id) + ".sst";
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options, *family);
    s = writer.Open(path);
    if (s.ok()) written.push_back(path);
    for (const BatchRows::Row& row : list) {
      if (!s.ok()) break;
      s = row.put ? writer.Put(row.key, row.value) : writer.Delete(row.key);
    }
    if (s.ok()) s = writer.Finish();
    if (!s.ok()) break;
    rocksdb::IngestExternalFileArg arg;
    arg.column_family = *family;
    arg.external_files = {path};
    arg.options.move_files = true;  // hard links: the files are in the database's file system
    args.push_back(std::move(arg));
  }
  // All column families at once: a failure ingests none.
  if (s.ok() && !args.empty()) s = db_->IngestExternalFiles(args);
  std::error_code ec;
  for (const std::string& path : written) fs::remove(path, ec);  // moved, or left by a failure
  return s.ok() ? Status::Ok() : StorageFailure(s, kWritingCacheChanges);
}

rocksdb_native::DeferredSync::Outcome RocksDbKeyedStateBackend::RunDeferredSync(
    rocksdb::WriteBatch& rows, const std::vector<rocksdb::ColumnFamilyHandle*>& families,
    const std::optional<rocksdb::Options>& sst_options, const std::string& local_dir,
    CheckpointId checkpoint) const {
  ScopedRocksDbIgnore ignore;  // librocksdb's accesses while the task thread reads (TSan only)
  rocksdb_native::DeferredSync::Outcome outcome;
  if (sst_options) {
    outcome.rows =
        IngestRows(rows, families, *sst_options, "chk-" + std::to_string(checkpoint.value()));
  } else if (rows.Count() > 0) {
    if (rocksdb::Status s = db_->Write(NoWal(), &rows); !s.ok()) {
      outcome.rows = StorageFailure(s, kWritingCacheChanges);
    }
  }
  if (!outcome.rows.ok()) {
    outcome.snapshot = outcome.rows;
    return outcome;
  }
  std::error_code ec;
  fs::remove_all(local_dir, ec);  // a leftover of an earlier attempt at this checkpoint
  // The WAL is off: flush every memtable so that the checkpoint's SST files hold all state.
  rocksdb::FlushOptions flush;
  flush.wait = true;
  flush.allow_write_stall = true;
  rocksdb::Status s = families.empty() ? rocksdb::Status::OK() : db_->Flush(flush, families);
  rocksdb::Checkpoint* raw = nullptr;
  if (s.ok()) s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> created(raw);
  if (s.ok()) s = created->CreateCheckpoint(local_dir, /*log_size_for_flush=*/0);
  if (!s.ok()) {
    fs::remove_all(local_dir, ec);
    const std::string why = s.ToString();
    outcome.snapshot =
        s.IsNoSpace() || why.find("No space left") != std::string::npos
            ? IoError("cannot take the RocksDB snapshot of checkpoint " +
                      std::to_string(checkpoint.value()) + " in " + local_dir + " (" + why +
                      "): the disk of --state-dir is full; free space there")
            : IoError("cannot take the RocksDB snapshot of checkpoint " +
                      std::to_string(checkpoint.value()) + " in " + local_dir + " (" + why +
                      "): check the disk of --state-dir");
  }
  return outcome;
}

void RocksDbKeyedStateBackend::NotifyNativeCheckpointComplete(CheckpointId id) {
  uploaded_->Complete(id);
}

void RocksDbKeyedStateBackend::NotifyNativeCheckpointAborted(CheckpointId id) {
  uploaded_->Abort(id);
}

void RocksDbKeyedStateBackend::DropAllRows() {
  SyncCache(CacheSync::kDrop);  // every row is deleted
  ++epoch_;
  for (auto& [name, state] : states_) {
    rocksdb::WriteBatch batch;
    batch.DeleteRange(
        state->info.column_family, rocksdb_layout::KeyGroupBegin(0, prefix_bytes_),
        rocksdb_layout::KeyGroupBegin(key_context().max_parallelism(), prefix_bytes_));
    std::fill(state->info.counts.begin(), state->info.counts.end(), 0);
    Apply(batch, "clearing state '" + name + "'");
  }
}

}  // namespace keyflow
