// RestAuthenticator: who sent a REST command. Operators present `Authorization: Bearer <token>`
// (rest_token.h); the token's SHA-256 is looked up in the TrustedKeyStore, so only a trusted
// operator client key's token passes, and a revoked key's token stops passing at the reload.
// Every failure is counted (failed_attempts, in the published status as rest.failed_auth) and
// logged at most once per client address per minute.
//
// Threading: thread-safe (HTTP threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/log_rate_limiter.h"
#include "common/security/identity.h"
#include "common/status.h"
#include "coordinator/rest/rest_router.h"
#include "coordinator/trusted_key_store.h"

namespace keyflow {

class RestAuthenticator {
 public:
  explicit RestAuthenticator(std::shared_ptr<const TrustedKeyStore> keys,
                             LogRateLimiterOptions log_options = {})
      : keys_(std::move(keys)), failures_(log_options) {}

  // The operator identity of the request's bearer token; Unauthenticated-style
  // InvalidArgument/NotFound with a sentence when the header is missing, malformed or unknown.
  Result<PeerIdentity> Authenticate(const HttpRequest& request) const;
  uint64_t failed_attempts() const { return failed_.load(); }

 private:
  Status Fail(const HttpRequest& request, std::string why) const;

  std::shared_ptr<const TrustedKeyStore> keys_;
  mutable std::atomic<uint64_t> failed_{0};
  mutable LogRateLimiter failures_;
};

}  // namespace keyflow
