#include "common/process/command_line.h"

#include <gtest/gtest.h>
#include "tests/testutil/status_matchers.h"

namespace keyflow::cli {
namespace {

TEST(PortFlagTest, AcceptsOneTo65535) {
  EXPECT_EQ(*PortFlag("port", 1), 1);
  EXPECT_EQ(*PortFlag("port", 65535), 65535);
}

TEST(PortFlagTest, RejectsPortsThatWouldWrapAround) {
  EXPECT_EQ(PortFlag("port", 70000).status(),
            InvalidArgument("--port 70000 is not a TCP port: give a number from 1 to 65535"));
  EXPECT_FALSE(PortFlag("port", 65536).ok());
  EXPECT_FALSE(PortFlag("port", -1, /*allow_ephemeral=*/true).ok());
}

TEST(PortFlagTest, ZeroOnlyWhereAnyFreePortMakesSense) {
  EXPECT_FALSE(PortFlag("port", 0).ok());
  EXPECT_EQ(*PortFlag("port", 0, /*allow_ephemeral=*/true), 0);
}

TEST(EndpointFlagTest, ChecksThePortOfTcpEndpoints) {
  EXPECT_OK(EndpointFlag("coordinator", "tcp://127.0.0.1:6123"));
  EXPECT_OK(EndpointFlag("coordinator", "tcp://[::1]:6123"));
  EXPECT_OK(EndpointFlag("coordinator", "ipc:///tmp/x"));
  EXPECT_EQ(EndpointFlag("coordinator", "tcp://h:70000"),
            InvalidArgument("--coordinator tcp://h:70000 has no valid TCP port: write "
                            "tcp://HOST:PORT with PORT from 1 to 65535"));
  EXPECT_FALSE(EndpointFlag("coordinator", "tcp://h").ok());
  EXPECT_FALSE(EndpointFlag("coordinator", "tcp://h:").ok());
  EXPECT_FALSE(EndpointFlag("coordinator", "tcp://h:12a").ok());
  EXPECT_FALSE(EndpointFlag("coordinator", "tcp://h:0").ok());
  EXPECT_FALSE(EndpointFlag("coordinator", "tcp://h:*").ok());
}

TEST(EndpointFlagTest, BindEndpointsMayAskForAnyFreePort) {
  EXPECT_OK(EndpointFlag("bind", "tcp://0.0.0.0:*", true));
  EXPECT_OK(EndpointFlag("bind", "tcp://0.0.0.0:0", true));
  EXPECT_FALSE(EndpointFlag("bind", "tcp://0.0.0.0:65536", true).ok());
}

TEST(BindAddressForTest, KeepsAddressesResolvesNamesAndRefusesUnknownHosts) {
  EXPECT_EQ(*BindAddressFor("host", "10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(*BindAddressFor("host", "0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(*BindAddressFor("host", "::1"), "::1");
  EXPECT_EQ(*BindAddressFor("host", "*"), "*");
  EXPECT_EQ(*BindAddressFor("data-host", "localhost"), "127.0.0.1");
  EXPECT_EQ(BindAddressFor("data-host", "no-such-host.invalid").status(),
            InvalidArgument("--data-host 'no-such-host.invalid' is not an address of this host: "
                            "give an IP address or a host name that resolves (or choose the "
                            "interface to bind explicitly)"));
  EXPECT_FALSE(BindAddressFor("host", "").ok());
}

TEST(DurationFlagTest, ChecksTheRange) {
  EXPECT_EQ(*DurationFlagMillis("timeout", "2s"), 2000);
  EXPECT_EQ(*DurationFlagMillis("idle-timeout", "0"), 0);
  EXPECT_EQ(DurationFlagMillis("timeout", "0", kPositiveDuration).status(),
            InvalidArgument("--timeout 0 is out of range: give a duration from 1ms to 365d"));
  EXPECT_EQ(DurationFlagMillis("timeout", "366d").status(),
            InvalidArgument("--timeout 366d is out of range: give a duration from 0ms to 365d"));
  EXPECT_FALSE(DurationFlagMillis("timeout", "5 parsecs").ok());
}

TEST(ParseCommandLineTest, VersionPrintsAndStopsOnlyForBinaries) {
  po::options_description opts;
  po::variables_map vm;
  int code = -1;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(ParseCommandLine("usage", opts, {}, {"--version"}, &vm, &code, kDefaultStyle,
                                "keyflow-worker"));
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, kExitOk);
  EXPECT_EQ(out.rfind("keyflow-worker 0.1.0 (git ", 0), 0u) << out;
  po::variables_map vm2;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(ParseCommandLine("usage", opts, {}, {"--version"}, &vm2, &code));
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitUsage);
}

}  // namespace
}  // namespace keyflow::cli
