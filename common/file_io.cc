#include "common/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace keyflow {
namespace {

Status Errno(std::string_view what, const std::string& path) {
  return ErrnoError(std::string(what) + " " + path, errno);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return FailedPrecondition("append to closed file " + path_);
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno("cannot write", path_);
      }
      p += n;
      left -= static_cast<size_t>(n);
      size_ += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  }
  Status Sync() override {
    if (fd_ < 0) return FailedPrecondition("sync of closed file " + path_);
    if (::fdatasync(fd_) != 0) return Errno("cannot sync", path_);
    return Status::Ok();
  }
  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return Errno("cannot close", path_);
    return Status::Ok();
  }
  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  uint64_t size_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status ReadAt(uint64_t offset, size_t n, std::string* out) const override {
    if (offset > size_ || n > size_ - offset) {
      return Corruption("file " + path_ + " is truncated: need bytes [" + std::to_string(offset) +
                        ", " + std::to_string(offset + n) + ") but it has " +
                        std::to_string(size_) + " bytes");
    }
    out->resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out->data() + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Errno("cannot read", path_);
      }
      if (r == 0) {
        return Corruption("file " + path_ + " is truncated: unexpected end at byte " +
                          std::to_string(offset + done));
      }
      done += static_cast<size_t>(r);
    }
    return Status::Ok();
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  uint64_t size_;
};

// Stateless: every call is a system call on the arguments.
class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        WriteMode mode) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    switch (mode) {
      case WriteMode::kTruncate:
        flags |= O_TRUNC;
        break;
      case WriteMode::kAppend:
        flags |= O_APPEND;
        break;
      case WriteMode::kCreateNew:
        flags |= O_EXCL;
        break;
    }
    struct stat before;
    const bool existed = mode != WriteMode::kCreateNew && ::lstat(path.c_str(), &before) == 0;
    int fd = ::open(path.c_str(), flags, static_cast<mode_t>(kPrivateFileMode));
    if (fd < 0) return Errno("cannot create", path);
    // The umask may only narrow what open(2) creates; a new file gets exactly 0600.
    if (!existed && ::fchmod(fd, static_cast<mode_t>(kPrivateFileMode)) != 0) {
      Status s = Errno("cannot set the mode of", path);
      ::close(fd);
      return s;
    }
    uint64_t size = 0;
    if (mode == WriteMode::kAppend) {
      struct stat st;
      if (::fstat(fd, &st) != 0) {
        Status s = Errno("cannot stat", path);
        ::close(fd);
        return s;
      }
      size = static_cast<uint64_t>(st.st_size);
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(fd, path, size));
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno("cannot open", path);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      Status s = Errno("cannot stat", path);
      ::close(fd);
      return s;
    }
    return std::unique_ptr<RandomAccessFile>(
        new PosixRandomAccessFile(fd, path, static_cast<uint64_t>(st.st_size)));
  }

  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return NotFound(path + " does not exist");
      return Errno("cannot stat", path);
    }
    FileInfo info;
    info.is_directory = S_ISDIR(st.st_mode);
    info.size = info.is_directory ? 0 : static_cast<uint64_t>(st.st_size);
    return info;
  }

  Result<std::vector<std::string>> ListDirectory(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Errno("cannot list directory", dir);
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
      errno = 0;
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return ErrnoError("cannot list directory " + dir, err);
    std::sort(names.begin(), names.end());
    return names;
  }

  Status CreateDirectories(const std::string& dir, uint32_t mode) override {
    for (size_t pos = 1; pos <= dir.size(); ++pos) {
      if (pos != dir.size() && dir[pos] != '/') continue;
      std::string part = dir.substr(0, pos);
      if (::mkdir(part.c_str(), static_cast<mode_t>(mode)) == 0) {
        // Exactly `mode`, whatever the umask (0750 output directories under umask 077), keeping
        // the setgid bit it inherited (chmod would clear it, and with it the group's
        // inheritance).
        struct stat made;
        const mode_t inherited =
            ::stat(part.c_str(), &made) == 0 ? (made.st_mode & S_ISGID) : mode_t{0};
        if (::chmod(part.c_str(), static_cast<mode_t>(mode) | inherited) != 0) {
          return Errno("cannot set the mode of directory", part);
        }
      } else if (errno != EEXIST) {
        return Errno("cannot create directory", part);
      }
    }
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return Errno("cannot access directory", dir);
    if (!S_ISDIR(st.st_mode)) {
      return InvalidArgument("'" + dir + "' exists and is not a directory");
    }
    return Status::Ok();
  }

  Status SetPermissions(const std::string& path, uint32_t mode) override {
    if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
      return Errno("cannot set the mode of", path);
    }
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError("cannot rename " + from + " to " + to, errno);
    }
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", path);
    return Status::Ok();
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return IoError("cannot remove " + path + ": " + ec.message());
    return Status::Ok();
  }

  Status SyncDirectory(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("cannot open directory", dir);
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return Errno("cannot sync directory", dir);
    return Status::Ok();
  }
};

}  // namespace

FileSystem& FileSystem::Default() {
  static PosixFileSystem* fs = new PosixFileSystem();  // never destroyed: usable at exit
  return *fs;
}

bool FileSystem::Exists(const std::string& path) {
  return Stat(path).ok();
}

bool FileSystem::IsDirectory(const std::string& path) {
  Result<FileInfo> info = Stat(path);
  return info.ok() && info->is_directory;
}

Result<std::string> FileSystem::ReadFileToString(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, NewRandomAccessFile(path));
  std::string out;
  KF_RETURN_IF_ERROR(f->ReadAt(0, f->size(), &out));
  return out;
}

Status FileSystem::WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string tmp = path + ".tmp";
  {
    KF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                        NewWritableFile(tmp, WriteMode::kTruncate));
    KF_RETURN_IF_ERROR(f->Append(content));
    KF_RETURN_IF_ERROR(f->Sync());
    KF_RETURN_IF_ERROR(f->Close());
  }
  KF_RETURN_IF_ERROR(Rename(tmp, path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDirectory(dir.empty() ? "." : dir);
}

Status StringSource::ReadAt(uint64_t offset, size_t n, std::string* out) const {
  if (offset > data_.size() || n > data_.size() - offset) {
    return Corruption(name_ + " is truncated: need bytes [" + std::to_string(offset) + ", " +
                      std::to_string(offset + n) + ") but it has " + std::to_string(data_.size()) +
                      " bytes");
  }
  out->assign(data_, offset, n);
  return Status::Ok();
}

Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(const std::string& path) {
  return FileSystem::Default().NewRandomAccessFile(path);
}
Result<std::string> ReadFileToString(const std::string& path) {
  return FileSystem::Default().ReadFileToString(path);
}
Status WriteFileAtomically(const std::string& path, std::string_view content) {
  return FileSystem::Default().WriteFileAtomically(path, content);
}
Status SyncDirectory(const std::string& dir) {
  return FileSystem::Default().SyncDirectory(dir);
}
Status CreateDirectories(const std::string& dir) {
  return FileSystem::Default().CreateDirectories(dir);
}
bool PathExists(const std::string& path) {
  return FileSystem::Default().Exists(path);
}
Result<std::vector<std::string>> ListDirectory(const std::string& dir) {
  return FileSystem::Default().ListDirectory(dir);
}
Status RemoveFile(const std::string& path) {
  return FileSystem::Default().RemoveFile(path);
}
Status RemoveAll(const std::string& path) {
  return FileSystem::Default().RemoveAll(path);
}
Status RenameFile(const std::string& from, const std::string& to) {
  return FileSystem::Default().Rename(from, to);
}

Status CheckRelativePath(std::string_view relative, std::string_view what) {
  auto refuse = [&](std::string_view why) {
    return InvalidArgument(std::string(what) + " path '" + std::string(relative.substr(0, 200)) +
                           "' " + std::string(why));
  };
  if (relative.empty()) return InvalidArgument(std::string(what) + " path is empty");
  if (relative.find('\0') != std::string_view::npos) return refuse("contains a NUL byte");
  if (relative.front() == '/') return refuse("is absolute; it must be relative to its directory");
  size_t start = 0;
  while (start <= relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string_view::npos) end = relative.size();
    if (relative.substr(start, end - start) == "..") {
      return refuse("has a '..' component; it must stay inside its directory");
    }
    start = end + 1;
  }
  return Status::Ok();
}

Result<std::string> CanonicalPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return InvalidArgument("cannot make '" + path + "' absolute: " + ec.message());
  p = p.lexically_normal();
  // Walk up to the longest prefix that exists, resolve it, append the missing rest.
  std::filesystem::path existing = p;
  std::vector<std::filesystem::path> missing;
  while (true) {
    std::string s = existing.string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    char* real = ::realpath(s.c_str(), nullptr);
    if (real != nullptr) {
      std::filesystem::path out(real);
      std::free(real);
      for (auto it = missing.rbegin(); it != missing.rend(); ++it) out /= *it;
      std::string r = out.lexically_normal().string();
      while (r.size() > 1 && r.back() == '/') r.pop_back();
      return r;
    }
    struct stat st;
    if (::lstat(s.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return InvalidArgument("'" + s + "' is a symbolic link that leads nowhere");
    }
    if (!existing.has_relative_path()) return p.string();  // not even "/" resolves
    if (!existing.filename().empty()) missing.push_back(existing.filename());
    existing = existing.parent_path();
  }
}

std::string AbsoluteNormalPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) p = path;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool IsPathUnder(std::string_view path, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (path.substr(0, root.size()) != root) return false;
  return path.size() == root.size() || root == "/" || path[root.size()] == '/';
}

Result<std::string> ResolveInside(const std::string& base, std::string_view relative,
                                  std::string_view what) {
  KF_RETURN_IF_ERROR(CheckRelativePath(relative, what));
  std::string joined =
      (std::filesystem::path(base) / std::filesystem::path(relative)).lexically_normal().string();
  while (joined.size() > 1 && joined.back() == '/') joined.pop_back();
  struct stat st;
  if (::stat(base.c_str(), &st) != 0) return joined;  // nothing exists yet to lead anywhere
  KF_ASSIGN_OR_RETURN(std::string real_base, CanonicalPath(base));
  Result<std::string> real = CanonicalPath(joined);
  if (!real.ok() || !IsPathUnder(*real, real_base)) {
    return InvalidArgument(std::string(what) + " path '" + std::string(relative.substr(0, 200)) +
                           "' leads outside " + base + " through a symbolic link" +
                           (real.ok() ? " (to " + *real + ")" : ": " + real.status().message()));
  }
  return joined;
}

TempDir::TempDir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ =
      std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  char* p = ::mkdtemp(templ.data());
  KF_CHECK(p != nullptr) << "mkdtemp failed for " << templ;
  path_ = p;
}

TempDir::~TempDir() {
  RemoveAll(path_).IgnoreError();
}

}  // namespace keyflow
