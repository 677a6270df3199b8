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

}  // namespace

Result<WritableFile> WritableFile::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", path);
  return WritableFile(fd, path, 0);
}

Result<WritableFile> WritableFile::OpenForAppend(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot open for append", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Errno("cannot stat", path);
    ::close(fd);
    return s;
  }
  return WritableFile(fd, path, static_cast<uint64_t>(st.st_size));
}

WritableFile& WritableFile::operator=(WritableFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

WritableFile::~WritableFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status WritableFile::Append(std::string_view data) {
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
  }
  size_ += data.size();
  return Status::Ok();
}

Status WritableFile::Sync() {
  if (fd_ < 0) return FailedPrecondition("sync of closed file " + path_);
  if (::fdatasync(fd_) != 0) return Errno("cannot sync", path_);
  return Status::Ok();
}

Status WritableFile::Close() {
  if (fd_ < 0) return Status::Ok();
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) return Errno("cannot close", path_);
  return Status::Ok();
}

Result<RandomAccessFile> RandomAccessFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Errno("cannot stat", path);
    ::close(fd);
    return s;
  }
  return RandomAccessFile(fd, path, static_cast<uint64_t>(st.st_size));
}

RandomAccessFile& RandomAccessFile::operator=(RandomAccessFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

RandomAccessFile::~RandomAccessFile() {
  if (fd_ >= 0) ::close(fd_);
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

Status RandomAccessFile::ReadAt(uint64_t offset, size_t n, std::string* out) const {
  if (offset > size_ || n > size_ - offset) {
    return Corruption("file " + path_ + " is truncated: need bytes [" + std::to_string(offset) +
                      ", " + std::to_string(offset + n) + ") but it has " + std::to_string(size_) +
                      " bytes");
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

Result<std::string> ReadFileToString(const std::string& path) {
  ASSIGN_OR_RETURN(RandomAccessFile f, RandomAccessFile::Open(path));
  std::string out;
  RETURN_IF_ERROR(f.ReadAt(0, f.size(), &out));
  return out;
}

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open directory", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno("cannot sync directory", dir);
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string tmp = path + ".tmp";
  {
    ASSIGN_OR_RETURN(WritableFile f, WritableFile::Create(tmp));
    RETURN_IF_ERROR(f.Append(content));
    RETURN_IF_ERROR(f.Sync());
    RETURN_IF_ERROR(f.Close());
  }
  RETURN_IF_ERROR(RenameFile(tmp, path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDirectory(dir.empty() ? "." : dir);
}

Status CreateDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("cannot create directory " + dir + ": " + ec.message());
  return Status::Ok();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Result<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Errno("cannot list directory", dir);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", path);
  return Status::Ok();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return IoError("cannot remove " + path + ": " + ec.message());
  return Status::Ok();
}

Status RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError("cannot rename " + from + " to " + to, errno);
  }
  return Status::Ok();
}

TempDir::TempDir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ =
      std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  char* p = ::mkdtemp(templ.data());
  CHECK(p != nullptr) << "mkdtemp failed for " << templ;
  path_ = p;
}

TempDir::~TempDir() {
  RemoveAll(path_).IgnoreError();
}

}  // namespace keyflow
