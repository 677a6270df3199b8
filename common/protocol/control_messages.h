// The control protocol between the coordinator (ZeroMQ ROUTER), workers and the CLI (DEALER).
//
// Every message is one ZeroMQ frame: a 4-byte little-endian protocol version, then a cereal
// binary archive of ControlMessage (a std::variant). A peer with another version is refused
// with a message that names both versions. Byte format: common/README.md "Control protocol".
//
// Lifecycle: RegisterWorker -> Registered; then per job attempt: DeployTask ->
// TaskDeployed (data endpoints bound) -> StartTask (all peers' endpoints) -> heartbeats both ways
// (WorkerHeartbeat / CoordinatorHeartbeat), AddSplits -> checkpoints (TriggerCheckpoint ->
// AcknowledgeCheckpoint | DeclineCheckpoint -> NotifyCheckpointComplete | NotifyCheckpointAborted)
// -> TaskFinished | TaskFailed -> CancelTask. Every job-scoped message carries the attempt
// number; messages from an older attempt are ignored (stale deployment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/key_group_range.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

// 2: TaskFailed.non_recoverable. 3: TriggerCheckpoint carries a CheckpointType instead of a
// savepoint bool. 4: SubmitJob carries the job library's bytes; FetchJobLibrary / JobLibraryBlob.
// 5: JobSpec carries the job's declared fields (JobSpec version 5); RegisterWorker.public_key,
// DeployTask.peer_public_keys, SubtaskMetrics.refused_data_connections (data-plane CURVE).
// 6: SubtaskMetrics.dropped_frames; ReloadKeys (an operator asks the coordinator to re-read its
// trusted keys).
// 7: SubtaskMetrics.latency / state_backend / state_bytes_*, WorkerHeartbeat.usage (issue 12
// observability, issue 11 state backends); SetLogLevelRequest / SetLogLevel.
// 8: incremental checkpoints (issue 11): KeyGroupsStateHandle.shared_files / block_file,
// IncrementalKeyedStateHandle in AcknowledgeCheckpoint and RestoreAssignment,
// TriggerCheckpoint.shared_directory / incremental; JobSpec version 7.
// 9: RescaleRequest.via (a rescale may take a checkpoint instead of a savepoint).
// 10: DeployTask.cluster_id (the worker's state directory is unique per cluster);
// WorkerExitReport (a supervisor reports how a worker process ended as soon as it did).
// 11: DeployTask.source_splits / no_more_splits (the coordinator's split enumerator assigns the
// source splits); RestoreAssignment.split_positions removed.
// 12: AddSplits (splits assigned while the job runs: a monitored directory's new files).
// 13: TaskFailed.metrics.
inline constexpr uint32_t kControlProtocolVersion = 13;
// The largest job library `keyflow run --job-library` sends (and a coordinator stores, and a
// worker fetches); a larger one is refused with a sentence before anything is sent.
inline constexpr size_t kMaxJobLibraryBytes = size_t{256} << 20;
// Larger messages are refused before decoding; every control-plane socket also sets this as its
// ZeroMQ maximum message size (ControlPlaneSocketOptions, common/transport/control_plane.h).
// A job library plus room for the rest of the message.
inline constexpr size_t kMaxControlMessageBytes = kMaxJobLibraryBytes + (size_t{16} << 20);

// ---- shared pieces --------------------------------------------------------------------------

// Upper bounds (microseconds, inclusive) of the latency histogram's buckets; one more bucket
// (+Inf) follows the last. A 1-2.5-5 series from 50 us to 60 s: Prometheus `le` labels.
inline constexpr int64_t kLatencyBucketBoundsUs[] = {
    50,        100,       250,        500,        1'000,     2'500,   5'000,
    10'000,    25'000,    50'000,     100'000,    250'000,   500'000, 1'000'000,
    2'500'000, 5'000'000, 10'000'000, 30'000'000, 60'000'000};
inline constexpr size_t kLatencyBuckets = std::size(kLatencyBucketBoundsUs) + 1;

// Latency as a user feels it (issue 12): from a record's arrival at its source subtask to the
// moment the keyed function has processed it, sampled (latency markers, worker/README.md
// "Latency"). Cumulative since the subtask's attempt started (Prometheus histogram semantics),
// plus quantiles over a recent window.
struct LatencySummary {
  std::vector<uint64_t> bucket_counts;  // kLatencyBuckets entries (or empty: no samples yet);
                                        // bucket i counts samples <= kLatencyBucketBoundsUs[i],
                                        // not cumulative across buckets
  uint64_t count = 0;                   // samples since the attempt started
  int64_t sum_us = 0;                   // their sum
  // Over the recent window (the last ~10 s of samples); -1 when the window has no sample.
  int64_t p50_us = -1;
  int64_t p99_us = -1;
  int64_t p999_us = -1;
  template <class A>
  void serialize(A& ar) {
    ar(bucket_counts, count, sum_us, p50_us, p99_us, p999_us);
  }
};

// Resource usage of a worker process (from /proc/self), sent with its heartbeats.
struct ProcessUsage {
  int64_t rss_bytes = 0;
  int64_t cpu_user_ms = 0;    // since the process started
  int64_t cpu_system_ms = 0;  // since the process started
  int64_t open_fds = 0;
  template <class A>
  void serialize(A& ar) {
    ar(rss_bytes, cpu_user_ms, cpu_system_ms, open_fds);
  }
};

// Live numbers of one subtask, sent with heartbeats and shown by `keyflow status`.
struct SubtaskMetrics {
  int64_t records_in = 0;                 // read by the source subtask
  int64_t records_processed = 0;          // processed by the keyed subtask
  int64_t records_out = 0;                // emitted to the sink
  int64_t bad_records = 0;                // malformed input lines
  int64_t late_records = 0;               // behind the watermark
  int64_t current_watermark = INT64_MIN;  // keyed subtask's event-time clock
  int64_t source_watermark = INT64_MIN;   // what the source subtask emitted last
  double backpressure = 0;  // fraction of time the source was blocked on sending [0, 1]
  int64_t state_keys = 0;
  int64_t timers = 0;
  bool source_finished = false;
  int64_t restore_bytes = 0;  // state file bytes read when this attempt restored
  // Worker-wide, not per subtask: data-plane connections its ZAP handler refused since it
  // started (a key that is not the sending peer's of the current deployment).
  int64_t refused_data_connections = 0;
  // Data frames the keyed subtask's input channels dropped: not keyflow frames (another program
  // writing to its data ports) or damaged ones (worker/README.md, "Data plane").
  int64_t dropped_frames = 0;
  LatencySummary latency;          // keyed subtask: source arrival -> processed (issue 12)
  std::string state_backend;       // "heap" | "rocksdb" ("" before the keyed task runs)
  int64_t state_bytes_memory = 0;  // keyed state held in memory (estimate)
  int64_t state_bytes_disk = 0;    // keyed state on local disk (RocksDB files; 0 for heap)
  template <class A>
  void serialize(A& ar) {
    ar(records_in, records_processed, records_out, bad_records, late_records, current_watermark,
       source_watermark, backpressure, state_keys, timers, source_finished, restore_bytes,
       refused_data_connections, dropped_frames, latency, state_backend, state_bytes_memory,
       state_bytes_disk);
  }
};

// A file of an incremental checkpoint in the job's shared directory (<job dir>/shared/NAME;
// Flink's shared state of an IncrementalRemoteKeyedStateHandle). It is written once, by the
// checkpoint that first needs it, and referenced by every later checkpoint that still needs it;
// the coordinator's SharedStateRegistry deletes it when no retained checkpoint references it.
// Names are unique per upload (a writer never overwrites a shared file).
struct SharedStateFile {
  std::string name;       // a plain file name: [A-Za-z0-9._-]+, no '/', not "." or ".."
  uint64_t size = 0;      // bytes
  uint64_t checksum = 0;  // XXH3-64 of the whole file
  template <class A>
  void serialize(A& ar) {
    ar(name, size, checksum);
  }
};

// A file of a snapshot that belongs to one checkpoint only (its own directory; e.g. RocksDB's
// MANIFEST, CURRENT and OPTIONS files of an incremental snapshot).
struct PrivateStateFile {
  std::string path;  // relative to the checkpoint directory (CheckRelativePath)
  uint64_t size = 0;
  uint64_t checksum = 0;  // XXH3-64 of the whole file
  template <class A>
  void serialize(A& ar) {
    ar(path, size, checksum);
  }
};

// One subtask's keyed-state snapshot in the canonical per-key-group format (Flink's
// KeyGroupsStateHandle): every key group's block (keyed state and timers sections, format:
// state/snapshot/keyed_snapshot_format.h) with its offset in the file that holds it.
//
// Full snapshot (shared_files empty): every block is in `path`, a file in the checkpoint
// directory.
// Key-group-incremental snapshot (shared_files non-empty): `path` is empty and the block of key
// group range.start() + i is in shared_files[block_file[i]] at offsets[i] / lengths[i]. Blocks of
// key groups changed since the subtask's last completed checkpoint are in a new shared file
// written by this checkpoint; the others are referenced where an earlier checkpoint wrote them.
// `size` and `checksum` then describe the new file (0 when nothing changed).
struct KeyGroupsStateHandle {
  std::string path;  // relative to the checkpoint directory; empty for a key-group-incremental one
  uint64_t size = 0;
  uint64_t checksum = 0;  // index checksum of the snapshot file
  KeyGroupRange range;
  std::vector<uint64_t> offsets;              // per key group of range, byte offset of its block
  std::vector<uint64_t> lengths;              // per key group of range, byte length of its block
  std::vector<uint64_t> keys;                 // per key group: keys with state
  std::vector<uint64_t> timers;               // per key group: timers
  std::vector<SharedStateFile> shared_files;  // key-group-incremental only (see above)
  std::vector<uint32_t> block_file;           // per key group: index into shared_files
  bool incremental() const { return !shared_files.empty(); }
  template <class A>
  void serialize(A& ar) {
    ar(path, size, checksum, range, offsets, lengths, keys, timers, shared_files, block_file);
  }
};

// One subtask's keyed state in a backend's native incremental format (Flink's
// IncrementalRemoteKeyedStateHandle): for "rocksdb", the SST files of a RocksDB checkpoint in
// the shared directory (an SST file an earlier completed checkpoint already uploaded is
// referenced, not written again) plus the DB's private files (MANIFEST, CURRENT, OPTIONS) in
// the checkpoint directory. When a subtask's keyed state is in such a handle, its
// KeyGroupsStateHandle holds only the timers section (timers stay on the heap).
// Format of the native part: state/rocksdb/README.md; `format_version` is checked on restore.
struct IncrementalKeyedStateHandle {
  std::string backend;  // "rocksdb"
  uint32_t format_version = 1;
  // The backend instance that wrote it (a UUID): only the same instance reuses its files as
  // the base of its next checkpoint (Flink's backendIdentifier).
  std::string backend_id;
  KeyGroupRange range;                        // key groups whose state the files hold
  std::vector<SharedStateFile> shared_files;  // every SST file the snapshot consists of
  std::vector<PrivateStateFile> private_files;
  // Key groups' key counts are in the KeyGroupsStateHandle; this is the total (inspection).
  uint64_t total_keys = 0;
  template <class A>
  void serialize(A& ar) {
    ar(backend, format_version, backend_id, range, shared_files, private_files, total_keys);
  }
};

// ---- worker -> coordinator ------------------------------------------------------------------

struct RegisterWorker {
  std::string hostname;
  int64_t pid = 0;
  std::string data_host;  // address peers use to reach this worker's data endpoints
  int32_t slot = -1;      // preferred slot (respawned worker), -1 = any
  // Set by a supervisor that restarted this worker (scripts/lib/worker-supervisor.sh): how the
  // previous process of this slot ended ("killed by signal 9 (SIGKILL ...)", "exit code 3") and
  // its pid. A registration naming the pid of the slot's current holder takes the slot over at
  // once; the coordinator attaches `previous_exit` to the failure of the attempt that lost it.
  std::string previous_exit;
  int64_t previous_pid = 0;
  // This worker's CURVE public key (Z85; "" when --insecure). Its data sockets use it; a secure
  // coordinator checks it is the key of the connection's authenticated identity and hands it to
  // the worker's peers in DeployTask.peer_public_keys.
  std::string public_key;
  template <class A>
  void serialize(A& ar) {
    ar(hostname, pid, data_host, slot, previous_exit, previous_pid, public_key);
  }
};

struct WorkerHeartbeat {
  WorkerId worker;
  AttemptNumber attempt;  // current deployment, 0 if idle
  SubtaskMetrics metrics;
  ProcessUsage usage;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, metrics, usage);
  }
};

struct TaskDeployed {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  std::vector<std::string> input_endpoints;  // [i] = endpoint for source subtask i
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask, input_endpoints);
  }
};

struct TaskFinished {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  SubtaskMetrics metrics;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask, metrics);
  }
};

struct TaskFailed {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  std::string reason;
  // Set when restoring checkpoint N failed because one of its files is corrupted or truncated:
  // the coordinator then falls back to the previous completed checkpoint.
  CheckpointId corrupted_checkpoint{0};
  // Retrying cannot help (the input was deleted or cannot be read): the coordinator fails the
  // job at once, whatever the restart strategy.
  bool non_recoverable = false;
  // The subtask's counters when it failed (records processed up to the failing one), so the
  // job's counters do not lose what the attempt did since the last heartbeat.
  SubtaskMetrics metrics;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask, reason, corrupted_checkpoint, non_recoverable, metrics);
  }
};

// The subtask restored its state (if any) and processes records: the job is "processing again".
struct TaskRunning {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  int64_t restore_ms = 0;
  int64_t restore_bytes = 0;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask, restore_ms, restore_bytes);
  }
};

// With checkpointing on, a subtask whose input ended keeps its results pending until a
// checkpoint taken after the end completes (the final checkpoint); this tells the coordinator
// to take it.
struct TaskInputEnded {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask);
  }
};

struct AcknowledgeCheckpoint {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  CheckpointId checkpoint;
  KeyGroupsStateHandle keyed_state;
  // The keyed state in the backend's native incremental format (keyed_state then holds only
  // the timers); absent for a full or key-group-incremental snapshot.
  std::optional<IncrementalKeyedStateHandle> native_state;
  std::map<std::string, std::string> split_positions;  // split id -> encoded position
  std::vector<std::string> sink_committables;          // encoded, see worker/sinks
  int64_t sync_duration_us = 0;
  int64_t async_duration_us = 0;
  int64_t alignment_duration_us = 0;
  // Bytes this checkpoint wrote for the subtask (new files: its own and new shared ones); the
  // rest of the state it references is in files of earlier checkpoints. Equals
  // keyed_state.size for a full snapshot.
  uint64_t written_bytes = 0;
  // The subtask's counters when it acknowledged: a savepoint that ends an attempt (rescale,
  // stop) then counts every record read before its barrier, which heartbeats may not have yet.
  SubtaskMetrics metrics;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask, checkpoint, keyed_state, native_state, split_positions,
       sink_committables, sync_duration_us, async_duration_us, alignment_duration_us, written_bytes,
       metrics);
  }
};

struct DeclineCheckpoint {
  WorkerId worker;
  AttemptNumber attempt;
  SubtaskIndex subtask;
  CheckpointId checkpoint;
  std::string reason;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, subtask, checkpoint, reason);
  }
};

// A worker that exits because of an error it caught says why before it goes, so the
// coordinator reports the reason instead of a heartbeat timeout.
struct WorkerExiting {
  WorkerId worker;
  std::string reason;
  template <class A>
  void serialize(A& ar) {
    ar(worker, reason);
  }
};

// How a worker process ended, reported by its supervisor as soon as it noticed
// (scripts/lib/worker-supervisor.sh runs `keyflow-worker ... --report-exit HOW --previous-pid P`,
// which connects with the worker's own key, sends this, waits for the Reply and exits), so the
// report does not wait for the supervisor's restart delay. A worker still registered as
// `hostname`/`pid` (same key; same address when insecure) is lost at once with "its process
// ended: HOW"; otherwise HOW is appended to the job's failure that names that process (as for
// RegisterWorker::previous_exit, which the restarted process still sends: the coordinator
// attaches a note once). Answered with a Reply.
struct WorkerExitReport {
  std::string hostname;
  int64_t pid = 0;    // the process that ended
  int32_t slot = -1;  // its --slot (-1: none), for the log
  std::string how;    // "died of SIGSEGV while ...", "out of memory: ...", "exit code 3"
  template <class A>
  void serialize(A& ar) {
    ar(hostname, pid, slot, how);
  }
};

// A DeployTask names a job library (spec.job_library) this worker's cache does not hold (or
// holds damaged): the worker asks the coordinator's blob store for its bytes (Flink's BlobCache
// fetching from the BlobServer) and deploys once JobLibraryBlob arrived.
struct FetchJobLibrary {
  WorkerId worker;
  AttemptNumber attempt;
  std::string sha256;
  template <class A>
  void serialize(A& ar) {
    ar(worker, attempt, sha256);
  }
};

// ---- coordinator -> worker ------------------------------------------------------------------

// The answer to RegisterWorker. `refused` non-empty: the registration was refused (the slot
// is held by a live worker) and `refused` is the sentence to log; the worker retries for a
// while (its predecessor may just have died) and then exits non-zero.
struct Registered {
  WorkerId worker;
  int32_t slot = 0;
  int64_t heartbeat_interval_ms = 0;
  int64_t heartbeat_timeout_ms = 0;
  std::string refused;
  template <class A>
  void serialize(A& ar) {
    ar(worker, slot, heartbeat_interval_ms, heartbeat_timeout_ms, refused);
  }
};

// What a subtask restores from (Flink's StateAssignmentOperation result for one subtask).
struct RestoreAssignment {
  CheckpointId checkpoint;
  std::string checkpoint_dir;                     // absolute path of chk-<n> / savepoint
  std::vector<KeyGroupsStateHandle> keyed_state;  // old subtasks' files intersecting my range
  // Native incremental handles (RocksDB) of old subtasks intersecting my range, in the same
  // order as their keyed_state entries (which then hold their timers).
  std::vector<IncrementalKeyedStateHandle> native_state;
  // Absolute directory the shared files of the handles are in (<job dir>/shared of the job
  // that took the checkpoint); empty when no handle references a shared file.
  std::string shared_dir;
  std::vector<std::string> sink_committables;  // the ones this subtask (re-)commits
  std::string sink_directory;  // output directory of the job that took the checkpoint
  template <class A>
  void serialize(A& ar) {
    ar(checkpoint, checkpoint_dir, keyed_state, native_state, shared_dir, sink_committables,
       sink_directory);
  }
};

struct DeployTask {
  AttemptNumber attempt;
  std::string job_id;
  JobSpec spec;  // parallelism and max_parallelism resolved
  SubtaskIndex subtask;
  KeyGroupRange key_groups;
  std::optional<RestoreAssignment> restore;
  // [s] = the CURVE public key of the worker that runs subtask s of this attempt (its source
  // subtask sends on channel s of every input gate; its input gate receives what every source
  // sends to keyed subtask s). Empty on an insecure cluster. The worker's data-plane ZAP policy
  // admits on channel (this subtask, s) only key [s]; its output channel to keyed subtask j pins
  // key [j].
  std::vector<std::string> peer_public_keys;
  // The coordinator's incarnation: names the worker's local state directory of this deployment
  // (<state root>/<cluster_id>/<job>/attempt-<n>/subtask-<i>), so that clusters never share one.
  std::string cluster_id;
  // The splits this source subtask reads, each an encoded SourceSplitState (split and the
  // position to start from), as the coordinator's split enumerator assigned them; and whether
  // more may come (false: the source ends once these do).
  std::vector<std::string> source_splits;
  bool no_more_splits = true;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, job_id, spec, subtask, key_groups, restore, peer_public_keys, cluster_id,
       source_splits, no_more_splits);
  }
};

struct StartTask {
  AttemptNumber attempt;
  // [j][i] = endpoint of keyed subtask j for source subtask i.
  std::vector<std::vector<std::string>> input_endpoints;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, input_endpoints);
  }
};

struct CoordinatorHeartbeat {
  AttemptNumber attempt;
  template <class A>
  void serialize(A& ar) {
    ar(attempt);
  }
};

// What a triggered checkpoint is for. Only a kFinal checkpoint (triggered once every subtask
// reported TaskInputEnded) makes a subtask commit its last results and finish when it
// completes; a kCheckpoint taken after the end of input only commits the pending files.
enum class CheckpointType : uint8_t { kCheckpoint = 0, kSavepoint = 1, kFinal = 2 };
// "checkpoint", "savepoint", "final" (logs, JSON).
std::string_view CheckpointTypeName(CheckpointType t);

struct TriggerCheckpoint {
  AttemptNumber attempt;
  CheckpointId checkpoint;
  int64_t timestamp_ms = 0;
  CheckpointType type = CheckpointType::kCheckpoint;
  std::string directory;  // absolute directory the subtask writes its files into
  // true: the subtask may write an incremental snapshot (JobSpec::incremental_checkpoints and
  // not a savepoint), new shared files into `shared_directory` (absolute, <job dir>/shared,
  // created by the coordinator), referencing files of its last completed checkpoint.
  bool incremental = false;
  std::string shared_directory;
  bool savepoint() const { return type == CheckpointType::kSavepoint; }
  template <class A>
  void serialize(A& ar) {
    ar(attempt, checkpoint, timestamp_ms, type, directory, incremental, shared_directory);
    // Decoded bytes come from outside: the enum must hold one of its values.
    if constexpr (A::is_loading::value) {
      if (static_cast<uint8_t>(type) > static_cast<uint8_t>(CheckpointType::kFinal)) {
        throw cereal::Exception("the checkpoint trigger has an unknown checkpoint type " +
                                std::to_string(static_cast<int>(type)));
      }
    }
  }
};

// Coordinator -> worker, while the attempt runs: more splits for the source subtask, each an
// encoded SourceSplitState (as DeployTask::source_splits). Sent on the channel that carries the
// checkpoint triggers, so a checkpoint triggered after it covers these splits.
struct AddSplits {
  AttemptNumber attempt;
  SubtaskIndex subtask;
  std::vector<std::string> splits;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, subtask, splits);
  }
};

struct NotifyCheckpointComplete {
  AttemptNumber attempt;
  CheckpointId checkpoint;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, checkpoint);
  }
};

struct NotifyCheckpointAborted {
  AttemptNumber attempt;
  CheckpointId checkpoint;
  std::string reason;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, checkpoint, reason);
  }
};

// The coordinator does not know this worker (it restarted, or declared the worker lost):
// register again.
struct RegisterAgain {
  template <class A>
  void serialize(A&) {}
};

struct CancelTask {
  AttemptNumber attempt;
  std::string reason;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, reason);
  }
};

// The answer to FetchJobLibrary: the stored bytes (verified by the coordinator; the worker
// verifies them again against sha256), or `error` (a sentence) when the blob store cannot
// produce them.
struct JobLibraryBlob {
  AttemptNumber attempt;
  std::string sha256;
  std::string bytes;
  std::string error;
  template <class A>
  void serialize(A& ar) {
    ar(attempt, sha256, bytes, error);
  }
};

// ---- CLI <-> coordinator --------------------------------------------------------------------

struct SubmitJob {
  JobSpec spec;
  // The job library's bytes when spec.job_library is not the default one (at most
  // kMaxJobLibraryBytes); the coordinator verifies them against spec.job_library.sha256 and
  // stores them in its blob store. May be empty when the blob store already holds that hash.
  std::string job_library_bytes;
  template <class A>
  void serialize(A& ar) {
    ar(spec, job_library_bytes);
  }
};

struct StatusRequest {
  template <class A>
  void serialize(A&) {}
};

struct CancelJob {
  template <class A>
  void serialize(A&) {}
};

struct CheckpointRequest {
  bool savepoint = false;
  std::string directory;  // savepoint target; empty = <checkpoint dir>/<job>/savepoint-<n>
  template <class A>
  void serialize(A& ar) {
    ar(savepoint, directory);
  }
};

// Stop-with-savepoint (Flink's `flink stop`): a savepoint, then the job is canceled, so no
// result is committed after the savepoint.
struct StopJob {
  std::string directory;  // savepoint target; empty = <checkpoint dir>/<job>/savepoint-<n>
  template <class A>
  void serialize(A& ar) {
    ar(directory);
  }
};

struct ListCheckpointsRequest {
  template <class A>
  void serialize(A&) {}
};

// `keyflow keys reload` (operators only): re-read the trusted keys of --keys DIR (like SIGHUP).
// Keys no longer there are revoked: their new connections are refused and their registered
// workers are dropped. The Reply says how many keys are trusted now, or why the old set is kept.
struct ReloadKeys {
  template <class A>
  void serialize(A&) {}
};

// An operator changes the log level at run time (`keyflow log-level`, REST PUT
// /api/v1/logging): the coordinator's own, and with `workers` every registered worker's
// (SetLogLevel). `level`: trace|debug|info|warn|error; anything else is refused.
struct SetLogLevelRequest {
  std::string level;
  bool workers = true;
  template <class A>
  void serialize(A& ar) {
    ar(level, workers);
  }
};

// coordinator -> worker: set the process's log level (a validated level name).
struct SetLogLevel {
  std::string level;
  template <class A>
  void serialize(A& ar) {
    ar(level);
  }
};

struct RescaleRequest {
  int32_t new_parallelism = 0;
  bool plan_only = false;
  int64_t wait_for_workers_ms = 30'000;  // until P' workers are registered; then refused
  // What the rescale restores from (`keyflow rescale --via`): kAuto is a checkpoint of the
  // job's own kind with --state-backend rocksdb (native, incremental), a savepoint with heap.
  enum class Via : uint8_t { kAuto = 0, kCheckpoint = 1, kSavepoint = 2 };
  Via via = Via::kAuto;
  template <class A>
  void serialize(A& ar) {
    ar(new_parallelism, plan_only, wait_for_workers_ms, via);
  }
};

// Generic reply to CLI requests: ok + human text + machine-readable JSON.
struct Reply {
  bool ok = false;
  std::string message;  // a sentence for the user (error or summary)
  std::string json;     // structured payload (status, checkpoint list, plan), may be empty
  // Why a refusal (ok == false) was refused: the Status code of the error (the REST API maps it
  // to an HTTP status). kOk on a refusal means "not classified" (treated as FailedPrecondition).
  StatusCode code = StatusCode::kOk;
  template <class A>
  void serialize(A& ar) {
    ar(ok, message, json, code);
  }
};

using ControlMessage = std::variant<
    RegisterWorker, WorkerHeartbeat, TaskDeployed, TaskFinished, TaskFailed, TaskInputEnded,
    TaskRunning, AcknowledgeCheckpoint, DeclineCheckpoint, Registered, DeployTask, StartTask,
    CoordinatorHeartbeat, TriggerCheckpoint, NotifyCheckpointComplete, NotifyCheckpointAborted,
    CancelTask, RegisterAgain, SubmitJob, StatusRequest, CancelJob, StopJob, CheckpointRequest,
    ListCheckpointsRequest, RescaleRequest, Reply, WorkerExiting, FetchJobLibrary, JobLibraryBlob,
    ReloadKeys, SetLogLevelRequest, SetLogLevel, WorkerExitReport, AddSplits>;

// Encodes version + message.
std::string EncodeControlMessage(const ControlMessage& msg);
// Decodes; a wrong version or malformed bytes give a Status naming `peer`. Never allocates more
// than a small multiple of bytes.size() (every length field is checked against the bytes left),
// refuses messages above kMaxControlMessageBytes and trailing bytes.
Result<ControlMessage> DecodeControlMessage(std::string_view bytes, std::string_view peer);

// Name of the message type, for logs ("DeployTask").
std::string_view ControlMessageName(const ControlMessage& msg);

}  // namespace keyflow
