// AddMetricsRoutes (prometheus_exporter.h), apart from the pure rendering so that the renderer
// and its tests need no HTTP router.
#include "coordinator/rest/prometheus_exporter.h"

namespace keyflow {

void AddMetricsRoutes(RestRouter& router, const StatusSnapshotPublisher& publisher,
                      const Clock* wall_clock) {
  static const SystemClock kSystemClock;
  const Clock* clock = wall_clock != nullptr ? wall_clock : &kSystemClock;
  router.Add("GET", "/metrics", [&publisher, clock](const HttpRequest&) {
    std::shared_ptr<const StatusSnapshot> snap = publisher.Latest();
    HttpResponse r;
    r.status = 200;
    r.content_type = std::string(kPrometheusContentType);
    r.headers["Cache-Control"] = "no-store";
    r.body = snap != nullptr
                 ? RenderPrometheusText(snap->status, snap->published_at_ms, clock->Now().millis())
                 : RenderPrometheusText(nlohmann::json(), 0, clock->Now().millis());
    return r;
  });
}

}  // namespace keyflow
