// The coordinator's REST API on a real cluster (issue 12): every GET endpoint with the job's
// exact shape, a 404, hung and idle HTTP clients that delay neither `keyflow status` nor other
// requests, the commands' bearer tokens (none / wrong / revoked: 401; an operator's: the job is
// canceled), the reads' tokens (none: 401; a viewer's: 200, on a command 403; a revoked
// viewer's: 401 after `keyflow keys reload`), an --insecure cluster (reads open, commands 403),
// and a REST port in use at start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "coordinator/rest/rest_token.h"
#include "tests/coordinator/rest/raw_tcp.h"
#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using keyflow::testing::RawTcp;
using nlohmann::json;
using ::testing::HasSubstr;
using SteadyClock = std::chrono::steady_clock;

constexpr Duration kWait = Duration::Seconds(30);

class RestApiTest : public ::testing::Test {
 protected:
  void Start(bool insecure) {
    ClusterOptions o;
    o.workers = 2;
    o.insecure = insecure;
    auto c = Cluster::Start(dir_.path(), o);
    ASSERT_OK(c);
    cluster_ = std::move(c).value();
    auto port = cluster_->RestPort();
    ASSERT_OK(port);
    port_ = *port;
  }
  // A job that runs for a while (~20 s) with parallelism 2; returns once both subtasks run.
  void StartJob() {
    auto run = cluster_->Cli({"run", "--job", "count-window", "--input",
                              "gen:events=100000,keys=100,splits=2,seed=1,rate=5000",
                              "--parallelism", "2", "--output", dir_.path() + "/out"});
    ASSERT_OK(run);
    ASSERT_EQ(run->exit_code, 0) << run->err;
    auto st = cluster_->WaitForStatus(
        [](const json& s) {
          if (!s["job"].is_object() || s["job"]["state"] != "RUNNING") return false;
          for (const json& t : s["job"]["subtasks"]) {
            if (t["state"] != "RUNNING") return false;
          }
          return true;
        },
        kWait, "the job running");
    ASSERT_OK(st) << st.status().message() << cluster_->LogExcerpts();
    // The REST snapshot follows within a publish interval.
    ASSERT_OK(GetUntil("/api/v1/job/subtasks", [](const json& j) {
      if (!j.contains("subtasks") || j["subtasks"].size() != 2) return false;
      for (const json& t : j["subtasks"]) {
        if (t["state"] != "RUNNING") return false;
      }
      return true;
    }));
  }
  // The token every read sends: the viewer's ("" on an insecure cluster).
  httplib::Headers ReadHeaders() const { return Bearer(cluster_->ViewerToken()); }
  static httplib::Headers Bearer(const std::string& token) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return h;
  }
  // Polls GET `path` until `pred(body)` holds (the snapshot is up to 250 ms old).
  Status GetUntil(const std::string& path, const std::function<bool(const json&)>& pred) const {
    json last;
    Status s = WaitUntil(
        [&] {
          auto r = Client()->Get(path, ReadHeaders());
          if (!r) return false;
          last = json::parse(r->body, nullptr, false);
          return pred(last);
        },
        kWait, "GET " + path);
    EXPECT_OK(s) << s.message() << "; last answer: " << last.dump();
    return s;
  }
  std::unique_ptr<httplib::Client> Client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(40, 0);
    return c;
  }
  // GET `path` with the viewer's token: the status and the body (parsed).
  std::pair<int, json> Get(const std::string& path) const { return GetWith(path, ReadHeaders()); }
  std::pair<int, json> GetWith(const std::string& path, const httplib::Headers& headers) const {
    auto r = Client()->Get(path, headers);
    EXPECT_TRUE(r) << path << ": " << httplib::to_string(r.error());
    if (!r) return {0, json()};
    EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store") << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << path;
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  httplib::Result Post(const std::string& path, const std::string& token,
                       const std::string& body = "{}") const {
    return Client()->Post(path, Bearer(token), body, "application/json");
  }
  std::string OperatorToken() const {
    auto t = ReadRestToken(RestTokenFile(KeyDirectory{cluster_->KeysDir()}, "operator"));
    EXPECT_OK(t);
    return t.ok() ? *t : std::string();
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
  int port_ = 0;
};

TEST_F(RestApiTest, EveryReadEndpointShowsTheRunningJob) {
  ASSERT_NO_FATAL_FAILURE(Start(false));
  ASSERT_NO_FATAL_FAILURE(StartJob());

  auto [hs, health] = Get("/api/v1/health");
  EXPECT_EQ(hs, 200);
  EXPECT_EQ(health["status"], "ok");
  EXPECT_LT(health["snapshot"]["age_ms"].get<int64_t>(), 5000);

  auto [os, overview] = Get("/api/v1/overview");
  EXPECT_EQ(os, 200);
  EXPECT_EQ(overview["workers"], 2);
  EXPECT_EQ(overview["slots"], json::array({0, 1}));
  EXPECT_EQ(overview["job"]["state"], "RUNNING");
  EXPECT_EQ(overview["job"]["parallelism"], 2);
  EXPECT_EQ(overview["job"]["attempt"], 1);
  EXPECT_EQ(overview["coordinator"]["security"]["mode"], "curve");
  EXPECT_EQ(overview["versions"]["rest_api"], "v1");

  auto [ws, workers] = Get("/api/v1/workers");
  EXPECT_EQ(ws, 200);
  ASSERT_EQ(workers["workers"].size(), 2u);
  EXPECT_EQ(workers["workers"][0]["slot"], 0);
  EXPECT_EQ(workers["workers"][1]["slot"], 1);

  auto [js, job] = Get("/api/v1/job");
  EXPECT_EQ(js, 200);
  EXPECT_EQ(job["job"], "count-window");
  EXPECT_EQ(job["parallelism"], 2);
  EXPECT_EQ(job["max_parallelism"], 128);
  EXPECT_EQ(job["restarts"], 0);
  ASSERT_EQ(job["key_group_ranges"].size(), 2u);
  EXPECT_EQ(job["key_group_ranges"][0]["key_groups"], json::array({0, 63}));
  EXPECT_EQ(job["key_group_ranges"][1]["key_groups"], json::array({64, 127}));
  EXPECT_FALSE(job.contains("subtasks"));

  auto [ss, subtasks] = Get("/api/v1/job/subtasks");
  EXPECT_EQ(ss, 200);
  ASSERT_EQ(subtasks["subtasks"].size(), 2u);
  for (int i : {0, 1}) {
    const json& t = subtasks["subtasks"][i];
    EXPECT_EQ(t["subtask"], i);
    EXPECT_EQ(t["key_groups"], i == 0 ? json::array({0, 63}) : json::array({64, 127}));
    EXPECT_EQ(t["state"], "RUNNING");
  }

  auto [cs, checkpoints] = Get("/api/v1/job/checkpoints");
  EXPECT_EQ(cs, 200);
  EXPECT_EQ(checkpoints["job_id"], job["job_id"]);
  EXPECT_TRUE(checkpoints.contains("history")) << checkpoints.dump();

  auto [rs, rescale] = Get("/api/v1/job/rescale");
  EXPECT_EQ(rs, 200);
  EXPECT_EQ(rescale["in_progress"], false);
  EXPECT_EQ(rescale["parallelism"], 2);

  auto [ns, missing] = Get("/api/v1/jobs");
  EXPECT_EQ(ns, 404);
  EXPECT_EQ(missing["error"],
            "no such endpoint: /api/v1/jobs (the REST API's endpoints are listed in "
            "coordinator/README.md; start with GET /api/v1/overview)");
  auto wrong = Client()->Delete("/api/v1/job");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
}

// Secure by default: every read but the liveness probe needs a token; a viewer's reads
// everything (the API, /metrics) and commands nothing.
TEST_F(RestApiTest, ReadsNeedATokenAndAViewersTokenOnlyReads) {
  ASSERT_NO_FATAL_FAILURE(Start(false));
  ASSERT_NO_FATAL_FAILURE(StartJob());
  for (const char* path :
       {"/api/v1/overview", "/api/v1/workers", "/api/v1/job", "/api/v1/job/subtasks",
        "/api/v1/job/checkpoints", "/api/v1/job/rescale", "/metrics"}) {
    auto r = Client()->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer realm=\"keyflow\"") << path;
    EXPECT_THAT(json::parse(r->body)["error"].get<std::string>(),
                HasSubstr("this cluster's REST API needs a token to read: send `Authorization: "
                          "Bearer <token>` with a viewer's token"))
        << path;
    EXPECT_EQ(r->body.find("count-window"), std::string::npos) << path << ": no job data";
    auto viewer = Client()->Get(path, ReadHeaders());
    ASSERT_TRUE(viewer) << path;
    EXPECT_EQ(viewer->status, 200) << path << ": " << viewer->body;
    auto op = Client()->Get(path, Bearer(cluster_->OperatorToken()));
    ASSERT_TRUE(op) << path;
    EXPECT_EQ(op->status, 200) << path;
  }
  auto metrics = Client()->Get("/metrics", ReadHeaders());
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(metrics->body, HasSubstr("\nkeyflow_coordinator_workers 2\n"));
  // The liveness probe shows no job data and needs no token.
  auto [hs, health] = GetWith("/api/v1/health", {});
  EXPECT_EQ(hs, 200);
  EXPECT_EQ(health["status"], "ok");

  auto cancel = Post("/api/v1/job/cancel", cluster_->ViewerToken());
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->status, 403) << cancel->body;
  EXPECT_EQ(json::parse(cancel->body)["error"],
            "the token of viewer viewer may only read: this command needs an operator's token "
            "(the token of an operator client key, KEYS/clients/NAME.token; `keyflow keys "
            "add-client NAME` creates one)");
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["job"]["state"], "RUNNING") << "a viewer's command changes nothing";
  // 7 reads without a token; the viewer's command is a refusal, not a failed authentication.
  EXPECT_OK(GetUntil("/api/v1/overview", [](const json& o) {
    return o["rest"].is_object() && o["rest"]["failed_auth"] == 7;
  }));
}

TEST_F(RestApiTest, ANewViewerReadsAfterTheReloadAndARevokedOneNoLonger) {
  ASSERT_NO_FATAL_FAILURE(Start(false));
  auto add = RunCommand({KeyflowBinary("keyflow"), "keys", "add-token", "grafana", "--role",
                         "viewer", "--keys", cluster_->KeysDir()},
                        Duration::Seconds(15));
  ASSERT_TRUE(add.ok() && add->exit_code == 0) << (add.ok() ? add->err : add.status().message());
  const KeyDirectory keys{cluster_->KeysDir()};
  auto token = ReadRestToken(ViewerTokenFile(keys, "grafana"));
  ASSERT_OK(token);
  EXPECT_EQ(GetWith("/metrics", Bearer(*token)).first, 401) << "not admitted before the reload";
  auto reload = cluster_->Cli({"keys", "reload"});
  ASSERT_TRUE(reload.ok() && reload->exit_code == 0);
  EXPECT_EQ(GetWith("/api/v1/workers", Bearer(*token)).first, 200);
  std::filesystem::remove(ViewerTokenHashFile(keys, "grafana"));
  reload = cluster_->Cli({"keys", "reload"});
  ASSERT_TRUE(reload.ok() && reload->exit_code == 0);
  auto [code, body] = GetWith("/api/v1/workers", Bearer(*token));
  EXPECT_EQ(code, 401) << body.dump();
  EXPECT_THAT(body["error"].get<std::string>(), HasSubstr("does not know this token"));
  EXPECT_EQ(Get("/api/v1/workers").first, 200) << "the other viewer stays";
  auto list = RunCommand({KeyflowBinary("keyflow"), "keys", "list", "--keys", cluster_->KeysDir()},
                         Duration::Seconds(15));
  ASSERT_OK(list);
  EXPECT_THAT(list->out, HasSubstr("viewer       grafana             revoked      "));
}

TEST_F(RestApiTest, HungAndIdleHttpClientsDelayNeitherTheCliNorOtherRequests) {
  ASSERT_NO_FATAL_FAILURE(Start(false));
  ASSERT_OK(GetUntil("/api/v1/overview", [](const json& o) { return o["workers"] == 2; }));
  RawTcp half(port_);
  ASSERT_TRUE(half.connected());
  ASSERT_TRUE(half.Send("GET /api/v1/overview HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  std::vector<std::unique_ptr<RawTcp>> idle;
  for (int i = 0; i < 6; ++i) {
    idle.push_back(std::make_unique<RawTcp>(port_));
    ASSERT_TRUE(idle.back()->connected());
  }
  auto start = SteadyClock::now();
  auto status = cluster_->Cli({"status"}, Duration::Seconds(5));
  ASSERT_OK(status);
  EXPECT_EQ(status->exit_code, 0) << status->err;
  auto [code, overview] = Get("/api/v1/overview");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(overview["workers"], 2);
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(3));
  // The control loop kept serving the workers meanwhile.
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["workers"].size(), 2u);
}

TEST_F(RestApiTest, CommandsNeedAnOperatorsToken) {
  ASSERT_NO_FATAL_FAILURE(Start(false));
  ASSERT_NO_FATAL_FAILURE(StartJob());

  auto none = Post("/api/v1/job/cancel", "");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"keyflow\"");
  EXPECT_THAT(json::parse(none->body)["error"].get<std::string>(),
              HasSubstr("needs an operator's token"));
  auto wrong = Post("/api/v1/job/cancel", std::string(64, 'a'));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_THAT(json::parse(wrong->body)["error"].get<std::string>(),
              HasSubstr("does not know this token"));
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["job"]["state"], "RUNNING") << "refused commands change nothing";
  EXPECT_OK(GetUntil("/api/v1/overview", [](const json& o) {
    return o["rest"].is_object() && o["rest"]["failed_auth"] == 2;
  }));

  auto bad = Post("/api/v1/job/rescale", OperatorToken(), "{\"parallelism\": \"three\"}");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);

  // A refusal by the coordinator has its class: a parallelism above the job's maximum is a bad
  // request (400); a rescale while another one waits for workers is a conflict (409).
  auto too_big = Post("/api/v1/job/rescale", OperatorToken(), R"({"parallelism": 1000})");
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->status, 400) << too_big->body;
  EXPECT_THAT(json::parse(too_big->body)["error"].get<std::string>(),
              HasSubstr("it must be between 1 and the job's max parallelism 128"));
  auto waiting = std::async(std::launch::async, [&] {
    return Post("/api/v1/job/rescale", OperatorToken(),
                R"({"parallelism": 3, "wait_for_workers_ms": 3000})");
  });
  ASSERT_OK(
      GetUntil("/api/v1/job/rescale", [](const json& r) { return r["in_progress"] == true; }));
  auto second = Post("/api/v1/job/rescale", OperatorToken(), R"({"parallelism": 4})");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 409) << second->body;
  EXPECT_THAT(json::parse(second->body)["error"].get<std::string>(),
              HasSubstr("it can be rescaled only while RUNNING"));
  auto first = waiting.get();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 409) << first->body;
  EXPECT_THAT(json::parse(first->body)["error"].get<std::string>(),
              HasSubstr("needs 3 workers but only 2 registered in time"));

  auto ok = Post("/api/v1/job/cancel", OperatorToken());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  json body = json::parse(ok->body);
  EXPECT_EQ(body["ok"], true);
  EXPECT_THAT(body["message"].get<std::string>(), HasSubstr("canceled"));
  auto canceled = cluster_->WaitForStatus(
      [](const json& s) { return s["job"].is_object() && s["job"]["state"] == "CANCELED"; }, kWait,
      "the job canceled");
  ASSERT_OK(canceled);

  auto again = Post("/api/v1/job/cancel", OperatorToken());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(json::parse(again->body)["error"], "no job is running");
}

TEST_F(RestApiTest, ARevokedClientKeysTokenIsRefused) {
  ASSERT_NO_FATAL_FAILURE(Start(false));
  auto add = RunCommand(
      {KeyflowBinary("keyflow"), "keys", "add-client", "bob", "--keys", cluster_->KeysDir()},
      Duration::Seconds(15));
  ASSERT_TRUE(add.ok() && add->exit_code == 0) << (add.ok() ? add->err : add.status().message());
  const KeyDirectory keys{cluster_->KeysDir()};
  auto token = ReadRestToken(RestTokenFile(keys, "bob"));
  ASSERT_OK(token);
  auto before = Post("/api/v1/job/checkpoints", *token);
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 401) << "not trusted before the reload";
  auto reload = cluster_->Cli({"keys", "reload"});
  ASSERT_TRUE(reload.ok() && reload->exit_code == 0);
  auto trusted = Post("/api/v1/job/checkpoints", *token);
  ASSERT_TRUE(trusted);
  EXPECT_EQ(trusted->status, 409) << trusted->body;  // authenticated; no job to checkpoint
  std::filesystem::remove(keys.PublicKeyFile(Role::kOperator, "bob"));
  reload = cluster_->Cli({"keys", "reload"});
  ASSERT_TRUE(reload.ok() && reload->exit_code == 0);
  auto revoked = Post("/api/v1/job/checkpoints", *token);
  ASSERT_TRUE(revoked);
  EXPECT_EQ(revoked->status, 401) << revoked->body;
  // Workers have no tokens.
  for (const auto& e : std::filesystem::directory_iterator(keys.RoleDir(Role::kWorker))) {
    EXPECT_NE(e.path().extension(), ".token") << e.path();
  }
}

TEST_F(RestApiTest, AnInsecureClusterRefusesCommands) {
  ASSERT_NO_FATAL_FAILURE(Start(true));
  auto r = Post("/api/v1/job/cancel", std::string(64, 'a'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(json::parse(r->body)["error"].get<std::string>(),
              HasSubstr("this cluster runs --insecure, so the REST API's commands are off"));
  auto [code, overview] = GetWith("/api/v1/overview", {});
  EXPECT_EQ(code, 200);  // reading stays open, without a token
  EXPECT_EQ(overview["coordinator"]["security"]["mode"], "insecure");
  auto metrics = Client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

TEST(RestPortTest, APortInUseStopsTheCoordinatorWithASentence) {
  TestDir dir;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  auto r = RunCommand({KeyflowBinary("keyflow-coordinator"), "--insecure", "--port", "0",
                       "--rest-port", port, "--checkpoint-dir", dir.path() + "/checkpoints"},
                      Duration::Seconds(20));
  close(fd);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_THAT(r->err, HasSubstr("the REST port " + port + " (127.0.0.1:" + port +
                                ") is already in use: stop the other process or choose another "
                                "--rest-port (0 = any free port, -1 = no REST server)"));
  EXPECT_THAT(r->err, ::testing::Not(HasSubstr("listening on")));
}

TEST(RestPortTest, BadRestFlagsAreUsageErrors) {
  auto r = RunCommand({KeyflowBinary("keyflow-coordinator"), "--insecure", "--rest-port", "70000"},
                      Duration::Seconds(20));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--rest-port"));
  EXPECT_THAT(r->err, HasSubstr("-1 for no REST server"));
  auto f = RunCommand({KeyflowBinary("keyflow-coordinator"), "--insecure", "--rest-port", "-1",
                       "--rest-port-file", "/tmp/x"},
                      Duration::Seconds(20));
  ASSERT_OK(f);
  EXPECT_EQ(f->exit_code, 2);
  EXPECT_THAT(f->err, HasSubstr("--rest-port-file needs a REST server"));
}

}  // namespace
}  // namespace keyflow::test
