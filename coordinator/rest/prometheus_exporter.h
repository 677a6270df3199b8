// /metrics: the coordinator's status as Prometheus metrics (text exposition format 0.0.4), the
// counterpart of Flink's PrometheusReporter. Everything comes from the published StatusSnapshot
// (Coordinator::StatusJson), so a scrape never touches the control loop.
//
// Families (coordinator/README.md "Metrics" lists every one): keyflow_coordinator_* (up, status
// age, workers, refused connections/requests), keyflow_worker_* (RSS, CPU seconds, open fds,
// heartbeat age; label worker), keyflow_job_* (records, restarts, checkpoints; label job_id),
// keyflow_subtask_* (records, rates, watermark and its lag, backpressure, state, timers, latency
// histogram; labels job_id, subtask, worker). The scrape job's own `job` label is Prometheus'
// (it would rename ours to exported_job), hence `job_id`. Counters end in _total; times are
// seconds, sizes bytes; a value the status does not know (no watermark yet, no sample in the
// latency window) is left out rather than given a sentinel.
//
//   AddMetricsRoutes(router, publisher);   // GET /metrics
//
// /metrics is a reading route (rest_access.h): on a secure cluster a scrape needs a viewer's
// (or an operator's) token, `Authorization: Bearer <token>`, which Prometheus sends with
// `authorization: {type: Bearer, credentials_file: KEYS/viewers/NAME.token}` in its scrape
// config (coordinator/README.md "Metrics").
//
// Threading: RenderPrometheusText is a pure function; the route runs on HTTP threads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "coordinator/rest/rest_router.h"
#include "coordinator/rest/status_snapshot.h"

namespace keyflow {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// The exposition text of `status` (a Coordinator::StatusJson document) published at
// `snapshot_wall_ms` (0: there is no snapshot yet; only keyflow_coordinator_up is rendered),
// scraped at `now_wall_ms` (both ms since the epoch). Missing members are tolerated.
std::string RenderPrometheusText(const nlohmann::json& status, int64_t snapshot_wall_ms,
                                 int64_t now_wall_ms);

// A label value in the exposition format: \ -> \\, " -> \", newline -> \n.
std::string EscapeLabelValue(std::string_view value);

// GET /metrics from the latest snapshot of `publisher` (both must outlive the router's server).
// `wall_clock` (null: the system clock) dates the scrape for
// keyflow_coordinator_status_age_seconds.
void AddMetricsRoutes(RestRouter& router, const StatusSnapshotPublisher& publisher,
                      const Clock* wall_clock = nullptr);

}  // namespace keyflow
