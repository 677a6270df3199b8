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
#include "state/rocksdb/rocksdb_backend_internal.h"
#include "state/rocksdb/rocksdb_info_logger.h"
#include "state/rocksdb/rocksdb_key_layout.h"
#include "state/rocksdb/rocksdb_keyed_state.h"
#include "state/rocksdb/rocksdb_native_snapshot.h"
#include "state/rocksdb/rocksdb_tsan_env.h"
#include "state/rocksdb/rocksdb_value_format.h"

namespace keyflow {

namespace {

namespace fs = std::filesystem;
using rocksdb_backend_internal::NoWal;

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
  if (it == states_.end()) return ApplyToUnknownStateError(state_name);
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

}  // namespace keyflow
