#include "coordinator/rest/rest_router.h"

#include <exception>
#include <set>

#include "common/logging/logging.h"

namespace keyflow {
namespace {

// "/api/v1/job" -> {"api", "v1", "job"}; "/" -> {}. Empty segments ("//", a trailing '/') are
// dropped, so "/api/v1/job/" is "/api/v1/job".
std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// Matches `path` against a route's segments, filling `params`. A last segment "*name" matches
// the rest of the path (one or more segments, joined with '/').
bool Match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
           std::map<std::string, std::string>* params) {
  params->clear();
  for (size_t i = 0; i < pattern.size(); ++i) {
    const std::string& p = pattern[i];
    if (!p.empty() && p[0] == '*' && i + 1 == pattern.size()) {
      if (i >= path.size()) return false;
      std::string rest;
      for (size_t k = i; k < path.size(); ++k) rest += (k > i ? "/" : "") + path[k];
      (*params)[p.substr(1)] = rest;
      return true;
    }
    if (i >= path.size()) return false;
    if (!p.empty() && p[0] == ':') {
      (*params)[p.substr(1)] = path[i];
    } else if (p != path[i]) {
      return false;
    }
  }
  return pattern.size() == path.size();
}

void NoStore(HttpResponse* r) {
  if (r->headers.find("Cache-Control") == r->headers.end()) {
    r->headers["Cache-Control"] = "no-store";
  }
}

}  // namespace

HttpResponse JsonError(int status, const std::string& message) {
  return JsonResponse(status, nlohmann::json{{"error", message}});
}

HttpResponse JsonResponse(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  // Invalid UTF-8 (a file name from a worker) is replaced, never a throw on an HTTP thread.
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body += "\n";
  return r;
}

void RestRouter::Add(const std::string& method, const std::string& pattern, Handler handler,
                     RestAccess access) {
  routes_.push_back(Route{method, SplitPath(pattern), std::move(handler), access});
}

HttpResponse RestRouter::Handle(HttpRequest request) const {
  const std::vector<std::string> path = SplitPath(request.path);
  std::set<std::string> allowed;
  std::map<std::string, std::string> params;
  for (const Route& route : routes_) {
    if (!Match(route.segments, path, &params)) continue;
    // HEAD is answered by the GET handler (the server sends no body).
    if (route.method == request.method || (request.method == "HEAD" && route.method == "GET")) {
      request.path_params = std::move(params);
      request.caller.reset();  // only the access check sets it
      HttpResponse r;
      try {
        std::optional<HttpResponse> refused;
        if (route.access != RestAccess::kPublic && check_) refused = check_(request, route.access);
        r = refused ? *std::move(refused) : route.handler(request);
      } catch (const std::exception& e) {
        KF_LOG_ERROR("REST handler {} {} failed: {}", request.method, request.path, e.what());
        r = JsonError(500, std::string("the coordinator failed to answer ") + request.method + " " +
                               request.path + " (" + e.what() +
                               "): retry; if it persists, report it with the coordinator log");
      }
      NoStore(&r);
      return r;
    }
    allowed.insert(route.method);
  }
  HttpResponse r;
  if (allowed.empty()) {
    r = JsonError(404, "no such endpoint: " + request.path +
                           " (the REST API's endpoints are listed in coordinator/README.md; "
                           "start with GET /api/v1/overview)");
  } else {
    std::string allow;
    for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    r = JsonError(405, request.method + " is not allowed on " + request.path + ": use " + allow);
    r.headers["Allow"] = allow;
  }
  NoStore(&r);
  return r;
}

}  // namespace keyflow
