// Debian's real Prometheus server scrapes a running keyflow cluster: a coordinator and two
// workers run a rate-limited count-window job while `prometheus` (a child process of the test,
// killed at the end) scrapes the coordinator's /metrics every second; the test then asks
// Prometheus' HTTP API for the sum of the subtasks' processed records — exactly the job's input —
// and for the workers' RSS and the scrape target's health. The cluster is secure, so /metrics
// needs a token: Prometheus sends the viewer's from its credentials file (`authorization:
// {type: Bearer, credentials_file: ...}`), and a second scrape job without one is refused
// (its target is down). The /metrics text itself passes `promtool check metrics` (format and
// naming lint). Without prometheus installed the test fails and says how to install it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

constexpr int64_t kEvents = 20000;
// About 4 s at 5000 records/s: Prometheus scrapes the job while it runs.
const std::string kInput =
    "gen:events=" + std::to_string(kEvents) + ",keys=200,splits=2,seed=21,rate=5000";

// The absolute path of `name` in PATH ("" if absent).
std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// The value of an instant query's single sample as Prometheus prints it ("5000"), or "" when
// the result is empty or Prometheus does not answer (yet).
std::string QueryValue(int port, const std::string& promql) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!res || res->status != 200) return "";
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return "";
  const nlohmann::json& result = j["data"]["result"];
  if (!result.is_array() || result.size() != 1) return "";
  return result[0]["value"][1].get<std::string>();
}

TEST(PrometheusIntegration, ARealPrometheusScrapesTheExactRecordCountOfAJob) {
  const std::string prometheus = FindInPath("prometheus");
  const std::string promtool = FindInPath("promtool");
  ASSERT_FALSE(prometheus.empty() || promtool.empty())
      << "prometheus or promtool is not installed (Debian package prometheus): run "
         "scripts/install-deps.sh";
  TestDir dir;
  ASSERT_FALSE(dir.path().empty());
  ClusterOptions options;
  options.workers = 2;
  auto cluster = Cluster::Start(dir.Subdir("cluster"), options);
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  auto rest_port = c.RestPort();
  ASSERT_OK(rest_port);

  // /metrics itself: the exposition content type, and promtool's format and naming lint.
  // (The snapshot it renders is published every 250 ms: wait for one with both workers.)
  httplib::Client rest("127.0.0.1", *rest_port);
  auto anonymous = rest.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401) << "a secure cluster's /metrics needs a token";
  const httplib::Headers bearer = {{"Authorization", "Bearer " + c.ViewerToken()}};
  std::string body, content_type;
  Status both = WaitUntil(
      [&] {
        auto res = rest.Get("/metrics", bearer);
        if (!res || res->status != 200) return false;
        body = res->body;
        content_type = res->get_header_value("Content-Type");
        return body.find("\nkeyflow_coordinator_workers 2\n") != std::string::npos;
      },
      Duration::Seconds(10), "/metrics to show both workers");
  ASSERT_OK(both) << both.ToString() << "\n" << body;
  EXPECT_EQ(content_type, "text/plain; version=0.0.4; charset=utf-8");
  {
    const std::string file = dir.path() + "/metrics.txt";
    std::ofstream(file) << body;
    auto lint = RunCommand({"sh", "-c", "'" + promtool + "' check metrics < '" + file + "'"},
                           Duration::Seconds(20));
    ASSERT_OK(lint);
    EXPECT_EQ(lint->exit_code, 0) << lint->out << lint->err;
  }

  auto prom_port = PickUnusedPort();
  ASSERT_OK(prom_port);
  // The scrape config README "Security" documents: the viewer's token file as credentials.
  const std::string config = dir.path() + "/prometheus.yml";
  const std::string target = "127.0.0.1:" + std::to_string(*rest_port);
  std::ofstream(config) << "global:\n"
                           "  scrape_interval: 1s\n"
                           "  evaluation_interval: 1s\n"
                           "scrape_configs:\n"
                           "  - job_name: keyflow\n"
                           "    scrape_interval: 1s\n"
                           "    authorization:\n"
                           "      type: Bearer\n"
                           "      credentials_file: "
                        << c.KeysDir()
                        << "/viewers/viewer.token\n"
                           "    static_configs:\n"
                           "      - targets: ['"
                        << target
                        << "']\n"
                           "  - job_name: keyflow-anonymous\n"
                           "    scrape_interval: 1s\n"
                           "    static_configs:\n"
                           "      - targets: ['"
                        << target << "']\n";
  auto server = ChildProcess::Start(
      {prometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir.Subdir("tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(*prom_port), "--log.level=warn"},
      dir.path() + "/prometheus.log");
  ASSERT_OK(server);
  Status ready = WaitUntil([&] { return QueryValue(*prom_port, "vector(1)") == "1"; },
                           Duration::Seconds(60), "Prometheus to answer queries");
  ASSERT_OK(ready) << ready.ToString() << "\n" << Tail(dir.path() + "/prometheus.log");

  auto run = RunJob(c, {"--job", "count-window", "--input", kInput, "--parallelism", "2"},
                    Duration::Seconds(120));
  ASSERT_OK(run);
  ASSERT_EQ(run->job.value("state", ""), "FINISHED") << run->job.dump() << c.LogExcerpts();
  ASSERT_EQ(run->job.value("records_processed", int64_t{-1}), kEvents) << run->job.dump();

  const std::string expected = std::to_string(kEvents);
  std::string last;
  Status scraped = WaitUntil(
      [&] {
        last = QueryValue(*prom_port, "sum(keyflow_subtask_records_processed_total)");
        return last == expected;
      },
      Duration::Seconds(60), "Prometheus to have scraped " + expected + " processed records",
      Duration::Millis(250));
  ASSERT_OK(scraped) << scraped.ToString() << " (last answer '" << last << "')\n"
                     << Tail(dir.path() + "/prometheus.log");
  EXPECT_EQ(QueryValue(*prom_port, "keyflow_job_records_in_total"), expected);
  EXPECT_EQ(QueryValue(*prom_port, "up{job=\"keyflow\"}"), "1");
  // Without the token the scrape is refused (401): that target is down (its first scrape may
  // come later than the other job's).
  std::string anonymous_up;
  Status refused = WaitUntil(
      [&] {
        anonymous_up = QueryValue(*prom_port, "up{job=\"keyflow-anonymous\"}");
        return !anonymous_up.empty();
      },
      Duration::Seconds(30), "Prometheus to have scraped the target without a token");
  EXPECT_OK(refused) << refused.ToString() << "\n" << Tail(dir.path() + "/prometheus.log");
  EXPECT_EQ(anonymous_up, "0") << "without the token the scrape is refused (401)";
  EXPECT_EQ(QueryValue(*prom_port, "count(keyflow_coordinator_up{job=\"keyflow-anonymous\"})"), "")
      << "and brings no keyflow metric";
  // Both workers report a resident set of more than 1 MiB.
  EXPECT_EQ(QueryValue(*prom_port, "count(keyflow_worker_resident_memory_bytes > 1048576)"), "2");
  EXPECT_EQ(QueryValue(*prom_port, "count(keyflow_worker_open_fds > 0)"), "2");
  EXPECT_EQ(QueryValue(*prom_port, "keyflow_job_info{state=\"FINISHED\"}"), "1");
  EXPECT_EQ(QueryValue(*prom_port, "count(keyflow_subtask_state_backend_info{backend=\"heap\"})"),
            "2");
  // The latency histogram as scraped (markers every 200 ms by default): its sample count is the
  // status's, and the +Inf bucket holds every sample.
  int64_t latency_samples = 0;
  for (const auto& s : run->job["subtasks"]) {
    latency_samples += s["latency"].value("count", int64_t{0});
  }
  EXPECT_GT(latency_samples, 0) << "a 4 s job with markers every 200 ms has latency samples";
  EXPECT_EQ(QueryValue(*prom_port, "sum(keyflow_subtask_latency_seconds_count)"),
            std::to_string(latency_samples));
  EXPECT_EQ(QueryValue(*prom_port, "sum(keyflow_subtask_latency_seconds_bucket{le=\"+Inf\"})"),
            std::to_string(latency_samples));
  EXPECT_EQ(server->Kill(), 128 + 9);
}

}  // namespace
}  // namespace keyflow::test
