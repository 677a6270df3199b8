#include "coordinator/rest/dashboard.h"

#include <nlohmann/json.hpp>
#include <string>

namespace keyflow {
namespace {

void AddSecurityHeaders(HttpResponse& r) {
  r.headers["Content-Security-Policy"] = std::string(kDashboardContentSecurityPolicy);
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["X-Frame-Options"] = "DENY";
  r.headers["Referrer-Policy"] = "no-referrer";
}

// If-None-Match may list several ETags ("a", "b") or be "*".
bool Matches(std::string_view if_none_match, std::string_view etag) {
  if (if_none_match == "*") return true;
  size_t pos = 0;
  while ((pos = if_none_match.find(etag, pos)) != std::string_view::npos) {
    bool starts = pos == 0 || if_none_match[pos - 1] == ' ' || if_none_match[pos - 1] == ',' ||
                  if_none_match[pos - 1] == '/';  // a weak validator W/"..."
    size_t end = pos + etag.size();
    bool ends =
        end == if_none_match.size() || if_none_match[end] == ',' || if_none_match[end] == ' ';
    if (starts && ends) return true;
    pos = end;
  }
  return false;
}

}  // namespace

HttpResponse DashboardAssetResponse(std::string_view path, std::string_view if_none_match) {
  if (path == "/") path = "/static/index.html";
  for (const DashboardAsset& a : DashboardAssets()) {
    if (a.path != path) continue;
    HttpResponse r;
    r.headers["Cache-Control"] = "no-cache";
    r.headers["ETag"] = std::string(a.etag);
    AddSecurityHeaders(r);
    r.content_type = std::string(a.content_type);
    if (!if_none_match.empty() && Matches(if_none_match, a.etag)) {
      r.status = 304;
      return r;
    }
    r.status = 200;
    r.body = std::string(a.bytes);
    return r;
  }
  HttpResponse r;
  r.status = 404;
  r.body = nlohmann::json{{"error", "The dashboard has no file " + std::string(path) +
                                        "; open / for the dashboard."}}
               .dump();
  AddSecurityHeaders(r);
  return r;
}

void AddDashboardRoutes(RestRouter& router) {
  auto serve = [](const HttpRequest& request) {
    auto it = request.headers.find("if-none-match");
    return DashboardAssetResponse(request.path,
                                  it == request.headers.end() ? "" : std::string_view(it->second));
  };
  // The page and its code are public (they hold no data): a browser loads them before it has a
  // token, and the page asks for one when the API answers 401.
  router.Add("GET", "/", serve, RestAccess::kPublic);
  router.Add("GET", "/static/:name", serve, RestAccess::kPublic);
}

}  // namespace keyflow
