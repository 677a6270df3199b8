#include "coordinator/path_rules.h"

#include "common/output_directory.h"

#include <unistd.h>

#include <filesystem>

#include "common/file_io.h"
#include "common/input/input_spec.h"

namespace keyflow {
namespace {

std::string JoinRoots(const std::vector<std::string>& roots) {
  std::string out;
  for (const std::string& r : roots) out += (out.empty() ? "" : ", ") + r;
  return out;
}

std::string Why(int err) {
  return std::error_code(err, std::generic_category()).message();
}

}  // namespace

Result<std::vector<std::string>> CanonicalAllowedRoots(const std::vector<std::string>& flags) {
  std::vector<std::string> roots;
  for (const std::string& f : flags) {
    if (f.empty() || f.front() != '/') {
      return InvalidArgument("--allowed-path '" + f +
                             "' must be an absolute path of an existing directory");
    }
    if (::access(f.c_str(), F_OK) != 0) {
      return InvalidArgument("--allowed-path " + f + " does not exist: create it first");
    }
    KF_ASSIGN_OR_RETURN(std::string root, CanonicalPath(f));
    roots.push_back(std::move(root));
  }
  return roots;
}

Status CheckAllowedPath(std::string_view flag, const std::string& path,
                        const std::vector<std::string>& roots) {
  if (roots.empty() || path.empty()) return Status::Ok();
  const std::string who = std::string(flag) + " " + path;
  if (path.front() != '/') {
    return InvalidArgument(who +
                           " is not an absolute path; the coordinator accepts only absolute "
                           "paths under its --allowed-path roots (" +
                           JoinRoots(roots) + ")");
  }
  Result<std::string> canonical = CanonicalPath(path);
  if (canonical.ok()) {
    for (const std::string& root : roots) {
      if (IsPathUnder(*canonical, root)) return Status::Ok();
    }
  }
  return InvalidArgument(
      who + " is outside the paths this coordinator may use (--allowed-path " + JoinRoots(roots) +
      (canonical.ok() && *canonical != path ? "; it resolves to " + *canonical : "") +
      "): choose a path under one of them, or ask the operator to start the coordinator with "
      "another --allowed-path");
}

Status CheckAllowedJobPaths(const JobSpec& spec, const std::vector<std::string>& roots) {
  if (const std::string input = InputSpec::PathOf(spec.input); !input.empty()) {
    KF_RETURN_IF_ERROR(CheckAllowedPath("--input", input, roots));
  }
  if (InputSpec::IsGenerator(spec.input)) {  // gen:...,hold=PATH: the workers look for PATH
    Result<InputSpec> input = InputSpec::Parse(spec.input);
    if (input.ok() && !input->generator().hold.empty()) {
      KF_RETURN_IF_ERROR(CheckAllowedPath("--input gen:...,hold=", input->generator().hold, roots));
    }
  }
  if (OutputIsDirectory(spec.output_dir)) {
    KF_RETURN_IF_ERROR(CheckAllowedPath("--output", spec.output_dir, roots));
  }
  KF_RETURN_IF_ERROR(CheckAllowedPath("--checkpoint-dir", spec.checkpoint_dir, roots));
  return CheckAllowedPath("--from-savepoint", spec.from_savepoint, roots);
}

Status CheckUserMayRead(std::string_view flag, const std::string& path) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(path, ec);
  const int mode = dir ? (R_OK | X_OK) : R_OK;
  if (::access(path.c_str(), mode) != 0) {
    const int err = errno;
    if (err == ENOENT) return Status::Ok();  // reported by the flag's own check, with context
    return InvalidArgument(std::string(flag) + " " + path + " cannot be read by you (" + Why(err) +
                           "): the cluster reads only what the user who submits may read");
  }
  if (!dir) return Status::Ok();
  // A directory input reads every file in it (input_spec.h): each must be readable too.
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || name[0] == '_' || !e.is_regular_file(ec)) continue;
    if (::access(e.path().c_str(), R_OK) != 0) {
      return InvalidArgument(std::string(flag) + " " + path + ": its file " + name +
                             " cannot be read by you (" + Why(errno) +
                             "): the cluster reads only what the user who submits may read");
    }
  }
  return Status::Ok();
}

Status CheckUserMayWriteDirectory(std::string_view flag, const std::string& path) {
  std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  std::error_code ec;
  // The nearest existing ancestor (the directory itself when it exists).
  while (!std::filesystem::exists(p, ec) && p.has_relative_path()) p = p.parent_path();
  const std::string existing = p.string();
  if (!std::filesystem::is_directory(p, ec)) {
    return InvalidArgument(std::string(flag) + " " + path + ": " + existing +
                           " exists and is not a directory");
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    return InvalidArgument(std::string(flag) + " " + path + " cannot be written by you (" +
                           existing + ": " + Why(errno) +
                           "): the cluster writes only where the user who submits may write");
  }
  return Status::Ok();
}

Status CheckClientMayUsePaths(const JobSpec& spec) {
  if (const std::string input = InputSpec::PathOf(spec.input); !input.empty()) {
    KF_RETURN_IF_ERROR(CheckUserMayRead("--input", input));
  }
  if (!spec.from_savepoint.empty()) {
    KF_RETURN_IF_ERROR(CheckUserMayRead("--from-savepoint", spec.from_savepoint));
  }
  if (OutputIsDirectory(spec.output_dir)) {
    KF_RETURN_IF_ERROR(CheckUserMayWriteDirectory("--output", spec.output_dir));
  }
  if (!spec.checkpoint_dir.empty()) {
    KF_RETURN_IF_ERROR(CheckUserMayWriteDirectory("--checkpoint-dir", spec.checkpoint_dir));
  }
  return Status::Ok();
}

}  // namespace keyflow
