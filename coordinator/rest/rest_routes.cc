// The one place where the coordinator's REST routes are mounted: each feature adds its include
// and its one call under its marker line.
#include "coordinator/rest/rest_api.h"
// [includes: /metrics]
#include "coordinator/rest/prometheus_exporter.h"

// [includes: dashboard]
#include "coordinator/rest/dashboard.h"

namespace keyflow {

void MountRestRoutes(RestRouter& router, const RestContext& context) {
  // Every route below is kRead unless it says otherwise: on a secure cluster it needs a token.
  router.SetAccessCheck(RestAccessCheck(context));
  AddApiRoutes(router, context);
  // [routes: /metrics — AddMetricsRoutes(router, *context.snapshots);]
  AddMetricsRoutes(router, *context.snapshots, context.clock);

  // [routes: dashboard — AddDashboardRoutes(router);]
  AddDashboardRoutes(router);

  (void)context;
}

}  // namespace keyflow
