// FaultInjectionFileSystem: a FileSystem for tests that wraps a real one (LevelDB's
// FaultInjectionTestEnv). Files are real files; what it adds:
//   * SimulateCrash(): what a power loss would leave — every file written through it keeps only
//     the bytes of its last Sync(); files whose directory entry was never made durable
//     (SyncDirectory of the parent after creation) are removed; renames not followed by
//     SyncDirectory of the target's directory are undone. Files open at the crash fail every
//     later call.
//   * faults: a full disk after N more bytes (Append writes what fits, then fails with ENOSPC
//     or the given errno), and failing Sync/SyncDirectory or writes on paths containing a
//     pattern (EIO by default).
//   * counters: file syncs and directory syncs, and the threads that made them.
// Threading: every method is thread-safe.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/file_system.h"
#include "common/mutex.h"

namespace keyflow {

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* base = &FileSystem::Default()) : base_(base) {}

  // ---- faults (each stays until ClearFaults) ------------------------------------------------
  // After `bytes` more bytes were appended (to any file), appends fail with `err`.
  void FailWritesAfter(uint64_t bytes, int err = ENOSPC);
  // Appends to paths containing `pattern` fail with `err`.
  void FailWritesTo(std::string pattern, int err = EIO);
  // Sync() of files and SyncDirectory() of directories whose path contains `pattern` fail.
  void FailSyncs(std::string pattern, int err = EIO);
  void ClearFaults();

  // ---- crash ---------------------------------------------------------------------------------
  // Drops everything not durable (see the file comment) and forgets what it tracked.
  Status SimulateCrash();

  // ---- counters ------------------------------------------------------------------------------
  int64_t file_syncs() const;
  int64_t directory_syncs() const;
  // Threads that called Sync() or SyncDirectory(), in call order.
  std::vector<std::thread::id> sync_threads() const;

  // ---- FileSystem ----------------------------------------------------------------------------
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        WriteMode mode) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  Result<FileInfo> Stat(const std::string& path) override { return base_->Stat(path); }
  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override {
    return base_->ListDirectory(dir);
  }
  Status CreateDirectories(const std::string& dir, uint32_t mode) override {
    return base_->CreateDirectories(dir, mode);
  }
  Status SetPermissions(const std::string& path, uint32_t mode) override {
    return base_->SetPermissions(path, mode);
  }
  Status Rename(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Status SyncDirectory(const std::string& dir) override;

 private:
  class File;
  friend class File;
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
    bool entry_durable = false;
  };
  struct PendingRename {
    std::string from, to;
  };
  // Called by File under no lock.
  Status BeforeAppend(const std::string& path, uint64_t epoch, size_t n, size_t* allowed);
  void AfterAppend(const std::string& path, uint64_t n);
  Status OnSync(const std::string& path, uint64_t epoch);
  Status CheckEpoch(const std::string& path, uint64_t epoch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* base_;
  mutable Mutex mu_;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // incremented by SimulateCrash
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingRename> renames_ ABSL_GUARDED_BY(mu_);
  std::optional<uint64_t> write_budget_ ABSL_GUARDED_BY(mu_);
  int budget_errno_ ABSL_GUARDED_BY(mu_) = ENOSPC;
  std::vector<std::pair<std::string, int>> write_faults_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, int>> sync_faults_ ABSL_GUARDED_BY(mu_);
  int64_t file_syncs_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t directory_syncs_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread::id> sync_threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace keyflow
