#include "coordinator/coordinator.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <random>

#include "common/check.h"
#include "common/file_io.h"
#include "common/input/input_spec.h"
#include "common/input/kafka_sink_spec.h"
#include "common/logging/logging.h"
#include "coordinator/blob_store.h"
#include "coordinator/path_rules.h"
#include "coordinator/worker_key_check.h"

namespace keyflow {
namespace {

// "1764442799000-9f3c0e1a2b4d5e6f": start time and 64 random bits, new per process start.
std::string NewIncarnation(const Clock* wall_clock) {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) | rd();
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%" PRId64 "-%016" PRIx64, wall_clock->Now().millis(), r);
  return buf;
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

void Coordinator::WorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms) {
  KF_LOG_WARN("worker lost worker={} slot={} reason={}", w.id.value(), w.slot, why);
  if (job_ != nullptr) job_->OnWorkerLost(w, why, now_ms);
}

void Coordinator::OnTick(int64_t now_ms) {
  // A worker deploying a task may be silent for up to the deploy timeout: its control loop
  // loads the job library and opens the sink before it answers or heartbeats again.
  auto deploying = [this](WorkerId w) { return job_ != nullptr && job_->AwaitsDeployment(w); };
  const int64_t deploy_timeout_ms = options_.job.deploy_timeout_ms;
  for (const WorkerInfo& w : workers_.RemoveTimedOut(now_ms, deploying, deploy_timeout_ms)) {
    const int64_t timeout_ms = workers_.TimeoutFor(w.id, deploying, deploy_timeout_ms);
    WorkerLost(
        w,
        "no heartbeat for " + std::to_string(now_ms - w.last_heartbeat_ms) + " ms (" +
            (timeout_ms > options_.heartbeat_timeout_ms ? "deploying its task, deploy " : "") +
            "timeout " + std::to_string(timeout_ms) + " ms)",
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
