// CheckWorkerPublicKey: a secure coordinator's check of RegisterWorker::public_key (issue 13).
//
// A worker announces the CURVE public key its data sockets use; the coordinator hands it to the
// worker's peers (DeployTask::peer_public_keys), whose data planes then admit that key. So the
// key must be the one the worker authenticated with on the control connection: otherwise a
// worker could make its peers admit somebody else's key. The check looks up the announced key in
// the coordinator's trusted keys and requires it to belong to the connection's authenticated
// identity (the ZAP User-Id, PeerIdentity::FromUserId).
//
// Threading: a pure function; the caller owns `trusted` (coordinator thread).
#pragma once

#include <optional>
#include <string_view>

#include "common/security/curve_keys.h"
#include "common/security/identity.h"
#include "common/status.h"

namespace keyflow {

// OK when `announced` is the trusted public key of `peer`, a worker identity. `peer` nullopt
// (a connection without CURVE) is FailedPrecondition on a secure coordinator; the caller skips
// the check when it runs --insecure. Every error is a sentence for the refused worker.
Status CheckWorkerPublicKey(const TrustedKeys& trusted, const std::optional<PeerIdentity>& peer,
                            std::string_view announced);

}  // namespace keyflow
