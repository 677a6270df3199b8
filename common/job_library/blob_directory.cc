#include "common/job_library/blob_directory.h"

#include <unistd.h>

#include <atomic>
#include <memory>

#include "common/security/sha256.h"

namespace keyflow {
namespace {

constexpr size_t kHashChunkBytes = size_t{1} << 20;

// Unique per process and call: processes sharing the directory never write the same temp file.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  return ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

}  // namespace

BlobDirectory::BlobDirectory(std::string dir, std::string suffix, std::string what, FileSystem& fs)
    : dir_(std::move(dir)), suffix_(std::move(suffix)), what_(std::move(what)), fs_(&fs) {}

std::string BlobDirectory::PathOf(std::string_view sha256) const {
  return dir_ + "/" + std::string(sha256) + suffix_;
}

Status BlobDirectory::CheckName(std::string_view sha256) const {
  if (!IsSha256Hex(sha256)) {
    return InvalidArgument("'" + std::string(sha256.substr(0, 80)) +
                           "' is not a SHA-256 hash (64 lowercase hex digits)");
  }
  return Status::Ok();
}

Result<std::string> BlobDirectory::HashOfFile(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, fs_->NewRandomAccessFile(path));
  Sha256 h;
  std::string chunk;
  for (uint64_t off = 0; off < f->size(); off += chunk.size()) {
    KF_RETURN_IF_ERROR(
        f->ReadAt(off, std::min<uint64_t>(kHashChunkBytes, f->size() - off), &chunk));
    h.Update(chunk);
  }
  return h.FinishHex();
}

Result<std::string> BlobDirectory::Put(std::string_view sha256, std::string_view bytes) {
  KF_RETURN_IF_ERROR(CheckName(sha256));
  std::string actual = Sha256Hex(bytes);
  if (actual != sha256) {
    return Corruption("the " + std::to_string(bytes.size()) + " bytes received have SHA-256 " +
                      actual + ", not " + std::string(sha256) +
                      " as announced: the transfer was damaged or the file changed while it was "
                      "read");
  }
  bool removed = false;
  KF_ASSIGN_OR_RETURN(std::optional<std::string> existing, Find(sha256, &removed));
  if (existing) return *existing;
  std::string path = PathOf(sha256);
  std::string tmp = path + TempSuffix();
  auto fail = [&](const Status& s) {
    fs_->RemoveFile(tmp).IgnoreError();
    return IoError("cannot store " + std::string(sha256) + suffix_ + " in " + what_ + " " + dir_ +
                   ": " + s.message() +
                   " (make the directory writable by this process's user, or choose another one)");
  };
  if (Status s = fs_->CreateDirectories(dir_, 0700); !s.ok()) return fail(s);
  {
    auto f = fs_->NewWritableFile(tmp, WriteMode::kCreateNew);
    if (!f.ok()) return fail(f.status());
    if (Status s = (*f)->Append(bytes); !s.ok()) return fail(s);
    if (Status s = (*f)->Sync(); !s.ok()) return fail(s);
    if (Status s = (*f)->Close(); !s.ok()) return fail(s);
  }
  if (Status s = fs_->Rename(tmp, path); !s.ok()) return fail(s);
  if (Status s = fs_->SyncDirectory(dir_); !s.ok()) return fail(s);
  return path;
}

Result<std::optional<std::string>> BlobDirectory::Find(std::string_view sha256,
                                                       bool* removed_mismatch) {
  KF_RETURN_IF_ERROR(CheckName(sha256));
  if (removed_mismatch != nullptr) *removed_mismatch = false;
  std::string path = PathOf(sha256);
  if (!fs_->Exists(path)) return std::optional<std::string>();
  auto actual = HashOfFile(path);
  if (actual.ok() && *actual == sha256) return std::optional<std::string>(path);
  // Unreadable or not these bytes (a torn copy from another tool, bit rot, tampering): never
  // hand it out; remove it so that the next Put writes a good copy.
  KF_RETURN_IF_ERROR_CTX(fs_->RemoveFile(path),
                         "cannot remove the mismatching file " + path + " from " + what_);
  if (removed_mismatch != nullptr) *removed_mismatch = true;
  return std::optional<std::string>();
}

Result<std::string> BlobDirectory::Read(std::string_view sha256) {
  KF_RETURN_IF_ERROR(CheckName(sha256));
  std::string path = PathOf(sha256);
  if (!fs_->Exists(path)) {
    return NotFound(what_ + " " + dir_ + " has no " + std::string(sha256) + suffix_);
  }
  KF_ASSIGN_OR_RETURN(std::string bytes, fs_->ReadFileToString(path));
  if (Sha256Hex(bytes) != sha256) {
    fs_->RemoveFile(path).IgnoreError();
    return Corruption(path + " in " + what_ +
                      " does not hash to its name (damaged on disk); it "
                      "was removed: submit the job library again");
  }
  return bytes;
}

}  // namespace keyflow
