// WorkerRegistry: the workers the coordinator knows, their slots and liveness.
//
// A worker registers with an optional preferred slot (scripts start worker i with --slot i and
// respawn it under the same slot). Who registers is the connection (ROUTER routing id) and, on
// a secure cluster, the authenticated identity (worker key) of that connection. A registration
// for a slot that another worker holds:
//  * takes the slot over at once (the old worker is reported lost without waiting for its
//    heartbeat timeout) when the old one is evidently gone — it missed its last two heartbeats
//    (`stale_after_ms`), or the newcomer's supervisor names the old one's pid as the process
//    that just ended (RegisterWorker::previous_pid, same host and peer address) — and, on a
//    secure cluster, only if the newcomer has the holder's worker key;
//  * is refused otherwise: two live processes were started for one slot (a second
//    `keyflow-worker --slot N`), or a stranger claims it. The holder keeps the slot.
// On a secure cluster a worker key holds one slot at a time: a second registration with the key
// of a live worker is refused (unless it is that worker's respawn, as above).
//
// Threading: coordinator thread only. Time is passed in (monotonic ms), never read here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/protocol/control_messages.h"
#include "common/security/identity.h"
#include "common/types.h"

namespace keyflow {

struct WorkerInfo {
  WorkerId id;
  std::string identity;  // ZeroMQ routing id of its DEALER socket
  // The authenticated worker key of that connection (nullopt on an insecure cluster).
  std::optional<PeerIdentity> peer;
  std::string peer_address;  // the connection's IP address ("" if unknown)
  std::string hostname;
  int64_t pid = 0;
  std::string data_host;
  std::string public_key;  // RegisterWorker::public_key ("" when insecure)
  int32_t slot = 0;
  int64_t registered_ms = 0;
  int64_t last_heartbeat_ms = 0;
  AttemptNumber attempt{0};  // deployment it reported last
  SubtaskMetrics metrics;
  // Records per second read by its source and processed by its keyed subtask, smoothed over
  // heartbeats.
  double records_in_rate = 0;
  double records_processed_rate = 0;
  // Its process's latest resource usage (zeros until a heartbeat carries one) and the CPU it
  // used between its last two heartbeats, in percent of one core.
  ProcessUsage usage;
  double cpu_percent = 0;

  std::string Describe() const;  // "worker 3 (slot 1, host h, pid 42)"
};

class WorkerRegistry {
 public:
  // `stale_after_ms`: a slot holder silent for longer may be taken over (default: the timeout).
  explicit WorkerRegistry(int64_t heartbeat_timeout_ms, int64_t stale_after_ms = 0)
      : timeout_ms_(heartbeat_timeout_ms),
        stale_after_ms_(stale_after_ms > 0 ? stale_after_ms : heartbeat_timeout_ms) {}

  struct Registration {
    WorkerId id;
    int32_t slot;
    std::optional<WorkerInfo> replaced;  // worker that held the slot, now considered lost
    std::string refused;                 // non-empty: not registered, this is why
    // The same connection was registered already (it keeps its id): the worker gave up on the
    // coordinator and dropped whatever it ran, or its first registration reply was lost.
    bool again = false;
  };
  // `peer`: the connection's authenticated identity (nullopt: insecure); `peer_address`: its IP
  // ("" if unknown: not compared).
  Registration Register(const std::string& identity, const std::optional<PeerIdentity>& peer,
                        const std::string& peer_address, const RegisterWorker& msg, int64_t now_ms);
  Registration Register(const std::string& identity, const RegisterWorker& msg, int64_t now_ms) {
    return Register(identity, std::nullopt, "", msg, now_ms);
  }

  // Records a heartbeat; false if the worker is unknown (e.g. it was declared lost).
  bool Heartbeat(WorkerId id, AttemptNumber attempt, const SubtaskMetrics& m, int64_t now_ms,
                 const ProcessUsage& usage = {});

  // Removes and returns the workers whose last heartbeat is older than the timeout. A worker
  // for which `deploying` is true (a deployment was sent to it and not yet answered: its control
  // loop may be busy loading the job library, opening the sink or clearing old state) is given
  // `deploying_timeout_ms` instead, when that is longer.
  std::vector<WorkerInfo> RemoveTimedOut(int64_t now_ms,
                                         const std::function<bool(WorkerId)>& deploying = {},
                                         int64_t deploying_timeout_ms = 0);
  int64_t TimeoutFor(WorkerId id, const std::function<bool(WorkerId)>& deploying,
                     int64_t deploying_timeout_ms) const {
    return deploying && deploying(id) ? std::max(timeout_ms_, deploying_timeout_ms) : timeout_ms_;
  }
  std::optional<WorkerInfo> Remove(WorkerId id);

  const WorkerInfo* Find(WorkerId id) const;
  const WorkerInfo* FindByIdentity(const std::string& identity) const;
  // The worker registered with worker key `peer`, if any.
  const WorkerInfo* FindByPeer(const PeerIdentity& peer) const;
  // Live workers ordered by slot.
  std::vector<const WorkerInfo*> BySlot() const;
  size_t size() const { return workers_.size(); }
  int64_t heartbeat_timeout_ms() const { return timeout_ms_; }

 private:
  // True if `holder` is evidently gone for the newcomer `msg` (see the top of this file).
  bool Predecessor(const WorkerInfo& holder, const std::string& peer_address,
                   const RegisterWorker& msg, int64_t now_ms) const;

  int64_t timeout_ms_;
  int64_t stale_after_ms_;
  int64_t next_id_ = 1;
  std::map<WorkerId, WorkerInfo> workers_;
};

}  // namespace keyflow
