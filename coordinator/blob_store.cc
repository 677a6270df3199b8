#include "coordinator/blob_store.h"

#include <filesystem>

#include "common/protocol/control_messages.h"
#include "common/security/sha256.h"

namespace keyflow {

std::string BlobStore::DirectoryFor(const std::string& checkpoint_root) {
  return (std::filesystem::absolute(checkpoint_root).lexically_normal() / "blobs").string();
}

BlobStore::BlobStore(const std::string& checkpoint_root, FileSystem& fs)
    : blobs_(DirectoryFor(checkpoint_root), ".so", "the coordinator's blob store", fs) {}

Status BlobStore::Store(const JobLibraryRef& ref, std::string_view bytes) {
  if (ref.is_default()) {
    return InvalidArgument("the submission carries job library bytes but names no job library");
  }
  if (!IsSha256Hex(ref.sha256)) {
    return InvalidArgument("the job library's hash '" + ref.sha256.substr(0, 80) +
                           "' is not a SHA-256 hash (64 lowercase hex digits)");
  }
  if (ref.size_bytes > kMaxJobLibraryBytes) {
    return InvalidArgument(ref.Describe() + " has " + std::to_string(ref.size_bytes) +
                           " bytes, more than the limit of " + std::to_string(kMaxJobLibraryBytes) +
                           " bytes: strip its debug symbols or link less into it");
  }
  if (bytes.empty()) {
    KF_ASSIGN_OR_RETURN(std::optional<std::string> stored, blobs_.Find(ref.sha256));
    if (stored) return Status::Ok();
    return InvalidArgument(ref.Describe() +
                           " was sent without its bytes and the blob store does not hold it: "
                           "submit it with keyflow run --job-library FILE");
  }
  if (bytes.size() != ref.size_bytes) {
    return InvalidArgument(ref.Describe() + " was announced with " +
                           std::to_string(ref.size_bytes) + " bytes but " +
                           std::to_string(bytes.size()) + " arrived: submit again");
  }
  Status put = blobs_.Put(ref.sha256, bytes).status();
  if (put.code() == StatusCode::kCorruption) {
    return Corruption(ref.Describe() + ": " + put.message() + "; submit it again");
  }
  KF_RETURN_IF_ERROR_CTX(put, ref.Describe());
  return Status::Ok();
}

Result<std::string> BlobStore::Read(const JobLibraryRef& ref) {
  auto bytes = blobs_.Read(ref.sha256);
  if (bytes.status().code() == StatusCode::kNotFound) {
    return NotFound(ref.Describe() + " is not in the coordinator's blob store " + directory() +
                    " (deleted?): submit the job again with keyflow run --job-library FILE");
  }
  return bytes;
}

}  // namespace keyflow
