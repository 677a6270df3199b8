// Who may read what a keyflow process writes (README "Security", "Files a cluster writes"):
// its user only (kPrivate, the default), or also a group the operator chose (kGroupReadable,
// `--group-readable`; `scripts/start-cluster.sh --group GROUP` makes the run directory that
// group's, setgid, and passes the flag). Nothing a cluster writes is ever readable by others.
//
// Every binary (keyflow-coordinator, keyflow-worker, keyflow) calls ApplyFileAccess at start,
// before it creates a file or a thread. It tightens the process's umask, so that whatever is
// created without an explicit mode — log files, RocksDB's working state, the directories on the
// way — is 0600 / 0700 (kPrivate) or 0640 / 0750 (kGroupReadable). Files written with an
// explicit mode keep it (checkpoints, blobs and state files 0600 in 0700 directories, the key
// set's files); the file sink's output follows the policy (DirectoryModeFor / FileModeFor).
// Which group a file gets is the kernel's rule: its directory's when that is setgid, else the
// process's.
//
//   ApplyFileAccess(group_readable ? FileAccess::kGroupReadable : FileAccess::kPrivate);
//
// Threading: ApplyFileAccess before other threads start (the umask is per process);
// ProcessFileAccess from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace boost::program_options {
class options_description;
}  // namespace boost::program_options

namespace keyflow {

enum class FileAccess : uint8_t { kPrivate, kGroupReadable };

// 0700 / 0750 and 0600 / 0640: the modes of directories and files a process shares under
// `access`.
constexpr uint32_t DirectoryModeFor(FileAccess access) {
  return access == FileAccess::kGroupReadable ? 0750 : 0700;
}
constexpr uint32_t FileModeFor(FileAccess access) {
  return access == FileAccess::kGroupReadable ? 0640 : 0600;
}

// The umask for `access` given the one the process inherited: kPrivate adds 077 to it;
// kGroupReadable adds 027 and lets the group read (r, and x on directories) even when the
// inherited umask did not, since the operator asked for it. Others never get anything, the
// group never write.
constexpr mode_t UmaskFor(FileAccess access, mode_t inherited) {
  return access == FileAccess::kGroupReadable ? ((inherited | 027) & ~mode_t{050}) & 0777
                                              : (inherited | 077) & 0777;
}

// Sets the process's umask to UmaskFor(access, <the current one>) and remembers `access`.
void ApplyFileAccess(FileAccess access);
// The access applied last; kPrivate before any call.
FileAccess ProcessFileAccess();

namespace cli {
// Adds --group-readable to `opts` (keyflow-coordinator, keyflow-worker).
void AddFileAccessFlag(boost::program_options::options_description& opts, bool* group_readable);
}  // namespace cli

}  // namespace keyflow
