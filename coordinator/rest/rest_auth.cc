#include "coordinator/rest/rest_auth.h"

#include <cctype>
#include <string_view>

#include "common/logging/logging.h"
#include "common/security/sha256.h"
#include "coordinator/rest/rest_token.h"

namespace keyflow {
namespace {

// Where a token comes from, for the sentences below.
constexpr char kViewerTokenHelp[] =
    "a viewer's token (read-only: KEYS/viewers/NAME.token; `keyflow keys add-token NAME --role "
    "viewer` creates one, scripts/start-cluster.sh writes RUN_DIR/keys/viewers/viewer.token)";
constexpr char kOperatorTokenHelp[] =
    "the token of an operator client key (KEYS/clients/NAME.token of the key set; `keyflow keys "
    "add-client NAME` creates one)";

// "Bearer" is case-insensitive (RFC 7235); one or more spaces follow it.
bool StripBearer(std::string_view* value) {
  constexpr std::string_view kScheme = "bearer";
  if (value->size() <= kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>((*value)[i])) != kScheme[i]) return false;
  }
  if ((*value)[kScheme.size()] != ' ') return false;
  value->remove_prefix(kScheme.size());
  while (!value->empty() && value->front() == ' ') value->remove_prefix(1);
  while (!value->empty() && (value->back() == ' ' || value->back() == '\t'))
    value->remove_suffix(1);
  return !value->empty();
}

}  // namespace

Status RestAuthenticator::Fail(const HttpRequest& request, std::string why) const {
  const uint64_t n = ++failed_;
  const std::string& from = request.remote_address.empty() ? "?" : request.remote_address;
  KF_LOG_WARN_RATE_LIMITED(failures_, from,
                           "refused REST {} {} from {}: {} (failed REST authentications so far: "
                           "{})",
                           request.method, request.path, from, why, n);
  return InvalidArgument(std::move(why));
}

Result<RestCaller> RestAuthenticator::Authenticate(const HttpRequest& request,
                                                   RestAccess access) const {
  const bool command = access == RestAccess::kCommand;
  auto it = request.headers.find("authorization");
  if (it == request.headers.end()) {
    return Fail(request, command ? std::string("this command needs an operator's token: send "
                                               "`Authorization: Bearer <token>` with ") +
                                       kOperatorTokenHelp
                                 : std::string("this cluster's REST API needs a token to read: "
                                               "send `Authorization: Bearer <token>` with ") +
                                       kViewerTokenHelp + ", or " + kOperatorTokenHelp);
  }
  std::string_view token = it->second;
  if (!StripBearer(&token)) {
    return Fail(request, "the Authorization header must be `Bearer <token>`");
  }
  // Hashing first makes the lookup independent of the token's bytes; any length is hashed.
  std::optional<RestCaller> caller =
      keys_ != nullptr ? keys_->CallerOfTokenHash(Sha256Hex(token)) : std::nullopt;
  if (!caller) {
    return Fail(request,
                std::string("the coordinator does not know this token (or it was revoked): use ") +
                    (command ? kOperatorTokenHelp
                             : std::string(kViewerTokenHelp) + " or " + kOperatorTokenHelp));
  }
  // An operator's token counts only while its client key does (revoked after the token matched).
  if (caller->role == RestRole::kOperator && !keys_->Trusts({Role::kOperator, caller->name})) {
    return Fail(request, "the client key " + caller->name + " of this token was revoked");
  }
  return *caller;
}

}  // namespace keyflow
