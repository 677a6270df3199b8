// RocksDbStateOptions: how a RocksDB keyed state backend is opened (rocksdb_keyed_state_backend.h):
// its directory and its memory budget. Kept apart so that the operator's configuration does not
// pull in the backend.
#pragma once

#include <cstdint>
#include <string>

namespace keyflow {

class FileSystem;

struct RocksDbStateOptions {
  // The database directory: the subtask's own (<state dir>/<job>/attempt-<n>/subtask-<i>).
  // Created with its parents; a leftover of a killed process is deleted first.
  std::string dir;
  // The shared LRU block cache (uncompressed data blocks) and the memtable budget over all
  // column families (a WriteBufferManager): together they bound the backend's memory.
  int64_t block_cache_bytes = int64_t{64} << 20;
  int64_t memtable_bytes = int64_t{64} << 20;
  // The write-back cache of point state (value, reducing, aggregating rows) in front of RocksDB
  // (rocksdb_keyed_state_backend.h): bytes of cached keys and values, by default as much as the
  // memtables. Full: its changes are written in one batch and it is emptied. 0 disables it.
  // While a native snapshot's deferred writes run it may grow to twice this (the write gate).
  int64_t write_cache_bytes = int64_t{64} << 20;
  // The write-back cache's dirty rows, written when the cache is full or by a native snapshot's
  // deferred writes: at least this many go into RocksDB as SST files (one per column family,
  // built with SstFileWriter and ingested), fewer through the memtables. An SST file costs no
  // memtable insert and no flush of those rows; a small one would only add work to compaction.
  int64_t ingest_rows_at_least = 4096;
  // Where native snapshots are written to and restored from (nullptr: FileSystem::Default());
  // tests inject faults through it. The database itself uses RocksDB's own file access.
  FileSystem* file_system = nullptr;
};

}  // namespace keyflow
