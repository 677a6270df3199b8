#include "common/transport/zmq_socket.h"
#include "common/transport/control_plane.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/transport/endpoint.h"
#include "common/transport/zmq_context.h"
#include "tests/common/transport/await_connected_peers.h"
#include "tests/common/transport/unused_tcp_endpoint.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::keyflow::testing::UnusedTcpEndpoint;

class ZmqSocketTest : public ::testing::Test {
 protected:
  void SetUp() override { ctx_ = ZmqContext::Create().value(); }

  ZmqSocket NewSocket(SocketType type, SocketOptions options = {}) {
    return ZmqSocket::Create(*ctx_, type, options).value();
  }

  // Waits (bounded) until `socket` reports `n` connected peers, watching its monitor.
  bool AwaitConnectedPeers(ZmqSocket& socket, int n) {
    return testing::AwaitConnectedPeers(socket, n);
  }

  std::unique_ptr<ZmqContext> ctx_;
};

std::string ToString(const zmq::message_t& m) {
  return std::string(static_cast<const char*>(m.data()), m.size());
}

TEST_F(ZmqSocketTest, BindEphemeralReturnsTheRealPort) {
  ZmqSocket pull = NewSocket(SocketType::kPull);
  std::string endpoint = pull.BindEphemeral("127.0.0.1").value();
  TcpEndpoint parsed = ParseTcpEndpoint(endpoint).value();
  EXPECT_EQ(parsed.host, "127.0.0.1");
  EXPECT_GT(parsed.port, 0);
  EXPECT_EQ(pull.LastEndpoint().value(), endpoint);
  EXPECT_EQ(pull.endpoint(), endpoint);
}

TEST_F(ZmqSocketTest, BindingAPortInUseIsAlreadyExistsWithAdvice) {
  ZmqSocket first = NewSocket(SocketType::kPull);
  std::string bound = first.BindEphemeral("0.0.0.0").value();
  uint16_t port = ParseTcpEndpoint(bound).value().port;
  ZmqSocket second = NewSocket(SocketType::kPull);
  std::string endpoint = "tcp://0.0.0.0:" + std::to_string(port);
  Status s = second.Bind(endpoint);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "address " + endpoint +
                             " is already in use: stop the other process or choose another --port");
}

TEST_F(ZmqSocketTest, BindingAnAddressOfAnotherHostIsInvalidArgumentWithAdvice) {
  ZmqSocket s = NewSocket(SocketType::kPull);
  Status status = s.Bind("tcp://192.0.2.1:6123");  // TEST-NET-1: never a local address
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_EQ(status.message(),
            "cannot bind tcp://192.0.2.1:6123: the address is not one of this host's; bind to "
            "0.0.0.0 or to an address of this host");
}

TEST_F(ZmqSocketTest, MalformedEndpointsAreInvalidArgument) {
  ZmqSocket s = NewSocket(SocketType::kPull);
  EXPECT_EQ(s.Bind("tcp://127.0.0.1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Connect("bogus://somewhere:1").code(), StatusCode::kInvalidArgument);
}

TEST_F(ZmqSocketTest, SendsAndReceivesOverTcpLoopback) {
  ZmqSocket pull = NewSocket(SocketType::kPull);
  std::string endpoint = pull.BindEphemeral("127.0.0.1").value();
  ZmqSocket push = NewSocket(SocketType::kPush);
  ASSERT_OK(push.Connect(endpoint));
  ASSERT_OK(push.Send("hello", SendOptions{}));
  zmq::message_t msg;
  ASSERT_OK(pull.Receive(&msg, Duration::Seconds(5)));
  EXPECT_EQ(ToString(msg), "hello");
  // Nothing else is pending.
  EXPECT_FALSE(pull.TryReceive(&msg).value());
}

TEST_F(ZmqSocketTest, ReceiveWithNothingPendingIsDeadlineExceededAfterTheTimeout) {
  ZmqSocket pull = NewSocket(SocketType::kPull);
  ASSERT_OK(pull.BindEphemeral("127.0.0.1"));
  zmq::message_t msg;
  int64_t start = MonotonicMillis();
  Status s = pull.Receive(&msg, Duration::Millis(100));
  int64_t elapsed = MonotonicMillis() - start;
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_GE(elapsed, 100);
  EXPECT_LT(elapsed, 2000);
}

TEST_F(ZmqSocketTest, SendWithoutAConnectedReceiverIsUnavailableAfterTheTimeout) {
  SocketOptions options;
  options.immediate = true;
  options.track_connections = true;
  ZmqSocket push = NewSocket(SocketType::kPush, options);
  std::string endpoint = UnusedTcpEndpoint();
  ASSERT_OK(push.Connect(endpoint));
  SendOptions send;
  send.timeout = Duration::Millis(200);
  int64_t start = MonotonicMillis();
  Status s = push.Send("x", send);
  int64_t elapsed = MonotonicMillis() - start;
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find(endpoint), std::string::npos) << s.message();
  EXPECT_GE(elapsed, 200);
  EXPECT_LT(elapsed, 2000);
}

TEST_F(ZmqSocketTest, SendToAReceiverThatDoesNotReadIsDeadlineExceeded) {
  SocketOptions pull_options;
  pull_options.receive_high_water_mark = 1;
  pull_options.kernel_receive_buffer_bytes = 64 * 1024;
  ZmqSocket pull = NewSocket(SocketType::kPull, pull_options);
  std::string endpoint = pull.BindEphemeral("127.0.0.1").value();
  SocketOptions push_options;
  push_options.send_high_water_mark = 1;
  push_options.kernel_send_buffer_bytes = 64 * 1024;
  push_options.immediate = true;
  push_options.track_connections = true;
  ZmqSocket push = NewSocket(SocketType::kPush, push_options);
  ASSERT_OK(push.Connect(endpoint));
  ASSERT_TRUE(AwaitConnectedPeers(push, 1));
  SendOptions send;
  send.timeout = Duration::Millis(100);
  const std::string big(256 * 1024, 'x');
  Status s;
  int sent = 0;
  for (; sent < 1000 && s.ok(); ++sent) s = push.Send(big, send);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  // Bounded: both one-message queues plus kernel buffers, never the 1000 messages offered.
  EXPECT_LT(sent, 40);
  EXPECT_EQ(push.connected_peers(), 1);
}

TEST_F(ZmqSocketTest, CancelledSendReturnsAbortedLongBeforeItsTimeout) {
  SocketOptions options;
  options.immediate = true;
  ZmqSocket push = NewSocket(SocketType::kPush, options);
  ASSERT_OK(push.Connect(UnusedTcpEndpoint()));
  std::atomic<bool> cancelled{true};
  SendOptions send;
  send.timeout = Duration::Seconds(60);
  send.cancelled = &cancelled;
  int64_t start = MonotonicMillis();
  Status s = push.Send("x", send);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_LT(MonotonicMillis() - start, 1000);
}

TEST_F(ZmqSocketTest, ConnectedPeersFollowsConnectAndDisconnect) {
  SocketOptions options;
  options.track_connections = true;
  ZmqSocket push = NewSocket(SocketType::kPush, options);
  EXPECT_EQ(push.connected_peers(), 0);
  ZmqSocket pull = NewSocket(SocketType::kPull);
  std::string endpoint = pull.BindEphemeral("127.0.0.1").value();
  ASSERT_OK(push.Connect(endpoint));
  EXPECT_TRUE(AwaitConnectedPeers(push, 1));
  pull.Close();
  EXPECT_TRUE(AwaitConnectedPeers(push, 0));
}

TEST_F(ZmqSocketTest, MultipartMessagesRoundTripThroughRouterAndDealer) {
  ZmqSocket router = NewSocket(SocketType::kRouter);
  std::string endpoint = router.BindEphemeral("127.0.0.1").value();
  ZmqSocket dealer = NewSocket(SocketType::kDealer);
  ASSERT_OK(dealer.Connect(endpoint));
  std::vector<std::string_view> request = {"register", "worker-7"};
  ASSERT_OK(dealer.SendMultipart(request, SendOptions{}));
  std::vector<zmq::message_t> parts;
  ASSERT_OK(router.ReceiveMultipart(&parts, Duration::Seconds(5)));
  ASSERT_EQ(parts.size(), 3u);  // identity, then the two parts
  EXPECT_EQ(ToString(parts[1]), "register");
  EXPECT_EQ(ToString(parts[2]), "worker-7");
  std::string identity = ToString(parts[0]);
  std::vector<std::string_view> reply = {identity, "welcome"};
  ASSERT_OK(router.SendMultipart(reply, SendOptions{}));
  ASSERT_OK(dealer.ReceiveMultipart(&parts, Duration::Seconds(5)));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(ToString(parts[0]), "welcome");
}

TEST_F(ZmqSocketTest, ContextCountsOpenSocketsAcrossMovesAndClose) {
  EXPECT_EQ(ctx_->open_sockets(), 0);
  ZmqSocket a = NewSocket(SocketType::kPull);
  EXPECT_EQ(ctx_->open_sockets(), 1);
  ZmqSocket b = std::move(a);
  EXPECT_EQ(ctx_->open_sockets(), 1);
  EXPECT_FALSE(a.is_open());  // NOLINT: checking the moved-from state on purpose
  b.Close();
  EXPECT_EQ(ctx_->open_sockets(), 0);
  b.Close();  // idempotent
  EXPECT_EQ(ctx_->open_sockets(), 0);
}

TEST(ZmqContextTest, ClosingWithUndeliveredMessagesNeverBlocksShutdown) {
  auto ctx = ZmqContext::Create().value();
  ZmqSocket push = ZmqSocket::Create(*ctx, SocketType::kPush).value();  // not immediate: queues
  ASSERT_OK(push.Connect(UnusedTcpEndpoint()));
  int queued = 0;
  while (queued < 10 && push.TrySend("undeliverable").value()) ++queued;
  EXPECT_EQ(queued, 10);
  const int64_t start = MonotonicMillis();
  push.Close();
  ctx.reset();  // zmq_ctx_term: would wait forever for the queued messages with linger -1
  EXPECT_LT(MonotonicMillis() - start, 1000);
}

TEST(ZmqContextDeathTest, DestroyingTheContextWithAnOpenSocketAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto ctx = ZmqContext::Create().value();
        auto socket = ZmqSocket::Create(*ctx, SocketType::kPull).value();
        ctx.reset();
      },
      "sockets are still open");
}

TEST(ZmqContextTest, RejectsZeroIoThreads) {
  EXPECT_EQ(ZmqContext::Create(0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace keyflow

namespace keyflow {
namespace {

TEST(ZmqContextAffinityTest, TheDataPlaneAvoidsTheControlPlanesIoThreadWhenThereAreSeveral) {
  EXPECT_EQ(ZmqContext::Create(1).value()->data_plane_affinity(), 0u);  // any: the only one
  EXPECT_EQ(ZmqContext::Create(2).value()->data_plane_affinity(), 0b10u);
  EXPECT_EQ(ZmqContext::Create(3).value()->data_plane_affinity(), 0b110u);
  EXPECT_EQ(ZmqContext::kControlPlaneAffinity, 1u);
  EXPECT_EQ(ControlPlaneSocketOptions().io_thread_affinity, 1u);
}

}  // namespace
}  // namespace keyflow
