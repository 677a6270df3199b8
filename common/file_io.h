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

// ---- paths that arrive from outside -------------------------------------------------------
// Checkpoint acks, `_metadata` files, savepoints, sink committables and client requests name
// paths; none of them may reach outside the directory it belongs to (issue 13).

// Lexical check of a path meant to be relative to some directory: InvalidArgument naming
// `what` and the path when it is empty, absolute, holds a NUL byte or a ".." component.
Status CheckRelativePath(std::string_view relative, std::string_view what);

// `base` + "/" + `relative` (lexically normal) if it stays inside `base`: CheckRelativePath,
// then, when `base` exists, the symbolic links of the existing part are resolved (realpath) and
// the result must still lie inside realpath(`base`) — a link that leads out, or a dangling link
// (a writer would follow it), is refused with InvalidArgument naming `what` and both paths.
Result<std::string> ResolveInside(const std::string& base, std::string_view relative,
                                  std::string_view what);

// `path` made absolute and lexically normal, with the symbolic links of its longest existing
// prefix resolved (realpath) and the missing rest appended: what containment checks compare.
// InvalidArgument when a missing component is a dangling symbolic link.
Result<std::string> CanonicalPath(const std::string& path);

// `path` made absolute (as given when the current directory is gone) and lexically normal,
// without a trailing '/' (but "/").
std::string AbsoluteNormalPath(const std::string& path);

// Whether `path` is `root` or lies under it (both canonical or at least lexically normal).
bool IsPathUnder(std::string_view path, std::string_view root);

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
