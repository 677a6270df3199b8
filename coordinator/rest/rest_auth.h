// RestAuthenticator: who sent a REST request. Callers present `Authorization: Bearer <token>`
// (rest_token.h); the token's SHA-256 is looked up in the TrustedKeyStore, so only the token of
// a viewer or of a trusted operator client key passes (rest_access.h), and a revoked one stops
// passing at the reload. Every failure is counted (failed_attempts, in the published status as
// rest.failed_auth) and logged at most once per client address per minute.
//
// Threading: thread-safe (HTTP threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/logging/log_rate_limiter.h"
#include "common/status.h"
#include "coordinator/rest/rest_access.h"
#include "coordinator/rest/rest_router.h"
#include "coordinator/trusted_key_store.h"

namespace keyflow {

class RestAuthenticator {
 public:
  explicit RestAuthenticator(std::shared_ptr<const TrustedKeyStore> keys,
                             LogRateLimiterOptions log_options = {})
      : keys_(std::move(keys)), failures_(log_options) {}

  // The holder of the request's bearer token. Unauthenticated (InvalidArgument) with a sentence
  // that says how to get a token when the header is missing, malformed or the token unknown or
  // revoked; `access` (kRead or kCommand) chooses which token the sentence asks for.
  Result<RestCaller> Authenticate(const HttpRequest& request, RestAccess access) const;
  uint64_t failed_attempts() const { return failed_.load(); }

 private:
  Status Fail(const HttpRequest& request, std::string why) const;

  std::shared_ptr<const TrustedKeyStore> keys_;
  mutable std::atomic<uint64_t> failed_{0};
  mutable LogRateLimiter failures_;
};

}  // namespace keyflow
