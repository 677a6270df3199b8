// FileSystem: the one seam between keyflow and files (LevelDB's Env, Flink's FileSystem).
//
// Every component that writes or reads files durably — the file sink (worker/sinks), the
// checkpoint storage (checkpoint/) and the keyed-state snapshot writer (worker/task) — takes a
// FileSystem& (default: FileSystem::Default(), the POSIX implementation in file_io.cc), so a
// test can inject common/testing/fault_injection_file_system.h instead: it loses what was not
// fsynced on a simulated crash, fails writes or syncs with ENOSPC/EIO, and counts syncs.
//
// Contract of every implementation:
//   * errors are Status values naming the path and what failed (IoError from errno, NotFound,
//     Corruption for reads past the end);
//   * WritableFile::Sync makes the file's data durable; a rename or a new directory entry is
//     durable only after SyncDirectory of its parent;
//   * implementations are thread-safe: any thread may call any method; one WritableFile is used
//     by one thread at a time (it may be handed to another thread);
//   * what keyflow writes is private to its user, whatever the umask (issue 13): a new file has
//     mode kPrivateFileMode (0600) and a new directory the mode given (default
//     kPrivateDirectoryMode, 0700); SetPermissions widens or narrows one explicitly (the file
//     sink's output follows the process's FileAccess, common/process/file_access.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace keyflow {

// An open file being written: append-only.
class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes without syncing; errors here are ignored
  virtual Status Append(std::string_view data) = 0;
  virtual Status Sync() = 0;   // data durable (fdatasync)
  virtual Status Close() = 0;  // idempotent; Append/Sync after Close fail
  virtual uint64_t size() const = 0;
  virtual const std::string& path() const = 0;
};

// Something that can be read at any offset: a file, or bytes in memory (tests, in-memory
// storage). ReadAt reads exactly n bytes into *out (replacing its content) or fails; reading
// past the end is Corruption ("truncated"), since callers only read ranges a valid file holds.
class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;
  virtual Status ReadAt(uint64_t offset, size_t n, std::string* out) const = 0;
  virtual uint64_t size() const = 0;
  virtual const std::string& name() const = 0;  // path or description, for messages
};

// An open file for positional reads; size() is its size when opened.
class RandomAccessFile : public RandomAccessSource {};

inline constexpr uint32_t kPrivateFileMode = 0600;       // state, checkpoint, metadata, blobs
inline constexpr uint32_t kPrivateDirectoryMode = 0700;  // checkpoint, blob and cache directories

enum class WriteMode {
  kTruncate,   // create or truncate
  kAppend,     // create if absent, append otherwise
  kCreateNew,  // create; AlreadyExists-like IoError (EEXIST) if it exists
};

struct FileInfo {
  bool is_directory = false;
  uint64_t size = 0;  // files only
};

class FileSystem {
 public:
  // The POSIX file system: stateless, lives for the whole process.
  static FileSystem& Default();

  virtual ~FileSystem() = default;

  // A file created by this call has mode kPrivateFileMode (not subject to the umask); one that
  // existed keeps its mode.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                WriteMode mode) = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  // NotFound when `path` does not exist.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  // Names (not paths) of the entries of `dir`, sorted.
  virtual Result<std::vector<std::string>> ListDirectory(const std::string& dir) = 0;
  // Creates `dir` and its missing parents with exactly `mode` (chmod after mkdir: the umask
  // does not narrow it), plus the setgid bit a new directory inherits from a setgid parent (so
  // that what is created in it keeps the group the operator chose, start-cluster.sh --group);
  // directories that existed keep theirs. OK if it exists as a directory, InvalidArgument if it
  // exists and is not one.
  virtual Status CreateDirectories(const std::string& dir, uint32_t mode) = 0;
  // chmod(2): sets the permission bits of `path` to `mode`.
  virtual Status SetPermissions(const std::string& path, uint32_t mode) = 0;
  // Atomically replaces `to` if it exists (rename(2)).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;  // OK if absent
  virtual Status RemoveAll(const std::string& path) = 0;   // recursive; OK if absent
  // Makes the entries of `dir` (creations, renames, removals) durable.
  virtual Status SyncDirectory(const std::string& dir) = 0;

  // Conveniences built on the operations above (one implementation for every file system).
  bool Exists(const std::string& path);
  bool IsDirectory(const std::string& path);
  Status CreateDirectories(const std::string& dir) {
    return CreateDirectories(dir, kPrivateDirectoryMode);
  }
  Result<std::string> ReadFileToString(const std::string& path);
  // Temp file `path`.tmp + Sync + rename + SyncDirectory: readers see the old content or the new
  // content, never a torn file (checkpoint metadata, job records, pid files).
  Status WriteFileAtomically(const std::string& path, std::string_view content);
};

}  // namespace keyflow
