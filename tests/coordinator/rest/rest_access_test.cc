// Who may call what (rest_access.h) on every route MountRestRoutes mounts — the API, /metrics,
// the dashboard — with the tokens of a real key set: on a secure cluster reads need a viewer's
// or an operator's token (401 with a sentence saying how to get one), commands an operator's
// (403 for a viewer), the liveness probe and the dashboard's files none; a revoked viewer is
// refused after the reload; an --insecure cluster's reads are open and its commands off.
#include "coordinator/rest/rest_access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>

#include "common/security/sha256.h"
#include "coordinator/cli/keys_command.h"
#include "coordinator/rest/rest_api.h"
#include "coordinator/rest/rest_auth.h"
#include "coordinator/rest/rest_token.h"
#include "tests/coordinator/rest/rest_test_fixture.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Every reading route: the API's and /metrics.
const char* const kReads[] = {
    "/api/v1/overview",        "/api/v1/workers",     "/api/v1/job", "/api/v1/job/subtasks",
    "/api/v1/job/checkpoints", "/api/v1/job/rescale", "/metrics"};

struct Command {
  const char* method;
  const char* path;
  const char* body;
};
const Command kCommands[] = {{"POST", "/api/v1/job/cancel", ""},
                             {"POST", "/api/v1/job/stop", "{}"},
                             {"POST", "/api/v1/job/savepoints", "{}"},
                             {"POST", "/api/v1/job/checkpoints", ""},
                             {"POST", "/api/v1/job/rescale", R"({"parallelism": 2})"},
                             {"PUT", "/api/v1/logging", R"({"level": "debug"})"}};

json StatusWithAJob() {
  return json::parse(R"js({
    "coordinator": {"incarnation": "c-1", "security": {"mode": "curve"}},
    "workers": [{"worker": 1, "slot": 0, "host": "h", "pid": 10}],
    "job": {"job_id": "j-1", "job": "count-window", "state": "RUNNING", "attempt": 1,
            "parallelism": 1, "subtasks": [{"subtask": 0, "key_groups": [0, 127]}],
            "checkpoints": {"history": []}}
  })js");
}

using test::Mode;
using test::Readable;

class RestAccessTest : public test::RestFixture {
 protected:
  void SetUp() override {
    RestFixture::SetUp();
    ASSERT_OK(cli::AddViewerToken(keys_.dir, "grafana"));
    LoadKeySet();
    MountRestRoutes(router_, context_);
    snapshots_.Publish(StatusWithAJob(), 1000);
    viewer_ = ReadRestToken(ViewerTokenFile(keys_, "grafana")).value();
  }

  HttpResponse Send(std::string method, std::string path, std::string body,
                    const std::string& token) {
    return router_.Handle(
        Request(std::move(method), std::move(path), std::move(body), token, "10.0.0.9"));
  }
  HttpResponse Get(const std::string& path, const std::string& token) {
    return Send("GET", path, "", token);
  }
  static std::string Error(const HttpResponse& r) {
    return json::parse(r.body)["error"].get<std::string>();
  }

  std::string viewer_;
};

TEST_F(RestAccessTest, AViewerIsATokenAloneWithPrivateModes) {
  EXPECT_EQ(Mode(ViewerDir(keys_)), 0700u);
  EXPECT_EQ(Mode(ViewerTokenFile(keys_, "grafana")), 0600u);
  EXPECT_EQ(Mode(ViewerTokenHashFile(keys_, "grafana")), 0644u);
  EXPECT_EQ(viewer_.size(), 64u);
  EXPECT_NE(viewer_, operator_);
  EXPECT_EQ(store_->token_count(), 2u);
  EXPECT_EQ(store_->CallerOfTokenHash(Sha256Hex(viewer_)),
            (RestCaller{RestRole::kViewer, "grafana"}));
  EXPECT_EQ(store_->CallerOfTokenHash(Sha256Hex(operator_)),
            (RestCaller{RestRole::kOperator, "operator"}));
  EXPECT_EQ(cli::AddViewerToken(keys_.dir, "grafana").code(), StatusCode::kAlreadyExists);
}

TEST_F(RestAccessTest, EveryReadWithoutATokenIs401AndSaysHowToGetOne) {
  for (const char* path : kReads) {
    HttpResponse r = Get(path, "");
    EXPECT_EQ(r.status, 401) << path;
    EXPECT_EQ(r.headers["WWW-Authenticate"], "Bearer realm=\"keyflow\"") << path;
    EXPECT_EQ(r.headers["Cache-Control"], "no-store") << path;
    EXPECT_EQ(Error(r),
              "this cluster's REST API needs a token to read: send `Authorization: Bearer "
              "<token>` with a viewer's token (read-only: KEYS/viewers/NAME.token; `keyflow keys "
              "add-token NAME --role viewer` creates one, scripts/start-cluster.sh writes "
              "RUN_DIR/keys/viewers/viewer.token), or the token of an operator client key "
              "(KEYS/clients/NAME.token of the key set; `keyflow keys add-client NAME` creates "
              "one)")
        << path;
    EXPECT_EQ(r.body.find("j-1"), std::string::npos) << path << ": no job data";
  }
  HttpResponse unknown = Get("/api/v1/job", std::string(64, 'a'));
  EXPECT_EQ(unknown.status, 401);
  EXPECT_THAT(Error(unknown), HasSubstr("the coordinator does not know this token (or it was "
                                        "revoked): use a viewer's token"));
  EXPECT_EQ(Get("/metrics", Sha256Hex(viewer_)).status, 401) << "a hash is not a token";
  EXPECT_EQ(auth_->failed_attempts(), std::size(kReads) + 2);
}

TEST_F(RestAccessTest, AViewersAndAnOperatorsTokenReadEverything) {
  for (const std::string& token : {viewer_, operator_}) {
    for (const char* path : kReads) {
      HttpResponse r = Get(path, token);
      EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    }
    HttpResponse job = Get("/api/v1/job", token);
    EXPECT_EQ(json::parse(job.body)["job_id"], "j-1");
    HttpResponse metrics = Get("/metrics", token);
    EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_THAT(metrics.body, HasSubstr("\nkeyflow_coordinator_workers 1\n"));
  }
  // HEAD is a read too.
  EXPECT_EQ(Send("HEAD", "/api/v1/job", "", "").status, 401);
  EXPECT_EQ(Send("HEAD", "/api/v1/job", "", viewer_).status, 200);
  EXPECT_EQ(auth_->failed_attempts(), 1u);
}

// Prometheus sends `Authorization: Bearer <credentials_file's content>`; the scheme is
// case-insensitive (RFC 7235).
TEST_F(RestAccessTest, TheBearerSchemeIsCaseInsensitive) {
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER  "}) {
    HttpRequest r;
    r.method = "GET";
    r.path = "/metrics";
    r.headers["authorization"] = scheme + viewer_;
    EXPECT_EQ(router_.Handle(r).status, 200) << scheme;
  }
  HttpRequest basic;
  basic.method = "GET";
  basic.path = "/metrics";
  basic.headers["authorization"] = "Basic " + viewer_;
  HttpResponse b = router_.Handle(basic);
  EXPECT_EQ(b.status, 401);
  EXPECT_EQ(Error(b), "the Authorization header must be `Bearer <token>`");
}

TEST_F(RestAccessTest, AViewersTokenOnACommandIs403AndReachesNothing) {
  for (const Command& c : kCommands) {
    HttpResponse r = Send(c.method, c.path, c.body, viewer_);
    EXPECT_EQ(r.status, 403) << c.path;
    EXPECT_EQ(Error(r),
              "the token of viewer grafana may only read: this command needs an operator's "
              "token (the token of an operator client key, KEYS/clients/NAME.token; `keyflow "
              "keys add-client NAME` creates one)")
        << c.path;
    HttpResponse none = Send(c.method, c.path, c.body, "");
    EXPECT_EQ(none.status, 401) << c.path;
    EXPECT_THAT(Error(none), HasSubstr("this command needs an operator's token")) << c.path;
  }
  EXPECT_FALSE(Readable(bridge_->fd(), 0)) << "nothing reached the control loop";
  EXPECT_EQ(auth_->failed_attempts(), std::size(kCommands)) << "only the missing tokens";
}

TEST_F(RestAccessTest, AnOperatorsTokenCommands) {
  auto reply = std::async(std::launch::async,
                          [this] { return Send("POST", "/api/v1/job/cancel", "", operator_); });
  ASSERT_TRUE(Readable(bridge_->fd(), 10'000));
  auto pending = bridge_->TakePending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].caller.identity, (PeerIdentity{Role::kOperator, "operator"}));
  bridge_->Complete(pending[0].connection, Reply{true, "job j-1 canceled", ""});
  EXPECT_EQ(reply.get().status, 200);
}

TEST_F(RestAccessTest, TheLivenessProbeAndTheDashboardsFilesNeedNoToken) {
  HttpResponse health = Get("/api/v1/health", "");
  EXPECT_EQ(health.status, 200);
  json h = json::parse(health.body);
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h.size(), 2u) << "status and the snapshot's age only: " << health.body;
  EXPECT_EQ(Get("/", "").status, 200);
  EXPECT_EQ(Get("/static/dashboard.js", "").status, 200);
  EXPECT_EQ(Get("/static/nope.js", "").status, 404);
  EXPECT_EQ(Get("/api/v1/nope", "").status, 404);
  EXPECT_EQ(auth_->failed_attempts(), 0u);
}

TEST_F(RestAccessTest, RevokingAViewerTakesEffectAtTheReload) {
  ASSERT_EQ(Get("/api/v1/overview", viewer_).status, 200);
  ASSERT_OK(cli::AddViewerToken(keys_.dir, "later"));
  const std::string later = ReadRestToken(ViewerTokenFile(keys_, "later")).value();
  EXPECT_EQ(Get("/metrics", later).status, 401) << "not admitted before the reload";
  std::filesystem::remove(ViewerTokenHashFile(keys_, "grafana"));
  EXPECT_EQ(Get("/api/v1/overview", viewer_).status, 200) << "revoked only at the reload";
  ASSERT_OK(store_->Reload());
  EXPECT_EQ(Get("/api/v1/overview", viewer_).status, 401);
  EXPECT_EQ(Get("/metrics", later).status, 200);
  EXPECT_EQ(Get("/metrics", operator_).status, 200) << "other tokens stay";
  auto viewers = ListViewers(keys_);
  ASSERT_OK(viewers);
  EXPECT_EQ(*viewers, (std::map<std::string, bool>{{"grafana", false}, {"later", true}}));
}

TEST_F(RestAccessTest, AMalformedViewerHashFileKeepsTheOldTokensAtTheReload) {
  { std::ofstream(ViewerTokenHashFile(keys_, "grafana"), std::ios::trunc) << "not a hash\n"; }
  Result<size_t> reload = store_->Reload();
  ASSERT_FALSE(reload.ok());
  EXPECT_THAT(reload.status().message(),
              HasSubstr(ViewerTokenHashFile(keys_, "grafana") +
                        " does not hold a SHA-256 (64 hex digits): remove it and create a new "
                        "token with `keyflow keys add-token grafana --role viewer`"));
  EXPECT_EQ(Get("/metrics", viewer_).status, 200) << "the previous tokens stay in use";
}

TEST_F(RestAccessTest, AnInsecureClusterReadsOpenlyAndRefusesCommands) {
  context_.secure = false;
  for (const char* path : kReads) EXPECT_EQ(Get(path, "").status, 200) << path;
  for (const Command& c : kCommands) {
    HttpResponse r = Send(c.method, c.path, c.body, operator_);
    EXPECT_EQ(r.status, 403) << c.path;
    EXPECT_THAT(Error(r), HasSubstr("this cluster runs --insecure, so the REST API's commands "
                                    "are off"));
  }
  EXPECT_FALSE(Readable(bridge_->fd(), 0));
  EXPECT_EQ(auth_->failed_attempts(), 0u);
}

}  // namespace
}  // namespace keyflow
