// RocksDbInfoLogger: RocksDB's info log (its LOG file) sent to the worker's log instead, warnings
// and errors only, each line with the database directory.
//
// Why not the LOG file: it is written on the --state-dir, and when that disk is full RocksDB 7.x's
// WritableFileWriter asserts (and Debian's librocksdb keeps its assertions) on the next line
// after a failed append — the flush failure it logs would abort the worker instead of failing
// the task with "the disk is full" (tests/integration/state_faults_test.cc).
//
// Threading: RocksDB calls it from any of its threads; spdlog is thread-safe.
#pragma once

#include <rocksdb/env.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/logging/logging.h"

namespace keyflow {

class RocksDbInfoLogger final : public rocksdb::Logger {
 public:
  explicit RocksDbInfoLogger(std::string dir)
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), dir_(std::move(dir)) {}

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel() || level == rocksdb::InfoLogLevel::HEADER_LEVEL) return;
    char line[1024];
    const int n = std::vsnprintf(line, sizeof(line), format, ap);
    size_t len = n < 0 ? 0 : std::min(static_cast<size_t>(n), sizeof(line) - 1);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == ' ')) --len;
    line[len] = '\0';
    // RocksDB 7.x's Checkpoint::CreateCheckpoint disables file deletions twice (once itself,
    // once in GetLiveFilesStorageInfo) and warns about it at every native snapshot: benign.
    if (std::strstr(line, "File Deletions Disabled, but already disabled") != nullptr ||
        std::strstr(line, "File Deletions Enable, but not really enabled") != nullptr) {
      return;
    }
    try {  // nothing may propagate into RocksDB
      if (level >= rocksdb::InfoLogLevel::ERROR_LEVEL) {
        KF_LOG_ERROR("rocksdb dir={} {}", dir_, line);
      } else {
        KF_LOG_WARN("rocksdb dir={} {}", dir_, line);
      }
    } catch (...) {
    }
  }

 private:
  std::string dir_;
};

}  // namespace keyflow
