// The coordinator's control server and the CLI's control client over real loopback sockets:
// both go through the common/transport wrapper with the control-plane settings.
#include "coordinator/control_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/file_io.h"
#include "common/transport/endpoint.h"
#include "coordinator/cli/control_client.h"
#include "tests/common/transport/unused_tcp_endpoint.h"
#include "tests/coordinator/control_server_thread.h"
#include "tests/testutil/status_matchers.h"

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
    server_.Start(*ctx_, Options(dir_.path()), &clock_);
  }
  void TearDown() override { server_.Stop(); }

  TempDir dir_;
  SystemClock clock_;
  std::unique_ptr<ZmqContext> ctx_;
  test::ControlServerThread server_;
};

TEST_F(ControlServerTest, AnswersTheCliClientsStatusRequest) {
  auto client = cli::ControlClient::Connect(server_->endpoint(), 5000).value();
  Result<Reply> reply = client->Request(StatusRequest{});
  ASSERT_OK(reply);
  EXPECT_TRUE(reply->ok) << reply->message;
  EXPECT_FALSE(reply->json.empty());
}

TEST_F(ControlServerTest, RepliesToAnUndecodableMessageWithTheReason) {
  ZmqSocket dealer = ZmqSocket::Create(*ctx_, SocketType::kDealer).value();
  ASSERT_OK(dealer.Connect(server_->endpoint()));
  ASSERT_OK(dealer.Send("not a control message", SendOptions{}));
  zmq::message_t got;
  ASSERT_OK(dealer.Receive(&got, Duration::Seconds(5)));
  auto decoded = DecodeControlMessage(
      std::string_view(static_cast<const char*>(got.data()), got.size()), "the test");
  ASSERT_OK(decoded);
  ASSERT_TRUE(std::holds_alternative<Reply>(*decoded));
  EXPECT_FALSE(std::get<Reply>(*decoded).ok);
  EXPECT_THAT(std::get<Reply>(*decoded).message, HasSubstr("a control peer"));
}

ControlMessage DecodeOrDie(const zmq::message_t& m) {
  auto decoded = DecodeControlMessage(
      std::string_view(static_cast<const char*>(m.data()), m.size()), "the coordinator");
  EXPECT_OK(decoded);
  return decoded.ok() ? *decoded : ControlMessage(Reply{});
}

// One socket floods for 2 s — junk, then valid status requests, which cost the loop more than
// they cost the sender, so a backlog builds — while a worker registers and heartbeats every
// 100 ms against a 1 s timeout. The loop ticks (the worker keeps receiving the coordinator's
// heartbeats) and reads the worker between bounded drains: it is never declared lost, and the
// CLI's status request is answered.
void ExpectWorkerServedDuringAFlood(ZmqContext& ctx, const std::string& endpoint, bool junk) {
  ZmqSocket worker = ZmqSocket::Create(ctx, SocketType::kDealer).value();
  ASSERT_OK(worker.Connect(endpoint));
  RegisterWorker reg;
  reg.hostname = "h";
  reg.pid = 4242;
  ASSERT_OK(worker.Send(EncodeControlMessage(reg), SendOptions{}));
  zmq::message_t got;
  ASSERT_OK(worker.Receive(&got, Duration::Seconds(5)));
  ControlMessage registered = DecodeOrDie(got);
  ASSERT_TRUE(std::holds_alternative<Registered>(registered));
  const WorkerId id = std::get<Registered>(registered).worker;

  std::atomic<bool> flooding{true};
  std::atomic<int64_t> sent{0};
  std::thread flood([&] {
    zmq::context_t flood_ctx(1);
    zmq::socket_t s(flood_ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::sndhwm, 100'000);
    s.connect(endpoint);
    const std::string message = junk ? "junk!" : EncodeControlMessage(StatusRequest{});
    while (flooding.load()) {
      if (s.send(zmq::buffer(message), zmq::send_flags::dontwait)) sent.fetch_add(1);
    }
  });

  bool told_to_register_again = false;
  int coordinator_heartbeats = 0;
  const int64_t end = MonotonicMillis() + 2000;
  int64_t next_heartbeat = 0;
  while (MonotonicMillis() < end) {
    if (MonotonicMillis() >= next_heartbeat) {
      ASSERT_TRUE(
          worker
              .Send(EncodeControlMessage(WorkerHeartbeat{id, AttemptNumber(0), {}}), SendOptions{})
              .ok());
      next_heartbeat = MonotonicMillis() + 100;
    }
    auto r = worker.Receive(&got, Duration::Millis(20));
    if (r.ok()) {
      ControlMessage m = DecodeOrDie(got);
      told_to_register_again |= std::holds_alternative<RegisterAgain>(m);
      coordinator_heartbeats += std::holds_alternative<CoordinatorHeartbeat>(m);
    }
  }
  // Asked while the flood goes on.
  auto client = cli::ControlClient::Connect(endpoint, 5000).value();
  Result<Reply> status = client->Request(StatusRequest{});
  flooding.store(false);
  flood.join();

  ASSERT_OK(status);
  EXPECT_FALSE(told_to_register_again) << "the worker was declared lost during the flood";
  EXPECT_GE(coordinator_heartbeats, 5) << "the loop did not tick during the 2 s flood";
  auto json = nlohmann::json::parse(status->json);
  ASSERT_EQ(json["workers"].size(), 1u) << json.dump();
  EXPECT_LT(json["workers"][0]["last_heartbeat_ms_ago"].get<int64_t>(), 1000) << json.dump();
  if (junk) {
    EXPECT_GT(json["coordinator"]["malformed_control_messages"].get<int64_t>(), 1000)
        << "sent " << sent.load();
  }
}

TEST_F(ControlServerTest, ARegisteredWorkerStaysAliveWhileOneSocketFloodsJunk) {
  ExpectWorkerServedDuringAFlood(*ctx_, server_->endpoint(), /*junk=*/true);
}

TEST_F(ControlServerTest, ARegisteredWorkerStaysAliveWhileOneSocketFloodsStatusRequests) {
  ExpectWorkerServedDuringAFlood(*ctx_, server_->endpoint(), /*junk=*/false);
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
  auto client = cli::ControlClient::Connect(endpoint, 1000).value();
  const int64_t start = MonotonicMillis();
  Result<Reply> reply = client->Request(StatusRequest{});
  ASSERT_FALSE(reply.ok());
  // Bounded by the timeout, never a hang, and said after it: not after the connection's wait
  // and then a send's as long again (2 s).
  EXPECT_LT(MonotonicMillis() - start, 1900);
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(reply.status().message(),
            "cannot reach the coordinator at " + endpoint +
                " within 1000 ms: is it running? (start a cluster with scripts/start-cluster.sh, "
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
