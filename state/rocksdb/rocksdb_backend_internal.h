// What the translation units of RocksDbKeyedStateBackend share (rocksdb_keyed_state_backend.cc:
// opening, options, state registration, iteration; rocksdb_write_cache.cc: the write-back cache
// of point state; rocksdb_backend_snapshots.cc: key-group snapshots, restore, native
// checkpoints). Not installed; included only by those three files.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <memory>
#include <string>
#include <string_view>

#include "state/rocksdb/rocksdb_key_layout.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"

namespace keyflow {
namespace rocksdb_backend_internal {

// Writes without RocksDB's write-ahead log: checkpoints are the durability.
inline rocksdb::WriteOptions NoWal() {
  rocksdb::WriteOptions w;
  w.disableWAL = true;
  return w;
}

// The `what` of a failed write of the cache's dirty rows (StorageFailure).
inline constexpr char kWritingCacheChanges[] = "writing the state cache's changes";

}  // namespace rocksdb_backend_internal

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

}  // namespace keyflow
