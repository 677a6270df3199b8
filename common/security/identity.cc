#include "common/security/identity.h"

namespace keyflow {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kCoordinator:
      return "coordinator";
    case Role::kWorker:
      return "worker";
    case Role::kOperator:
      return "operator";
  }
  return "unknown";
}

Result<Role> ParseRole(std::string_view name) {
  for (Role r : {Role::kCoordinator, Role::kWorker, Role::kOperator}) {
    if (name == RoleName(r)) return r;
  }
  return InvalidArgument("unknown role '" + std::string(name) +
                         "': expected coordinator, worker or operator");
}

std::string PeerIdentity::ToUserId() const {
  std::string id(RoleName(role));
  id += ':';
  id += name;
  return id;
}

std::optional<PeerIdentity> PeerIdentity::FromUserId(std::string_view user_id) {
  const size_t colon = user_id.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  Result<Role> role = ParseRole(user_id.substr(0, colon));
  if (!role.ok()) return std::nullopt;
  std::string_view name = user_id.substr(colon + 1);
  if (!ValidateKeyName(name).ok()) return std::nullopt;
  return PeerIdentity{*role, std::string(name)};
}

Status ValidateKeyName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 && name.front() != '.';
  for (char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    ok = ok && allowed;
  }
  if (ok) return Status::Ok();
  return InvalidArgument("key name '" + std::string(name) +
                         "' is not valid: use 1 to 64 letters, digits, '.', '_' or '-', not "
                         "starting with '.'");
}

}  // namespace keyflow
