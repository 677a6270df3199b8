// The coordinator's REST API seam (Flink's RestServerEndpoint + handlers; DESIGN §17, issue 12).
//
// The HTTP server (rest_server.h, cpp-httplib, its own threads) turns each request into an
// HttpRequest and asks the RestRouter for an HttpResponse. Handlers never touch the Coordinator:
// read-only ones read the latest StatusSnapshot (status_snapshot.h), published by the control
// loop; mutating ones (cancel, savepoint, rescale, stop, log level) go through a
// ControlCommandBridge into the control loop, where the Coordinator checks the operator's role
// exactly as for a CLI request. So a slow or hung HTTP client never blocks the control loop.
//
//   RestRouter router;
//   router.Add("GET", "/api/v1/job", [&](const HttpRequest& r) { return JsonResponse(200, j); });
//   HttpResponse resp = router.Handle(request);   // 404 / 405 as JSON errors
//
// Threading: Add before the server starts; Handle from any number of HTTP threads.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
  // `pattern`: a path whose segments are literals or ":name" parameters.
  void Add(const std::string& method, const std::string& pattern, Handler handler);
  // The handler of the first matching route; a path no route has: 404 JSON error; a path with
  // routes for other methods only: 405 JSON error with an Allow header.
  HttpResponse Handle(HttpRequest request) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace keyflow
