// BlobDirectory: a directory of files named by the SHA-256 of their bytes,
// `<dir>/<sha256><suffix>`. The one implementation behind the coordinator's blob store
// (coordinator/blob_store.h) and the worker's job library cache
// (common/job_library/job_library_cache.h).
//
// Guarantees: a file is only ever written whole (a temp file unique to this process and call,
// fsync, rename, directory fsync), so a crash leaves the old state or the new file, never a torn
// one; Put refuses bytes that do not hash to the name; Find and Read verify the bytes again, and
// a stored file that does not match its name is removed and reported absent (Find) or as
// Corruption (Read) — a mismatching file is never handed out. The directory is created with mode
// 0700 (only the process's user can read or replace what is stored).
//
// Threading: an object is used by one thread; several processes may share one directory (every
// writer uses its own temp file and rename is atomic).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"

namespace keyflow {

class BlobDirectory {
 public:
  // `what` names the directory's purpose in error messages ("the coordinator's blob store").
  BlobDirectory(std::string dir, std::string suffix, std::string what,
                FileSystem& fs = FileSystem::Default());

  const std::string& dir() const { return dir_; }
  std::string PathOf(std::string_view sha256) const;

  // Stores `bytes` as PathOf(sha256) and returns that path. InvalidArgument if `sha256` is not a
  // SHA-256 hex string, Corruption if `bytes` do not hash to it (nothing written). Idempotent: a
  // stored file with these bytes is kept as is; a mismatching one is replaced. IoError naming the
  // directory and what to do when it cannot be created or written.
  Result<std::string> Put(std::string_view sha256, std::string_view bytes);

  // The path of the stored file when it exists and its bytes hash to `sha256`; nullopt when it
  // is absent, or when it did not match (then it was removed, and *removed_mismatch is set).
  Result<std::optional<std::string>> Find(std::string_view sha256,
                                          bool* removed_mismatch = nullptr);

  // The stored bytes, verified: NotFound when absent, Corruption when the file does not match
  // its hash (it is removed).
  Result<std::string> Read(std::string_view sha256);

 private:
  Status CheckName(std::string_view sha256) const;
  Result<std::string> HashOfFile(const std::string& path);

  std::string dir_;
  std::string suffix_;
  std::string what_;
  FileSystem* fs_;
};

}  // namespace keyflow
