// RocksDbKeyedStateBackend's write-back cache of point state (value, reducing and aggregating
// rows cached present or absent; dirty rows written in one batch). The class is declared in
// rocksdb_keyed_state_backend.h; this file holds the cache's part of it.
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

using rocksdb_backend_internal::kWritingCacheChanges;
using rocksdb_backend_internal::NoWal;

namespace {

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

}  // namespace keyflow
