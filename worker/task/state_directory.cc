#include "worker/task/state_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "common/check.h"
#include "common/file_io.h"
#include "common/file_system.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kLockSuffix = ".lock";

std::string UnusableSentence(const std::string& path, const std::string& why) {
  return "cannot use the RocksDB state directory " + path + " (" + why +
         "): pass --state-dir a directory on a local disk that the worker can write";
}

// Creates `dir` and its missing parents with mode 0700 (not widened by the umask).
Status CreatePrivateDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::path partial;
  for (const fs::path& part : dir) {
    partial /= part;
    if (fs::is_directory(partial, ec)) continue;
    if (::mkdir(partial.c_str(), kPrivateDirectoryMode) != 0 && errno != EEXIST) {
      return IoError(UnusableSentence(partial.string(), std::strerror(errno)));
    }
  }
  return Status::Ok();
}

// Opens `lock_path` (0600) and takes its exclusive lock without waiting: an invalid ScopedFd if
// another open file description holds it. `before_lock` runs between the open and the lock.
Result<ScopedFd> TryLock(const std::string& lock_path,
                         const std::function<void()>& before_lock = {}) {
  ScopedFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kPrivateFileMode));
  if (!fd.valid()) {
    return IoError(UnusableSentence(lock_path, std::strerror(errno)));
  }
  if (before_lock) before_lock();
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return ScopedFd();
    return IoError("cannot lock " + lock_path + " (" + std::strerror(errno) + ")");
  }
  return fd;
}

// Whether `lock_path` still names the file `fd` has open: a sweep in another process may have
// locked the new file first (between our open and our lock), found it free, and unlinked it.
bool StillLinked(const ScopedFd& fd, const std::string& lock_path) {
  struct stat held {};
  struct stat named {};
  return ::fstat(fd.get(), &held) == 0 && ::stat(lock_path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

// Removes `dir` and then every empty parent up to (not including) `root`.
void RemoveEmptyParents(fs::path dir, const fs::path& root) {
  std::error_code ec;
  while (dir.has_parent_path() && dir != root && dir.string().size() > root.string().size()) {
    if (!fs::is_empty(dir, ec) || ec) return;
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
}

}  // namespace

std::string AbsoluteStateRoot(const std::string& dir) {
  return AbsoluteNormalPath(dir);
}

Result<std::unique_ptr<StateDirectory>> StateDirectory::Create(
    const std::string& root, std::string_view cluster, std::string_view job_id,
    AttemptNumber attempt, SubtaskIndex subtask, const StateDirectoryHooks& hooks) {
  KF_CHECK(!root.empty() && root.front() == '/') << "state root must be absolute: " << root;
  const fs::path attempt_dir = fs::path(root) / std::string(cluster.empty() ? "local" : cluster) /
                               std::string(job_id) / ("attempt-" + std::to_string(attempt.value()));
  const std::string name = "subtask-" + std::to_string(subtask.value());
  const std::string path = (attempt_dir / name).string();
  const std::string lock_path = path + std::string(kLockSuffix);
  // A sweep in another process (RemoveDeadStateDirectories of another worker) may remove the
  // empty attempt directory between its creation and the lock file's, or take the new lock file
  // before us, find it free and unlink it (with the attempt directory): start over then. A lock
  // held by someone else is looked at again a moment later (a sweep holds it only briefly).
  Result<ScopedFd> locked = ScopedFd();
  for (int tries = 0; tries < 5; ++tries) {
    KF_RETURN_IF_ERROR(CreatePrivateDirectories(attempt_dir));
    locked = TryLock(lock_path, hooks.before_lock);
    if (!locked.ok()) continue;
    if (locked->valid()) {
      if (StillLinked(*locked, lock_path)) break;
      locked = ScopedFd();  // unlinked under us
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!locked.ok()) return locked.status();
  ScopedFd lock = std::move(locked).value();
  if (!lock.valid()) {
    return FailedPrecondition("the state directory " + path +
                              " is in use by another process: two workers were given the same "
                              "--state-dir for the same cluster, job, attempt and subtask");
  }
  std::error_code ec;
  fs::remove_all(path, ec);  // a leftover of a dead owner (the lock was free)
  if (::mkdir(path.c_str(), kPrivateDirectoryMode) != 0) {
    return IoError(UnusableSentence(path, std::strerror(errno)));
  }
  return std::unique_ptr<StateDirectory>(new StateDirectory(path, lock_path, std::move(lock)));
}

StateDirectory::~StateDirectory() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) KF_LOG_WARN("cannot remove the state directory {}: {}", path_, ec.message());
  fs::remove(lock_path_, ec);
  lock_.Reset();  // unlocked only once the directory is gone
}

std::vector<std::string> RemoveDeadStateDirectories(const std::string& root) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return removed;
  // <root>/<cluster>/<job>/attempt-<n>/subtask-<i>.lock: four levels below the root.
  std::vector<fs::path> locks;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() >= 3) it.disable_recursion_pending();
    const fs::path& p = it->path();
    const std::string file = p.filename().string();
    if (it.depth() == 3 && file.rfind("subtask-", 0) == 0 && file.size() > kLockSuffix.size() &&
        file.compare(file.size() - kLockSuffix.size(), kLockSuffix.size(), kLockSuffix) == 0) {
      locks.push_back(p);
    }
  }
  for (const fs::path& lock_path : locks) {
    auto lock = TryLock(lock_path.string());
    if (!lock.ok() || !lock->valid()) continue;  // a live owner (or unreadable: leave it)
    std::string dir = lock_path.string();
    dir.resize(dir.size() - kLockSuffix.size());
    fs::remove_all(dir, ec);
    if (ec) {
      KF_LOG_WARN("cannot remove the state directory {} of a dead attempt: {}", dir, ec.message());
      continue;
    }
    fs::remove(lock_path, ec);
    removed.push_back(dir);
    RemoveEmptyParents(lock_path.parent_path(), fs::path(root));
  }
  return removed;
}

}  // namespace keyflow
