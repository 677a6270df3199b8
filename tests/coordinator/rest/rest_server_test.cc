// The REST server over real loopback sockets: routing, JSON errors, limits, and clients that
// hang or flood.
#include "coordinator/rest/rest_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <thread>
#include <vector>

#include "tests/coordinator/rest/raw_tcp.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using keyflow::testing::RawTcp;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

using SteadyClock = std::chrono::steady_clock;

RestServerOptions Loopback() {
  RestServerOptions o;
  o.bind_address = "127.0.0.1";
  o.port = 0;
  return o;
}

class RestServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.Add("GET", "/ping", [](const HttpRequest& r) {
      return JsonResponse(200, {{"pong", true}, {"from", r.remote_address}});
    });
    router_.Add("POST", "/echo", [](const HttpRequest& r) {
      return JsonResponse(
          200, {{"bytes", r.body.size()},
                {"auth", r.headers.count("authorization") ? r.headers.at("authorization") : ""}});
    });
  }
  void Start(RestServerOptions o = Loopback()) {
    auto s = RestServer::Start(&router_, o);
    ASSERT_OK(s);
    server_ = std::move(s).value();
  }
  std::unique_ptr<httplib::Client> Client() {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_connection_timeout(2, 0);
    c->set_read_timeout(5, 0);
    return c;
  }
  RestRouter router_;
  std::unique_ptr<RestServer> server_;
};

TEST_F(RestServerTest, AnswersThroughTheRouter) {
  Start();
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->url(), "http://127.0.0.1:" + std::to_string(server_->port()));
  auto r = Client()->Get("/ping");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store");
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  EXPECT_EQ(json::parse(r->body), (json{{"pong", true}, {"from", "127.0.0.1"}}));

  auto missing = Client()->Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(json::parse(missing->body)["error"].get<std::string>(),
              HasSubstr("no such endpoint: /nope"));
  auto wrong = Client()->Delete("/ping");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "GET");

  httplib::Headers h = {{"Authorization", "Bearer abc"}};
  auto echo = Client()->Post("/echo", h, "{\"a\":1}", "application/json");
  ASSERT_TRUE(echo);
  EXPECT_EQ(json::parse(echo->body), (json{{"bytes", 7}, {"auth", "Bearer abc"}}));
}

TEST_F(RestServerTest, ABodyOverTheLimitIs413Json) {
  RestServerOptions o = Loopback();
  o.max_body_bytes = 1024;
  Start(o);
  auto ok = Client()->Post("/echo", std::string(1024, 'x'), "text/plain");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto big = Client()->Post("/echo", std::string(1025, 'x'), "text/plain");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"],
            "the request body is larger than 1024 bytes: REST commands take small JSON bodies");
}

TEST_F(RestServerTest, HungAndIdleClientsDoNotDelayOthers) {
  Start();  // 8 threads
  RawTcp half(server_->port());
  ASSERT_TRUE(half.connected());
  ASSERT_TRUE(half.Send("GET /ping HTTP/1.1\r\nHost: x\r\n"));  // and never the rest
  std::vector<std::unique_ptr<RawTcp>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(std::make_unique<RawTcp>(server_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  auto start = SteadyClock::now();
  for (int i = 0; i < 3; ++i) {
    auto r = Client()->Get("/ping");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_LT(SteadyClock::now() - start, 2s);
}

TEST_F(RestServerTest, ARequestTrickledSlowerThanTheDeadlineIsCutOff) {
  RestServerOptions o = Loopback();
  o.request_read_deadline = 300ms;
  Start(o);
  RawTcp slow(server_->port());
  ASSERT_TRUE(slow.connected());
  const std::string request = "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n";
  auto start = SteadyClock::now();
  bool closed = false;
  // One byte per 50 ms (each read is well within read_timeout): the whole request would take
  // 1.6 s, the deadline ends it after 0.3 s.
  std::string answer;
  for (char c : request) {
    if (!slow.Send(std::string(1, c))) break;
    answer += slow.ReadUntilClosed(50ms, &closed);
    if (closed) break;
  }
  EXPECT_EQ(answer, "");
  EXPECT_TRUE(closed);
  EXPECT_LT(SteadyClock::now() - start, 1200ms);
  EXPECT_EQ(server_->stats().cut_connections, 1u);
}

TEST_F(RestServerTest, ConnectionsBeyondThreadsAndQueueGet503AtOnce) {
  RestServerOptions o = Loopback();
  o.threads = 1;
  o.max_queued_connections = 1;
  Start(o);
  RawTcp busy(server_->port());  // takes the only thread
  ASSERT_TRUE(busy.Send("GET /ping HTTP/1.1\r\n"));
  auto until = SteadyClock::now() + 10s;
  while (server_->stats().connections < 1 && SteadyClock::now() < until) std::this_thread::yield();
  ASSERT_EQ(server_->stats().connections, 1u);
  RawTcp queued(server_->port());  // waits in the queue
  RawTcp shed(server_->port());    // finds thread and queue full
  ASSERT_TRUE(queued.connected());
  ASSERT_TRUE(shed.connected());
  bool closed = false;
  std::string answer = shed.ReadUntilClosed(5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(answer, HasSubstr("\"error\":\"the coordinator's REST server is busy"));
  EXPECT_EQ(server_->stats().shed_connections, 1u);
}

TEST_F(RestServerTest, StopsPromptlyWithAHungClient) {
  Start();
  RawTcp half(server_->port());
  ASSERT_TRUE(half.Send("GET /ping HTTP/1.1\r\n"));
  auto until = SteadyClock::now() + 10s;
  while (server_->stats().connections < 1 && SteadyClock::now() < until) std::this_thread::yield();
  auto start = SteadyClock::now();
  server_.reset();
  EXPECT_LT(SteadyClock::now() - start, 1s);
}

TEST_F(RestServerTest, APortInUseNamesThePortAndTheFlag) {
  Start();
  RestServerOptions o = Loopback();
  o.port = server_->port();
  auto second = RestServer::Start(&router_, o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(second.status().message(),
            "the REST port " + std::to_string(o.port) + " (127.0.0.1:" + std::to_string(o.port) +
                ") is already in use: stop the other process or choose another --rest-port (0 = "
                "any free port, -1 = no REST server)");
}

TEST_F(RestServerTest, AnAddressNotOfThisHost) {
  RestServerOptions o = Loopback();
  o.bind_address = "192.0.2.1";  // TEST-NET-1: never a local address
  auto s = RestServer::Start(&router_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "the REST address 192.0.2.1 is not an address of this host: choose another "
            "--rest-bind");
}

}  // namespace
}  // namespace keyflow
