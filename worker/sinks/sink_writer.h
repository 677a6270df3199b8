// SinkWriter: where a job's results go, as seen from the task that produces them (Flink's Sink V2
// SinkWriter with its committing half: a TwoPhaseCommittingSink's writer and committer).
//
// One SinkWriter per subtask, used by its task thread:
//
//   Write(record)*              results, in order
//   Flush()                     periodically and at the end of input: buffered output may be
//                               handed on (not a commit)
//   PrepareCommit(c)            at checkpoint c's barrier: everything written since the last
//                               pre-commit becomes committable for c. Cheap; the part that makes
//                               it durable comes back as a SinkPreCommitSync, which the task runs
//                               off its thread before it acknowledges the checkpoint. A sink
//                               without transactions flushes here (at least once).
//   PendingCommittables()       right after PrepareCommit(c): the committables not committed
//                               yet, encoded; the sink's state in checkpoint c. On restore they
//                               are committed again (commits are idempotent).
//   NotifyCheckpointComplete(c) commits every pending committable of checkpoints <= c
//   FinishAndCommit()           the end of input without a later checkpoint: commits
//                               everything written; no writes afterwards
//
// Committed output is never retracted: a sink commits only what a completed checkpoint covers
// (or the end of input of a job without checkpoints).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "worker/api/output.h"

namespace keyflow {

// The durable half of a pre-commit, run once on any thread.
class SinkPreCommitSync {
 public:
  virtual ~SinkPreCommitSync() = default;
  // If it fails, the committable is not durable: the checkpoint must not be acknowledged.
  virtual Status Run() = 0;
};

class SinkWriter {
 public:
  virtual ~SinkWriter() = default;

  virtual Status Write(const OutputRecord& record) = 0;
  virtual Status Flush() { return Status::Ok(); }
  // Precondition: `id` is greater than any earlier PrepareCommit's and the previous sync ran.
  // Returns nullptr when nothing needs to be made durable.
  virtual Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId id) = 0;
  virtual std::vector<std::string> PendingCommittables() const = 0;
  virtual Status NotifyCheckpointComplete(CheckpointId id) = 0;
  virtual Status FinishAndCommit() = 0;
};

}  // namespace keyflow
