// Who may call a REST route, and who did (coordinator/README.md "REST API", README "Security").
//
// Every route is declared with a RestAccess when it is added to the RestRouter (rest_router.h);
// the router asks its access check (rest_api.h, RestAccessCheck) before a kRead or kCommand
// handler runs. On a secure cluster (--keys) a request then needs `Authorization: Bearer
// <token>` of one of two roles:
//   * kViewer   — a read-only token (DIR/viewers/NAME.token, `keyflow keys add-token NAME
//                 --role viewer`): status, jobs, checkpoints, metrics, the dashboard's data;
//   * kOperator — the token of an operator client key (DIR/clients/NAME.token): reads and
//                 commands (cancel, stop, savepoint, checkpoint, rescale, log level).
// kPublic routes (the liveness probe /api/v1/health, the dashboard's static files) need none.
// An --insecure cluster has no tokens: its reads are open, its commands off.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keyflow {

enum class RestAccess : uint8_t {
  kPublic,   // anyone: no job data (liveness, the dashboard's static files)
  kRead,     // a viewer's or an operator's token
  kCommand,  // an operator's token
};

enum class RestRole : uint8_t { kViewer, kOperator };

// "viewer", "operator".
constexpr std::string_view RestRoleName(RestRole role) {
  return role == RestRole::kViewer ? "viewer" : "operator";
}

// The holder of the token a request presented.
struct RestCaller {
  RestRole role = RestRole::kViewer;
  std::string name;  // the viewer's or operator client key's name

  friend bool operator==(const RestCaller&, const RestCaller&) = default;
};

}  // namespace keyflow
