#include "common/transport/control_plane.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"
#include "tests/common/transport/await_connected_peers.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

std::string ToString(const zmq::message_t& m) {
  return std::string(static_cast<const char*>(m.data()), m.size());
}

using ::keyflow::testing::AwaitConnectedPeers;

TEST(ControlPlaneSocketOptionsTest, LimitEveryControlMessageToTheDecodersMaximum) {
  SocketOptions options = ControlPlaneSocketOptions();
  EXPECT_EQ(options.max_message_bytes, int64_t{272} << 20);  // a 256 MiB job library + 16 MiB
  EXPECT_EQ(static_cast<size_t>(options.max_message_bytes), kMaxControlMessageBytes);
}

TEST(ControlPlaneSocketOptionsTest, NegativeMaxMessageBytesIsInvalidArgument) {
  auto ctx = ZmqContext::Create().value();
  SocketOptions options;
  options.max_message_bytes = -1;
  auto socket = ZmqSocket::Create(*ctx, SocketType::kRouter, options);
  ASSERT_FALSE(socket.ok());
  EXPECT_EQ(socket.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(socket.status().message(),
            "socket max_message_bytes must be >= 0 (0 = no limit), got -1");
}

// The receiver drops the connection that sent an oversized message (it is never delivered); the
// sender reconnects and a message within the limit then arrives.
TEST(ControlPlaneSocketOptionsTest, OversizedMessageDropsTheSendersConnection) {
  auto ctx = ZmqContext::Create().value();
  SocketOptions limited;
  limited.max_message_bytes = 1000;
  ZmqSocket pull = ZmqSocket::Create(*ctx, SocketType::kPull, limited).value();
  std::string endpoint = pull.BindEphemeral("127.0.0.1").value();
  SocketOptions tracked;
  tracked.track_connections = true;
  ZmqSocket push = ZmqSocket::Create(*ctx, SocketType::kPush, tracked).value();
  ASSERT_OK(push.Connect(endpoint));
  ASSERT_TRUE(AwaitConnectedPeers(push, 1));

  ASSERT_OK(push.Send(std::string(1001, 'x'), SendOptions{}));
  ASSERT_TRUE(AwaitConnectedPeers(push, 0)) << "the receiver kept an oversized sender";
  ASSERT_TRUE(AwaitConnectedPeers(push, 1)) << "the sender did not reconnect";
  const std::string small(1000, 's');
  ASSERT_OK(push.Send(small, SendOptions{}));
  zmq::message_t got;
  ASSERT_OK(pull.Receive(&got, Duration::Seconds(5)));
  EXPECT_EQ(ToString(got), small);
}

}  // namespace
}  // namespace keyflow
