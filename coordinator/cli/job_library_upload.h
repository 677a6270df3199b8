// What `keyflow run --job-library L` sends with its submission: L's bytes and their ref
// (SHA-256, file name, size). The coordinator verifies and stores them (coordinator/blob_store.h);
// the hash is recorded in the JobSpec and so in every checkpoint's metadata. Validating the
// library itself (a shared object with the keyflow entry point and ABI) is the job library
// loader's part (common/job_library/).
#pragma once

#include <memory>
#include <string>

#include "common/job_library/job_library.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow::cli {

struct JobLibraryUpload {
  JobLibraryRef ref;
  std::string bytes;
};

// The help text of --job-library (keyflow run, keyflow jobs).
inline constexpr char kJobLibraryHelp[] =
    "job library (lib<name>.so built with keyflow_add_job) the job comes from (default: the "
    "built-in jobs, lib/keyflow/jobs/libkeyflow-builtin-jobs.so of this installation)";

// --job-library L loaded, or the installation's built-in library when L is empty.
Result<std::shared_ptr<const JobLibrary>> LoadJobLibraryFlag(const std::string& path);

// Reads `path` (a regular file of at most kMaxJobLibraryBytes) and hashes it. Errors are one
// sentence naming --job-library and the path: missing, a directory, unreadable, too large.
Result<JobLibraryUpload> ReadJobLibraryForUpload(const std::string& path);

}  // namespace keyflow::cli
