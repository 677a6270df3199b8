// RocksDbBackgroundEnv: the rocksdb::Env the backend's databases use. In every build but
// ThreadSanitizer's it is rocksdb::Env::Default() itself.
//
// Why a TSan build differs: librocksdb is not instrumented. Its background jobs (flushes and
// compactions) read blocks that the task thread decompressed into the block cache, and the
// hand-over goes through atomics TSan cannot see, so every such read is reported as a race
// (tests/state/rocksdb under scripts/test.sh --sanitize thread). Suppressions cannot name those
// reports: both stacks are memcpy inside libstdc++ or libsnappy called from uninstrumented code.
// Under TSan, the Env wraps each scheduled job in __tsan_ignore_thread_begin/end, so TSan ignores
// what RocksDB's own threads do while they run a job; our code on our threads stays checked.
// ScopedRocksDbIgnore does the same for a RocksDB call of ours on a snapshot thread (a native
// snapshot's deferred write and flush) while the task thread reads the same memtables.
#pragma once

#include <rocksdb/env.h>

namespace keyflow {

rocksdb::Env* RocksDbBackgroundEnv();

// For its scope, TSan ignores this thread's memory accesses (nothing in other builds). Only
// around calls into librocksdb, never around our own shared data.
class ScopedRocksDbIgnore {
 public:
  ScopedRocksDbIgnore();
  ~ScopedRocksDbIgnore();
  ScopedRocksDbIgnore(const ScopedRocksDbIgnore&) = delete;
  ScopedRocksDbIgnore& operator=(const ScopedRocksDbIgnore&) = delete;
};

}  // namespace keyflow
