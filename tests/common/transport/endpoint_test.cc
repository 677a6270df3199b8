#include "common/transport/endpoint.h"

#include <gtest/gtest.h>

namespace keyflow {
namespace {

TEST(TcpEndpoint, ParsesHostAndPort) {
  TcpEndpoint e = ParseTcpEndpoint("tcp://10.0.0.2:6123").value();
  EXPECT_EQ(e.host, "10.0.0.2");
  EXPECT_EQ(e.port, 6123);
  EXPECT_EQ(e.ToString(), "tcp://10.0.0.2:6123");
}

TEST(TcpEndpoint, ParsesEphemeralPortAndBracketedIpv6) {
  EXPECT_EQ(ParseTcpEndpoint("tcp://0.0.0.0:*").value(), (TcpEndpoint{"0.0.0.0", 0}));
  TcpEndpoint v6 = ParseTcpEndpoint("tcp://[::1]:7000").value();
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7000);
  EXPECT_EQ(v6.ToString(), "tcp://[::1]:7000");
}

TEST(TcpEndpoint, RejectsMalformedEndpointsWithTheExpectedForm) {
  for (const char* bad :
       {"10.0.0.2:6123", "tcp://host", "tcp://:80", "tcp://h:70000", "tcp://h:12x", "inproc://x"}) {
    Status s = ParseTcpEndpoint(bad).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("expected tcp://<host>:<port>"), std::string::npos) << s.message();
  }
}

TEST(AdvertisedEndpoint, KeepsTheBoundPortAndReplacesTheHost) {
  EXPECT_EQ(AdvertisedEndpoint("tcp://0.0.0.0:41873", "10.0.0.2").value(), "tcp://10.0.0.2:41873");
  EXPECT_EQ(AdvertisedEndpoint("tcp://127.0.0.1:5000", "worker-3.example").value(),
            "tcp://worker-3.example:5000");
}

TEST(AdvertisedEndpoint, RefusesAnEndpointWithoutAConcretePort) {
  Status s = AdvertisedEndpoint("tcp://0.0.0.0:*", "10.0.0.2").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AdvertisedEndpoint("tcp://0.0.0.0:1", "").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace keyflow
