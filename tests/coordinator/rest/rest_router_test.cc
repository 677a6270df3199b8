#include "coordinator/rest/rest_router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

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
