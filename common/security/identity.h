// Identities and roles: who is at the other end of an
// authenticated connection.
//
// Every process of a secure cluster has a CURVE key (curve_keys.h). The coordinator admits only
// keys it knows, and each known key has exactly one role:
//   * kCoordinator — the coordinator itself (workers and clients pin its public key);
//   * kWorker      — may register as a worker, heartbeat, ack checkpoints, fetch job libraries
//                    and exchange records with other workers; may NOT operate the cluster;
//   * kOperator    — an operator client (the `keyflow` CLI): may submit, cancel, stop,
//                    rescale, savepoint and read status; may NOT register as a worker.
// The ZAP handler (zap_authenticator.h) hands the identity to ZeroMQ as the connection's
// "User-Id" ("worker:worker-0", "operator:alice"); the receiver reads it back from every
// message with PeerIdentity::FromUserId.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

enum class Role : uint8_t { kCoordinator, kWorker, kOperator };

// "coordinator", "worker", "operator".
std::string_view RoleName(Role role);
Result<Role> ParseRole(std::string_view name);

struct PeerIdentity {
  Role role = Role::kOperator;
  std::string name;  // the key's name: [A-Za-z0-9._-], 1..64 characters

  // "worker:worker-0" — the ZAP User-Id of this identity.
  std::string ToUserId() const;
  // Inverse of ToUserId; nullopt for anything else (e.g. "" on an insecure connection).
  static std::optional<PeerIdentity> FromUserId(std::string_view user_id);

  friend bool operator==(const PeerIdentity&, const PeerIdentity&) = default;
};

// Key names end up in file names and logs: 1..64 characters of [A-Za-z0-9._-], not starting with
// '.'. InvalidArgument with the rule otherwise.
Status ValidateKeyName(std::string_view name);

}  // namespace keyflow
