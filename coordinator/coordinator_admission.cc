// Coordinator: who may send what (roles of the control protocol), refusals, reloading the
// trusted keys and dropping the workers whose keys were revoked. The class is declared in
// coordinator.h; this file holds its admission part.
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

}  // namespace keyflow
