// BlobStore: the coordinator's store of job libraries (Flink's BlobServer shipping job jars).
// `keyflow run --job-library L` sends L's bytes with SubmitJob; the coordinator verifies them
// against JobSpec::job_library and keeps them as `<checkpoint root>/blobs/<sha256>.so`, beside
// the job's checkpoints (the root is the job's --checkpoint-dir, else the coordinator's, which
// always has a default). The job's `_job` record holds the spec and so the ref: a restarted
// coordinator and every restart or rescale deployment find the library again by its hash.
// Workers fetch it with FetchJobLibrary (coordinator/README.md "Job libraries").
//
// Threading: the coordinator's thread. Reads and writes are synchronous (a library is at most
// kMaxJobLibraryBytes and read once per worker that lacks it).
#pragma once

#include <string>
#include <string_view>

#include "common/job_library/blob_directory.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow {

class BlobStore {
 public:
  // `<checkpoint_root>/blobs`.
  static std::string DirectoryFor(const std::string& checkpoint_root);

  explicit BlobStore(const std::string& checkpoint_root, FileSystem& fs = FileSystem::Default());
  const std::string& directory() const { return blobs_.dir(); }

  // Stores a submitted library. InvalidArgument for a ref that is not a shipped library (no
  // or a malformed hash), a size above kMaxJobLibraryBytes, or bytes whose count differs from
  // ref.size_bytes; Corruption for bytes that do not hash to ref.sha256. Empty `bytes` are
  // accepted when the store already holds ref.sha256 (a resubmission). Idempotent.
  Status Store(const JobLibraryRef& ref, std::string_view bytes);

  // The verified bytes of a stored library; NotFound (saying what to do) when it is not stored.
  Result<std::string> Read(const JobLibraryRef& ref);

 private:
  BlobDirectory blobs_;
};

}  // namespace keyflow
