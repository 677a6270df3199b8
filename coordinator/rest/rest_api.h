// The coordinator's JSON REST API (v1): read-only endpoints over the latest StatusSnapshot,
// mutating ones through the ControlCommandBridge. On a secure cluster reads need a viewer's or
// an operator's bearer token, commands an operator's (rest_access.h, rest_auth.h,
// RestAccessCheck below). Every endpoint, with an example response, is in coordinator/README.md
// "REST API".
//
//   GET  /api/v1/health              liveness: the snapshot's age (503 before the first one); no
//                                    token needed, it shows no job data
//   GET  /api/v1/overview            coordinator, workers, slots, job summary, versions
//   GET  /api/v1/workers             every registered worker
//   GET  /api/v1/job                 the job without its subtasks, plus each key-group range
//   GET  /api/v1/job/subtasks        each subtask's state, key groups and metrics
//   GET  /api/v1/job/checkpoints     checkpoint history (sizes, durations, sync/async/alignment)
//   GET  /api/v1/job/rescale         rescale progress
//   POST /api/v1/job/cancel | stop | savepoints | checkpoints | rescale, PUT /api/v1/logging
//
// MountRestRoutes (rest_routes.cc) is the one place every REST route is added: the API, the
// Prometheus /metrics, the dashboard; it installs RestAccessCheck for all of them.
//
// Threading: handlers run on HTTP threads; they read only the context's thread-safe members.
#pragma once

#include <chrono>
#include <string>

#include "common/clock.h"
#include "coordinator/rest/control_command_bridge.h"
#include "coordinator/rest/rest_router.h"
#include "coordinator/rest/status_snapshot.h"

namespace keyflow {

class RestAuthenticator;

struct RestContext {
  const StatusSnapshotPublisher* snapshots = nullptr;  // required
  // Null: mutating endpoints answer 503 (tests of the read-only API).
  ControlCommandBridge* bridge = nullptr;
  // Checks the bearer tokens of a secure cluster; null there: every endpoint but the public ones
  // answers 503.
  const RestAuthenticator* auth = nullptr;
  // The cluster runs with --keys (CURVE): reads need a token, commands an operator's. false =
  // --insecure: reads are open, commands answer 403 with a sentence.
  bool secure = false;
  // How long a mutating request waits for the control loop's answer before 202.
  std::chrono::milliseconds command_timeout{30000};
  const Clock* clock = nullptr;  // wall clock for snapshot ages; null = the system clock
};

// The HTTP status of a command the Coordinator refused, by the refusal's Status code:
// InvalidArgument/OutOfRange 400, NotFound 404, FailedPrecondition/AlreadyExists (and an
// unclassified refusal) 409, Unavailable 503, DeadlineExceeded 504, I/O and internal errors 500.
int HttpStatusOfRefusal(StatusCode code);

// The /api/v1/... endpoints (without the access check: MountRestRoutes installs it).
void AddApiRoutes(RestRouter& router, const RestContext& context);

// Who may call what (rest_access.h). Secure cluster: kRead needs a viewer's or an operator's
// token, kCommand an operator's; a missing, malformed, unknown or revoked token is 401 (with
// `WWW-Authenticate: Bearer realm="keyflow"` and a sentence saying how to get one), a viewer's
// token on a command 403. Insecure cluster: kRead passes, kCommand is 403.
RestRouter::AccessCheck RestAccessCheck(const RestContext& context);

// Every route of the coordinator's REST server (rest_routes.cc).
void MountRestRoutes(RestRouter& router, const RestContext& context);

}  // namespace keyflow
