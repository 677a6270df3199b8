// TaskExecutor: one deployed subtask on a worker — its source task, keyed task, their threads,
// and the steps the coordinator drives:
//   Deploy  (DeployTask)  validates the job, binds the input channels (their endpoints go back
//                         to the coordinator), restores split positions and recovers the sink
//                         when restoring, prepares operator and sink;
//   Start   (StartTask)   connects the output channels to every keyed subtask and starts both
//                         task threads (the keyed one restores its state first);
//   TriggerCheckpoint     asks the source for its positions + barrier and announces the
//                         checkpoint to the keyed task; when both parts are in, acknowledges
//                         (or declines) to the coordinator;
//   AddSplits             hands the source more splits (a monitored directory's new files);
//   Notify...             forwards completion / abort to the keyed task (sink commit);
//   Cancel                stops both threads and joins them (idempotent; the destructor too).
// When both tasks end, or the first one fails, hooks.done runs once on the control thread.
//
// Threading: every public method on the worker's control thread; task threads reach it only
// through hooks.run_on_control_thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/input/source_split.h"
#include "common/job_library/job_library_cache.h"
#include "common/mutex.h"
#include "common/protocol/control_messages.h"
#include "common/security/curve_keys.h"
#include "common/transport/zmq_context.h"
#include "worker/task/keyed_task.h"
#include "worker/task/source_task.h"
#include "worker/task/state_directory.h"
#include "worker/task/task_metrics.h"

namespace keyflow {

class DataPlaneAuthorizer;
class JobLibrary;

struct TaskExecutorOptions {
  std::string bind_host = "0.0.0.0";          // data sockets bind here
  std::string advertised_host = "127.0.0.1";  // peers connect here
  // keyflow-worker --cache-dir: where shipped job libraries are cached; the executor loads
  // ResolveJobLibraryPath(spec.job_library, job_library_cache_dir)
  // (common/job_library/job_library_cache.h).
  std::string job_library_cache_dir = kDefaultJobLibraryCacheDir;
  // Secure data plane (--keys): this worker's key pair. With a secret key set, the input gate's
  // channels are CURVE servers (the worker process runs the ZapAuthenticator that admits the
  // deployment's senders, worker/shuffle/data_plane_authorizer.h) and the output channels CURVE
  // clients pinning DeployTask::peer_public_keys. Empty (--insecure): plain TCP.
  CurveKeyPair curve_keys;
  // Secure data plane: the worker's authorizer, where the input gate counts the handshakes of
  // clients without CURVE (InputGateOptions::authorizer). Not owned.
  DataPlaneAuthorizer* data_authorizer = nullptr;
  // keyflow-worker --state-dir, absolute: the root of the RocksDB working state of jobs that
  // name no --state-dir of their own (worker/task/state_directory.h). Empty: the working
  // directory's keyflow-state.
  std::string state_root;
};

struct TaskExecutorHooks {
  // Runs `fn` later on the control thread (any thread may call it).
  std::function<void(std::function<void()>)> run_on_control_thread;
  // Sends a message to the coordinator (control thread only).
  std::function<void(const ControlMessage&)> send;
  // The subtask ended: OK or its failure (control thread). `corrupted_checkpoint` is set when
  // restoring that checkpoint failed on a corrupted file.
  std::function<void(Status, CheckpointId corrupted_checkpoint)> done;
};

class TaskExecutor {
 public:
  static Result<std::unique_ptr<TaskExecutor>> Deploy(const DeployTask& deployment, WorkerId worker,
                                                      ZmqContext* zmq,
                                                      const TaskExecutorOptions& options,
                                                      const Clock* clock, TaskExecutorHooks hooks);
  ~TaskExecutor();

  // [i] = endpoint source subtask i connects to.
  std::vector<std::string> input_endpoints() const { return gate_endpoints_; }
  Status Start(const StartTask& start);
  void TriggerCheckpoint(const TriggerCheckpoint& trigger);
  // More splits for the source (ordered with TriggerCheckpoint); an unreadable one fails it.
  void AddSplits(const AddSplits& m);
  void NotifyCheckpointComplete(CheckpointId id);
  void NotifyCheckpointAborted(CheckpointId id, const std::string& reason);
  void Cancel();

  AttemptNumber attempt() const { return deployment_.attempt; }
  SubtaskIndex subtask() const { return deployment_.subtask; }
  // The keyed task failed to restore a snapshot this build cannot read (KeyedTask).
  bool restore_unreadable() const { return keyed_ && keyed_->restore_unreadable(); }
  SubtaskMetrics Metrics() const { return metrics_.Snapshot(clock_->Now()); }

 private:
  TaskExecutor() = default;
  void TaskEnded(const Status& s);
  // Control thread: one part of an acknowledgement arrived.
  void SourcePartDone(CheckpointId id, Result<std::map<std::string, std::string>> positions);
  void KeyedPartDone(CheckpointId id, Result<KeyedCheckpointPart> part);
  void MaybeAcknowledge(CheckpointId id);
  void Decline(CheckpointId id, const std::string& reason);
  // Wraps `fn` so it runs on the control thread, and only while this executor lives.
  std::function<void()> OnControlThread(std::function<void()> fn);

  struct PendingAck {
    AcknowledgeCheckpoint ack;
    bool source_done = false;
    bool keyed_done = false;
  };

  DeployTask deployment_;
  WorkerId worker_{0};
  ZmqContext* zmq_ = nullptr;
  const Clock* clock_ = nullptr;
  TaskExecutorHooks hooks_;
  std::shared_ptr<TaskExecutor*> self_;  // nulled on destruction; posted closures check it
  std::vector<SourceSplitState> splits_;
  // The job's library: its function's and, for --input connector:..., its source's.
  std::shared_ptr<const JobLibrary> library_;
  std::vector<std::string> gate_endpoints_;
  CurveKeyPair curve_keys_;                    // TaskExecutorOptions::curve_keys
  std::unique_ptr<StateDirectory> state_dir_;  // RocksDB jobs; outlives keyed_
  std::unique_ptr<KeyedTask> keyed_;
  std::unique_ptr<SourceTask> source_;
  // A graph job's operators before its KeyBy, made at Deploy, handed to the source at Start.
  std::unique_ptr<RecordChain> chain_;
  std::atomic<bool> cancelled_{false};
  TaskMetrics metrics_;
  std::thread source_thread_;
  std::thread keyed_thread_;
  std::map<int64_t, PendingAck> pending_acks_;  // control thread
  Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool reported_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace keyflow
