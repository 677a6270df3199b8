// The coordinator's control server and the CLI's control client over real loopback sockets:
// both go through the common/transport wrapper with the control-plane settings.
#include "coordinator/control_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/file_io.h"
#include "common/transport/endpoint.h"
#include "coordinator/cli/control_client.h"
#include "tests/common/transport/unused_tcp_endpoint.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

CoordinatorOptions Options(const std::string& checkpoint_root) {
  CoordinatorOptions o;
  o.job.checkpoint_root = checkpoint_root;
  o.heartbeat_interval_ms = 100;
  o.heartbeat_timeout_ms = 1000;
  return o;
}

// A ControlServer running on its own thread until the fixture ends.
class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = ZmqContext::Create().value();
    ASSERT_EQ(::pipe(stop_), 0);
    server_ =
        ControlServer::Bind(*ctx_, "tcp://127.0.0.1:*", Options(dir_.path()), &clock_).value();
    // Thread start is the happens-before edge that hands the socket to the loop's thread.
    loop_ = std::thread([this] { loop_status_ = server_->Run(stop_[0]); });
  }
  void TearDown() override {
    if (loop_.joinable()) {
      EXPECT_EQ(::write(stop_[1], "x", 1), 1);
      loop_.join();
      EXPECT_TRUE(loop_status_.ok()) << loop_status_.message();
    }
    server_.reset();
    ::close(stop_[0]);
    ::close(stop_[1]);
  }

  TempDir dir_;
  SystemClock clock_;
  std::unique_ptr<ZmqContext> ctx_;
  int stop_[2] = {-1, -1};
  std::unique_ptr<ControlServer> server_;
  std::thread loop_;
  Status loop_status_;
};

TEST_F(ControlServerTest, AnswersTheCliClientsStatusRequest) {
  auto client = cli::ControlClient::Connect(server_->endpoint(), 5000).value();
  Result<Reply> reply = client->Request(StatusRequest{});
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_TRUE(reply->ok) << reply->message;
  EXPECT_FALSE(reply->json.empty());
}

TEST_F(ControlServerTest, RepliesToAnUndecodableMessageWithTheReason) {
  ZmqSocket dealer = ZmqSocket::Create(*ctx_, SocketType::kDealer).value();
  ASSERT_TRUE(dealer.Connect(server_->endpoint()).ok());
  ASSERT_TRUE(dealer.Send("not a control message", SendOptions{}).ok());
  zmq::message_t got;
  ASSERT_TRUE(dealer.Receive(&got, Duration::Seconds(5)).ok());
  auto decoded = DecodeControlMessage(
      std::string_view(static_cast<const char*>(got.data()), got.size()), "the test");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_TRUE(std::holds_alternative<Reply>(*decoded));
  EXPECT_FALSE(std::get<Reply>(*decoded).ok);
  EXPECT_THAT(std::get<Reply>(*decoded).message, HasSubstr("a control peer"));
}

TEST_F(ControlServerTest, BindingAPortInUseNamesAnotherCoordinator) {
  uint16_t port = ParseTcpEndpoint(server_->endpoint()).value().port;
  std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  auto second = ControlServer::Bind(*ctx_, endpoint, Options(dir_.path()), &clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(second.status().message(),
            "address " + endpoint +
                " is already in use: stop the other process (another coordinator?) or choose "
                "another --port");
}

TEST(ControlClientTest, AnUnreachableCoordinatorIsUnavailableWithAdvice) {
  std::string endpoint = testing::UnusedTcpEndpoint();
  auto client = cli::ControlClient::Connect(endpoint, 200).value();
  const int64_t start = MonotonicMillis();
  Result<Reply> reply = client->Request(StatusRequest{});
  ASSERT_FALSE(reply.ok());
  EXPECT_LT(MonotonicMillis() - start, 5000);  // bounded by the timeout, never a hang
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(reply.status().message(),
            "cannot reach the coordinator at " + endpoint +
                " within 200 ms: is it running? (start a cluster with scripts/start-cluster.sh, "
                "or pass --coordinator tcp://HOST:PORT)");
}

TEST(ControlClientTest, AMalformedCoordinatorAddressIsInvalidArgument) {
  auto client = cli::ControlClient::Connect("localhost:6123", 200);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(),
              StartsWith("cannot use coordinator address 'localhost:6123': "));
  EXPECT_THAT(client.status().message(), HasSubstr("(expected tcp://HOST:PORT)"));
}

}  // namespace
}  // namespace keyflow
