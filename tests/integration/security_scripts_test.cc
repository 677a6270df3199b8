// Issue 13 in the scripts and flags: a cluster started by scripts/start-cluster.sh serves its
// REST API over HTTPS with the key set's certificate (pinned by the client; plain HTTP fails),
// answers reads only with a token (the viewer's it wrote, named in cluster.env, 0600)
// and lets clients name only its run and checkpoint directories and the --allowed-path ones;
// the coordinator refuses plain HTTP with tokens on a non-loopback --rest-bind and unusable TLS
// files with one sentence (exit 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Script(const std::string& name) {
  return std::string(KEYFLOW_SOURCE_DIR) + "/scripts/" + name;
}

CommandResult RunToEnd(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, Duration::Seconds(60));
  EXPECT_OK(r);
  return r.ok() ? *r : CommandResult{};
}

std::string FirstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

class SecurityScriptsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    RunToEnd({Script("stop-cluster.sh"), "--run-dir", run_dir_, "--timeout", "5"});
  }
  TestDir dir_;
  const std::string run_dir_ = dir_.path() + "/run";
};

TEST_F(SecurityScriptsTest, StartClusterServesHttpsAndAllowsOnlyItsDirectories) {
  const std::string extra = dir_.path() + "/extra";
  std::filesystem::create_directories(extra);
  CommandResult started = RunToEnd({Script("start-cluster.sh"), "--run-dir", run_dir_,
                                    "--build-dir", KEYFLOW_BINARY_DIR, "--workers", "1", "--port",
                                    "0", "--timeout", "30", "--allowed-path", extra});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  const std::string endpoint = FirstLine(started.out);
  const std::string url = FirstLine(ReadFileOrEmpty(run_dir_ + "/rest.url"));
  ASSERT_THAT(url, StartsWith("https://127.0.0.1:"));
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  const std::string cert = run_dir_ + "/keys/rest/tls.crt";
  EXPECT_THAT(started.err, HasSubstr("REST API: " + url + "/api/v1/overview"));

  httplib::SSLClient https("127.0.0.1", port);
  https.set_ca_cert_path(cert.c_str());
  https.enable_server_certificate_verification(true);
  https.set_connection_timeout(5, 0);
  // Every read needs a token: start-cluster.sh made the viewer's and names it in cluster.env.
  const std::string keys_dir = run_dir_ + "/keys";
  const std::string viewer_token_file = keys_dir + "/viewers/viewer.token";
  EXPECT_EQ(ReadFileOrEmpty(run_dir_ + "/cluster.env"),
            "export KEYFLOW_KEYS=" + keys_dir + "\nexport KEYFLOW_COORDINATOR=" +
                ReadFileOrEmpty(run_dir_ + "/coordinator.endpoint") +
                "export KEYFLOW_REST_URL=" + url + "\nexport KEYFLOW_REST_CACERT=" + cert +
                " KEYFLOW_REST_TOKEN_FILE=" + viewer_token_file + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(viewer_token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::string viewer_token = ReadFileOrEmpty(viewer_token_file);
  viewer_token = viewer_token.substr(0, viewer_token.find('\n'));
  EXPECT_THAT(started.err, HasSubstr("reads take the viewer token " + viewer_token_file));
  auto anonymous = https.Get("/api/v1/overview");
  ASSERT_TRUE(anonymous) << httplib::to_string(anonymous.error());
  EXPECT_EQ(anonymous->status, 401);
  auto overview = https.Get("/api/v1/overview", {{"Authorization", "Bearer " + viewer_token}});
  ASSERT_TRUE(overview) << httplib::to_string(overview.error());
  EXPECT_EQ(overview->status, 200);
  const nlohmann::json body = nlohmann::json::parse(overview->body);
  EXPECT_EQ(body["workers"], 1) << overview->body;
  EXPECT_EQ(body["rest"]["tls"], true) << overview->body;
  httplib::Client plain("127.0.0.1", port);
  plain.set_connection_timeout(2, 0);
  plain.set_read_timeout(3, 0);
  auto refused = plain.Get("/api/v1/overview");
  EXPECT_FALSE(refused && refused->status == 200) << "plain HTTP must fail on the TLS port";

  // Client paths: the run dir and --allowed-path are accepted, anything else is refused.
  const std::string keys = "KEYFLOW_KEYS=" + run_dir_ + "/keys";
  auto run = [&](const std::string& output) {
    return RunToEnd({"env",
                     keys,
                     KeyflowBinary("keyflow"),
                     "run",
                     "--coordinator",
                     endpoint,
                     "--job",
                     "count-window",
                     "--param",
                     "time=event",
                     "--param",
                     "count=2",
                     "--param",
                     "timeout=2000ms",
                     "--input",
                     "gen:events=20,keys=2,splits=1,seed=1",
                     "--output",
                     output,
                     "--parallelism",
                     "1",
                     "--wait"});
  };
  CommandResult outside = run(dir_.path() + "/outside");
  EXPECT_NE(outside.exit_code, 0);
  EXPECT_THAT(outside.err, HasSubstr("--output " + dir_.path() +
                                     "/outside is outside the paths "
                                     "this coordinator may use"));
  CommandResult allowed = run(extra + "/out");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  CommandResult in_run_dir = run(run_dir_ + "/out");
  EXPECT_EQ(in_run_dir.exit_code, 0) << in_run_dir.err;
}

TEST_F(SecurityScriptsTest, TheCoordinatorRefusesPlainHttpOnTheNetworkAndBadTlsFiles) {
  const std::string keys = dir_.path() + "/keys";
  ASSERT_EQ(RunToEnd({KeyflowBinary("keyflow"), "keys", "init", keys}).exit_code, 0);
  const std::vector<std::string> base = {
      KeyflowBinary("keyflow-coordinator"), "--keys", keys, "--port", "0", "--rest-port", "0"};
  auto with = [&base](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunToEnd(argv);
  };
  CommandResult network = with({"--rest-bind", "0.0.0.0"});
  EXPECT_EQ(network.exit_code, 2);
  EXPECT_EQ(network.err,
            "keyflow: the REST API on --rest-bind 0.0.0.0 would carry operator tokens over plain "
            "HTTP on the network: give --rest-tls-cert KEYS/rest/tls.crt --rest-tls-key "
            "KEYS/rest/tls.key, bind 127.0.0.1, or pass --rest-insecure-http\n");
  CommandResult half = with({"--rest-tls-cert", keys + "/rest/tls.crt"});
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_EQ(half.err,
            "keyflow: --rest-tls-cert and --rest-tls-key go together: give both (e.g. "
            "KEYS/rest/tls.crt and KEYS/rest/tls.key from `keyflow keys init`)\n");
  CommandResult missing =
      with({"--rest-tls-cert", keys + "/nope.crt", "--rest-tls-key", keys + "/rest/tls.key"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err,
              HasSubstr("--rest-tls-cert " + keys + "/nope.crt is not a readable PEM certificate"));
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  CommandResult swapped =
      with({"--rest-tls-cert", keys + "/rest/tls.key", "--rest-tls-key", keys + "/rest/tls.crt"});
  EXPECT_EQ(swapped.exit_code, 2);
  CommandResult help = RunToEnd({KeyflowBinary("keyflow-coordinator"), "--help"});
  EXPECT_THAT(help.out + help.err, HasSubstr("--rest-tls-cert"));
  EXPECT_THAT(help.out + help.err, HasSubstr("--rest-insecure-http"));
}

}  // namespace
}  // namespace keyflow::test
