// The web dashboard (issue 12 req. 4; Flink's web UI): a page served by the coordinator's REST
// server at "/" that polls the JSON API (rest_api.h) every second and shows the workers, the
// job, its subtasks with their key-group ranges, live charts per subtask (records/s, watermark
// lag, backpressure, latency p99) and the checkpoint history. Plain JS in
// coordinator/rest/dashboard/ plus Chart.js from Debian's libjs-chart.js; every asset is built
// into the binary (embed_assets.cmake generates DashboardAssets()), nothing is read from disk at
// run time.
//
// Responses carry a strict Content-Security-Policy (only this origin; no inline script or
// style, no external origins, no framing), X-Content-Type-Options: nosniff, and
// `Cache-Control: no-cache` with an ETag (a prefix of the asset's SHA-256): a browser revalidates
// each load and gets 304 when the build did not change.
//
//   RestRouter router;
//   AddDashboardRoutes(router);   // GET /, GET /static/:name
//
// Threading: the handlers read only constant data; any HTTP thread may call them.
#pragma once

#include <span>
#include <string_view>

#include "coordinator/rest/rest_router.h"

namespace keyflow {

// GET / (index.html) and GET /static/:name (dashboard.js, dashboard.css, chart.min.js, ...).
// An unknown /static/ name: 404 JSON error.
void AddDashboardRoutes(RestRouter& router);

// The policy every dashboard response carries.
inline constexpr std::string_view kDashboardContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

struct DashboardAsset {
  std::string_view path;          // URL path, e.g. "/static/dashboard.js"
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view bytes;
  std::string_view etag;  // quoted, e.g. "\"3f2a...\""
};

// Every asset, generated at build time (embed_assets.cmake).
std::span<const DashboardAsset> DashboardAssets();

// The response for `path` (an asset's path, or "/" for index.html) given the request's
// If-None-Match header value ("" if absent): 200 with the bytes, 304 when it matches the ETag,
// 404 JSON error for an unknown path.
HttpResponse DashboardAssetResponse(std::string_view path, std::string_view if_none_match);

}  // namespace keyflow
