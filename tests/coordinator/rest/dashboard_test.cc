#include "coordinator/rest/dashboard.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace keyflow {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(KEYFLOW_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const DashboardAsset* Find(std::string_view path) {
  for (const DashboardAsset& a : DashboardAssets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

TEST(DashboardTest, EmbedsEveryAssetByteForByteWithItsContentType) {
  struct Expected {
    std::string path, source, content_type;
  };
  const Expected expected[] = {
      {"/static/index.html", "index.html", "text/html; charset=utf-8"},
      {"/static/dashboard.js", "dashboard.js", "text/javascript; charset=utf-8"},
      {"/static/dashboard.css", "dashboard.css", "text/css; charset=utf-8"},
      {"/static/favicon.svg", "favicon.svg", "image/svg+xml"},
  };
  for (const Expected& e : expected) {
    const DashboardAsset* a = Find(e.path);
    ASSERT_NE(a, nullptr) << e.path;
    EXPECT_EQ(a->content_type, e.content_type) << e.path;
    std::string source = ReadSource("coordinator/rest/dashboard/" + e.source);
    ASSERT_FALSE(source.empty()) << e.source;
    EXPECT_EQ(a->bytes, source) << e.path;
  }
  EXPECT_EQ(DashboardAssets().size(), std::size(expected) + 1);  // + Chart.js
}

TEST(DashboardTest, BundlesChartJs) {
  const DashboardAsset* chart = Find("/static/chart.min.js");
  ASSERT_NE(chart, nullptr);
  EXPECT_EQ(chart->content_type, "text/javascript; charset=utf-8");
  EXPECT_GT(chart->bytes.size(), 100'000u);
  EXPECT_NE(chart->bytes.find("Chart.js v"), std::string_view::npos);
  EXPECT_NE(chart->bytes.find("Released under the MIT License"), std::string_view::npos);
}

TEST(DashboardTest, EtagsAreDistinctQuotedHashPrefixes) {
  std::set<std::string_view> etags;
  for (const DashboardAsset& a : DashboardAssets()) {
    EXPECT_TRUE(std::regex_match(std::string(a.etag), std::regex("\"[0-9a-f]{16}\""))) << a.etag;
    etags.insert(a.etag);
  }
  EXPECT_EQ(etags.size(), DashboardAssets().size());
}

TEST(DashboardTest, RootServesIndexWithStrictSecurityHeaders) {
  HttpResponse r = DashboardAssetResponse("/", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, ReadSource("coordinator/rest/dashboard/index.html"));
  EXPECT_EQ(r.headers["Content-Security-Policy"],
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'");
  EXPECT_EQ(r.headers["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(r.headers["X-Frame-Options"], "DENY");
  EXPECT_EQ(r.headers["Referrer-Policy"], "no-referrer");
  EXPECT_EQ(r.headers["Cache-Control"], "no-cache");
  EXPECT_EQ(r.headers["ETag"], Find("/static/index.html")->etag);
}

TEST(DashboardTest, MatchingIfNoneMatchGives304WithoutBody) {
  const DashboardAsset* js = Find("/static/dashboard.js");
  ASSERT_NE(js, nullptr);
  std::string etag(js->etag);
  for (const std::string& header :
       {etag, "W/" + etag, "\"0000000000000000\", " + etag, etag + ", \"x\"", std::string("*")}) {
    HttpResponse r = DashboardAssetResponse("/static/dashboard.js", header);
    EXPECT_EQ(r.status, 304) << header;
    EXPECT_EQ(r.body, "") << header;
    EXPECT_EQ(r.headers["ETag"], etag);
  }
  // Another build's ETag, or a longer one that merely contains ours: the full asset.
  for (const std::string& header :
       {std::string("\"0000000000000000\""), "\"a" + etag.substr(1), etag.substr(0, 5)}) {
    HttpResponse r = DashboardAssetResponse("/static/dashboard.js", header);
    EXPECT_EQ(r.status, 200) << header;
    EXPECT_EQ(r.body, js->bytes) << header;
  }
}

TEST(DashboardTest, UnknownFileIs404JsonWithASentence) {
  for (const char* path : {"/static/nope.js", "/static/../coordinator.cc", "/index.htm"}) {
    HttpResponse r = DashboardAssetResponse(path, "");
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.content_type, "application/json");
    auto j = nlohmann::json::parse(r.body);
    EXPECT_EQ(j["error"],
              "The dashboard has no file " + std::string(path) + "; open / for the dashboard.");
    EXPECT_EQ(r.headers["X-Content-Type-Options"], "nosniff");
  }
}

// The policy forbids inline code: the page must have none, or the browser would refuse it.
TEST(DashboardTest, PageHasNoInlineScriptStyleOrExternalOrigin) {
  std::string html = ReadSource("coordinator/rest/dashboard/index.html");
  std::smatch m;
  std::regex script("<script([^>]*)>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), script);
       it != std::sregex_iterator(); ++it) {
    EXPECT_NE((*it)[1].str().find("src=\"/static/"), std::string::npos) << (*it)[0];
  }
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find(" style="), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, m, std::regex(" on[a-z]+=")));
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  std::string js = ReadSource("coordinator/rest/dashboard/dashboard.js");
  EXPECT_EQ(js.find(".innerHTML"), std::string::npos);  // user data goes in as textContent
  EXPECT_EQ(js.find(".outerHTML"), std::string::npos);
  EXPECT_EQ(js.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(js.find("eval("), std::string::npos);
}

TEST(DashboardTest, RoutesServeThePageAndItsAssetsOnTheRouter) {
  RestRouter router;
  AddDashboardRoutes(router);
  auto get = [&](const std::string& path, std::map<std::string, std::string> headers = {}) {
    HttpRequest q;
    q.method = "GET";
    q.path = path;
    q.headers = std::move(headers);
    return router.Handle(q);
  };
  HttpResponse index = get("/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.body, Find("/static/index.html")->bytes);
  for (const DashboardAsset& a : DashboardAssets()) {
    HttpResponse r = get(std::string(a.path));
    EXPECT_EQ(r.status, 200) << a.path;
    EXPECT_EQ(r.content_type, a.content_type) << a.path;
    EXPECT_EQ(r.body.size(), a.bytes.size()) << a.path;
    EXPECT_EQ(get(std::string(a.path), {{"if-none-match", std::string(a.etag)}}).status, 304);
  }
  EXPECT_EQ(get("/static/missing.css").status, 404);
  HttpRequest post;
  post.method = "POST";
  post.path = "/";
  EXPECT_EQ(router.Handle(post).status, 405);
}

}  // namespace
}  // namespace keyflow
