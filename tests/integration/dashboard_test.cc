// The web dashboard (coordinator/rest/dashboard.h) in headless Chromium: the page on a real
// cluster running a job (the job, one row per subtask with its exact key-group range, a
// records/s chart with data), the token it asks for on a secure cluster (none or a refused one:
// the prompt and no data; the viewer's, given as the URL fragment #token=: the data), and
// against a fixture API (an httplib server in this test) for what a cluster cannot make
// deterministic: the history cap after more polls than it, and the "coordinator unreachable"
// banner when the server goes away.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "coordinator/rest/dashboard.h"
#include "tests/integration/cluster.h"
#include "tests/integration/headless_chromium.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using nlohmann::json;

// The start tag of the element with id `id` ("" if absent); for the body, id "".
std::string StartTag(const std::string& dom, const std::string& tag, const std::string& id) {
  std::regex re(id.empty() ? "<" + tag + "(\\s[^>]*)?>"
                           : "<" + tag + "\\s[^>]*id=\"" + id + "\"[^>]*>");
  std::smatch m;
  return std::regex_search(dom, m, re) ? m[0].str() : "";
}

// The value of attribute `name` in a start tag ("" if absent).
std::string Attr(const std::string& start_tag, const std::string& name) {
  std::smatch m;
  std::regex re("\\s" + name + "=\"([^\"]*)\"");
  return std::regex_search(start_tag, m, re) ? m[1].str() : "";
}

int IntAttr(const std::string& start_tag, const std::string& name) {
  std::string v = Attr(start_tag, name);
  return v.empty() ? -1 : std::stoi(v);
}

// The text of the job fact `field` (<dd data-field="FIELD">TEXT</dd>).
std::string JobFact(const std::string& dom, const std::string& field) {
  std::smatch m;
  std::regex re("<dd[^>]*data-field=\"" + field + "\"[^>]*>([^<]*)</dd>");
  return std::regex_search(dom, m, re) ? m[1].str() : "";
}

// The subtask rows: subtask index -> data-key-groups.
std::map<int, std::string> SubtaskRows(const std::string& dom) {
  std::map<int, std::string> rows;
  std::regex re("<tr data-subtask=\"(\\d+)\" data-key-groups=\"([^\"]*)\">");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), re); it != std::sregex_iterator();
       ++it) {
    rows[std::stoi((*it)[1].str())] = (*it)[2].str();
  }
  return rows;
}

const char* const kCharts[] = {"chart-records", "chart-watermark-lag", "chart-backpressure",
                               "chart-latency", "chart-consumer-lag",  "chart-checkpoints"};

// ---- a fixture API --------------------------------------------------------------------------

// Serves the dashboard's assets (DashboardAssetResponse, as the coordinator does) and the JSON
// API in the shape of coordinator/rest/rest_api.h, from a fake job whose counters and snapshot
// time advance with every /api/v1/job/subtasks request: each poll is a new snapshot.
class FixtureServer {
 public:
  // `stop_after_polls` > 0: the server stops (connections refused) once that many polls ran.
  // `wide`: subtasks with the widest values a big job shows (10-digit counters, 5-digit key
  // groups, second-long latencies, hours of watermark lag), for the table-width test.
  explicit FixtureServer(int stop_after_polls = 0, bool wide = false)
      : stop_after_(stop_after_polls), wide_(wide) {
    server_.Get("/", [](const httplib::Request& q, httplib::Response& r) { Asset(q, r); });
    server_.Get("/static/.*", [](const httplib::Request& q, httplib::Response& r) { Asset(q, r); });
    server_.Get("/api/v1/workers", [this](const httplib::Request&, httplib::Response& r) {
      json ws = json::array();
      for (int i = 0; i < 2; ++i) {
        ws.push_back({{"worker", i + 1},
                      {"slot", i},
                      {"host", "fixture-host"},
                      {"pid", 100 + i},
                      {"last_heartbeat_ms_ago", 40}});
      }
      Json(r, {{"workers", ws}, {"snapshot", {{"published_at_ms", Now()}}}});
    });
    server_.Get("/api/v1/job", [this](const httplib::Request&, httplib::Response& r) {
      Json(r, {{"job_id", "fixture-job-id"},
               {"job", "fixture-job"},
               {"state", "RUNNING"},
               {"attempt", 1},
               {"parallelism", 2},
               {"max_parallelism", 128},
               {"restarts", 2},
               {"last_command", {{"command", "rescale 3"}, {"outcome", "in progress"}}},
               {"rescale", {{"target", 3}, {"phase", "savepoint"}, {"elapsed_ms", 1500}}},
               {"checkpoints", {{"interval_ms", 1000}, {"latest_completed", polls_.load()}}},
               {"source",
                {{"kind", "kafka"},
                 {"topics", {"clicks"}},
                 {"topic_pattern", ""},
                 {"splits", 3},
                 {"lag_records", 1200},
                 {"lag_ms", 4200},
                 {"lag_error", ""},
                 {"discovery_error", ""}}},
               {"snapshot", {{"published_at_ms", Now()}}}});
    });
    server_.Get("/api/v1/job/subtasks", [this](const httplib::Request&, httplib::Response& r) {
      int k = ++polls_;
      int64_t now = kStartMs + k * 1000;
      json subtasks = json::array();
      for (int i = 0; i < 2; ++i) {
        subtasks.push_back({{"subtask", i},
                            {"key_groups", {i * 64, i * 64 + 63}},
                            {"worker", "worker " + std::to_string(i + 1)},
                            {"state", "RUNNING"},
                            {"records_in", k * 1000},
                            {"records_processed", k * 1000},
                            {"records_out", k},
                            {"watermark", now - 1500},
                            {"backpressure", 0.25},
                            {"latency", {{"p50_ms", 1.0}, {"p99_ms", 3.0}, {"count", k}}}});
        if (wide_) {
          const int64_t big = int64_t{9'876'543'210} + k * 1000;
          json& st = subtasks.back();
          st["subtask"] = 32766 + i;
          st["key_groups"] = {32766 + i, 32766 + i};
          st["worker"] = "worker 1234 (slot 1233, host a-long-host-name.example.com, pid 4194304)";
          st["state"] = "DEPLOYING";
          st["records_in"] = big;
          st["records_processed"] = big;
          st["records_out"] = big;
          st["watermark"] = now - int64_t{360'000'000'000};
          st["backpressure"] = 1.0;
          st["latency"] = {
              {"p50_ms", 12345.6}, {"p99_ms", 98765.4}, {"p999_ms", 99999.9}, {"count", k}};
          st["state_backend"] = "rocksdb";
          st["state_bytes_memory"] = int64_t{1'000'000'000'000};
          st["state_bytes_disk"] = int64_t{23'000'000'000};
          st["state_keys"] = big;
          st["timers"] = big;
        }
      }
      Json(r, {{"subtasks", subtasks}, {"snapshot", {{"published_at_ms", now}}}});
      if (stop_after_ > 0 && k == stop_after_) {
        std::lock_guard lock(mu_);
        stop_requested_ = true;
        cv_.notify_all();
      }
    });
    server_.Get("/api/v1/job/checkpoints", [this](const httplib::Request& q, httplib::Response& r) {
      int k = polls_.load();
      // Checkpoints 1..k, newest first, above ?since_id= as the coordinator filters them.
      int since = q.has_param("since_id") ? std::stoi(q.get_param_value("since_id")) : 0;
      last_since_id_ = since;
      json history = json::array();
      for (int id = k; id > since; --id) {
        history.push_back({{"id", id},
                           {"state", "COMPLETED"},
                           {"duration_ms", 10 + id % 5},
                           {"bytes", 1000 * id}});
      }
      checkpoints_served_ += static_cast<int>(history.size());
      Json(r, {{"interval_ms", 1000},
               {"history", history},
               {"snapshot", {{"published_at_ms", Now()}}}});
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    listener_ = std::thread([this] { server_.listen_after_bind(); });
    stopper_ = std::thread([this] {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_requested_; });
      server_.stop();
    });
  }
  ~FixtureServer() {
    {
      std::lock_guard lock(mu_);
      stop_requested_ = true;
      cv_.notify_all();
    }
    stopper_.join();
    listener_.join();
  }
  FixtureServer(const FixtureServer&) = delete;
  FixtureServer& operator=(const FixtureServer&) = delete;

  std::string Url(const std::string& query = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + query;
  }
  int polls() const { return polls_.load(); }
  // The checkpoint entries the dashboard was sent, and the since_id of its last request.
  int checkpoints_served() const { return checkpoints_served_.load(); }
  int last_since_id() const { return last_since_id_.load(); }

 private:
  static constexpr int64_t kStartMs = 1'764'600'000'000;
  int64_t Now() const { return kStartMs + polls_.load() * 1000; }

  static void Asset(const httplib::Request& q, httplib::Response& r) {
    HttpResponse a = DashboardAssetResponse(q.path, q.get_header_value("If-None-Match"));
    r.status = a.status;
    for (const auto& [k, v] : a.headers) r.set_header(k, v);
    r.set_content(a.body, a.content_type);
  }
  static void Json(httplib::Response& r, const json& body) {
    r.set_content(body.dump(), "application/json");
  }

  const int stop_after_;
  const bool wide_;
  httplib::Server server_;
  int port_ = -1;
  std::atomic<int> polls_{0};
  std::atomic<int> checkpoints_served_{0};
  std::atomic<int> last_since_id_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;
  std::thread listener_;
  std::thread stopper_;
};

#define REQUIRE_CHROMIUM()                                                 \
  if (!ChromiumAvailable()) {                                              \
    GTEST_SKIP() << "chromium is not installed (Debian package chromium; " \
                    "scripts/install-deps.sh installs it)";                \
  }

const Duration kWait = Duration::Seconds(30);

TEST(DashboardTest, ShowsTheRunningJobItsSubtasksAndALiveChartOnARealCluster) {
  REQUIRE_CHROMIUM();
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 2});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  auto port = c.RestPort();
  ASSERT_OK(port);
  // Long enough to outlive the test; rate-limited so the subtasks' counters move all along.
  auto run = c.Cli({"run", "--job", "count-window", "--param", "time=event", "--input",
                    "gen:events=5000000,keys=2000,splits=2,seed=3,rate=20000", "--parallelism", "2",
                    "--checkpoint-interval", "500ms", "--output", dir.path() + "/out"});
  ASSERT_TRUE(run.ok() && run->exit_code == 0) << (run.ok() ? run->err : run.status().ToString());
  auto status = c.WaitForStatus(
      [](const json& s) {
        const json& job = s["job"];
        if (job.value("state", "") != "RUNNING" || job["subtasks"].size() != 2) return false;
        for (const json& st : job["subtasks"]) {
          if (st.value("records_processed", 0) == 0) return false;
        }
        return true;
      },
      kWait, "both subtasks to process records");
  ASSERT_OK(status) << status.status().ToString() << "\n" << c.LogExcerpts();
  std::map<int, std::string> expected_rows;
  for (const json& st : (*status)["job"]["subtasks"]) {
    expected_rows[st["subtask"].get<int>()] = std::to_string(st["key_groups"][0].get<int>()) + "-" +
                                              std::to_string(st["key_groups"][1].get<int>());
  }
  ASSERT_EQ(expected_rows.size(), 2u);

  // Virtual time runs the 50 ms polls back to back (each takes the real time of its four
  // requests); the coordinator publishes a new snapshot every 250 ms of real time, and the page
  // adds a records/s point only for a new snapshot. So the points depend on how much real time
  // the polls took: on a loaded machine 100 polls span seconds, on a fast idle one maybe less
  // than two snapshots. A page load with more polls follows until the chart has data (bounded).
  Result<std::string> dom = std::string();
  for (int polls : {100, 400, 1600}) {
    ChromiumRun chromium;
    chromium.virtual_time_budget = Duration::Millis(50 * polls);
    dom = RunHeadlessChromium(
        "http://127.0.0.1:" + std::to_string(*port) + "/?poll_ms=50#token=" + c.ViewerToken(),
        dir.path(), chromium);
    if (!dom.ok() || IntAttr(StartTag(*dom, "figure", "chart-records"), "data-points") > 0) break;
  }
  ASSERT_OK(dom);
  std::string body = StartTag(*dom, "body", "");
  EXPECT_EQ(Attr(body, "data-connection"), "ok") << body;
  EXPECT_EQ(Attr(body, "data-csp-violations"), "0") << body;
  EXPECT_EQ(JobFact(*dom, "job"), "count-window");
  EXPECT_EQ(JobFact(*dom, "state"), "RUNNING");
  EXPECT_EQ(JobFact(*dom, "job_id"), (*status)["job"]["job_id"].get<std::string>());
  EXPECT_EQ(JobFact(*dom, "parallelism"),
            "2 (max " + std::to_string((*status)["job"]["max_parallelism"].get<int>()) + ")");
  EXPECT_EQ(SubtaskRows(*dom), expected_rows);
  std::string records = StartTag(*dom, "figure", "chart-records");
  EXPECT_GT(IntAttr(records, "data-points"), 0) << records << "\n" << body;
  EXPECT_EQ(Attr(records, "data-series"), "2") << records;
  EXPECT_GT(std::stod(Attr(records, "data-last")), 0.0) << records;
  EXPECT_EQ(records.find(" hidden"), std::string::npos) << records;
  // The coordinator serves the assets with their headers; a revalidation is a 304.
  httplib::Client http("127.0.0.1", *port);
  auto index = http.Get("/");
  ASSERT_TRUE(index) << httplib::to_string(index.error());
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Security-Policy"),
            std::string(kDashboardContentSecurityPolicy));
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-cache");
  std::string etag = index->get_header_value("ETag");
  EXPECT_EQ(etag.size(), 18u) << etag;
  auto again = http.Get("/", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_EQ(again->body, "");
  auto chart = http.Get("/static/chart.min.js");
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->status, 200);
  EXPECT_EQ(chart->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_GT(chart->body.size(), 100'000u);
  // Two workers, one row each.
  std::regex worker_row("<tr data-worker=\"\\d+\">");
  EXPECT_EQ(std::distance(std::sregex_iterator(dom->begin(), dom->end(), worker_row),
                          std::sregex_iterator()),
            2);
}

TEST(DashboardTest, ACoordinatorWithoutAJobShowsItsWorkersAndSaysSo) {
  REQUIRE_CHROMIUM();
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 1});
  ASSERT_OK(cluster);
  auto port = (*cluster)->RestPort();
  ASSERT_OK(port);
  ChromiumRun chromium;
  chromium.virtual_time_budget = Duration::Seconds(1);
  auto dom = RunHeadlessChromium("http://127.0.0.1:" + std::to_string(*port) +
                                     "/?poll_ms=100#token=" + (*cluster)->ViewerToken(),
                                 dir.path(), chromium);
  ASSERT_OK(dom);
  std::string body = StartTag(*dom, "body", "");
  EXPECT_EQ(Attr(body, "data-connection"), "ok") << body;  // a 404 for the job is no outage
  EXPECT_EQ(Attr(body, "data-csp-violations"), "0") << body;
  EXPECT_EQ(StartTag(*dom, "p", "no-job").find(" hidden"), std::string::npos);
  EXPECT_NE(dom->find("No job has been submitted."), std::string::npos);
  EXPECT_EQ(JobFact(*dom, "job"), "");
  EXPECT_TRUE(SubtaskRows(*dom).empty());
  EXPECT_NE(dom->find("<tr data-worker=\"1\">"), std::string::npos) << *dom;
  EXPECT_EQ(IntAttr(StartTag(*dom, "figure", "chart-records"), "data-points"), 0);
}

// A secure cluster's API answers 401 without a token: the page stops polling and asks for one,
// shows no data, and takes the token from the URL's fragment (what a script or a bookmark gives;
// a person pastes it into the prompt).
TEST(DashboardTest, OnASecureClusterThePageAsksForATokenAndShowsNothingWithoutOne) {
  REQUIRE_CHROMIUM();
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 1});
  ASSERT_OK(cluster);
  auto port = (*cluster)->RestPort();
  ASSERT_OK(port);
  const std::string page = "http://127.0.0.1:" + std::to_string(*port) + "/?poll_ms=100";
  ChromiumRun chromium;
  chromium.virtual_time_budget = Duration::Seconds(1);

  auto none = RunHeadlessChromium(page, dir.path(), chromium);
  ASSERT_OK(none);
  std::string body = StartTag(*none, "body", "");
  EXPECT_EQ(Attr(body, "data-connection"), "token-needed") << body;
  EXPECT_EQ(Attr(body, "data-polls"), "0") << body;
  EXPECT_EQ(Attr(body, "data-csp-violations"), "0") << body;
  const std::string prompt = StartTag(*none, "div", "token-prompt");
  EXPECT_NE(prompt, "");
  EXPECT_EQ(prompt.find(" hidden"), std::string::npos) << prompt;
  EXPECT_NE(none->find("Its REST API answers only requests with a token."), std::string::npos);
  EXPECT_NE(none->find(">waiting for a token</span>"), std::string::npos);
  EXPECT_NE(none->find("RUN_DIR/keys/viewers/viewer.token"), std::string::npos);
  EXPECT_EQ(none->find("<tr data-worker="), std::string::npos) << "no data without a token";

  auto wrong = RunHeadlessChromium(page + "#token=" + std::string(64, 'a'), dir.path(), chromium);
  ASSERT_OK(wrong);
  EXPECT_EQ(Attr(StartTag(*wrong, "body", ""), "data-connection"), "token-needed");
  EXPECT_NE(wrong->find("The coordinator refused the token this tab had: the coordinator does "
                        "not know this token"),
            std::string::npos);
  EXPECT_EQ(wrong->find("<tr data-worker="), std::string::npos);

  auto viewer =
      RunHeadlessChromium(page + "#token=" + (*cluster)->ViewerToken(), dir.path(), chromium);
  ASSERT_OK(viewer);
  body = StartTag(*viewer, "body", "");
  EXPECT_EQ(Attr(body, "data-connection"), "ok") << body;
  EXPECT_GT(IntAttr(body, "data-polls"), 0) << body;
  EXPECT_NE(StartTag(*viewer, "div", "token-prompt").find(" hidden"), std::string::npos);
  EXPECT_EQ(StartTag(*viewer, "button", "forget-token").find(" hidden"), std::string::npos)
      << "a stored token can be forgotten";
  EXPECT_NE(viewer->find("<tr data-worker=\"1\">"), std::string::npos);

  // Each token-less page load cost the coordinator one round of refused reads (4 requests):
  // 2 loads (none, wrong), not a poll every 100 ms.
  Status counted = WaitUntil(
      [&] {
        httplib::Client http("127.0.0.1", *port);
        auto o = http.Get("/api/v1/overview",
                          {{"Authorization", "Bearer " + (*cluster)->ViewerToken()}});
        return o && o->status == 200 && json::parse(o->body)["rest"]["failed_auth"] == 8;
      },
      Duration::Seconds(10), "8 failed REST authentications");
  EXPECT_OK(counted);
}

TEST(DashboardTest, ScreenshotScriptRefusesBadArgumentsWithASentence) {
  const std::string script = std::string(KEYFLOW_SOURCE_DIR) + "/scripts/dashboard-screenshot.sh";
  struct Case {
    std::vector<std::string> args;
    std::string sentence;
  };
  const Case cases[] = {
      {{"--seconds", "0"}, "--seconds must be a whole number >= 1, got '0'"},
      {{"--poll-ms", "fast"}, "--poll-ms must be a whole number >= 1, got 'fast'"},
      {{"--samples", "-1"}, "--samples must be a whole number, got '-1'"},
      {{"--workers", "0"}, "--workers must be >= 1, got '0'"},
      {{"--out"}, "--out needs a value (try --help)"},
      {{"--bogus"}, "unknown argument '--bogus' (try --help)"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {script};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = RunCommand(argv, Duration::Seconds(20));
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 1) << c.args[0];
    EXPECT_EQ(r->err, "dashboard-screenshot: " + c.sentence + "\n") << c.args[0];
  }
  auto help = RunCommand({script, "--help"}, Duration::Seconds(20));
  ASSERT_OK(help);
  EXPECT_EQ(help->exit_code, 0);
  EXPECT_NE(help->out.find("--samples N"), std::string::npos) << help->out;
}

TEST(DashboardTest, HistoryStaysAtTheCapAfterMorePollsThanTheCap) {
  REQUIRE_CHROMIUM();
  TestDir dir;
  FixtureServer server;
  ChromiumRun run;
  // ~20 polls at 50 ms of virtual time: each is drawn (a new snapshot every time), and drawing
  // takes real time on a loaded machine, so not more.
  run.virtual_time_budget = Duration::Seconds(1);
  auto dom = RunHeadlessChromium(server.Url("?poll_ms=50&max_points=5"), dir.path(), run);
  ASSERT_OK(dom);
  std::string body = StartTag(*dom, "body", "");
  EXPECT_EQ(Attr(body, "data-connection"), "ok") << body;
  EXPECT_EQ(Attr(body, "data-csp-violations"), "0") << body;
  int polls = IntAttr(body, "data-polls");
  EXPECT_GT(polls, 2 * 5) << body;  // well past the cap
  EXPECT_GE(server.polls(), polls);
  for (const char* chart : kCharts) {
    std::string tag = StartTag(*dom, "figure", chart);
    EXPECT_EQ(IntAttr(tag, "data-points"), 5) << tag;  // the cap, not the number of polls
    EXPECT_EQ(tag.find(" hidden"), std::string::npos) << tag;
  }
  // Each fixture poll adds 1000 records per subtask in 1 s of snapshot time.
  EXPECT_EQ(Attr(StartTag(*dom, "figure", "chart-records"), "data-series"), "2");
  EXPECT_EQ(Attr(StartTag(*dom, "figure", "chart-records"), "data-last"), "2000");
  EXPECT_EQ(Attr(StartTag(*dom, "figure", "chart-watermark-lag"), "data-last"), "3");
  EXPECT_EQ(Attr(StartTag(*dom, "figure", "chart-backpressure"), "data-last"), "0.5");
  EXPECT_EQ(Attr(StartTag(*dom, "figure", "chart-latency"), "data-last"), "6");
  EXPECT_EQ(JobFact(*dom, "job"), "fixture-job");
  EXPECT_EQ(JobFact(*dom, "restarts"), "2");
  EXPECT_EQ(JobFact(*dom, "last_command"), "rescale 3: in progress");
  EXPECT_EQ(JobFact(*dom, "source"),
            "Kafka topic clicks: 3 partitions, consumer lag 1,200 records (4.2 s)");
  EXPECT_EQ(Attr(StartTag(*dom, "figure", "chart-consumer-lag"), "data-last"), "1200");
  EXPECT_NE(dom->find("Rescaling to parallelism 3: savepoint (step 2 of 3), 1.5 s so far"),
            std::string::npos);
  EXPECT_NE(dom->find("<div id=\"rescale-bar\" class=\"phase-1\">"), std::string::npos);
  EXPECT_EQ(SubtaskRows(*dom), (std::map<int, std::string>{{0, "0-63"}, {1, "64-127"}}));
  // Each poll fetched only the checkpoints newer than the ones it had: about one per poll, not
  // the whole history each time.
  EXPECT_GT(server.last_since_id(), polls - 5);
  EXPECT_LE(server.checkpoints_served(), server.polls() + 1);
}

TEST(DashboardTest, TheSubtaskTableFitsA1280PixelWindow) {
  REQUIRE_CHROMIUM();
  TestDir dir;
  FixtureServer server(/*stop_after_polls=*/0, /*wide=*/true);
  ChromiumRun run;
  run.width = 1280;
  run.height = 800;
  run.virtual_time_budget = Duration::Millis(500);
  auto dom = RunHeadlessChromium(server.Url("?poll_ms=100"), dir.path(), run);
  ASSERT_OK(dom);
  std::string body = StartTag(*dom, "body", "");
  ASSERT_EQ(Attr(body, "data-connection"), "ok") << body;
  ASSERT_EQ(SubtaskRows(*dom).size(), 2u) << body;
  // The wide values are shown: 10-digit counts compact, the exact number on hover.
  EXPECT_NE(dom->find("<td class=\"num\" title=\"9,876,5"), std::string::npos) << body;
  EXPECT_NE(dom->find(">9.88 G</td>"), std::string::npos) << body;
  // No section scrolls sideways (its content is not wider than it), nor does the page:
  // document.documentElement.scrollWidth <= innerWidth.
  EXPECT_EQ(Attr(body, "data-wide-sections"), "") << body;
  std::string page = Attr(body, "data-page-width");
  ASSERT_NE(page.find('/'), std::string::npos) << body;
  EXPECT_LE(std::stoi(page.substr(0, page.find('/'))), std::stoi(page.substr(page.find('/') + 1)))
      << body;
}

TEST(DashboardTest, ShowsCoordinatorUnreachableAndKeepsTheLastDataWhenTheServerGoes) {
  REQUIRE_CHROMIUM();
  TestDir dir;
  FixtureServer server(/*stop_after_polls=*/5);
  ChromiumRun run;
  run.virtual_time_budget = Duration::Seconds(3);
  auto dom = RunHeadlessChromium(server.Url("?poll_ms=100"), dir.path(), run);
  ASSERT_OK(dom);
  std::string body = StartTag(*dom, "body", "");
  EXPECT_EQ(Attr(body, "data-connection"), "unreachable") << body;
  EXPECT_GE(IntAttr(body, "data-polls"), 4) << body;
  std::string banner = StartTag(*dom, "div", "banner");
  EXPECT_EQ(banner.find("hidden"), std::string::npos) << banner;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(*dom, m,
                                std::regex("Coordinator unreachable since \\d\\d:\\d\\d:\\d\\d "
                                           "\\([^)]+\\); retrying every 100 ms\\.")))
      << *dom;
  // What was shown before stays (greyed out by the stylesheet).
  EXPECT_EQ(JobFact(*dom, "job"), "fixture-job");
  EXPECT_EQ(SubtaskRows(*dom).size(), 2u);
  EXPECT_GT(IntAttr(StartTag(*dom, "figure", "chart-records"), "data-points"), 0);
}

}  // namespace
}  // namespace keyflow::test
