// WorkerProcess: the control side of a keyflow worker. Registers with the
// coordinator (retrying with backoff while it is unreachable), exchanges heartbeats, deploys /
// starts / cancels the subtask the coordinator assigns (TaskExecutor), and reports its end.
// If the coordinator stops answering for longer than its heartbeat timeout, the worker cancels
// its subtask and registers again (a restarted coordinator resumes the job). A deployment of a
// job library this worker has not cached waits for its bytes from the coordinator
// (FetchJobLibrary -> JobLibraryBlob) and stores them in the JobLibraryCache first.
//
// Threading: Run() on the main thread; task threads report back through a mailbox.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/job_library/job_library_cache.h"
#include "common/protocol/control_messages.h"
#include "common/transport/process_security.h"
#include "common/transport/zap_authenticator.h"
#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"
#include "worker/runtime/task_mailbox.h"
#include "worker/shuffle/data_plane_authorizer.h"
#include "worker/task/task_executor.h"

namespace keyflow {

struct WorkerOptions {
  std::string coordinator = "tcp://127.0.0.1:6123";
  int32_t slot = -1;  // -1: the coordinator picks one
  TaskExecutorOptions data;
  std::string hostname;
  // From the supervisor that restarted this worker (--previous-exit / --previous-pid): how the
  // previous process of this slot ended; sent with the first registration.
  std::string previous_exit;
  int64_t previous_pid = 0;
  // --keys / --key-name / --insecure (common/transport/process_security.h): this worker's key,
  // the coordinator's public key. Secure: the data plane runs CURVE too (data.curve_keys is set
  // from `own`), and the process runs one ZapAuthenticator on `zmq` whose DataPlaneAuthorizer
  // admits on each input channel only the key of the worker running its source subtask.
  ProcessSecurity security;
};

class WorkerProcess {
 public:
  static Result<std::unique_ptr<WorkerProcess>> Create(WorkerOptions options, ZmqContext* zmq,
                                                       const Clock* clock);
  ~WorkerProcess();

  // Runs until `stop_fd` (a SignalWaiter's) is readable. An error return (after which the
  // process should exit non-zero) was first reported to the coordinator (WorkerExiting) if it
  // could be. A registration refused for longer than kRefusedGiveUpMs (the slot is held by a
  // live worker) ends Run with that sentence.
  Status Run(int stop_fd);

  // Data-plane handshakes refused so far (0 when insecure).
  int64_t refused_data_connections() const;

 private:
  WorkerProcess() = default;
  void Send(const ControlMessage& msg);
  // The worker's heartbeat: the running subtask's counters and the process's usage.
  void SendHeartbeat();
  void Handle(const ControlMessage& msg, int64_t now);
  void OnDeploy(const DeployTask& d);
  void OnJobLibraryBlob(const JobLibraryBlob& blob);
  void Deploy(const DeployTask& d);
  void FailDeploy(const DeployTask& d, const Status& why);
  void OnTaskDone(AttemptNumber attempt, const Status& s, CheckpointId corrupted);
  void DropExecutor();
  void Tick(int64_t now);
  Status RunLoop(int stop_fd);

  WorkerOptions options_;
  ZmqContext* zmq_ = nullptr;
  const Clock* clock_ = nullptr;
  // Secure mode only. Declared before every socket member so that it outlives them (the ZAP
  // handler must outlive every CURVE server socket: the executor's input channels).
  std::unique_ptr<DataPlaneAuthorizer> data_authorizer_;
  std::unique_ptr<ZapAuthenticator> zap_;
  std::optional<ZmqSocket> socket_;
  std::unique_ptr<TaskMailbox> mailbox_;  // task threads -> control thread
  std::unique_ptr<TaskExecutor> executor_;
  std::unique_ptr<JobLibraryCache> job_libraries_;
  // A deployment waiting for its job library's bytes (FetchJobLibrary sent).
  std::optional<DeployTask> awaiting_library_;
  // The subtask this worker ran last and its attempt, kept after it ended: a checkpoint of that
  // attempt triggered later is declined in its name (the coordinator must not wait for it).
  AttemptNumber ended_attempt_{0};
  SubtaskIndex ended_subtask_{-1};

  bool registered_ = false;
  WorkerId worker_id_{0};
  int32_t slot_ = -1;
  int64_t heartbeat_interval_ms_ = 200;
  int64_t heartbeat_timeout_ms_ = 1000;
  int64_t last_from_coordinator_ms_ = 0;
  int64_t next_register_ms_ = 0;
  int64_t register_backoff_ms_ = 100;
  int64_t unreachable_since_ms_ = 0;
  int64_t last_unreachable_log_ms_ = 0;
  int64_t next_heartbeat_ms_ = 0;
  int64_t refused_since_ms_ = 0;  // registrations refused since then (slot taken)
  Status fatal_;                  // set: Run ends with it
};

}  // namespace keyflow
