// The keyed state backends the contract tests run against (one parameterised suite for both):
//
//   class MyTest : public ::testing::TestWithParam<BackendKind> {};
//   std::unique_ptr<KeyedStateBackend> backend = MakeBackend(GetParam(), context);
//   INSTANTIATE_TEST_SUITE_P(Backends, MyTest, ::testing::ValuesIn(kAllBackends), BackendName);
//
// A RocksDB backend gets a fresh directory under the test's temporary directory, which it
// deletes when destroyed. RocksDB runs three ways: with its write-back cache of point state
// (8 MiB), with a tiny one (a few rows: it is written and emptied all the time) and without.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "state/heap/heap_keyed_state_backend.h"
#include "state/rocksdb/rocksdb_keyed_state_backend.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::testing_util {

enum class BackendKind { kHeap, kRocksDb, kRocksDbTinyCache, kRocksDbNoCache };
inline constexpr BackendKind kAllBackends[] = {BackendKind::kHeap, BackendKind::kRocksDb,
                                               BackendKind::kRocksDbTinyCache,
                                               BackendKind::kRocksDbNoCache};

// Bytes of the tiny write-back cache: about five rows of a short key and an int64.
inline constexpr int64_t kTinyWriteCacheBytes = 600;

inline std::string BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kHeap:
      return "heap";
    case BackendKind::kRocksDb:
      return "rocksdb";
    case BackendKind::kRocksDbTinyCache:
      return "rocksdb_tiny_cache";
    case BackendKind::kRocksDbNoCache:
      return "rocksdb_no_cache";
  }
  return "?";
}

inline std::string BackendName(const ::testing::TestParamInfo<BackendKind>& info) {
  return BackendKindName(info.param);
}

// A directory no other backend of this process or another test process uses.
inline std::string FreshStateDir() {
  static std::atomic<int> next{0};
  return ::testing::TempDir() + "keyflow-rocksdb-" + std::to_string(::getpid()) + "-" +
         std::to_string(next.fetch_add(1));
}

// A RocksDB backend with `options` in a fresh directory; nullptr (and a test failure) if it
// cannot be opened.
inline std::unique_ptr<RocksDbKeyedStateBackend> OpenRocksDbInFreshDir(
    KeyContext& context, RocksDbStateOptions options = {}) {
  options.dir = FreshStateDir();
  auto backend = RocksDbKeyedStateBackend::Open(context, options);
  EXPECT_OK(backend);
  return backend.ok() ? std::move(*backend) : nullptr;
}

// A RocksDB backend with 8 MiB of block cache and memtables and a write-back cache of
// `write_cache_bytes`.
inline std::unique_ptr<RocksDbKeyedStateBackend> OpenSmallRocksDb(KeyContext& context,
                                                                  int64_t write_cache_bytes) {
  RocksDbStateOptions options;
  options.block_cache_bytes = 8 << 20;
  options.memtable_bytes = 8 << 20;
  options.write_cache_bytes = write_cache_bytes;
  return OpenRocksDbInFreshDir(context, options);
}

inline std::unique_ptr<KeyedStateBackend> MakeBackend(BackendKind kind, KeyContext& context) {
  if (kind == BackendKind::kHeap) return std::make_unique<HeapKeyedStateBackend>(context);
  return OpenSmallRocksDb(context, kind == BackendKind::kRocksDbTinyCache ? kTinyWriteCacheBytes
                                   : kind == BackendKind::kRocksDbNoCache ? 0
                                                                          : int64_t{8} << 20);
}

// The canonical bytes of key group `g` of `b`.
inline std::string Serialize(const KeyedStateBackend& b, KeyGroupId g) {
  std::string out;
  BinaryWriter w(&out);
  b.SerializeKeyGroup(g, w);
  return out;
}

}  // namespace keyflow::testing_util
