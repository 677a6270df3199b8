#include "coordinator/rest/rest_auth.h"

#include <string_view>

#include "common/logging.h"
#include "common/sha256.h"
#include "coordinator/rest/rest_token.h"

namespace keyflow {

Status RestAuthenticator::Fail(const HttpRequest& request, std::string why) const {
  const uint64_t n = ++failed_;
  const std::string& from = request.remote_address.empty() ? "?" : request.remote_address;
  KF_LOG_WARN_RATE_LIMITED(failures_, from,
                           "refused REST {} {} from {}: {} (failed REST authentications so far: "
                           "{})",
                           request.method, request.path, from, why, n);
  return InvalidArgument(std::move(why));
}

Result<PeerIdentity> RestAuthenticator::Authenticate(const HttpRequest& request) const {
  auto it = request.headers.find("authorization");
  if (it == request.headers.end()) {
    return Fail(request,
                "this command needs an operator's token: send `Authorization: Bearer <token>` "
                "with the token of an operator client key (DIR/clients/NAME.token of the key "
                "set; `keyflow keys add-client NAME` creates one)");
  }
  std::string_view value = it->second;
  constexpr std::string_view kBearer = "Bearer ";
  if (value.size() <= kBearer.size() || value.substr(0, kBearer.size()) != kBearer) {
    return Fail(request, "the Authorization header must be `Bearer <token>`");
  }
  std::string_view token = value.substr(kBearer.size());
  // Hashing first makes the lookup independent of the token's bytes; any length is hashed.
  std::string client = keys_ != nullptr ? keys_->ClientOfTokenHash(Sha256Hex(token)) : "";
  if (client.empty()) {
    return Fail(request,
                "the coordinator does not know this token (or its client key was revoked): use "
                "the token of a trusted operator client key (DIR/clients/NAME.token)");
  }
  PeerIdentity id{Role::kOperator, client};
  if (!keys_->Trusts(id)) {  // the key was revoked after the token matched
    return Fail(request, "the client key " + client + " of this token was revoked");
  }
  return id;
}

}  // namespace keyflow
