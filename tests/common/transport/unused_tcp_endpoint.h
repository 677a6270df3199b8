// UnusedTcpEndpoint(): a loopback endpoint nothing listens on, for the transport and data-plane
// tests (connecting there fails or waits; binding there succeeds).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace keyflow::testing {

// "tcp://127.0.0.1:<port>" with nothing listening: the kernel picks a free port for a plain
// socket that is closed again at once (synchronously, unlike a ZeroMQ listener).
inline std::string UnusedTcpEndpoint() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace keyflow::testing
