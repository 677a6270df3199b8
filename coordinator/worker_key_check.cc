#include "coordinator/worker_key_check.h"

#include <string>

namespace keyflow {

Status CheckWorkerPublicKey(const std::optional<PeerIdentity>& peer, std::string_view trusted_key,
                            std::string_view announced) {
  if (!peer.has_value()) {
    return FailedPrecondition(
        "this coordinator requires CURVE: start the worker with --keys DIR --key-name NAME");
  }
  if (peer->role != Role::kWorker) {
    return FailedPrecondition("key " + peer->name + " has the role " +
                              std::string(RoleName(peer->role)) +
                              " and cannot register as a worker: use a worker key (`keyflow keys "
                              "add-worker NAME`)");
  }
  if (trusted_key.empty() || announced != trusted_key) {
    return FailedPrecondition("worker " + peer->name +
                              " announced a data-plane public key that is not its own trusted key "
                              "(workers/" +
                              peer->name + ".pub): restart it with its own key file (--key-name " +
                              peer->name + ")");
  }
  return Status::Ok();
}

}  // namespace keyflow
