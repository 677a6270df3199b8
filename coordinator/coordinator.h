// Coordinator: the brain of a keyflow session cluster. Accepts worker
// registrations, tracks heartbeats, runs one job at a time through a JobMaster, answers the
// CLI. Transport-agnostic: messages come in through OnMessage and go out through the injected
// ControlOutbox, time comes in as arguments — so the logic is tested without sockets or sleeps.
// The ZeroMQ event loop around it is ControlServer (control_server.h).
//
// Threading: one thread (the server loop).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/logging/log_rate_limiter.h"
#include "common/protocol/control_messages.h"
#include "common/security/identity.h"
#include "common/transport/process_security.h"
#include "coordinator/control_outbox.h"
#include "coordinator/job_master.h"
#include "coordinator/trusted_key_store.h"
#include "coordinator/worker_registry.h"

namespace keyflow {

struct CoordinatorOptions {
  int64_t heartbeat_interval_ms = 200;
  int64_t heartbeat_timeout_ms = 1000;
  JobMasterOptions job;  // includes the checkpoint root (--checkpoint-dir)
  // Identifies this coordinator process in status (`coordinator.incarnation`): a CLI waiting for
  // a command sees it change when the coordinator restarted. Empty: a new random one.
  std::string incarnation;
  // --keys / --insecure (common/transport/process_security.h): the control ROUTER's CURVE key and
  // the keys it admits.
  ProcessSecurity security;
  // Secure: the keys admitted (shared with the ROUTER's ZAP policy); re-read on reload. Messages
  // of a key no longer trusted are refused. Null: no revocation checks (insecure, or tests).
  std::shared_ptr<TrustedKeyStore> trusted_keys;
};

// Who sent a control message (ControlServer reads it off each received frame).
struct ControlPeer {
  std::string connection;                // the ROUTER routing id of the sender's connection
  std::optional<PeerIdentity> identity;  // its authenticated key (nullopt: insecure connection)
  std::string address;                   // its IP address ("" if unknown)
};

// Roles: on a secure cluster (options.security.enabled) worker messages (register,
// heartbeat, task status, acks and declines, job library fetches, exiting, exit reports) are
// accepted only from worker keys, operator requests (submit, cancel, stop, rescale, savepoint,
// checkpoint, status, list checkpoints, key reload) only from operator keys, and nothing from a
// revoked key. A
// refused request is answered with a sentence (a Reply, or a refused Registered), counted
// (`coordinator.security.refused_requests` in status) and logged at most once per key and
// message type per minute. On an insecure cluster every role check passes; registration and
// heartbeats are still bound to the connection a worker registered on.

class Coordinator {
 public:
  // `wall_clock` names jobs and stamps checkpoints; liveness uses the monotonic now_ms arguments.
  Coordinator(CoordinatorOptions options, ControlOutbox* outbox, const Clock* wall_clock);

  // Resumes the job that was running when a previous coordinator stopped (found in the
  // checkpoint directory's job records). Call once before serving. A CLI command that was in
  // progress then (rescale, stop, savepoint, checkpoint; kept in the job record) is recorded as
  // aborted by the restart — or completed, for a rescale whose new attempt was already deployed
  // — and shown as the job's `last_command`; savepoint directories it left without `_metadata`
  // are deleted (or, if that fails, marked with an `_ABORTED` file).
  Status ResumeJobs(int64_t now_ms);

  void OnMessage(const ControlPeer& from, const ControlMessage& msg, int64_t now_ms);
  // A message from an insecure connection `identity` (no authenticated key).
  void OnMessage(const std::string& identity, const ControlMessage& msg, int64_t now_ms) {
    OnMessage(ControlPeer{identity, std::nullopt, ""}, msg, now_ms);
  }
  // Re-reads the trusted keys (`keyflow keys reload`, SIGHUP); workers whose key is gone are
  // dropped (reported lost, told to register again, which is then refused). Returns the number
  // of trusted keys, or why the old set is kept. FailedPrecondition on an insecure cluster.
  Result<size_t> ReloadKeys(int64_t now_ms);
  // The coordinator is stopping (SIGINT/SIGTERM): cancels a running job so that its workers are
  // left clean; a restarted coordinator resumes it from the latest checkpoint.
  void Shutdown(int64_t now_ms);
  // Refused connections (ZAP refusals and failed handshakes), counted by the ControlServer and
  // shown in status.
  void set_refused_connections(uint64_t n) { refused_connections_ = n; }
  uint64_t refused_requests() const { return refused_requests_; }
  // A frame that could not be decoded: counted (status: coordinator.malformed_control_messages),
  // logged at most once per peer per minute and answered with a Reply error (CLI peers read
  // it) at most once per peer per second, so a peer flooding junk costs neither log nor queue.
  void OnUndecodable(const std::string& identity, const Status& why);
  // Periodic work: heartbeats out, lost workers, job timeouts. Call at least every
  // heartbeat_interval_ms.
  void OnTick(int64_t now_ms);

  const WorkerRegistry& workers() const { return workers_; }
  const JobMaster* job() const { return job_.get(); }
  const std::string& incarnation() const { return incarnation_; }
  nlohmann::json StatusJson(int64_t now_ms) const;

 private:
  // False (after answering, counting and logging the refusal) if `from` may not send `msg`.
  bool Admit(const ControlPeer& from, const ControlMessage& msg, int64_t now_ms);
  void Refuse(const ControlPeer& from, const ControlMessage& msg, const std::string& why);
  // Drops the registered workers whose key is no longer trusted.
  void DropRevokedWorkers(int64_t now_ms);
  void HandleRegister(const ControlPeer& from, const RegisterWorker& m, int64_t now_ms);
  // A supervisor says how worker process m.pid ended (WorkerExitReport): a worker still
  // registered as that process is lost at once with that reason; otherwise the job's failure
  // naming the process gets it as a note. Answered with a Reply.
  void HandleExitReport(const ControlPeer& from, const WorkerExitReport& m, int64_t now_ms);
  // Remembers that the end of process `pid` on `hostname` was reported; false if it was already
  // (a supervisor's report, then the restarted worker's previous_exit: logged once).
  bool RememberExit(const std::string& hostname, int64_t pid);
  void HandleSubmit(const std::string& identity, const SubmitJob& m, int64_t now_ms);
  // `keyflow log-level`: this process's level, and with m.workers every worker's (also of those
  // registering later: worker_log_level_).
  void HandleSetLogLevel(const ControlPeer& from, const SetLogLevelRequest& m);
  // A worker lacks the current job's library: answer with its bytes from the blob store.
  void HandleFetchJobLibrary(const std::string& identity, const FetchJobLibrary& m);
  // The job's --checkpoint-dir, else the coordinator's: where its checkpoints and blobs live.
  const std::string& CheckpointRootOf(const JobSpec& spec) const;
  void HandleRescale(const std::string& identity, const RescaleRequest& m, int64_t now_ms);
  void HandleCheckpointRequest(const std::string& identity, const CheckpointRequest& m,
                               int64_t now_ms);
  void SendReply(const std::string& identity, bool ok, std::string message, std::string json = "");
  // A refusal with the error's code (the REST API answers 400/404/409/503 by it).
  void SendReply(const std::string& identity, const Status& error, const std::string& prefix = "");
  // Resolves the worker that sent a worker-scoped message; nullptr (and a log line) if the
  // sender is not a registered worker or claims another worker's id.
  const WorkerInfo* Sender(const ControlPeer& from, WorkerId claimed);
  void WorkerLost(const WorkerInfo& w, const std::string& why, int64_t now_ms);
  // Wraps a CLI command's reply so that the job record knows it is in progress until answered.
  std::function<void(const std::string& outcome)> TrackCommand(JobCommand command);

  CoordinatorOptions options_;
  ControlOutbox* outbox_;
  const Clock* wall_clock_;
  WorkerRegistry workers_;
  std::unique_ptr<JobMaster> job_;
  int64_t last_heartbeat_sent_ms_ = 0;
  int64_t jobs_submitted_ = 0;
  std::string incarnation_;
  // The current job's library bytes (verified) once submitted or read from the blob store, so
  // that each worker's fetch is a send, not a read and hash of up to kMaxJobLibraryBytes.
  std::string job_library_sha256_;
  std::string job_library_bytes_;
  // Errors logged per received message (undecodable, unknown sender), and replies to junk.
  LogRateLimiter peer_errors_;
  LogRateLimiter junk_replies_;
  uint64_t malformed_control_messages_ = 0;
  uint64_t refused_requests_ = 0;
  uint64_t refused_connections_ = 0;
  LogRateLimiter refusals_;       // refused requests, per key + message type
  std::string worker_log_level_;  // set at run time for every worker; empty: their own flags
  // (host, pid) of the last kRememberedExits worker processes whose end was reported.
  static constexpr size_t kRememberedExits = 64;
  std::deque<std::pair<std::string, int64_t>> reported_exits_;
};

}  // namespace keyflow
