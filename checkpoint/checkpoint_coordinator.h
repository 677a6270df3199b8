// CheckpointCoordinator: the coordinator side of checkpoints for one job attempt (Flink's
// CheckpointCoordinator + PendingCheckpoint + CompletedCheckpointStore).
//
// Trigger -> every subtask acknowledges (or declines) -> the metadata is written atomically
// (the commit point) -> the subtasks are notified (not for savepoints) -> pending periodic
// checkpoints with smaller ids are subsumed -> checkpoints beyond the retained count are
// deleted (savepoints never). Ids are positive and strictly increasing, starting at `first_id`
// (the largest id already used in the job's directory + 1). Periodic triggers respect the
// interval (measured from the previous periodic trigger; the first one is due one interval
// after the first OnTick), the minimum pause after the last completion and the maximum number
// of concurrent checkpoints; requested checkpoints/savepoints bypass the pause, and savepoints
// and final checkpoints also bypass max concurrent. A pending checkpoint expires after the
// timeout; a decline or a failure aborts it only — the job goes on. An aborted or expired
// checkpoint's directory is deleted.
//
// Failure counting (Flink's CheckpointFailureManager): a checkpoint that is declined, expires,
// gets an invalid acknowledgement or cannot write its metadata is a failure; a completed
// checkpoint resets the count. Aborts the job itself causes (AbortAll on failover, cancel or
// rescale; StopPeriodic; subsumption) are not failures. The JobMaster fails the job when the
// count exceeds --tolerable-checkpoint-failures.
//
// Incremental checkpoints (JobSpec::incremental_checkpoints, not savepoints): triggers carry
// `incremental` and the job's shared directory (created 0700). Acks may then name shared files
// (key-group-incremental handles, native RocksDB handles); the SharedStateRegistry counts who
// references them: a file is deleted when no retained checkpoint and no pending checkpoint
// that acknowledged it references it. A checkpoint whose shared files are missing (or have
// another size) when it would complete is aborted instead. RecoverCompleted rebuilds the
// registry from the retained checkpoints and deletes the unreferenced files of the directory.
//
// Transport-agnostic: it returns the messages to send; time comes in as arguments (`now_ms`
// monotonic; the injected wall clock stamps checkpoints). Request callbacks run synchronously
// inside the call that finishes the checkpoint, after the coordinator's state is consistent.
// Threading: coordinator thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/shared_state_registry.h"
#include "common/clock.h"
#include "common/key_group_range.h"
#include "common/protocol/control_messages.h"

namespace keyflow {

enum class CheckpointState : uint8_t { kPending, kCompleted, kAborted, kExpired };
// "PENDING", "COMPLETED", "ABORTED", "EXPIRED" (status, `keyflow checkpoints`).
std::string_view CheckpointStateName(CheckpointState s);

struct CheckpointConfig {
  int64_t interval_ms = 0;  // 0: no periodic checkpoints
  int64_t timeout_ms = 600'000;
  int64_t min_pause_ms = 0;
  int32_t max_concurrent = 1;
  int32_t retained = 3;
};

// Summary of a checkpoint, for `keyflow checkpoints` / status.
// One subtask's acknowledgement of a checkpoint (REST GET /api/v1/job/checkpoints).
struct SubtaskCheckpointStats {
  int32_t subtask = 0;
  uint64_t state_bytes = 0;    // full size of the state the subtask's handle references
  uint64_t written_bytes = 0;  // what this checkpoint wrote for it (incremental size)
  int64_t sync_us = 0;
  int64_t async_us = 0;
  int64_t alignment_us = 0;
};

struct CheckpointStats {
  CheckpointId id{0};
  bool savepoint = false;
  bool final = false;
  CheckpointState state = CheckpointState::kPending;
  std::string directory;
  std::string failure;
  int64_t trigger_wall_ms = 0;
  int64_t duration_ms = 0;     // trigger -> completion/abort (monotonic)
  uint64_t state_bytes = 0;    // full size referenced (SubtaskCheckpointState::StateBytes)
  uint64_t written_bytes = 0;  // bytes written by this checkpoint (= state_bytes when full)
  bool incremental = false;    // the trigger allowed incremental snapshots
  int32_t acknowledged = 0;    // subtasks that acknowledged
  int64_t max_sync_us = 0;     // slowest subtask's synchronous pause
  int64_t max_async_us = 0;
  int64_t max_alignment_us = 0;
  std::vector<SubtaskCheckpointStats> subtasks;  // in the order they acknowledged
};

// How a checkpoint triggered on request differs from a periodic one.
struct CheckpointTriggerOptions {
  // Neither waits for nor counts against max concurrent checkpoints (Flink's
  // CheckpointProperties.forceCheckpoint).
  bool forced = false;
  // kCheckpoint: false completes it without NotifyCheckpointComplete, as a savepoint: the
  // subtasks commit nothing of it; the attempt the job master deploys from it does (a
  // rescale's checkpoint).
  bool notify_complete = true;
};

class CheckpointCoordinator {
 public:
  static constexpr size_t kHistorySize = 50;

  // `storage` and `clock` must outlive it. `first_id` >= 1 is the first id to use
  // (MaxUsedId + 1). Precondition: spec.parallelism and spec.max_parallelism resolved and valid.
  CheckpointCoordinator(std::string job_id, JobSpec spec, AttemptNumber attempt,
                        CheckpointConfig config, const CheckpointStorage* storage,
                        const Clock* wall_clock, int64_t first_id);

  struct Outgoing {
    SubtaskIndex subtask;
    ControlMessage message;
  };
  // Completion callback for requested checkpoints/savepoints: the location or the failure
  // (Aborted for declined/subsumed/AbortAll, DeadlineExceeded for expired, the write error),
  // and the `now_ms` of the call that finished it.
  using RequestCallback = std::function<void(Result<CheckpointLocation>, int64_t now_ms)>;

  // What the new attempt does with the completed checkpoints it recovers.
  // Checkpoints are named by directory, never by bare id: a job started --from-savepoint of
  // another job's chk-3 restores a checkpoint with the same id as its own chk-3.
  struct RecoverOptions {
    // The directory of the checkpoint this attempt restores from, if it is one of them:
    // retention never deletes it (nor its shared files) until a newer checkpoint completes
    // (Flink: a restored checkpoint is not subsumed before a newer one exists).
    std::optional<std::string> restore;
    // Directories of completed checkpoints found unrestorable (corrupt, JobMaster's bad
    // checkpoints): kept on disk with the shared files they name, for the user to inspect, but
    // never restored, not latest_completed(), not counted by retention; deleted (with the files
    // no retained checkpoint references) when the first newer checkpoint completes.
    std::set<std::string> unrestorable;
  };
  // Completed checkpoints found on disk from earlier attempts (ListCompletedCheckpoints),
  // ascending, so that retention covers them and latest_completed() knows them; their shared
  // files are registered, then retention applies (sparing `options.restore`), then the files of
  // the shared directory that no recovered checkpoint references are deleted (logged with count
  // and bytes). Call before the first trigger: then no pending checkpoint of this attempt can
  // own an unregistered file (uploads of earlier attempts use checkpoint ids below `first_id`
  // and are never referenced again).
  void RecoverCompleted(std::vector<CheckpointLocation> completed, RecoverOptions options = {});

  // Starts a checkpoint of `type` now: returns TriggerCheckpoint messages for every subtask,
  // or an error (FailedPrecondition "too many concurrent checkpoints" — only for a kCheckpoint
  // that is not `forced`, AlreadyExists/IoError for the directory); on error `on_done` is not
  // called. `savepoint_dir` (kSavepoint only) empty = <job>/savepoint-<n>; otherwise a new or
  // empty directory.
  Result<std::vector<Outgoing>> Trigger(int64_t now_ms, CheckpointType type,
                                        const std::string& savepoint_dir,
                                        RequestCallback on_done = nullptr,
                                        CheckpointTriggerOptions options = {});
  // Expires pending checkpoints past the timeout (abort notifications), then triggers a
  // periodic checkpoint if one is due. Returns the messages to send.
  std::vector<Outgoing> OnTick(int64_t now_ms);

  // An acknowledgement; when it is the last one, completes the checkpoint: writes metadata,
  // returns NotifyCheckpointComplete for every subtask (checkpoints only) and applies
  // retention. Acks of another attempt, for unknown/expired ids, from unknown subtasks and
  // duplicates are ignored. An ack whose handle does not match the subtask's key-group range
  // aborts the checkpoint.
  std::vector<Outgoing> OnAcknowledge(const AcknowledgeCheckpoint& ack, int64_t now_ms);
  // Aborts that checkpoint only (notifications to every subtask); of another attempt or for an
  // id that is not pending: ignored. A decline from a subtask index outside the job (e.g. -1,
  // "no subtask of this attempt runs on this worker") aborts it too: a pending checkpoint never
  // waits for an answer that was already refused.
  std::vector<Outgoing> OnDecline(const DeclineCheckpoint& decline, int64_t now_ms);
  // The attempt is over (failure, cancel, rescale): aborts every pending checkpoint without
  // notifying (the subtasks are gone) and deletes their directories; request callbacks get
  // Aborted.
  void AbortAll(const std::string& reason, int64_t now_ms);

  // Stop-with-savepoint: no periodic checkpoint may complete after the savepoint the job will
  // be restored from, so periodic triggering stops and pending checkpoints are aborted
  // (notifications returned). ResumePeriodic undoes it if the savepoint fails.
  std::vector<Outgoing> StopPeriodic(const std::string& reason, int64_t now_ms);
  void ResumePeriodic();
  // The job is FINISHING: no more periodic triggers; pending ones go on (after the end of
  // input a periodic checkpoint only commits pending files, so it may complete).
  void EndPeriodic() { periodic_enabled_ = false; }

  // Checkpoint failures since the last completed checkpoint, and the last one's reason.
  int32_t consecutive_failures() const { return consecutive_failures_; }
  const std::string& last_failure() const { return last_failure_; }
  // A new attempt goes on counting where the previous one stopped (failovers do not reset it).
  void ContinueFailureCount(int32_t count, std::string last_failure) {
    consecutive_failures_ = count;
    last_failure_ = std::move(last_failure);
  }

  // Checkpoints and savepoints completed, and failed (aborts that count as failures: not the
  // subsumed ones nor those the job aborted), since the job started: a new attempt continues
  // its predecessor's totals (/metrics counters).
  struct Totals {
    int64_t completed = 0;
    int64_t failed = 0;
  };
  const Totals& totals() const { return totals_; }
  void ContinueTotals(Totals totals) { totals_ = totals; }

  size_t num_pending() const { return pending_.size(); }
  // The newest completed checkpoint (not savepoint), including recovered ones.
  std::optional<CheckpointLocation> latest_completed() const;
  // The retained completed checkpoints, oldest first.
  const std::deque<CheckpointLocation>& retained_checkpoints() const { return completed_; }
  // Finished checkpoints, most recent first, at most kHistorySize.
  const std::deque<CheckpointStats>& history() const { return history_; }
  // Pending checkpoints (state PENDING), ascending by id.
  std::vector<CheckpointStats> PendingStats() const;
  int64_t next_id() const { return next_id_; }
  const SharedStateRegistry& shared_state() const { return shared_; }

 private:
  struct PendingCheckpoint {
    CheckpointStats stats;
    bool periodic = false;              // triggered by OnTick
    bool counts_as_concurrent = false;  // kCheckpoint (not savepoint/final): max concurrent
    bool notify_complete = true;        // CheckpointTriggerOptions::notify_complete
    int64_t trigger_now_ms = 0;
    int64_t deadline_ms = 0;
    bool incremental = false;                                  // TriggerCheckpoint.incremental
    std::vector<std::optional<KeyGroupsStateHandle>> handles;  // by subtask index
    std::vector<std::optional<IncrementalKeyedStateHandle>> native;  // by subtask index
    std::vector<uint64_t> written_bytes;                             // by subtask index
    std::map<std::string, std::string> split_positions;
    std::vector<std::string> sink_committables;
    RequestCallback on_done;
  };

  Result<std::vector<Outgoing>> StartCheckpoint(int64_t now_ms, CheckpointType type, bool periodic,
                                                const std::string& savepoint_dir,
                                                RequestCallback on_done,
                                                CheckpointTriggerOptions options = {});
  // Savepoints, final and forced checkpoints excluded.
  size_t NumPendingCheckpoints() const;
  // Checks an ack's handle against the subtask's range; makes its path relative.
  Status NormalizeHandle(const PendingCheckpoint& p, SubtaskIndex subtask,
                         KeyGroupsStateHandle* h) const;
  // The incremental parts of an ack: allowed by the trigger, valid (Validate's rules), names
  // consistent with the registry.
  Status CheckIncrementalAck(const PendingCheckpoint& p, const SubtaskCheckpointState& s) const;
  // OK when every shared file the metadata names is in the shared directory with its size.
  Status CheckSharedFilesExist(const CheckpointMetadata& m) const;
  void Complete(int64_t id, int64_t now_ms, std::vector<Outgoing>* out);
  // Deletes the shared files `ack` names that the registry does not hold (an upload nobody
  // will reference: a late ack, an ack of an earlier attempt).
  void DeleteUnregisteredFilesOf(const AcknowledgeCheckpoint& ack, std::string_view what);
  // Whether an abort counts towards the consecutive checkpoint failures.
  enum class AbortKind { kFailure, kByJob };
  // Removes the pending checkpoint, deletes its directory, records stats, counts a kFailure,
  // notifies the subtasks (if `notify`) and runs its callback with `why`.
  void Abort(int64_t id, CheckpointState state, AbortKind kind, const Status& why, bool notify,
             int64_t now_ms, std::vector<Outgoing>* out);
  void ApplyRetention();
  // Registers a recovered checkpoint's shared files (logs when its metadata cannot be read).
  void RegisterRecovered(const CheckpointLocation& c);
  // Deletes the unrestorable checkpoints kept by RecoverCompleted (a newer one completed).
  void DeleteUnrestorable();
  void Record(CheckpointStats stats);
  void RememberFinished(int64_t id);

  const std::string job_id_;
  const JobSpec spec_;
  const AttemptNumber attempt_;
  const CheckpointConfig config_;
  const CheckpointStorage* storage_;
  const Clock* wall_clock_;
  const std::vector<KeyGroupRange> ranges_;  // by subtask index

  int64_t next_id_;
  std::map<int64_t, PendingCheckpoint> pending_;  // by id, ascending
  std::deque<CheckpointLocation> completed_;      // retained checkpoints, oldest first
  std::optional<CheckpointId> protected_;         // restored from: kept until a newer completes
  std::vector<CheckpointLocation> unrestorable_;  // corrupt, kept until a newer one completes
  SharedStateRegistry shared_;
  std::deque<CheckpointStats> history_;  // most recent first
  std::set<int64_t> recently_finished_;  // for "late ack" logs; bounded
  std::optional<int64_t> last_periodic_trigger_ms_;
  bool periodic_enabled_ = true;
  std::optional<int64_t> first_tick_ms_;
  std::optional<int64_t> last_completion_ms_;
  int32_t consecutive_failures_ = 0;
  Totals totals_;
  std::string last_failure_;
};

}  // namespace keyflow
