// DataPlaneAuthorizer: the ZAP policy of a secure worker's data plane (issue 13): on the input
// channel from source subtask s to this worker's keyed subtask r it admits only the CURVE public
// key of the worker that runs subtask s in the current deployment, and refuses everything else.
//
// Channels name themselves by their ZAP domain, DataZapDomain(r, s) = "data/<r>/<s>": every
// input channel PULL socket is a CURVE server with the worker's key pair and that domain
// (InputGateOptions::curve_keys), every output channel PUSH a CURVE client pinning the
// receiver's public key (RecordWriterOptions::receiver_public_keys). A refused CURVE client is
// counted (refused()) and logged at most once per peer address per minute. A plain-text client
// never reaches the policy (libzmq refuses the mechanism mismatch in the handshake): the input
// gate sees its failed handshake on the channel socket's monitor and reports it through
// CountRefusedHandshakes, counted the same way and logged once per channel per minute (libzmq
// reports no peer address for it).
//
// Lifecycle: the worker process owns one, installs Policy() on its single ZapAuthenticator, and
// calls SetDeployment at every DeployTask before the input gate binds (so no sender can connect
// before its key is known: StartTask, which makes the sources connect, follows every
// TaskDeployed) and Clear when the subtask is dropped.
//
// Threading: SetDeployment/Clear on the control thread, the policy on the authenticator's
// thread, refused() anywhere: guarded by a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/logging/log_rate_limiter.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/transport/zap_authenticator.h"
#include "common/types.h"

namespace keyflow {

// "data/<receiver>/<sender>": the ZAP domain of the channel from source subtask `sender` to
// keyed subtask `receiver`.
std::string DataZapDomain(SubtaskIndex receiver, SubtaskIndex sender);
// Inverse of DataZapDomain; nullopt for anything else.
std::optional<std::pair<SubtaskIndex, SubtaskIndex>> ParseDataZapDomain(std::string_view domain);

class DataPlaneAuthorizer {
 public:
  DataPlaneAuthorizer() = default;
  DataPlaneAuthorizer(const DataPlaneAuthorizer&) = delete;
  DataPlaneAuthorizer& operator=(const DataPlaneAuthorizer&) = delete;

  // From now on admit, on channel (receiver, s), only sender_keys[s] (DeployTask::
  // peer_public_keys). InvalidArgument (a sentence) if a key is not 40 Z85 characters or the
  // list is empty; the previous deployment's keys are dropped either way.
  Status SetDeployment(SubtaskIndex receiver, std::vector<std::string> sender_keys);
  // Admits nobody until the next SetDeployment.
  void Clear();

  // The policy for ZapAuthenticator::Start. Precondition: this outlives the authenticator.
  ZapPolicy Policy();
  ZapDecision Decide(const ZapRequest& request);

  // `n` more handshakes of channel `domain` (bound at `endpoint`) failed before the policy saw
  // them: a client without CURVE (plain text), of another security mechanism, or not speaking
  // ZMTP. Called by the input gate on the task thread.
  void CountRefusedHandshakes(uint64_t n, const std::string& domain, const std::string& endpoint);

  // Handshakes refused since construction (by the policy and CountRefusedHandshakes).
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  ZapDecision Refuse(const ZapRequest& request, std::string reason);

  Mutex mu_;
  std::optional<SubtaskIndex> receiver_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> sender_keys_ ABSL_GUARDED_BY(mu_);
  LogRateLimiter log_limiter_;  // one refusal line per peer address (or channel) per minute
  std::atomic<int64_t> refused_{0};
};

}  // namespace keyflow
