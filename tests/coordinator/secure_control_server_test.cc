// A secure ControlServer (CURVE ROUTER + ZAP over the trusted keys) and ControlClients over real
// loopback sockets: a client without a key or with an unknown key gets one sentence at once
// (not a timeout), an operator key is served and sees the refusals counted, a worker key is
// refused operator requests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/clock.h"
#include "common/file_io.h"
#include "coordinator/cli/control_client.h"
#include "coordinator/control_server.h"
#include "tests/common/security/test_key_set.h"
#include "tests/coordinator/control_server_thread.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

class SecureControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    keys_ = dir_.path() + "/keys";
    ASSERT_OK(test::MakeTestKeySet(keys_, {"worker-0"}, {"operator"}));
    rogue_ = dir_.path() + "/rogue";
    ASSERT_OK(test::MakeTestKeySet(rogue_, {}, {"mallory"}));
    // The rogue client pins the real coordinator's key: only its own key is unknown.
    std::filesystem::copy_file(KeyDirectory{keys_}.CoordinatorPub(),
                               KeyDirectory{rogue_}.CoordinatorPub(),
                               std::filesystem::copy_options::overwrite_existing);
    CoordinatorOptions o;
    o.job.checkpoint_root = dir_.path() + "/checkpoints";
    o.heartbeat_interval_ms = 100;
    o.heartbeat_timeout_ms = 1000;
    auto security = LoadProcessSecurity({keys_, "", false}, Role::kCoordinator);
    ASSERT_OK(security);
    o.security = *security;
    ctx_ = ZmqContext::Create().value();
    server_.Start(*ctx_, o, &clock_);
  }
  void TearDown() override { server_.Stop(); }
  Result<Reply> Ask(const SecurityFlags& flags, Role role, const ControlMessage& msg) {
    ProcessSecurity security = ProcessSecurity::Insecure(role);
    if (!flags.insecure) {
      KF_ASSIGN_OR_RETURN(security, LoadProcessSecurity(flags, role));
    }
    KF_ASSIGN_OR_RETURN(auto client,
                        cli::ControlClient::Connect(server_->endpoint(), 3000, security));
    return client->Request(msg);
  }

  TempDir dir_;
  std::string keys_;
  std::string rogue_;
  SystemClock clock_;
  std::unique_ptr<ZmqContext> ctx_;
  test::ControlServerThread server_;
};

TEST_F(SecureControlServerTest, AClientWithoutAKeyGetsTheSentenceAtOnce) {
  int64_t start = MonotonicMillis();
  Result<Reply> r = Ask({"", "", true}, Role::kOperator, StatusRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the coordinator at " + server_->endpoint() +
                                      " requires a client key; run with --keys DIR");
  EXPECT_LT(MonotonicMillis() - start, 2500);  // not the 3 s timeout
}

TEST_F(SecureControlServerTest, AnUnknownClientKeyIsRefusedWithItsName) {
  Result<Reply> r = Ask({rogue_, "mallory", false}, Role::kOperator, StatusRequest{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "the coordinator at " + server_->endpoint() +
                " refused client key mallory: ask its operator to add it (`keyflow keys "
                "add-client mallory`)");
}

TEST_F(SecureControlServerTest, TheOperatorKeyIsServedAndSeesTheRefusalsCounted) {
  ASSERT_FALSE(Ask({"", "", true}, Role::kOperator, StatusRequest{}).ok());
  ASSERT_FALSE(Ask({rogue_, "mallory", false}, Role::kOperator, StatusRequest{}).ok());
  Result<Reply> r = Ask({keys_, "operator", false}, Role::kOperator, StatusRequest{});
  ASSERT_OK(r);
  ASSERT_TRUE(r->ok) << r->message;
  nlohmann::json sec = nlohmann::json::parse(r->json)["coordinator"]["security"];
  EXPECT_EQ(sec["mode"], "curve");
  // At least the two (a client whose handshake failed retries until it gives up: more).
  EXPECT_GE(sec["refused_connections"].get<int>(), 2) << sec.dump();
  EXPECT_EQ(sec["refused_requests"], 0);
}

TEST_F(SecureControlServerTest, AWorkerKeyIsRefusedOperatorRequests) {
  Result<Reply> r = Ask({keys_, "worker-0", false}, Role::kWorker, CancelJob{});
  ASSERT_OK(r);
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->message,
            "a worker key cannot cancel the job: use an operator client key (`keyflow keys "
            "add-client NAME`)");
}

}  // namespace
}  // namespace keyflow
