#include "common/job_library/job_library_cache.h"

#include "common/job_library/job_library.h"
#include "common/logging/logging.h"

namespace keyflow {

JobLibraryCache::JobLibraryCache(std::string dir, FileSystem& fs)
    : blobs_(std::move(dir), ".so", "the worker's job library cache (--cache-dir)", fs) {}

Result<std::optional<std::string>> JobLibraryCache::Find(const JobLibraryRef& ref) {
  bool removed = false;
  KF_ASSIGN_OR_RETURN(std::optional<std::string> path, blobs_.Find(ref.sha256, &removed));
  if (removed) {
    KF_LOG_WARN(
        "{}: the cached file in {} did not match its SHA-256 and was removed; fetching it "
        "again",
        ref.Describe(), dir());
  }
  return path;
}

Result<std::string> JobLibraryCache::Store(const JobLibraryRef& ref, std::string_view bytes) {
  if (bytes.size() != ref.size_bytes) {
    return Corruption(ref.Describe() + ": " + std::to_string(bytes.size()) +
                      " bytes arrived, the job names " + std::to_string(ref.size_bytes));
  }
  auto path = blobs_.Put(ref.sha256, bytes);
  if (!path.ok()) return path.status().WithContext(ref.Describe());
  return path;
}

Result<std::string> ResolveJobLibraryPath(const JobLibraryRef& ref, const std::string& cache_dir) {
  if (ref.is_default()) return DefaultJobLibraryPath();
  JobLibraryCache cache(cache_dir);
  KF_ASSIGN_OR_RETURN(std::optional<std::string> path, cache.Find(ref));
  if (!path) {
    return FailedPrecondition(ref.Describe() + " is not in the job library cache " + cache.dir() +
                              " (or its copy there was damaged and removed): the worker fetches "
                              "it from the coordinator when the job is deployed again");
  }
  return *path;
}

}  // namespace keyflow
