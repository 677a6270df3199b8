// Files with RAII and Status: the only place keyflow touches the file system API directly.
//
// WritableFile     — append-only, buffered by the caller, Sync() = fdatasync.
// RandomAccessFile — positional reads (pread), for reading only the key groups one needs.
// WriteFileAtomically — temp file + fsync + rename + fsync(dir): readers see the old content or
//                       the new content, never a torn file (checkpoint metadata, pid files).
// Every error names the path and says what failed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace keyflow {

class WritableFile {
 public:
  // Creates (or truncates) `path`.
  static Result<WritableFile> Create(const std::string& path);
  // Opens `path` for appending, creating it if absent.
  static Result<WritableFile> OpenForAppend(const std::string& path);
  WritableFile(WritableFile&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)), size_(o.size_) {
    o.fd_ = -1;
  }
  WritableFile& operator=(WritableFile&& o) noexcept;
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;
  ~WritableFile();  // closes without syncing; errors at this point are ignored

  Status Append(std::string_view data);
  Status Sync();
  Status Close();  // idempotent
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  WritableFile(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_;
  std::string path_;
  uint64_t size_;
};

// Something that can be read at any offset: a file, or bytes in memory (tests, in-memory
// storage). ReadAt reads exactly n bytes or fails (Corruption when the range is past the end).
class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;
  virtual Status ReadAt(uint64_t offset, size_t n, std::string* out) const = 0;
  virtual uint64_t size() const = 0;
  virtual const std::string& name() const = 0;  // path or description, for messages
};

class StringSource final : public RandomAccessSource {
 public:
  StringSource(std::string data, std::string name)
      : data_(std::move(data)), name_(std::move(name)) {}
  Status ReadAt(uint64_t offset, size_t n, std::string* out) const override;
  uint64_t size() const override { return data_.size(); }
  const std::string& name() const override { return name_; }

 private:
  std::string data_;
  std::string name_;
};

class RandomAccessFile final : public RandomAccessSource {
 public:
  static Result<RandomAccessFile> Open(const std::string& path);
  RandomAccessFile(RandomAccessFile&& o) noexcept
      : fd_(o.fd_), path_(std::move(o.path_)), size_(o.size_) {
    o.fd_ = -1;
  }
  RandomAccessFile& operator=(RandomAccessFile&& o) noexcept;
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;
  ~RandomAccessFile();

  // Reads exactly `n` bytes at `offset` into *out (replacing its content). Reading past the end
  // is a Corruption error ("truncated"), since callers only read ranges a valid file contains.
  Status ReadAt(uint64_t offset, size_t n, std::string* out) const override;
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  const std::string& path() const { return path_; }

 private:
  RandomAccessFile(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_;
  std::string path_;
  uint64_t size_;
};

Result<std::string> ReadFileToString(const std::string& path);
Status WriteFileAtomically(const std::string& path, std::string_view content);
Status SyncDirectory(const std::string& dir);
// Creates `dir` and its parents; OK if it exists.
Status CreateDirectories(const std::string& dir);
bool PathExists(const std::string& path);
// Names (not paths) of the entries of `dir`, sorted.
Result<std::vector<std::string>> ListDirectory(const std::string& dir);
Status RemoveFile(const std::string& path);  // OK if absent
Status RemoveAll(const std::string& path);   // recursive; OK if absent
Status RenameFile(const std::string& from, const std::string& to);

// A fresh directory under $TMPDIR (or /tmp) removed when the object dies; for tests and tools.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "keyflow");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace keyflow
