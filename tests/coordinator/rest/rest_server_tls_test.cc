// The REST server with --rest-tls-cert/--rest-tls-key over real loopback sockets: HTTPS with the
// certificate pinned, plain HTTP and untrusting clients refused in the handshake, a bounded
// handshake, and unusable TLS files refused at start with one sentence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "common/file_io.h"
#include "common/security/tls_certificate.h"
#include "coordinator/rest/rest_server.h"
#include "tests/coordinator/rest/raw_tcp.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

namespace fs = std::filesystem;
using keyflow::testing::RawTcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

class RestServerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SelfSignedCertificateOptions o;
    o.hosts = {"localhost", "127.0.0.1"};
    ASSERT_OK(WriteSelfSignedCertificate(cert_, key_, o));
    router_.Add("GET", "/ping", [](const HttpRequest&) {
      return JsonResponse(200, {{"pong", 1}});
    });
  }
  void TearDown() override { server_.reset(); }
  RestServerOptions Options() {
    RestServerOptions o;
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.tls_cert_file = cert_;
    o.tls_key_file = key_;
    return o;
  }
  void Start(RestServerOptions o) {
    auto s = RestServer::Start(&router_, o);
    ASSERT_OK(s);
    server_ = std::move(s).value();
  }
  // An HTTPS client that trusts only `ca` (the server's certificate when pinned).
  std::unique_ptr<httplib::SSLClient> Https(const std::string& ca) {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    c->set_ca_cert_path(ca.c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(2, 0);
    c->set_read_timeout(5, 0);
    return c;
  }
  // The server counts a failed handshake once it notices the client gave up (right after the
  // client's call returns): waits up to 5 s for the count.
  bool AwaitHandshakeFailures(uint64_t n) {
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (server_->stats().tls_handshake_failures < n &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);  // polling another thread's counter, not synchronising
    }
    return server_->stats().tls_handshake_failures == n;
  }
  TempDir tmp_{"keyflow-rest-tls"};
  const std::string dir_ = tmp_.path();
  const std::string cert_ = dir_ + "/tls.crt";
  const std::string key_ = dir_ + "/tls.key";
  RestRouter router_;
  std::unique_ptr<RestServer> server_;
};

TEST_F(RestServerTlsTest, ServesHttpsToAClientThatPinsTheCertificate) {
  Start(Options());
  EXPECT_TRUE(server_->tls());
  EXPECT_THAT(server_->url(), StartsWith("https://127.0.0.1:"));
  auto client = Https(cert_);
  for (int i = 0; i < 3; ++i) {  // keep-alive over one TLS session
    auto res = client->Get("/ping");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(nlohmann::json::parse(res->body), (nlohmann::json{{"pong", 1}}));
  }
  EXPECT_EQ(server_->stats().requests, 3u);
  EXPECT_EQ(server_->stats().tls_handshake_failures, 0u);
}

TEST_F(RestServerTlsTest, PlainHttpAndAnUntrustingClientAreRefusedInTheHandshake) {
  Start(Options());
  httplib::Client plain("127.0.0.1", server_->port());
  plain.set_connection_timeout(2, 0);
  plain.set_read_timeout(3, 0);
  auto res = plain.Get("/ping");
  EXPECT_FALSE(res && res->status == 200) << "plain HTTP must not be answered";
  EXPECT_TRUE(AwaitHandshakeFailures(1)) << server_->stats().tls_handshake_failures;

  const std::string other = dir_ + "/other.crt";
  ASSERT_OK(WriteSelfSignedCertificate(other, dir_ + "/other.key"));
  auto untrusting = Https(other);
  auto refused = untrusting->Get("/ping");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error(), httplib::Error::SSLServerVerification);
  untrusting.reset();

  // httplib verifies the chain after its handshake completes, so from the server's side that
  // connection is a completed handshake followed by a hang-up: refused by the client, no
  // request served, not a handshake failure.
  EXPECT_EQ(server_->stats().requests, 0u);
  EXPECT_EQ(server_->stats().tls_handshake_failures, 1u);
  auto ok = Https(cert_)->Get("/ping");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
}

TEST_F(RestServerTlsTest, AClientThatNeverHandshakesIsCutAtTheReadDeadline) {
  RestServerOptions o = Options();
  o.request_read_deadline = 300ms;
  Start(o);
  RawTcp silent(server_->port());
  ASSERT_TRUE(silent.connected());
  bool closed = false;
  silent.ReadUntilClosed(3000ms, &closed);
  EXPECT_TRUE(closed) << "a silent client must not hold a server thread";
  EXPECT_EQ(server_->stats().tls_handshake_failures, 1u);
}

TEST_F(RestServerTlsTest, UnusableTlsFilesFailTheStartWithOneSentence) {
  RestServerOptions missing = Options();
  missing.tls_cert_file = dir_ + "/missing.crt";
  auto s = RestServer::Start(&router_, missing);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(),
              HasSubstr("--rest-tls-cert " + dir_ + "/missing.crt is not a readable PEM"));

  RestServerOptions half = Options();
  half.tls_key_file.clear();
  auto h = RestServer::Start(&router_, half);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(),
            "--rest-tls-cert and --rest-tls-key go together: give both (e.g. KEYS/rest/tls.crt "
            "and KEYS/rest/tls.key from `keyflow keys init`) or neither");
}

}  // namespace
}  // namespace keyflow
