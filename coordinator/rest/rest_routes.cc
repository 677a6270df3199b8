// The one place where the coordinator's REST routes are mounted: each feature adds its include
// and its one call under its marker line.
#include "coordinator/rest/rest_api.h"
// [includes: /metrics]

// [includes: dashboard]
#include "coordinator/rest/dashboard.h"

namespace keyflow {

void MountRestRoutes(RestRouter& router, const RestContext& context) {
  AddApiRoutes(router, context);
  // [routes: /metrics — AddMetricsRoutes(router, *context.snapshots);]

  // [routes: dashboard — AddDashboardRoutes(router);]
  AddDashboardRoutes(router);

  (void)context;
}

}  // namespace keyflow
