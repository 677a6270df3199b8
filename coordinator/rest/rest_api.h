// The coordinator's JSON REST API (v1): read-only endpoints over the latest StatusSnapshot,
// mutating ones through the ControlCommandBridge with an operator's bearer token
// (rest_auth.h). Every endpoint, with an example response, is in coordinator/README.md "REST API".
//
//   GET  /api/v1/health              the snapshot's age (503 before the first one)
//   GET  /api/v1/overview            coordinator, workers, slots, job summary, versions
//   GET  /api/v1/workers             every registered worker
//   GET  /api/v1/job                 the job without its subtasks, plus each key-group range
//   GET  /api/v1/job/subtasks        each subtask's state, key groups and metrics
//   GET  /api/v1/job/checkpoints     checkpoint history (sizes, durations, sync/async/alignment)
//   GET  /api/v1/job/rescale         rescale progress
//   POST /api/v1/job/cancel | stop | savepoints | checkpoints | rescale, PUT /api/v1/logging
//
// MountRestRoutes (rest_routes.cc) is the one place every REST route is added: the API, the
// Prometheus /metrics, the dashboard.
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
  // Null or insecure cluster: mutating endpoints answer 403 with a sentence.
  const RestAuthenticator* auth = nullptr;
  bool secure = false;  // the cluster runs with --keys (CURVE); false = --insecure
  // How long a mutating request waits for the control loop's answer before 202.
  std::chrono::milliseconds command_timeout{30000};
  const Clock* clock = nullptr;  // wall clock for snapshot ages; null = the system clock
};

// The HTTP status of a command the Coordinator refused, by the refusal's Status code:
// InvalidArgument/OutOfRange 400, NotFound 404, FailedPrecondition/AlreadyExists (and an
// unclassified refusal) 409, Unavailable 503, DeadlineExceeded 504, I/O and internal errors 500.
int HttpStatusOfRefusal(StatusCode code);

// The /api/v1/... endpoints.
void AddApiRoutes(RestRouter& router, const RestContext& context);

// Every route of the coordinator's REST server (rest_routes.cc).
void MountRestRoutes(RestRouter& router, const RestContext& context);

}  // namespace keyflow
