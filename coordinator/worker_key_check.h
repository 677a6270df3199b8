// CheckWorkerPublicKey: a secure coordinator's check of RegisterWorker::public_key (issue 13).
//
// A worker announces the CURVE public key its data sockets use; the coordinator hands it to the
// worker's peers (DeployTask::peer_public_keys), whose data planes then admit that key. So the
// key must be the one the worker authenticated with on the control connection: otherwise a
// worker could make its peers admit somebody else's key. The check compares the announced key
// with the trusted public key of the connection's authenticated identity (the ZAP User-Id,
// PeerIdentity::FromUserId; the coordinator's trusted keys give its public key).
//
// Threading: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "common/security/identity.h"
#include "common/status.h"

namespace keyflow {

// OK when `peer` is a worker identity and `announced` equals `trusted_key`, the public key the
// coordinator trusts for `peer` ("" if none). `peer` nullopt (a connection without CURVE) is
// FailedPrecondition; the caller skips the check when it runs --insecure. Every error is a
// sentence for the refused worker.
Status CheckWorkerPublicKey(const std::optional<PeerIdentity>& peer, std::string_view trusted_key,
                            std::string_view announced);

}  // namespace keyflow
