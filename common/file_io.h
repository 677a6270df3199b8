// The POSIX FileSystem (FileSystem::Default(), file_system.h) and shorthands for it.
//
// file_io.cc is the only place keyflow calls the file system API (open/pwrite/fsync/rename...)
// directly. Code that must be testable against a faulty disk takes a FileSystem&; the free
// functions below are FileSystem::Default() for code that never needs another one (CLI tools,
// test setup). Every error names the path and says what failed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace keyflow {

// Bytes in memory as a RandomAccessSource (tests, in-memory snapshots).
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

// Shorthands for FileSystem::Default().
Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(const std::string& path);
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
