#include "coordinator/cli/job_library_upload.h"

#include <filesystem>

#include "common/file_system.h"
#include "common/protocol/control_messages.h"
#include "common/security/sha256.h"

namespace keyflow::cli {

Result<JobLibraryUpload> ReadJobLibraryForUpload(const std::string& path) {
  FileSystem& fs = FileSystem::Default();
  auto info = fs.Stat(path);
  if (!info.ok()) {
    return InvalidArgument("--job-library " + path + " does not exist (" + info.status().message() +
                           "): give the path of a job library built "
                           "with keyflow_add_job");
  }
  if (info->is_directory) {
    return InvalidArgument("--job-library " + path +
                           " is a directory: give the library file, e.g. build/libmyjob.so");
  }
  if (info->size > kMaxJobLibraryBytes) {
    return InvalidArgument("--job-library " + path + " has " + std::to_string(info->size) +
                           " bytes, more than the limit of " +
                           std::to_string(kMaxJobLibraryBytes >> 20) +
                           " MiB: strip its debug symbols (strip --strip-debug) or link less "
                           "into it");
  }
  auto bytes = fs.ReadFileToString(path);
  if (!bytes.ok()) {
    return InvalidArgument("cannot read --job-library " + path + ": " + bytes.status().message());
  }
  if (bytes->size() > kMaxJobLibraryBytes) {  // it grew after the Stat
    return InvalidArgument("--job-library " + path + " grew beyond " +
                           std::to_string(kMaxJobLibraryBytes >> 20) +
                           " MiB while it was read: submit it again once it is written");
  }
  if (bytes->empty()) {
    return InvalidArgument("--job-library " + path +
                           " is empty: give a job library built with "
                           "keyflow_add_job");
  }
  JobLibraryUpload up;
  up.ref.sha256 = Sha256Hex(*bytes);
  up.ref.file_name = std::filesystem::path(path).filename().string();
  up.ref.size_bytes = bytes->size();
  up.bytes = std::move(bytes).value();
  return up;
}

Result<std::shared_ptr<const JobLibrary>> LoadJobLibraryFlag(const std::string& path) {
  if (path.empty()) return LoadDefaultJobLibrary();
  return JobLibrary::Load(path);
}

}  // namespace keyflow::cli
