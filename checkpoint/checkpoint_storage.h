// CheckpointStorage: where checkpoints live on disk:
//   <root>/<job_id>/_job                      job record: spec, state, last attempt (atomic)
//   <root>/<job_id>/chk-<n>/_metadata         completed checkpoint n (the commit point)
//   <root>/<job_id>/chk-<n>/subtask-<i>.kgs   keyed-state snapshot of subtask i
//   <root>/<job_id>/savepoint-<n>/...         savepoint n (or a user-given directory)
//   <root>/<job_id>/shared/NAME               files of incremental checkpoints, referenced by
//                                             one or more chk-<n> (SharedStateRegistry)
// The root is a directory; on several hosts a shared file system path. Byte formats of
// `_metadata` and `_job`: checkpoint/README.md.
//
// Used by the coordinator (metadata, listing, retention, job records) and by workers (they
// write their snapshot files into the directory the trigger names). Every error names the path.
// All file access goes through a FileSystem (common/file_system.h; default the POSIX one), so
// tests can inject faults and crashes. Threading: no shared state; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_metadata.h"
#include "common/file_system.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow {

// Version 2 added the CLI commands (pending and last); version 1 records are still read.
inline constexpr uint32_t kJobRecordVersion = 3;
inline constexpr std::string_view kJobRecordMagic = "KFJOBR01";

// A CLI command the coordinator accepted for a job (rescale, stop, savepoint, checkpoint).
struct JobCommand {
  std::string what;                // "rescale to 3", "stop with savepoint", "savepoint", ...
  std::string retry;               // the command line that runs it again: "keyflow rescale 3"
  std::string directory;           // a savepoint's target directory; empty = the default one
  int32_t target_parallelism = 0;  // a rescale's P'
};

// The persistent record of a submitted job, so a restarted coordinator can resume it.
struct JobRecord {
  std::string job_id;
  JobSpec spec;
  std::string state;  // "RUNNING" while it must be resumed; FINISHED, FAILED, CANCELED after
  AttemptNumber last_attempt{0};
  std::vector<JobCommand> pending_commands;  // accepted and not yet answered
  JobCommand last_command;                   // the latest one answered (what empty: none)
  std::string last_command_outcome;          // "completed", "failed: ...", "aborted by ..."
  // The savepoint the latest rescale restored the job from (version 3; empty: none), recorded
  // before that rescale's new attempt was deployed: its attempt commits the savepoint's output,
  // so a restart must not restore a checkpoint older than it.
  std::string rescale_savepoint;
  CheckpointId rescale_savepoint_id{0};
  // Same envelope as `_metadata` (magic "KFJOBR01", version, length, body, XXH3-64).
  std::string Encode() const;
  // Corruption / FailedPrecondition as CheckpointMetadata::Decode.
  static Result<JobRecord> Decode(std::string_view bytes, std::string_view source);
};

// A completed checkpoint or savepoint found on disk.
struct CheckpointLocation {
  CheckpointId id{0};
  bool savepoint = false;
  std::string directory;  // absolute path of chk-<n> / savepoint directory
};

class CheckpointStorage {
 public:
  // `root` is made absolute (against the current directory) and normalised, so that every
  // directory this storage names is absolute.
  // `fs` is not owned and must outlive the storage.
  explicit CheckpointStorage(const std::string& root, FileSystem& fs = FileSystem::Default());
  const std::string& root() const { return root_; }

  std::string JobDirectory(const std::string& job_id) const;
  std::string CheckpointDirectory(const std::string& job_id, CheckpointId id) const;
  std::string SavepointDirectory(const std::string& job_id, CheckpointId id) const;
  static std::string MetadataPath(const std::string& checkpoint_dir);
  // <root>/<job_id>/shared: the shared files of the job's incremental checkpoints.
  std::string SharedDirectory(const std::string& job_id) const;
  // The shared directory a checkpoint's shared file names resolve in: <checkpoint dir>/../shared
  // (absolute, lexically normal).
  static std::string SharedDirectoryOf(const std::string& checkpoint_dir);
  // Creates the job's shared directory (0700) if it does not exist.
  Status PrepareSharedDirectory(const std::string& job_id) const;
  // File name (relative to the checkpoint directory) of subtask i's keyed-state snapshot.
  static std::string SubtaskStateFileName(SubtaskIndex subtask);

  // Creates the directory a pending checkpoint's subtasks write into (and its parents).
  // AlreadyExists if it exists and is not empty: a checkpoint never mixes its files with
  // others, and an aborted checkpoint's directory can be deleted without losing anything.
  Status PrepareCheckpointDirectory(const std::string& dir) const;
  // Writes `_metadata` atomically (temp `_metadata.tmp` + fsync + rename + fsync dir): the
  // commit point. Precondition: m.Validate().ok().
  Status WriteMetadata(const std::string& checkpoint_dir, const CheckpointMetadata& m) const;
  // Reads and verifies `_metadata` of a checkpoint directory (or of a path to the file).
  // NotFound when there is none (the checkpoint never completed); Corruption when it does not
  // verify; FailedPrecondition when it verifies but has a format version this build does not
  // read (common/format_version.h).
  static Result<CheckpointMetadata> ReadMetadata(const std::string& checkpoint_dir_or_file,
                                                 FileSystem& fs = FileSystem::Default());
  // Checks that every file the metadata names exists with the recorded size: full state files
  // and native private files inside the checkpoint directory, shared files inside
  // SharedDirectoryOf(checkpoint_dir) (Corruption naming the file when truncated, missing or a
  // symbolic link out of its directory).
  static Status VerifyStateFiles(const std::string& checkpoint_dir, const CheckpointMetadata& m,
                                 FileSystem& fs = FileSystem::Default());

  // Completed checkpoints (not savepoints) of a job with readable metadata, ascending by id.
  // Directories without `_metadata` are not completed checkpoints and are skipped silently;
  // a `_metadata` that does not verify is skipped with a warning. No job directory: empty.
  // FailedPrecondition (the whole listing) when one verifies but has a format version this
  // build does not read: a version skew is never skipped like a corrupt file.
  Result<std::vector<CheckpointLocation>> ListCompletedCheckpoints(const std::string& job_id) const;
  // Savepoints under the job directory (savepoint-<n> with readable metadata), ascending by id.
  Result<std::vector<CheckpointLocation>> ListSavepoints(const std::string& job_id) const;
  // The largest checkpoint/savepoint id used so far under the job directory (including
  // directories without metadata), 0 if none: the next id must be larger.
  Result<int64_t> MaxUsedId(const std::string& job_id) const;
  // Removes the directory and everything in it; OK if absent.
  Status DeleteCheckpoint(const std::string& checkpoint_dir) const;
  FileSystem& fs() const { return *fs_; }

  // Writes <root>/<job>/_job atomically (creating the job directory).
  Status WriteJobRecord(const JobRecord& record) const;
  // Job records of every job under the root (for coordinator restart), by job id. A record
  // that does not verify is skipped with a warning; no root directory: empty.
  Result<std::vector<JobRecord>> ListJobRecords() const;

 private:
  Result<std::vector<CheckpointLocation>> List(const std::string& job_id, std::string_view prefix,
                                               bool savepoint) const;

  std::string root_;
  FileSystem* fs_;
};

}  // namespace keyflow
