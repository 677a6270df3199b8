// The coordinator's REST API seam (Flink's RestServerEndpoint + handlers, issue 12).
//
// The HTTP server (rest_server.h, cpp-httplib, its own threads) turns each request into an
// HttpRequest and asks the RestRouter for an HttpResponse. Handlers never touch the Coordinator:
// read-only ones read the latest StatusSnapshot (status_snapshot.h), published by the control
// loop; mutating ones (cancel, savepoint, rescale, stop, log level) go through a
// ControlCommandBridge into the control loop, where the Coordinator checks the operator's role
// exactly as for a CLI request. So a slow or hung HTTP client never blocks the control loop.
//
//   RestRouter router;
//   router.SetAccessCheck(RestAccessCheck(context));          // rest_api.h: tokens and roles
//   router.Add("GET", "/api/v1/job", [&](const HttpRequest& r) { return JsonResponse(200, j); });
//   router.Add("GET", "/", page, RestAccess::kPublic);
//   HttpResponse resp = router.Handle(request);   // 404 / 405 as JSON errors
//
// Secure by default: a route is kRead unless added as kPublic or kCommand (rest_access.h), so a
// new endpoint needs a token on a secure cluster without anyone remembering to ask for one.
//
// Threading: Add before the server starts; Handle from any number of HTTP threads.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/rest/rest_access.h"

namespace keyflow {

struct HttpRequest {
  std::string method;                          // "GET", "POST", "PUT", ...
  std::string path;                            // without the query string, e.g. "/api/v1/job"
  std::map<std::string, std::string> query;    // decoded query parameters
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote_address;
  // Path parameters of the matched route ("/api/v1/jobs/:id" -> {"id", ...}), set by Handle.
  std::map<std::string, std::string> path_params;
  // Who presented a token the access check admitted (set by it; none on kPublic routes and on
  // an --insecure cluster).
  std::optional<RestCaller> caller;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;  // extra response headers
};

// {"error": message} with `status` (Flink's REST errors are {"errors": [...]}; ours is one
// sentence a user can act on).
HttpResponse JsonError(int status, const std::string& message);
HttpResponse JsonResponse(int status, const nlohmann::json& body);

class RestRouter {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Decides whether `request` may reach a route of `access` (never called for kPublic): nullopt
  // lets it through (after setting request.caller if it authenticated someone), a response
  // (401, 403, ...) is the answer instead.
  using AccessCheck =
      std::function<std::optional<HttpResponse>(HttpRequest& request, RestAccess access)>;

  // `pattern`: a path whose segments are literals or ":name" parameters.
  void Add(const std::string& method, const std::string& pattern, Handler handler,
           RestAccess access = RestAccess::kRead);
  // Without a check every route is open (tests of the routing alone).
  void SetAccessCheck(AccessCheck check) { check_ = std::move(check); }
  // The handler of the first matching route, after the access check; a path no route has: 404
  // JSON error; a path with routes for other methods only: 405 JSON error with an Allow header.
  HttpResponse Handle(HttpRequest request) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
    RestAccess access;
  };
  std::vector<Route> routes_;
  AccessCheck check_;
};

}  // namespace keyflow
