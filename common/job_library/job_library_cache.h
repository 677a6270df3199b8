// JobLibraryCache: a worker's local copies of the job libraries the coordinator ships (Flink's
// BlobCache), `<cache dir>/<sha256>.so`, written atomically (temp file, fsync, rename) in a
// directory of mode 0700. Several workers on one host may share a cache directory.
//
// A deployment naming a shipped library (JobSpec::job_library not default) that is not cached
// makes the worker fetch it from the coordinator (FetchJobLibrary -> JobLibraryBlob, see
// worker/README.md "Job libraries"); the task executor then loads the path that
// ResolveJobLibraryPath returns, which verifies the file's SHA-256 again right before the load:
// a cached file whose bytes do not match its ref is removed and never loaded.
//
// Threading: the worker's control thread (WorkerProcess) and the task executor during deploy;
// no shared state beyond the directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/job_library/blob_directory.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow {

// keyflow-worker --cache-dir default, relative to the worker's working directory (next to the
// coordinator's default ./.keyflow/checkpoints when both run from one directory).
inline constexpr char kDefaultJobLibraryCacheDir[] = ".keyflow/job-library-cache";

class JobLibraryCache {
 public:
  explicit JobLibraryCache(std::string dir, FileSystem& fs = FileSystem::Default());
  const std::string& dir() const { return blobs_.dir(); }

  // The cached file of `ref` when present and its bytes hash to ref.sha256; nullopt when absent
  // or when it did not match (it was removed and is logged: fetch it again). Precondition:
  // !ref.is_default().
  Result<std::optional<std::string>> Find(const JobLibraryRef& ref);

  // Verifies `bytes` (size and SHA-256 against `ref`) and stores them; returns the path.
  // Corruption for bytes that do not match, IoError (naming --cache-dir) when the directory
  // cannot be written.
  Result<std::string> Store(const JobLibraryRef& ref, std::string_view bytes);

 private:
  BlobDirectory blobs_;
};

// The local file the task executor loads for `ref`. A shipped library: its cached file in
// `cache_dir`, its SHA-256 verified now (a mismatching file is removed, never returned);
// FailedPrecondition when it is not cached (WorkerProcess fetches it before it deploys). The
// default ref: DefaultJobLibraryPath(), the installation's built-in library (job_library.h).
Result<std::string> ResolveJobLibraryPath(const JobLibraryRef& ref, const std::string& cache_dir);

}  // namespace keyflow
