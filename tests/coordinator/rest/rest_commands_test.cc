// The REST commands end to end through the router, the authenticator (tokens of a real key
// set) and the bridge, with the test playing the control loop: what reaches the Coordinator
// (message, operator identity, address) and what the HTTP caller gets back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>

#include "common/file_io.h"
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

using test::Mode;
using test::Readable;

class RestCommandsTest : public test::RestFixture {
 protected:
  void SetUp() override {
    RestFixture::SetUp();
    router_.SetAccessCheck(RestAccessCheck(context_));
    AddApiRoutes(router_, context_);
  }

  // Sends the request on another thread; the test takes the command off the bridge.
  std::future<HttpResponse> Send(HttpRequest r) {
    return std::async(std::launch::async, [this, r] { return router_.Handle(r); });
  }
  ControlCommandBridge::Pending Take() {
    EXPECT_TRUE(Readable(bridge_->fd(), 10'000));
    auto pending = bridge_->TakePending();
    EXPECT_EQ(pending.size(), 1u);
    return pending.empty() ? ControlCommandBridge::Pending{} : pending[0];
  }
  static json Body(const HttpResponse& r) { return json::parse(r.body); }
};

TEST_F(RestCommandsTest, TheKeySetHasAPrivateTokenPerClientAndOnlyItsHashIsShared) {
  const std::string token_file = RestTokenFile(keys_, "operator");
  EXPECT_EQ(Mode(token_file), 0600u);
  EXPECT_EQ(Mode(RestTokenHashFile(keys_, "operator")), 0644u);
  EXPECT_EQ(operator_.size(), 64u);
  EXPECT_EQ(ReadFileToString(RestTokenHashFile(keys_, "operator")).value(),
            Sha256Hex(operator_) + "\n");
  EXPECT_FALSE(std::filesystem::exists(keys_.RoleDir(Role::kWorker) + "/worker-0.token"));
  EXPECT_EQ(store_->token_count(), 1u);
  // Never overwritten.
  EXPECT_EQ(WriteNewRestToken(keys_, "operator").code(), StatusCode::kAlreadyExists);
}

TEST_F(RestCommandsTest, CancelReachesTheCoordinatorAsTheOperatorAndReturnsItsReply) {
  auto reply = Send(Request("POST", "/api/v1/job/cancel", "", operator_));
  ControlCommandBridge::Pending p = Take();
  EXPECT_TRUE(std::holds_alternative<CancelJob>(p.message));
  EXPECT_EQ(p.caller.identity, (PeerIdentity{Role::kOperator, "operator"}));
  EXPECT_EQ(p.caller.address, "10.0.0.7");
  bridge_->Complete(p.connection, Reply{true, "job j-1 canceled", ""});
  HttpResponse r = reply.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Body(r), (json{{"ok", true}, {"message", "job j-1 canceled"}, {"result", nullptr}}));
}

TEST_F(RestCommandsTest, EachCommandsBodyBecomesItsMessage) {
  {
    auto reply = Send(Request("POST", "/api/v1/job/stop", R"({"directory": "/sp/1"})", operator_));
    ControlCommandBridge::Pending p = Take();
    EXPECT_EQ(std::get<StopJob>(p.message).directory, "/sp/1");
    bridge_->Complete(p.connection, Reply{true, "stopped", R"({"id": 4, "directory": "/sp/1"})"});
    HttpResponse r = reply.get();
    EXPECT_EQ(Body(r)["result"], (json{{"id", 4}, {"directory", "/sp/1"}}));
  }
  {
    auto reply = Send(Request("POST", "/api/v1/job/savepoints", "{}", operator_));
    ControlCommandBridge::Pending p = Take();
    const auto& c = std::get<CheckpointRequest>(p.message);
    EXPECT_TRUE(c.savepoint);
    EXPECT_EQ(c.directory, "");
    bridge_->Complete(p.connection, Reply{true, "savepoint", ""});
    EXPECT_EQ(reply.get().status, 200);
  }
  {
    auto reply = Send(Request("POST", "/api/v1/job/checkpoints", "", operator_));
    ControlCommandBridge::Pending p = Take();
    EXPECT_FALSE(std::get<CheckpointRequest>(p.message).savepoint);
    bridge_->Complete(p.connection, Reply{false, "no job is running", ""});
    HttpResponse r = reply.get();
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(Body(r)["error"], "no job is running");
  }
  {
    auto reply = Send(Request("POST", "/api/v1/job/rescale", R"({"parallelism": 3})", operator_));
    ControlCommandBridge::Pending p = Take();
    EXPECT_EQ(std::get<RescaleRequest>(p.message).new_parallelism, 3);
    EXPECT_FALSE(std::get<RescaleRequest>(p.message).plan_only);
    EXPECT_EQ(std::get<RescaleRequest>(p.message).via, RescaleRequest::Via::kAuto);
    bridge_->Complete(p.connection, Reply{true, "rescaled", ""});
    EXPECT_EQ(reply.get().status, 200);
  }
  {
    auto reply = Send(Request("POST", "/api/v1/job/rescale",
                              R"({"parallelism": 2, "via": "checkpoint"})", operator_));
    ControlCommandBridge::Pending p = Take();
    EXPECT_EQ(std::get<RescaleRequest>(p.message).new_parallelism, 2);
    EXPECT_EQ(std::get<RescaleRequest>(p.message).via, RescaleRequest::Via::kCheckpoint);
    bridge_->Complete(p.connection, Reply{true, "rescaled", ""});
    EXPECT_EQ(reply.get().status, 200);
  }
  {
    auto reply = Send(
        Request("PUT", "/api/v1/logging", R"({"level": "debug", "workers": false})", operator_));
    ControlCommandBridge::Pending p = Take();
    EXPECT_EQ(std::get<SetLogLevelRequest>(p.message).level, "debug");
    EXPECT_FALSE(std::get<SetLogLevelRequest>(p.message).workers);
    bridge_->Complete(p.connection, Reply{true, "log level debug", ""});
    EXPECT_EQ(reply.get().status, 200);
  }
}

TEST_F(RestCommandsTest, ARefusalsHttpStatusIsItsClass) {
  const std::vector<std::pair<StatusCode, int>> cases = {
      {StatusCode::kInvalidArgument, 400},
      {StatusCode::kOutOfRange, 400},
      {StatusCode::kNotFound, 404},
      {StatusCode::kFailedPrecondition, 409},
      {StatusCode::kAlreadyExists, 409},
      {StatusCode::kUnavailable, 503},
      {StatusCode::kDeadlineExceeded, 504},
      {StatusCode::kIoError, 500},
      {StatusCode::kOk, 409},  // a refusal without a class (an older coordinator's)
  };
  for (const auto& [code, http] : cases) {
    auto reply = Send(Request("POST", "/api/v1/job/rescale", R"({"parallelism": 200})", operator_));
    ControlCommandBridge::Pending p = Take();
    bridge_->Complete(p.connection, Reply{false, "refused", "", code});
    HttpResponse r = reply.get();
    EXPECT_EQ(r.status, http) << static_cast<int>(code);
    EXPECT_EQ(Body(r), (json{{"error", "refused"}}));
  }
}

TEST_F(RestCommandsTest, BadBodiesAre400AndReachNothing) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/api/v1/job/rescale", "{}"},
      {"/api/v1/job/rescale", R"({"parallelism": 0})"},
      {"/api/v1/job/rescale", R"({"parallelism": "3"})"},
      {"/api/v1/job/rescale", R"({"parallelism": 3, "via": "snapshot"})"},
      {"/api/v1/job/stop", R"({"directory": 7})"},
      {"/api/v1/job/cancel", R"({"force": true})"},
      {"/api/v1/job/cancel", "not json"},
      {"/api/v1/job/cancel", "[1]"},
  };
  for (const auto& [path, body] : bad) {
    HttpResponse r = router_.Handle(Request("POST", path, body, operator_));
    EXPECT_EQ(r.status, 400) << path << " " << body;
  }
  EXPECT_EQ(Body(router_.Handle(
                Request("POST", "/api/v1/job/cancel", R"({"force": 1})", operator_)))["error"],
            "unknown field \"force\" in the request body: this command takes none");
  HttpResponse level = router_.Handle(Request("PUT", "/api/v1/logging", "{}", operator_));
  EXPECT_EQ(level.status, 400);
  EXPECT_THAT(Body(level)["error"].get<std::string>(), HasSubstr("\"level\" is required"));
  EXPECT_FALSE(Readable(bridge_->fd(), 0));
  EXPECT_EQ(auth_->failed_attempts(), 0u);
}

TEST_F(RestCommandsTest, MissingWrongAndRevokedTokensAre401) {
  HttpResponse none = router_.Handle(Request("POST", "/api/v1/job/cancel", "", ""));
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers.at("WWW-Authenticate"), "Bearer realm=\"keyflow\"");
  HttpRequest basic = Request("POST", "/api/v1/job/cancel", "", "");
  basic.headers["authorization"] = "Basic b3BlcmF0b3I6eA==";
  EXPECT_EQ(router_.Handle(basic).status, 401);
  std::string wrong = operator_;
  wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
  HttpResponse w = router_.Handle(Request("POST", "/api/v1/job/cancel", "", wrong));
  EXPECT_EQ(w.status, 401);
  EXPECT_THAT(Body(w)["error"].get<std::string>(), HasSubstr("does not know this token"));
  // The token's hash alone is not a token.
  EXPECT_EQ(router_.Handle(Request("POST", "/api/v1/job/cancel", "", Sha256Hex(operator_))).status,
            401);
  EXPECT_EQ(auth_->failed_attempts(), 4u);

  // Revoking the client key revokes its token at the reload.
  std::filesystem::remove(keys_.PublicKeyFile(Role::kOperator, "operator"));
  ASSERT_OK(store_->Reload());
  EXPECT_EQ(store_->token_count(), 0u);
  EXPECT_EQ(router_.Handle(Request("POST", "/api/v1/job/cancel", "", operator_)).status, 401);
  EXPECT_FALSE(Readable(bridge_->fd(), 0));
}

TEST_F(RestCommandsTest, AnInsecureClusterRefusesEveryCommandWith403) {
  context_.secure = false;
  for (const char* path : {"/api/v1/job/cancel", "/api/v1/job/stop", "/api/v1/job/savepoints",
                           "/api/v1/job/checkpoints", "/api/v1/job/rescale"}) {
    HttpResponse r = router_.Handle(Request("POST", path, "{}", operator_));
    EXPECT_EQ(r.status, 403) << path;
  }
  EXPECT_EQ(router_.Handle(Request("PUT", "/api/v1/logging", "{}", operator_)).status, 403);
  EXPECT_FALSE(Readable(bridge_->fd(), 0));
}

TEST_F(RestCommandsTest, ACommandStillRunningAfterTheWaitIs202) {
  context_.command_timeout = 2s;
  auto reply = Send(Request("POST", "/api/v1/job/savepoints", "", operator_));
  Take();  // the loop took it, and answers late
  HttpResponse r = reply.get();
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(Body(r)["accepted"], true);
  EXPECT_THAT(Body(r)["message"].get<std::string>(), HasSubstr("may still be running"));
  // A command the loop never took was not run: 503.
  context_.command_timeout = 50ms;
  HttpResponse untaken = router_.Handle(Request("POST", "/api/v1/job/cancel", "", operator_));
  EXPECT_EQ(untaken.status, 503);
  EXPECT_THAT(Body(untaken)["error"].get<std::string>(), HasSubstr("so it was not run"));
}

TEST(ConstantTimeEqualsTest, ComparesBytesAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(RestTokenTest, GeneratedTokensAre256RandomBits) {
  std::string a = GenerateRestToken().value();
  std::string b = GenerateRestToken().value();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace keyflow
