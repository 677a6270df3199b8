// StateDirectory: the local working directory of one subtask's RocksDB state, owned for the
// subtask's lifetime, and the clean-up of the ones whose owner died.
//
// Layout under the worker's state root (absolute; keyflow-worker --state-dir, or the job's
// --state-dir):
//
//   <root>/<cluster>/<job id>/attempt-<n>/subtask-<i>/        the RocksDB files (0700 / 0600)
//   <root>/<cluster>/<job id>/attempt-<n>/subtask-<i>.lock    flock()ed while the owner lives
//
// <cluster> is the coordinator's incarnation, so two clusters started from one directory, whose
// job ids may repeat (`name-YYYYMMDD-HHMMSS`), never share a directory. The owner holds an
// exclusive flock on the lock file; the kernel releases it when the process dies, however it
// dies. RemoveDeadStateDirectories (at worker start and before every deployment) removes every
// subtask directory whose lock it can take — a crashed or killed owner's — and the parents left
// empty; a directory whose lock a live process holds (another worker, another cluster) is left
// alone.
//
// Threading: any thread; instances are not shared.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "worker/sources/scoped_fd.h"

namespace keyflow {

// The state root of a worker started without --state-dir, relative to its working directory.
inline constexpr char kDefaultStateDir[] = "keyflow-state";

// Test hooks of StateDirectory::Create.
struct StateDirectoryHooks {
  // Runs after the lock file is opened (created) and before it is locked: where a sweep of
  // another process can take it first.
  std::function<void()> before_lock;
};

class StateDirectory {
 public:
  // Creates (0700) and locks the directory of subtask `subtask` of attempt `attempt` under
  // `root`, which must be absolute. FailedPrecondition if a live process holds it (a path
  // component repeats: it must not be shared); IoError with the path if it cannot be created.
  static Result<std::unique_ptr<StateDirectory>> Create(const std::string& root,
                                                        std::string_view cluster,
                                                        std::string_view job_id,
                                                        AttemptNumber attempt, SubtaskIndex subtask,
                                                        const StateDirectoryHooks& hooks = {});
  // Removes the directory, then its lock file, then releases the lock.
  ~StateDirectory();
  StateDirectory(const StateDirectory&) = delete;
  StateDirectory& operator=(const StateDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  StateDirectory(std::string path, std::string lock_path, ScopedFd lock)
      : path_(std::move(path)), lock_path_(std::move(lock_path)), lock_(std::move(lock)) {}

  std::string path_;
  std::string lock_path_;
  ScopedFd lock_;
};

// Removes under `root` the subtask directories whose lock no process holds, their lock files and
// the directories left empty above them (not `root` itself). Returns the subtask directories
// removed. A missing root removes nothing.
std::vector<std::string> RemoveDeadStateDirectories(const std::string& root);

// The state root for `dir` (a job's --state-dir or the worker's): made absolute against the
// worker's working directory and lexically normal.
std::string AbsoluteStateRoot(const std::string& dir);

}  // namespace keyflow
