#include "coordinator/coordinator.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <random>

#include "common/check.h"
#include "common/file_io.h"
#include "common/input/input_spec.h"
#include "common/input/kafka_sink_spec.h"
#include "common/logging.h"
#include "coordinator/blob_store.h"
#include "coordinator/path_rules.h"
#include "coordinator/worker_key_check.h"

namespace keyflow {
namespace {

// "count-window-20261129-185959"
std::string MakeJobId(const std::string& name, Timestamp now) {
  std::time_t secs = static_cast<std::time_t>(now.millis() / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return name + "-" + buf;
}

// "1764442799000-9f3c0e1a2b4d5e6f": start time and 64 random bits, new per process start.
std::string NewIncarnation(const Clock* wall_clock) {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) | rd();
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%" PRId64 "-%016" PRIx64, wall_clock->Now().millis(), r);
  return buf;
}

// Savepoint directories without `_metadata` (never completed; a coordinator restart aborted
// them): the job directory's savepoint-<n> and the user-given targets of pending commands.
void CleanAbortedSavepoints(const CheckpointStorage& storage, const JobRecord& record) {
  std::vector<std::string> dirs;
  const std::string job_dir = storage.JobDirectory(record.job_id);
  if (auto names = ListDirectory(job_dir); names.ok()) {
    for (const std::string& n : *names) {
      if (n.rfind("savepoint-", 0) == 0) dirs.push_back(job_dir + "/" + n);
    }
  }
  for (const JobCommand& c : record.pending_commands) {
    if (!c.directory.empty()) dirs.push_back(c.directory);
  }
  for (const std::string& dir : dirs) {
    if (!PathExists(dir) || PathExists(CheckpointStorage::MetadataPath(dir))) continue;
    Status s = storage.DeleteCheckpoint(dir);
    if (s.ok()) {
      KF_LOG_WARN("deleted {}: a savepoint the coordinator restart aborted (it has no _metadata)",
                  dir);
      continue;
    }
    Status marked = WriteFileAtomically(
        dir + "/_ABORTED",
        "this savepoint was aborted by a coordinator restart and never completed (no "
        "_metadata); it cannot be restored: delete this directory\n");
    KF_LOG_WARN("cannot delete {}, a savepoint the coordinator restart aborted ({}); {}", dir,
                s.message(),
                marked.ok() ? "marked it with an _ABORTED file" : "could not mark it either");
  }
}

// workers[].usage of the status: the worker process's latest resource usage (zeros: none yet).
nlohmann::json WorkerUsageJson(const WorkerInfo& w) {
  return {{"rss_bytes", w.usage.rss_bytes},
          {"cpu_seconds", static_cast<double>(w.usage.cpu_user_ms + w.usage.cpu_system_ms) / 1e3},
          {"cpu_user_seconds", static_cast<double>(w.usage.cpu_user_ms) / 1e3},
          {"cpu_system_seconds", static_cast<double>(w.usage.cpu_system_ms) / 1e3},
          {"cpu_percent", w.cpu_percent},
          {"open_fds", w.usage.open_fds}};
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, ControlOutbox* outbox, const Clock* wall_clock)
    : options_(std::move(options)),
      outbox_(outbox),
      wall_clock_(wall_clock),
      // A slot holder that missed two heartbeats may be replaced by a new registration.
      workers_(options_.heartbeat_timeout_ms,
               std::min(options_.heartbeat_timeout_ms, 2 * options_.heartbeat_interval_ms)),
      incarnation_(options_.incarnation.empty() ? NewIncarnation(wall_clock)
                                                : options_.incarnation),
      peer_errors_(LogRateLimiterOptions{.clock = wall_clock}),
      junk_replies_(LogRateLimiterOptions{
          .interval = Duration::Seconds(1), .max_lines_per_interval = 1000, .clock = wall_clock}),
      refusals_(LogRateLimiterOptions{.clock = wall_clock}) {
  options_.job.cluster_id = incarnation_;
}

std::function<void(const std::string&)> Coordinator::TrackCommand(JobCommand command) {
  JobMaster* jm = job_.get();
  int64_t token = jm->BeginCommand(std::move(command));
  return [this, jm, token](const std::string& outcome) {
    if (job_.get() == jm) jm->EndCommand(token, outcome);
  };
}

void Coordinator::SendReply(const std::string& identity, bool ok, std::string message,
                            std::string json) {
  Reply r;
  r.ok = ok;
  r.message = std::move(message);
  r.json = std::move(json);
  outbox_->Send(identity, r);
}

void Coordinator::SendReply(const std::string& identity, const Status& error,
                            const std::string& prefix) {
  Reply r;
  r.ok = false;
  r.message = prefix + error.message();
  r.code = error.code();
  outbox_->Send(identity, r);
}

const WorkerInfo* Coordinator::Sender(const ControlPeer& from, WorkerId claimed) {
  const WorkerInfo* w = workers_.FindByIdentity(from.connection);
  if (w == nullptr || w->id != claimed || w->peer != from.identity) {
    KF_LOG_WARN_RATE_LIMITED(peer_errors_, "unknown sender/" + from.connection,
                             "message from unregistered or mismatched peer claimed_worker={}",
                             claimed.value());
    return nullptr;
  }
  return w;
}

void Coordinator::OnMessage(const ControlPeer& from, const ControlMessage& msg, int64_t now_ms) {
  if (!Admit(from, msg, now_ms)) return;
  const std::string& identity = from.connection;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, RegisterWorker>) {
          HandleRegister(from, m, now_ms);
        } else if constexpr (std::is_same_v<T, WorkerHeartbeat>) {
          // A heartbeat counts only on the connection (and key) the worker registered with:
          // anyone else naming its id would keep a stopped worker alive.
          if (workers_.FindByIdentity(identity) == nullptr) {
            // A worker we declared lost (or from before a coordinator restart): make it
            // register again so it gets a fresh identity in the registry.
            outbox_->Send(identity, RegisterAgain{});
            return;
          }
          if (Sender(from, m.worker) == nullptr) return;
          workers_.Heartbeat(m.worker, m.attempt, m.metrics, now_ms, m.usage);
          if (job_ != nullptr) job_->OnHeartbeat(m.worker, m.attempt, m.metrics);
        } else if constexpr (std::is_same_v<T, FetchJobLibrary>) {
          if (Sender(from, m.worker) == nullptr) return;
          HandleFetchJobLibrary(identity, m);
        } else if constexpr (std::is_same_v<T, WorkerExitReport>) {
          HandleExitReport(from, m, now_ms);
        } else if constexpr (std::is_same_v<T, WorkerExiting>) {
          if (Sender(from, m.worker) == nullptr) return;
          if (std::optional<WorkerInfo> gone = workers_.Remove(m.worker)) {
            WorkerLost(*gone, "its process is exiting: " + m.reason, now_ms);
          }
        } else if constexpr (std::is_same_v<T, TaskDeployed> || std::is_same_v<T, TaskFinished> ||
                             std::is_same_v<T, TaskFailed> || std::is_same_v<T, TaskInputEnded> ||
                             std::is_same_v<T, TaskRunning> ||
                             std::is_same_v<T, AcknowledgeCheckpoint> ||
                             std::is_same_v<T, DeclineCheckpoint>) {
          if (Sender(from, m.worker) == nullptr || job_ == nullptr) return;
          if constexpr (std::is_same_v<T, TaskDeployed>) job_->OnTaskDeployed(m, now_ms);
          if constexpr (std::is_same_v<T, TaskFinished>) job_->OnTaskFinished(m, now_ms);
          if constexpr (std::is_same_v<T, TaskFailed>) job_->OnTaskFailed(m, now_ms);
          if constexpr (std::is_same_v<T, TaskInputEnded>) job_->OnTaskInputEnded(m, now_ms);
          if constexpr (std::is_same_v<T, TaskRunning>) job_->OnTaskRunning(m, now_ms);
          if constexpr (std::is_same_v<T, AcknowledgeCheckpoint>) job_->OnAcknowledge(m, now_ms);
          if constexpr (std::is_same_v<T, DeclineCheckpoint>) job_->OnDecline(m, now_ms);
        } else if constexpr (std::is_same_v<T, CheckpointRequest>) {
          HandleCheckpointRequest(identity, m, now_ms);
        } else if constexpr (std::is_same_v<T, StopJob>) {
          if (job_ == nullptr || job_->terminal()) {
            SendReply(identity, false, "no job is running");
            return;
          }
          auto end = TrackCommand({"stop with savepoint", "keyflow stop", m.directory, 0});
          Status s = job_->StopWithSavepoint(
              m.directory,
              [this, identity, end](Result<CheckpointLocation> sp, int64_t) {
                if (!sp.ok()) {
                  end("failed: " + sp.status().message());
                  SendReply(identity, sp.status());
                  return;
                }
                end("completed: savepoint " + sp->directory);
                nlohmann::json j;
                j["id"] = sp->id.value();
                j["directory"] = sp->directory;
                SendReply(identity, true,
                          "job stopped with savepoint " + std::to_string(sp->id.value()) + ": " +
                              sp->directory + " (continue with keyflow run ... --from-savepoint " +
                              sp->directory + ")",
                          j.dump());
              },
              now_ms);
          if (!s.ok()) {
            end("");
            SendReply(identity, s);
          }
        } else if constexpr (std::is_same_v<T, RescaleRequest>) {
          HandleRescale(identity, m, now_ms);
        } else if constexpr (std::is_same_v<T, ListCheckpointsRequest>) {
          if (job_ == nullptr) {
            SendReply(identity, NotFound("no job has run on this coordinator yet"));
          } else {
            SendReply(identity, true, "", job_->CheckpointsJson().dump());
          }
        } else if constexpr (std::is_same_v<T, SubmitJob>) {
          HandleSubmit(identity, m, now_ms);
        } else if constexpr (std::is_same_v<T, StatusRequest>) {
          SendReply(identity, true, "", StatusJson(now_ms).dump());
        } else if constexpr (std::is_same_v<T, CancelJob>) {
          if (job_ == nullptr || job_->terminal()) {
            SendReply(identity, false, "no job is running");
          } else {
            job_->Cancel("canceled by the user", now_ms);
            SendReply(identity, true, "job " + job_->job_id() + " canceled");
          }
        } else if constexpr (std::is_same_v<T, SetLogLevelRequest>) {
          HandleSetLogLevel(from, m);
        } else if constexpr (std::is_same_v<T, ::keyflow::ReloadKeys>) {
          auto reloaded = ReloadKeys(now_ms);
          if (!reloaded.ok()) {
            SendReply(identity, reloaded.status());
          } else {
            nlohmann::json j;
            j["trusted_keys"] = *reloaded;
            SendReply(identity, true,
                      "the coordinator reloaded its keys: " + std::to_string(*reloaded) +
                          " worker and client keys are trusted now",
                      j.dump());
          }
        } else {
          KF_LOG_WARN_RATE_LIMITED(peer_errors_, "unexpected/" + identity,
                                   "unexpected control message type={}", ControlMessageName(msg));
          SendReply(identity, false,
                    std::string("the coordinator does not handle ") +
                        std::string(ControlMessageName(msg)) + " messages");
        }
      },
      msg);
}

void Coordinator::OnUndecodable(const std::string& identity, const Status& why) {
  ++malformed_control_messages_;
  KF_LOG_WARN_RATE_LIMITED(peer_errors_, "undecodable/" + identity,
                           "undecodable control message: {}", why.message());
  if (junk_replies_.ShouldLog(identity)) SendReply(identity, why);
}

void Coordinator::HandleRegister(const ControlPeer& from, const RegisterWorker& m, int64_t now_ms) {
  const std::string& identity = from.connection;
  if (options_.security.enabled && options_.trusted_keys != nullptr) {
    // The announced key goes to the worker's peers, whose data planes then admit it: it must be
    // the key this worker authenticated with.
    Status key = CheckWorkerPublicKey(
        from.identity,
        from.identity ? options_.trusted_keys->PublicKeyOf(*from.identity) : std::string(),
        m.public_key);
    if (!key.ok()) {
      KF_LOG_WARN_RATE_LIMITED(refusals_, "register-key/" + from.address,
                               "worker registration refused host={} pid={}: {}", m.hostname, m.pid,
                               key.message());
      Registered refused;
      refused.refused = "the coordinator refused this worker: " + key.message();
      outbox_->Send(identity, refused);
      ++refused_requests_;
      return;
    }
  }
  WorkerRegistry::Registration r =
      workers_.Register(identity, from.identity, from.address, m, now_ms);
  Registered reply;
  reply.worker = r.id;
  reply.slot = r.slot;
  reply.heartbeat_interval_ms = options_.heartbeat_interval_ms;
  reply.heartbeat_timeout_ms = options_.heartbeat_timeout_ms;
  if (!r.refused.empty()) {
    KF_LOG_WARN("worker registration refused host={} pid={}: {}", m.hostname, m.pid, r.refused);
    reply.refused = "the coordinator refused this worker: " + r.refused;
    outbox_->Send(identity, reply);
    if (r.replaced) {  // this key's previous worker was gone: it is lost even so
      WorkerLost(*r.replaced, "a new process with its key registered", now_ms);
    }
    return;
  }
  // Its supervisor may have reported that exit already (WorkerExitReport): log it once.
  if (!m.previous_exit.empty() && RememberExit(m.hostname, m.previous_pid)) {
    KF_LOG_WARN("the previous worker process of slot {} (host {}, pid {}) ended: {}", r.slot,
                m.hostname, m.previous_pid, m.previous_exit);
  }
  if (r.replaced) {
    bool reported = !m.previous_exit.empty() && m.previous_pid == r.replaced->pid;
    WorkerLost(*r.replaced,
               reported ? "its process ended: " + m.previous_exit
                        : "a new worker registered for its slot " +
                              std::to_string(r.replaced->slot) + " and it sent no heartbeat for " +
                              std::to_string(now_ms - r.replaced->last_heartbeat_ms) + " ms",
               now_ms);
  } else if (!m.previous_exit.empty() && job_ != nullptr) {
    // Lost earlier (heartbeat timeout): now we know how its process ended (a note the exit
    // report attached already is not attached again).
    job_->OnWorkerExitReported(m.hostname, m.previous_pid, m.previous_exit);
  }
  outbox_->Send(identity, reply);
  KF_LOG_INFO("worker registered worker={} slot={} host={} pid={} data_host={}", r.id.value(),
              r.slot, m.hostname, m.pid, m.data_host);
  if (!worker_log_level_.empty()) outbox_->Send(identity, SetLogLevel{worker_log_level_});
  if (job_ != nullptr && r.again) {
    if (const WorkerInfo* w = workers_.Find(r.id)) job_->OnWorkerRegisteredAgain(*w, now_ms);
  }
  if (job_ != nullptr) job_->OnWorkerRegistered(now_ms);
}

void Coordinator::HandleExitReport(const ControlPeer& from, const WorkerExitReport& m,
                                   int64_t now_ms) {
  if (m.pid <= 0 || m.how.empty()) {
    SendReply(from.connection,
              InvalidArgument("a worker exit report needs the pid of the process that ended "
                              "(--previous-pid) and how it ended (--report-exit)"));
    return;
  }
  if (RememberExit(m.hostname, m.pid)) {
    KF_LOG_WARN("the worker process of slot {} (host {}, pid {}) ended: {}", m.slot, m.hostname,
                m.pid, m.how);
  }
  // The reporter must be that worker's: its key (secure), or its address (insecure).
  const WorkerInfo* ended = nullptr;
  for (const WorkerInfo* w : workers_.BySlot()) {
    if (w->hostname != m.hostname || w->pid != m.pid) continue;
    const bool same_reporter =
        options_.security.enabled
            ? w->peer == from.identity
            : from.address.empty() || w->peer_address.empty() || from.address == w->peer_address;
    if (same_reporter) ended = w;
  }
  if (ended != nullptr) {
    std::optional<WorkerInfo> gone = workers_.Remove(ended->id);
    KF_CHECK(gone.has_value());
    SendReply(from.connection, true, gone->Describe() + " is lost: its process ended: " + m.how);
    WorkerLost(*gone, "its process ended: " + m.how, now_ms);
    return;
  }
  // Already lost (heartbeat timeout, WorkerExiting) or never registered: attach the note to the
  // failure that names the process, if any.
  if (job_ != nullptr) job_->OnWorkerExitReported(m.hostname, m.pid, m.how);
  SendReply(from.connection, true,
            "noted how the worker process (host " + m.hostname + ", pid " + std::to_string(m.pid) +
                ") ended");
}

bool Coordinator::RememberExit(const std::string& hostname, int64_t pid) {
  for (const auto& [host, p] : reported_exits_) {
    if (host == hostname && p == pid) return false;
  }
  reported_exits_.emplace_back(hostname, pid);
  if (reported_exits_.size() > kRememberedExits) reported_exits_.pop_front();
  return true;
}

namespace {

// The role a message needs on a secure cluster; nullopt: not a request (coordinator -> worker
// messages, answered with "does not handle").
std::optional<Role> RequiredRole(const ControlMessage& msg) {
  return std::visit(
      [](const auto& m) -> std::optional<Role> {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, RegisterWorker> || std::is_same_v<T, WorkerHeartbeat> ||
                      std::is_same_v<T, TaskDeployed> || std::is_same_v<T, TaskFinished> ||
                      std::is_same_v<T, TaskFailed> || std::is_same_v<T, TaskInputEnded> ||
                      std::is_same_v<T, TaskRunning> || std::is_same_v<T, AcknowledgeCheckpoint> ||
                      std::is_same_v<T, DeclineCheckpoint> || std::is_same_v<T, WorkerExiting> ||
                      std::is_same_v<T, FetchJobLibrary> || std::is_same_v<T, WorkerExitReport>) {
          return Role::kWorker;
        } else if constexpr (std::is_same_v<T, SubmitJob> || std::is_same_v<T, StatusRequest> ||
                             std::is_same_v<T, CancelJob> || std::is_same_v<T, StopJob> ||
                             std::is_same_v<T, CheckpointRequest> ||
                             std::is_same_v<T, ListCheckpointsRequest> ||
                             std::is_same_v<T, RescaleRequest> || std::is_same_v<T, ReloadKeys> ||
                             std::is_same_v<T, SetLogLevelRequest>) {
          return Role::kOperator;
        } else {
          return std::nullopt;
        }
      },
      msg);
}

// "cancel the job": what an operator request does, for refusals.
std::string RequestVerb(const ControlMessage& msg) {
  return std::visit(
      [](const auto& m) -> std::string {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, SubmitJob>) return "submit a job";
        if constexpr (std::is_same_v<T, StatusRequest>) return "read the cluster status";
        if constexpr (std::is_same_v<T, CancelJob>) return "cancel the job";
        if constexpr (std::is_same_v<T, StopJob>) return "stop the job";
        if constexpr (std::is_same_v<T, CheckpointRequest>) {
          return m.savepoint ? "take a savepoint" : "trigger a checkpoint";
        }
        if constexpr (std::is_same_v<T, ListCheckpointsRequest>) return "list checkpoints";
        if constexpr (std::is_same_v<T, RescaleRequest>) return "rescale the job";
        if constexpr (std::is_same_v<T, ReloadKeys>) return "reload the keys";
        if constexpr (std::is_same_v<T, SetLogLevelRequest>) return "change the log level";
        if constexpr (std::is_same_v<T, RegisterWorker>) return "register as a worker";
        if constexpr (std::is_same_v<T, WorkerExitReport>) {
          return "report how a worker process ended";
        }
        return "send " + std::string(ControlMessageName(ControlMessage(m))) + " messages";
      },
      msg);
}

}  // namespace

bool Coordinator::Admit(const ControlPeer& from, const ControlMessage& msg, int64_t now_ms) {
  if (!options_.security.enabled) return true;
  std::optional<Role> need = RequiredRole(msg);
  if (!need) return true;  // answered with "does not handle"
  if (!from.identity) {
    Refuse(from, msg,
           "the coordinator requires a CURVE key on every connection: run with --keys DIR");
    return false;
  }
  const PeerIdentity& id = *from.identity;
  if (options_.trusted_keys != nullptr && !options_.trusted_keys->Trusts(id)) {
    if (const WorkerInfo* w = workers_.FindByIdentity(from.connection)) {
      if (std::optional<WorkerInfo> gone = workers_.Remove(w->id)) {
        WorkerLost(*gone, "its key " + id.ToUserId() + " was revoked", now_ms);
      }
    }
    Refuse(from, msg,
           "the coordinator revoked " + std::string(RoleName(id.role)) + " key " + id.name +
               ": ask its operator to add it again (`keyflow keys add-" +
               (id.role == Role::kWorker ? "worker " : "client ") + id.name +
               "`) and reload the keys");
    return false;
  }
  if (id.role == *need) return true;
  std::string who = id.role == Role::kWorker     ? "a worker key"
                    : id.role == Role::kOperator ? "an operator client key"
                                                 : "a coordinator key";
  std::string why = who + " cannot " + RequestVerb(msg) + ": ";
  why += *need == Role::kOperator
             ? "use an operator client key (`keyflow keys add-client NAME`)"
             : "start the worker with a worker key (`keyflow keys add-worker NAME`, then "
               "--key-name NAME)";
  Refuse(from, msg, why);
  return false;
}

void Coordinator::Refuse(const ControlPeer& from, const ControlMessage& msg,
                         const std::string& why) {
  ++refused_requests_;
  std::string who = from.identity ? from.identity->ToUserId() : "a connection without a key";
  KF_LOG_WARN_RATE_LIMITED(refusals_, who + "/" + std::string(ControlMessageName(msg)),
                           "refused {} from {} at {}: {} (refused requests so far: {})",
                           ControlMessageName(msg), who, from.address.empty() ? "?" : from.address,
                           why, refused_requests_);
  if (std::holds_alternative<RegisterWorker>(msg)) {
    Registered reply;
    reply.heartbeat_interval_ms = options_.heartbeat_interval_ms;
    reply.heartbeat_timeout_ms = options_.heartbeat_timeout_ms;
    reply.refused = "the coordinator refused this worker: " + why;
    outbox_->Send(from.connection, reply);
  } else if (RequiredRole(msg) == Role::kOperator ||
             std::holds_alternative<WorkerExitReport>(msg)) {
    SendReply(from.connection, false, why);  // the supervisor's reporter waits for an answer
  }
  // Other worker messages get no answer: a worker reads only Registered and its tasks'
  // messages; a revoked worker is told to register again (DropRevokedWorkers) and refused.
}

Result<size_t> Coordinator::ReloadKeys(int64_t now_ms) {
  if (!options_.security.enabled || options_.trusted_keys == nullptr) {
    return FailedPrecondition(
        "this coordinator runs --insecure and has no keys to reload: restart it with --keys DIR");
  }
  KF_ASSIGN_OR_RETURN(size_t n, options_.trusted_keys->Reload());
  KF_LOG_INFO("reloaded the trusted keys of {}: {} keys", options_.trusted_keys->directory().dir,
              n);
  DropRevokedWorkers(now_ms);
  return n;
}

void Coordinator::DropRevokedWorkers(int64_t now_ms) {
  std::vector<WorkerId> revoked;
  for (const WorkerInfo* w : workers_.BySlot()) {
    if (w->peer && !options_.trusted_keys->Trusts(*w->peer)) revoked.push_back(w->id);
  }
  for (WorkerId id : revoked) {
    std::optional<WorkerInfo> gone = workers_.Remove(id);
    if (!gone) continue;
    // It registers again and is refused (its key is gone), then stops.
    outbox_->Send(gone->identity, RegisterAgain{});
    WorkerLost(*gone, "its key " + gone->peer->ToUserId() + " was revoked", now_ms);
  }
}

void Coordinator::HandleSetLogLevel(const ControlPeer& from, const SetLogLevelRequest& m) {
  std::string who = from.identity ? from.identity->ToUserId() : "a connection without a key";
  if (Status s = ChangeLogLevel(m.level, "set by " + who); !s.ok()) {
    SendReply(from.connection, s);
    return;
  }
  const std::string level = LogLevel();
  size_t workers = 0;
  if (m.workers) {
    worker_log_level_ = level;
    for (const WorkerInfo* w : workers_.BySlot()) {
      outbox_->Send(w->identity, SetLogLevel{level});
      ++workers;
    }
  }
  nlohmann::json j;
  j["level"] = level;
  j["workers"] = workers;
  std::string where = !m.workers ? " on the coordinator only"
                      : workers == 1
                          ? " on the coordinator and 1 worker"
                          : " on the coordinator and " + std::to_string(workers) + " workers";
  SendReply(from.connection, true, "log level is now " + level + where, j.dump());
}

void Coordinator::Shutdown(int64_t now_ms) {
  if (job_ != nullptr && !job_->terminal()) job_->Cancel("the coordinator is stopping", now_ms);
}

void Coordinator::HandleSubmit(const std::string& identity, const SubmitJob& m, int64_t now_ms) {
  if (job_ != nullptr && !job_->terminal()) {
    SendReply(identity, AlreadyExists("job " + job_->job_id() + " is still " +
                                      std::string(JobStateName(job_->state())) +
                                      ": this is a session cluster that runs one job at a time; "
                                      "wait for it or stop it with `keyflow cancel`"));
    return;
  }
  // A CLI of another version may not have validated --input. A generator or Kafka spec is checked
  // in full here, a monitored directory once its path is known to be allowed; files when the job
  // deploys (the split enumerator lists them).
  if (InputSpec::IsGenerator(m.spec.input) || InputSpec::IsKafka(m.spec.input) ||
      m.spec.input.empty()) {
    if (Status s = InputSpec::Parse(m.spec.input).status(); !s.ok()) {
      SendReply(identity, s, "job rejected: ");
      return;
    }
  }
  if (KafkaSinkSpec::Names(m.spec.output_dir)) {
    Result<KafkaSinkSpec> sink = KafkaSinkSpec::Parse(m.spec.output_dir);
    Status s =
        sink.ok() ? sink->CheckAgainstCheckpointing(m.spec.checkpoint_interval_ms) : sink.status();
    if (!s.ok()) {
      SendReply(identity, s, "job rejected: ");
      return;
    }
  }
  // Before anything is written: the blob store and the job directory live under its paths.
  if (Status s = CheckAllowedJobPaths(m.spec, options_.job.allowed_paths); !s.ok()) {
    SendReply(identity, s, "job rejected: ");
    return;
  }
  if (InputSpec::IsMonitor(m.spec.input)) {
    if (Status s = InputSpec::Parse(m.spec.input).status(); !s.ok()) {
      SendReply(identity, s, "job rejected: ");
      return;
    }
  }
  if (!m.spec.job_library.is_default() || !m.job_library_bytes.empty()) {
    // Stored (verified, by content hash) before anything is deployed: every deployment of this
    // job, also after a coordinator restart, fetches it from there.
    BlobStore blobs(CheckpointRootOf(m.spec));
    if (Status s = blobs.Store(m.spec.job_library, m.job_library_bytes); !s.ok()) {
      KF_LOG_WARN("job library refused: {}", s.message());
      SendReply(identity, s, "job rejected: ");
      return;
    }
    KF_LOG_INFO("job library {} stored sha256={} bytes={} dir={}", m.spec.job_library.file_name,
                m.spec.job_library.sha256, m.spec.job_library.size_bytes, blobs.directory());
  }
  // Kept for the workers' fetches (a resubmission without bytes: read on the first fetch).
  job_library_sha256_.clear();
  job_library_bytes_.clear();
  if (!m.job_library_bytes.empty()) {
    job_library_sha256_ = m.spec.job_library.sha256;
    job_library_bytes_ = m.job_library_bytes;
  }
  ++jobs_submitted_;
  std::string job_id = MakeJobId(m.spec.job_name, wall_clock_->Now());
  {
    // Two submissions in the same second, or a directory left by an earlier coordinator.
    CheckpointStorage storage(CheckpointRootOf(m.spec));
    std::string base = job_id;
    for (int n = 2;
         PathExists(storage.JobDirectory(job_id)) || (job_ != nullptr && job_->job_id() == job_id);
         ++n) {
      job_id = base + "-" + std::to_string(n);
    }
  }
  auto jm =
      JobMaster::Create(job_id, m.spec, &workers_, outbox_, wall_clock_, options_.job, now_ms);
  if (!jm.ok()) {
    SendReply(identity, jm.status(), "job rejected: ");
    return;
  }
  job_ = std::move(jm).value();
  nlohmann::json j;
  j["job_id"] = job_id;
  j["parallelism"] = job_->spec().parallelism;
  j["max_parallelism"] = job_->spec().max_parallelism;
  SendReply(identity, true, "job " + job_id + " submitted", j.dump());
}

const std::string& Coordinator::CheckpointRootOf(const JobSpec& spec) const {
  return spec.checkpoint_dir.empty() ? options_.job.checkpoint_root : spec.checkpoint_dir;
}

void Coordinator::HandleFetchJobLibrary(const std::string& identity, const FetchJobLibrary& m) {
  JobLibraryBlob reply;
  reply.attempt = m.attempt;
  reply.sha256 = m.sha256;
  if (job_ == nullptr || job_->spec().job_library.is_default() ||
      job_->spec().job_library.sha256 != m.sha256) {
    // Only the current job's library is served: nothing else is needed for a deployment.
    reply.error = "the coordinator's current job does not use job library " + m.sha256;
  } else {
    const JobLibraryRef& ref = job_->spec().job_library;
    if (job_library_sha256_ != ref.sha256) {  // after a coordinator restart: read it once
      auto bytes = BlobStore(CheckpointRootOf(job_->spec())).Read(ref);
      if (bytes.ok()) {
        job_library_sha256_ = ref.sha256;
        job_library_bytes_ = std::move(bytes).value();
      } else {
        reply.error = bytes.status().message();
      }
    }
    if (reply.error.empty()) {
      reply.bytes = job_library_bytes_;
      KF_LOG_INFO("sending job library {} sha256={} bytes={} to worker {}", ref.file_name,
                  ref.sha256, reply.bytes.size(), m.worker.value());
    } else {
      KF_LOG_ERROR("worker {} asked for job library {}: {}", m.worker.value(), ref.sha256,
                   reply.error);
    }
  }
  outbox_->Send(identity, reply);
}

void Coordinator::HandleCheckpointRequest(const std::string& identity, const CheckpointRequest& m,
                                          int64_t now_ms) {
  if (job_ == nullptr || job_->terminal()) {
    SendReply(identity, false, "no job is running");
    return;
  }
  std::string what = m.savepoint ? "savepoint" : "checkpoint";
  auto end = TrackCommand({what, "keyflow " + what, m.directory, 0});
  Status s = job_->RequestCheckpoint(
      m.savepoint, m.directory,
      [this, identity, what, end](Result<CheckpointLocation> done, int64_t) {
        if (!done.ok()) {
          end("failed: " + done.status().message());
          SendReply(identity, done.status(), what + " failed: ");
          return;
        }
        end("completed: " + done->directory);
        nlohmann::json j;
        j["id"] = done->id.value();
        j["directory"] = done->directory;
        SendReply(identity, true,
                  what + " " + std::to_string(done->id.value()) + " completed: " + done->directory,
                  j.dump());
      },
      now_ms);
  if (!s.ok()) {
    end("");
    SendReply(identity, s);
  }
}

void Coordinator::HandleRescale(const std::string& identity, const RescaleRequest& m,
                                int64_t now_ms) {
  if (job_ == nullptr || job_->terminal()) {
    SendReply(identity, false, "no job is running");
    return;
  }
  if (m.plan_only) {
    auto plan = job_->PlanRescaleJson(m.new_parallelism);
    if (!plan.ok()) {
      SendReply(identity, plan.status());
    } else {
      SendReply(identity, true, "", plan->dump());
    }
    return;
  }
  int32_t target = m.new_parallelism;
  std::string job_id = job_->job_id();
  auto end = TrackCommand({"rescale to " + std::to_string(target),
                           "keyflow rescale " + std::to_string(target) +
                               (m.via == RescaleRequest::Via::kCheckpoint  ? " --via checkpoint"
                                : m.via == RescaleRequest::Via::kSavepoint ? " --via savepoint"
                                                                           : ""),
                           "", target});
  Status s = job_->Rescale(
      target, m.wait_for_workers_ms,
      [this, identity, target, job_id, end](const Status& result) {
        end(result.ok() ? std::string("completed") : "failed: " + result.message());
        if (result.ok()) {
          SendReply(identity, true,
                    "job " + job_id + " runs at parallelism " + std::to_string(target));
        } else {
          SendReply(identity, result);
        }
      },
      now_ms, m.via);
  if (!s.ok()) {
    end("");
    SendReply(identity, s);
  }
}

Status Coordinator::ResumeJobs(int64_t now_ms) {
  CheckpointStorage storage(options_.job.checkpoint_root);
  KF_ASSIGN_OR_RETURN(std::vector<JobRecord> records, storage.ListJobRecords());
  const JobRecord* newest = nullptr;
  for (const JobRecord& r : records) {
    if (r.state != "RUNNING") continue;
    if (newest == nullptr || r.job_id > newest->job_id) newest = &r;
  }
  if (newest == nullptr) return Status::Ok();
  KF_LOG_INFO("found job {} that was running when the coordinator stopped: resuming it",
              newest->job_id);
  JobRecord record = *newest;
  CleanAbortedSavepoints(storage, record);
  for (const JobCommand& c : record.pending_commands) {
    // A rescale whose new attempt was deployed already (the record has its parallelism) is
    // resumed at P'; anything else in flight is gone with the old process.
    bool completed = c.target_parallelism > 0 && record.spec.parallelism == c.target_parallelism;
    record.last_command = c;
    record.last_command_outcome =
        completed ? "completed before the coordinator restarted — the job runs at parallelism " +
                        std::to_string(record.spec.parallelism)
                  : "aborted by a coordinator restart — the job runs at parallelism " +
                        std::to_string(record.spec.parallelism) + "; run `" + c.retry + "` again";
    KF_LOG_WARN("job {}: the {} in progress when the coordinator stopped was {}", record.job_id,
                c.what, record.last_command_outcome);
  }
  if (!record.pending_commands.empty()) {
    record.pending_commands.clear();
    if (Status s = storage.WriteJobRecord(record); !s.ok()) {
      KF_LOG_WARN("cannot write the job record: {}", s.message());
    }
  }
  KF_ASSIGN_OR_RETURN(
      job_, JobMaster::Resume(record, &workers_, outbox_, wall_clock_, options_.job, now_ms));
  return Status::Ok();
}

void Coordinator::WorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms) {
  KF_LOG_WARN("worker lost worker={} slot={} reason={}", w.id.value(), w.slot, why);
  if (job_ != nullptr) job_->OnWorkerLost(w, why, now_ms);
}

void Coordinator::OnTick(int64_t now_ms) {
  for (const WorkerInfo& w : workers_.RemoveTimedOut(now_ms)) {
    WorkerLost(w,
               "no heartbeat for " + std::to_string(now_ms - w.last_heartbeat_ms) +
                   " ms (timeout " + std::to_string(options_.heartbeat_timeout_ms) + " ms)",
               now_ms);
  }
  if (now_ms - last_heartbeat_sent_ms_ >= options_.heartbeat_interval_ms) {
    last_heartbeat_sent_ms_ = now_ms;
    CoordinatorHeartbeat hb;
    hb.attempt = job_ != nullptr && !job_->terminal() ? job_->attempt() : AttemptNumber(0);
    for (const WorkerInfo* w : workers_.BySlot()) outbox_->Send(w->identity, hb);
  }
  if (job_ != nullptr) job_->OnTick(now_ms);
}

nlohmann::json Coordinator::StatusJson(int64_t now_ms) const {
  nlohmann::json j;
  nlohmann::json ws = nlohmann::json::array();
  for (const WorkerInfo* w : workers_.BySlot()) {
    nlohmann::json x;
    x["worker"] = w->id.value();
    x["slot"] = w->slot;
    x["host"] = w->hostname;
    x["pid"] = w->pid;
    x["data_host"] = w->data_host;
    x["refused_data_connections"] = w->metrics.refused_data_connections;
    x["last_heartbeat_ms_ago"] = now_ms - w->last_heartbeat_ms;
    x["usage"] = WorkerUsageJson(*w);
    ws.push_back(std::move(x));
  }
  j["workers"] = std::move(ws);
  j["coordinator"] = {{"incarnation", incarnation_},
                      {"log_level", LogLevel()},
                      {"malformed_control_messages", malformed_control_messages_},
                      {"security",
                       {{"mode", options_.security.enabled ? "curve" : "insecure"},
                        {"refused_connections", refused_connections_},
                        {"refused_requests", refused_requests_}}}};
  j["job"] = job_ != nullptr ? job_->StatusJson(now_ms) : nlohmann::json();
  return j;
}

}  // namespace keyflow
