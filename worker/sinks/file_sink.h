// FileSink: exactly-once JSON Lines output into a directory by two-phase commit (Flink's
// TwoPhaseCommitSinkFunction driving FileSink's in-progress -> pending -> committed part files).
//
// Files in the output directory (subtask s, deployment attempt a, transaction t, checkpoint c):
//   .<prefix>-<s>-<a>-<t>.inprogress     being written (buffered); not part of the result
//   _<prefix>-<s>-<a>-<t>-<c>.pending     pre-committed for checkpoint c; not part of the result
//   <prefix>-<s>-<a>-<c>.jsonl            committed: the result
//   <prefix>-<s>-<a>-final.jsonl          committed at end of input by FinishAndCommit()
// Readers of the result take every file whose name does not start with '.' or '_'.
// A committed file is never deleted or rewritten by keyflow, by anything.
//
// Life cycle of one sink subtask (the sink is told about checkpoints by the task thread):
//   Write(line)*                appends to the current transaction; the first write opens it
//   StartPreCommit(c)           snapshotState, the cheap half on the task thread: hand the
//                               file and its unwritten buffer over; the committable joins
//                               pending_committables(), which is the sink's state for
//                               checkpoint c; the next write opens a new transaction
//   FileSinkPreCommitSync::Run  the durable half, on any thread (the snapshot thread): write
//                               the buffer, fsync, rename to pending, fsync of the directory. The
//                               checkpoint may be acknowledged only after it returned OK.
//   PreCommit(c)                both halves on the calling thread
//   NotifyCheckpointComplete(c) commits every pending committable with checkpoint <= c, in order
//   FinishAndCommit()           end of input: commits everything written, without a checkpoint
//   Abort() / destructor        deletes the current in-progress file
// An empty transaction creates no file and PreCommit returns no committable.
//
// Recovery (static Recover): before a restarted job writes, with the committables of the
// restored checkpoint of ALL subtasks, commit them (idempotently), then delete what earlier
// attempts left behind that is not part of the result: their in-progress and pending files.
// Committed files of earlier attempts that the restored checkpoint does not cover (committed
// after it, or final files) are never deleted: Recover fails instead (FailedPrecondition),
// because restoring would emit their results a second time (checkpoint/README.md, "When a
// checkpoint is corrupt"). Files of the current attempt and files that do not follow the
// naming above are never touched. Several subtasks may run Recover concurrently with the same
// arguments.
//
// The output directory must belong to one job: a new job (not a restart) needs an empty
// directory or its own prefix. Every file operation goes through a FileSystem
// (common/file_system.h; default FileSystem::Default()) and returns a Status naming the path.
// Threading: a FileSink instance is used by one thread; a FileSinkPreCommitSync by one thread
// (any); the static functions are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/binary_io.h"
#include "common/file_system.h"
#include "common/hashing.h"
#include "common/process/file_access.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/sinks/sink_writer.h"

namespace keyflow {

// Modes of what the sink creates, whatever the umask: the output directory (when the sink
// creates it) and every file in it, in progress, pending or committed — DirectoryModeFor /
// FileModeFor of FileSinkOptions::access: 0700 / 0600 (the worker's user only), or 0750 / 0640
// when the worker runs --group-readable (common/process/file_access.h). Never world-readable.

struct FileSinkOptions {
  std::string directory;        // created (with parents) if missing
  std::string prefix = "part";  // non-empty; no '/', must not start with '.' or '_'
  SubtaskIndex subtask{0};
  AttemptNumber attempt{0};
  size_t buffer_bytes = 1 << 20;                     // write(2) in chunks of about this size
  FileSystem* file_system = &FileSystem::Default();  // not owned; outlives the sink
  FileAccess access = ProcessFileAccess();           // who may read the output (modes above)
};

// A pre-committed transaction: what goes into checkpoint c and what Commit needs.
struct FileSinkCommittable {
  CheckpointId checkpoint{0};
  std::string pending_name;  // file name inside the output directory
  std::string final_name;    // its committed name
  uint64_t size = 0;         // bytes
  uint64_t checksum = 0;     // Checksum64 of the content

  // u8 version (1), i64 checkpoint, bytes pending_name, bytes final_name, u64 size, u64 checksum.
  // DecodeFrom refuses (Corruption) names a FileSink does not write: pending_name must be
  // "_<prefix>-<s>-<a>-<t>-<c>.pending" and final_name "<prefix>-<s>-<a>-<c>.jsonl" with the
  // same prefix, s and a and c = checkpoint, so a crafted checkpoint cannot rename other files.
  void EncodeTo(BinaryWriter* out) const;
  static Result<FileSinkCommittable> DecodeFrom(BinaryReader* in);
  friend bool operator==(const FileSinkCommittable&, const FileSinkCommittable&) = default;
};

// The durable half of a pre-commit, handed off the task thread: the write of the buffered tail
// and the fsync of the transaction's file, its rename to the pending name, the fsync of the
// output directory. Run it once, on any thread.
// If it fails, the committable is not durable: the checkpoint must not be acknowledged and the
// sink must not commit it (the task fails; recovery produces that output again).
class FileSinkPreCommitSync final : public SinkPreCommitSync {
 public:
  Status Run() override;

 private:
  friend class FileSink;
  FileSystem* fs_ = nullptr;
  std::unique_ptr<WritableFile> file_;
  std::string tail_;  // buffered bytes not yet written
  std::string from_, to_, directory_;
};

// What StartPreCommit returns: the committable and the work that makes it durable.
struct FileSinkPreCommit {
  FileSinkCommittable committable;
  std::unique_ptr<FileSinkPreCommitSync> sync;
};

struct FileSinkRecoveryStats {
  int64_t committed = 0;          // pending files renamed to their committed names
  int64_t already_committed = 0;  // committables found committed already
  int64_t deleted = 0;            // in-progress and pending leftovers of earlier attempts removed
};

class FileSink {
 public:
  // Validates the options and creates the directory. IoError naming the path on failure.
  static Result<FileSink> Open(FileSinkOptions options);

  FileSink(FileSink&&) noexcept = default;
  FileSink& operator=(FileSink&&) = delete;
  ~FileSink();  // aborts the current transaction (deletes its in-progress file)

  // Appends `line` and a '\n'. InvalidArgument if `line` contains a '\n'.
  Status Write(std::string_view line);

  // Phase one for checkpoint `id` (strictly greater than any earlier PreCommit id), the part
  // for the task thread: no fsync. Returns the new committable (already in
  // pending_committables()) with the sync that makes it durable, or nullopt when nothing was
  // written since the last pre-commit. Precondition: the previous pre-commit's sync has run.
  Result<std::optional<FileSinkPreCommit>> StartPreCommit(CheckpointId id);
  // StartPreCommit and its sync on this thread. On failure the committable is dropped again.
  Result<std::optional<FileSinkCommittable>> PreCommit(CheckpointId id);
  // Pre-committed, not yet committed, oldest first: the sink state to put into a checkpoint
  // right after PreCommit(id).
  const std::vector<FileSinkCommittable>& pending_committables() const { return pending_; }

  // Phase two: commits every pending committable with checkpoint <= id, oldest first. A later
  // notification for an already committed id does nothing. Tries all; returns the first error.
  Status NotifyCheckpointComplete(CheckpointId id);

  // End of input (jobs without checkpoints, or after the last one): commits the pending
  // committables and the current transaction as <prefix>-<s>-<a>-final.jsonl. Afterwards the
  // sink accepts no more writes. Returns the committed file names (may be empty).
  Result<std::vector<std::string>> FinishAndCommit();

  // Deletes the current in-progress file, if any. Pending committables are kept.
  Status Abort();

  // Renames the committable's pending file to its committed name. Idempotent: OK if it is
  // committed already. NotFound if neither file exists; Corruption if the size differs from
  // the committable's.
  static Status Commit(const std::string& directory, const FileSinkCommittable& committable,
                       FileSystem& fs = FileSystem::Default());

  // See the file comment. `restored` is the checkpoint restored from (nullopt: the job starts
  // from scratch, so no committed file of an earlier attempt may exist); `committables` are the
  // sink committables stored in it, of all subtasks; their checksums are verified (Corruption
  // on mismatch). FailedPrecondition naming the files when earlier attempts committed output
  // the restored checkpoint does not cover. Precondition: every committable's checkpoint
  // <= *restored.
  static Result<FileSinkRecoveryStats> Recover(const std::string& directory,
                                               const std::string& prefix,
                                               std::optional<CheckpointId> restored,
                                               std::span<const FileSinkCommittable> committables,
                                               AttemptNumber current_attempt,
                                               FileSystem& fs = FileSystem::Default());

  const FileSinkOptions& options() const { return options_; }
  // Bytes written to the current transaction so far (buffered or not).
  uint64_t transaction_bytes() const { return txn_bytes_; }

 private:
  FileSink() = default;
  std::string Path(std::string_view name) const;
  std::string BaseName() const;  // <prefix>-<s>-<a>-<t>
  Status OpenTransaction();
  Status FlushBuffer();
  // Hands the in-progress file and the buffer over: the returned sync writes the buffer,
  // fsyncs, closes and renames the file to `name`, then fsyncs the directory.
  Result<std::unique_ptr<FileSinkPreCommitSync>> HandOver(const std::string& name);

  FileSinkOptions options_;
  FileSystem* fs_ = nullptr;
  std::unique_ptr<WritableFile> file_;  // current in-progress file; null when no transaction
  std::string inprogress_name_;
  std::string buffer_;
  std::unique_ptr<StreamingChecksum> checksum_;
  uint64_t txn_bytes_ = 0;
  int64_t next_txn_ = 0;
  std::optional<CheckpointId> last_precommit_;
  std::vector<FileSinkCommittable> pending_;
  bool finished_ = false;
};

}  // namespace keyflow
