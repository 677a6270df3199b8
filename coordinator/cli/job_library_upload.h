// What `keyflow run --job-library L` sends with its submission: L's bytes and their ref
// (SHA-256, file name, size). The coordinator verifies and stores them (coordinator/blob_store.h);
// the hash is recorded in the JobSpec and so in every checkpoint's metadata. Validating the
// library itself (a shared object with the keyflow entry point and ABI) is the job library
// loader's part (common/job_library/).
#pragma once

#include <string>

#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow::cli {

struct JobLibraryUpload {
  JobLibraryRef ref;
  std::string bytes;
};

// Reads `path` (a regular file of at most kMaxJobLibraryBytes) and hashes it. Errors are one
// sentence naming --job-library and the path: missing, a directory, unreadable, too large.
Result<JobLibraryUpload> ReadJobLibraryForUpload(const std::string& path);

}  // namespace keyflow::cli
