#include "coordinator/rest/rest_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace keyflow {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

HttpRequest Request(std::string method, std::string path) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

// Answers with the route's name and its path parameters.
RestRouter::Handler Named(std::string name) {
  return [name](const HttpRequest& r) {
    json params = json::object();
    for (const auto& [k, v] : r.path_params) params[k] = v;
    return JsonResponse(200, {{"route", name}, {"params", params}});
  };
}

class RestRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.Add("GET", "/", Named("root"));
    router_.Add("GET", "/api/v1/job", Named("job"));
    router_.Add("POST", "/api/v1/job/cancel", Named("cancel"));
    router_.Add("GET", "/api/v1/jobs/:id/vertices/:v", Named("vertex"));
    router_.Add("GET", "/static/*file", Named("static"));
    router_.Add("PUT", "/api/v1/logging", Named("put-logging"));
    router_.Add("GET", "/api/v1/logging", Named("get-logging"));
  }
  json Body(const HttpResponse& r) { return json::parse(r.body); }
  RestRouter router_;
};

TEST_F(RestRouterTest, LiteralRoutesMatchExactlyIgnoringATrailingSlash) {
  HttpResponse r = router_.Handle(Request("GET", "/api/v1/job"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["route"], "job");
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.headers.at("Cache-Control"), "no-store");
  EXPECT_EQ(Body(router_.Handle(Request("GET", "/api/v1/job/")))["route"], "job");
  EXPECT_EQ(Body(router_.Handle(Request("GET", "/")))["route"], "root");
}

TEST_F(RestRouterTest, ParametersAndTheRestOfThePath) {
  json v = Body(router_.Handle(Request("GET", "/api/v1/jobs/j-1/vertices/7")));
  EXPECT_EQ(v["route"], "vertex");
  EXPECT_EQ(v["params"], (json{{"id", "j-1"}, {"v", "7"}}));
  json s = Body(router_.Handle(Request("GET", "/static/js/chart.umd.js")));
  EXPECT_EQ(s["route"], "static");
  EXPECT_EQ(s["params"], (json{{"file", "js/chart.umd.js"}}));
  // "*file" needs at least one segment.
  EXPECT_EQ(router_.Handle(Request("GET", "/static")).status, 404);
}

TEST_F(RestRouterTest, UnknownPathIs404Json) {
  HttpResponse r = router_.Handle(Request("GET", "/api/v1/nope"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.headers.at("Cache-Control"), "no-store");
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("no such endpoint: /api/v1/nope"));
  // A prefix of a route or a longer path is not the route.
  EXPECT_EQ(router_.Handle(Request("GET", "/api/v1")).status, 404);
  EXPECT_EQ(router_.Handle(Request("GET", "/api/v1/job/x/y")).status, 404);
}

TEST_F(RestRouterTest, WrongMethodIs405WithAllow) {
  HttpResponse r = router_.Handle(Request("GET", "/api/v1/job/cancel"));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers.at("Allow"), "POST");
  EXPECT_EQ(Body(r)["error"], "GET is not allowed on /api/v1/job/cancel: use POST");
  HttpResponse d = router_.Handle(Request("DELETE", "/api/v1/logging"));
  EXPECT_EQ(d.status, 405);
  EXPECT_EQ(d.headers.at("Allow"), "GET, PUT");
  EXPECT_EQ(Body(router_.Handle(Request("PUT", "/api/v1/logging")))["route"], "put-logging");
}

TEST_F(RestRouterTest, HeadIsAnsweredByGet) {
  EXPECT_EQ(Body(router_.Handle(Request("HEAD", "/api/v1/job")))["route"], "job");
  EXPECT_EQ(router_.Handle(Request("HEAD", "/api/v1/job/cancel")).status, 405);
}

TEST_F(RestRouterTest, AThrowingHandlerIs500Json) {
  router_.Add("GET", "/boom",
              [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("kaput"); });
  HttpResponse r = router_.Handle(Request("GET", "/boom"));
  EXPECT_EQ(r.status, 500);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("kaput"));
}

// Routes are kRead unless added otherwise; the check runs before the handler of a kRead or
// kCommand route (never for kPublic ones, nor for 404/405), may refuse with its own response
// and names the caller the handler sees.
TEST(RestRouterAccessTest, TheCheckGuardsEveryRouteButThePublicOnes) {
  RestRouter router;
  auto caller = [](const HttpRequest& r) {
    return JsonResponse(200, {{"caller", r.caller ? r.caller->name : ""}});
  };
  router.Add("GET", "/read", caller);
  router.Add("POST", "/command", caller, RestAccess::kCommand);
  router.Add("GET", "/public", caller, RestAccess::kPublic);
  std::vector<std::pair<std::string, RestAccess>> checked;
  router.SetAccessCheck(
      [&checked](HttpRequest& r, RestAccess access) -> std::optional<HttpResponse> {
        checked.emplace_back(r.path, access);
        if (r.headers.count("authorization") == 0) return JsonError(401, "who are you?");
        r.caller = RestCaller{RestRole::kViewer, r.headers.at("authorization")};
        return std::nullopt;
      });
  HttpRequest read = Request("GET", "/read");
  read.caller = RestCaller{RestRole::kOperator, "forged"};  // only the check sets it
  HttpResponse refused = router.Handle(read);
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.headers.at("Cache-Control"), "no-store");
  read.headers["authorization"] = "v";
  EXPECT_EQ(json::parse(router.Handle(read).body)["caller"], "v");
  HttpRequest command = Request("POST", "/command");
  command.headers["authorization"] = "op";
  EXPECT_EQ(json::parse(router.Handle(command).body)["caller"], "op");
  HttpRequest pub = Request("GET", "/public");
  pub.caller = RestCaller{RestRole::kOperator, "forged"};
  EXPECT_EQ(json::parse(router.Handle(pub).body)["caller"], "");
  EXPECT_EQ(router.Handle(Request("GET", "/nope")).status, 404);
  EXPECT_EQ(router.Handle(Request("DELETE", "/read")).status, 405);
  EXPECT_EQ(checked,
            (std::vector<std::pair<std::string, RestAccess>>{{"/read", RestAccess::kRead},
                                                             {"/read", RestAccess::kRead},
                                                             {"/command", RestAccess::kCommand}}));
}

TEST(JsonResponseTest, InvalidUtf8IsReplacedNotThrown) {
  HttpResponse r = JsonResponse(200, {{"file", std::string("a\xff"
                                                           "b")}});
  EXPECT_EQ(r.body,
            "{\"file\":\"a\xEF\xBF\xBD"
            "b\"}\n");
  EXPECT_EQ(JsonError(409, "busy").body, "{\"error\":\"busy\"}\n");
}

}  // namespace
}  // namespace keyflow
