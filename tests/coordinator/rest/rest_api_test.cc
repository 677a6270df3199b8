// The read-only JSON endpoints over a published status document (the shape of
// Coordinator::StatusJson), through the router.
#include "coordinator/rest/rest_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/protocol/control_messages.h"
#include "common/version.h"

namespace keyflow {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Status() {
  return json::parse(R"js({
    "coordinator": {"incarnation": "c-1", "malformed_control_messages": 0,
                    "security": {"mode": "curve", "refused_connections": 2,
                                 "refused_requests": 1}},
    "workers": [
      {"worker": 1, "slot": 0, "host": "h", "pid": 10, "data_host": "127.0.0.1",
       "refused_data_connections": 0, "last_heartbeat_ms_ago": 5},
      {"worker": 2, "slot": 1, "host": "h", "pid": 11, "data_host": "127.0.0.1",
       "refused_data_connections": 0, "last_heartbeat_ms_ago": 7}],
    "job": {"job_id": "j-1", "job": "count-window", "state": "RUNNING", "attempt": 2,
            "parallelism": 2, "max_parallelism": 128, "restarts": 1,
            "duration_ms": 1500,
            "rescale": {"target": 3, "phase": "SAVEPOINT", "elapsed_ms": 40},
            "last_command": {"command": "checkpoint", "outcome": "completed"},
            "subtasks": [
              {"subtask": 0, "worker": "worker 1 (slot 0)", "key_groups": [0, 64],
               "state": "RUNNING", "records_in": 5},
              {"subtask": 1, "worker": "worker 2 (slot 1)", "key_groups": [64, 128],
               "state": "RUNNING", "records_in": 6}],
            "checkpoints": {"interval_ms": 1000, "latest_completed": 3,
                            "recent": [{"id": 3, "state_bytes": 100}]}}
  })js");
}

class RestApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.Set(Timestamp(10'000));
    context_.snapshots = &snapshots_;
    context_.clock = &clock_;
    AddApiRoutes(router_, context_);
  }
  // GET `path` with `query`; the status and the parsed body.
  std::pair<int, json> Get(const std::string& path, std::map<std::string, std::string> query = {}) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.query = std::move(query);
    HttpResponse resp = router_.Handle(r);
    EXPECT_EQ(resp.headers["Cache-Control"], "no-store");
    return {resp.status, json::parse(resp.body)};
  }
  ManualClock clock_;
  StatusSnapshotPublisher snapshots_;
  RestContext context_;
  RestRouter router_;
};

TEST_F(RestApiTest, BeforeTheFirstSnapshotEveryEndpointIs503) {
  for (const char* path : {"/api/v1/health", "/api/v1/overview", "/api/v1/job"}) {
    auto [status, body] = Get(path);
    EXPECT_EQ(status, 503) << path;
    EXPECT_THAT(body["error"].get<std::string>(), HasSubstr("not published its status yet"));
  }
}

TEST_F(RestApiTest, HealthSaysHowOldTheSnapshotIs) {
  snapshots_.Publish(Status(), 9'750);
  auto [status, body] = Get("/api/v1/health");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body,
            (json{{"status", "ok"},
                  {"snapshot", {{"published_at_ms", 9'750}, {"age_ms", 250}, {"sequence", 1}}}}));
}

TEST_F(RestApiTest, Overview) {
  snapshots_.Publish(Status(), 10'000);
  auto [status, body] = Get("/api/v1/overview");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body["workers"], 2);
  EXPECT_EQ(body["slots"], json::array({0, 1}));
  EXPECT_EQ(body["coordinator"]["incarnation"], "c-1");
  EXPECT_EQ(body["coordinator"]["security"]["refused_connections"], 2);
  EXPECT_EQ(body["job"], (json{{"job_id", "j-1"},
                               {"name", "count-window"},
                               {"state", "RUNNING"},
                               {"attempt", 2},
                               {"parallelism", 2},
                               {"restarts", 1},
                               {"duration_ms", 1500}}));
  EXPECT_EQ(body["versions"], (json{{"keyflow", kKeyflowVersion},
                                    {"git_revision", kKeyflowGitRevision},
                                    {"control_protocol", kControlProtocolVersion},
                                    {"rest_api", "v1"}}));
}

TEST_F(RestApiTest, WorkersJobAndSubtasks) {
  snapshots_.Publish(Status(), 10'000);
  auto [ws, workers] = Get("/api/v1/workers");
  EXPECT_EQ(ws, 200);
  EXPECT_EQ(workers["workers"], Status()["workers"]);

  auto [js, job] = Get("/api/v1/job");
  EXPECT_EQ(js, 200);
  EXPECT_FALSE(job.contains("subtasks"));
  EXPECT_EQ(job["state"], "RUNNING");
  EXPECT_EQ(job["attempt"], 2);
  EXPECT_EQ(job["restarts"], 1);
  EXPECT_EQ(job["last_command"], (json{{"command", "checkpoint"}, {"outcome", "completed"}}));
  EXPECT_EQ(job["key_group_ranges"],
            json::parse(R"js([{"subtask": 0, "key_groups": [0, 64], "worker": "worker 1 (slot 0)"},
                            {"subtask": 1, "key_groups": [64, 128], "worker": "worker 2 (slot 1)"}])js"));

  auto [ss, subtasks] = Get("/api/v1/job/subtasks");
  EXPECT_EQ(ss, 200);
  EXPECT_EQ(subtasks["parallelism"], 2);
  EXPECT_EQ(subtasks["subtasks"], Status()["job"]["subtasks"]);
}

TEST_F(RestApiTest, CheckpointsAndRescale) {
  snapshots_.Publish(Status(), 10'000);
  auto [cs, ck] = Get("/api/v1/job/checkpoints");
  EXPECT_EQ(cs, 200);
  EXPECT_EQ(ck["job_id"], "j-1");
  EXPECT_EQ(ck["latest_completed"], 3);
  auto [rs, rescale] = Get("/api/v1/job/rescale");
  EXPECT_EQ(rs, 200);
  EXPECT_EQ(rescale["in_progress"], true);
  EXPECT_EQ(rescale["target"], 3);
  EXPECT_EQ(rescale["phase"], "SAVEPOINT");
  EXPECT_EQ(rescale["parallelism"], 2);
}

TEST_F(RestApiTest, NoJobIs404) {
  json s = Status();
  s["job"] = nullptr;
  snapshots_.Publish(s, 10'000);
  for (const char* path :
       {"/api/v1/job", "/api/v1/job/subtasks", "/api/v1/job/checkpoints", "/api/v1/job/rescale"}) {
    auto [status, body] = Get(path);
    EXPECT_EQ(status, 404) << path;
    EXPECT_EQ(body["error"],
              "no job has run on this coordinator yet: submit one with `keyflow run`");
  }
  auto [os, overview] = Get("/api/v1/overview");
  EXPECT_EQ(os, 200);
  EXPECT_TRUE(overview["job"].is_null());
}

// A status whose job `job_id` has the finished checkpoints `ids` (newest first) in its
// history, each with one subtask's numbers, as ControlServer::PublishStatus publishes it.
json WithHistory(const std::string& job_id, std::initializer_list<int> ids) {
  json s = Status();
  s["job"]["job_id"] = job_id;
  json history = json::array();
  for (int id : ids) {
    history.push_back({{"id", id},
                       {"state", "COMPLETED"},
                       {"duration_ms", id},
                       {"subtasks", json::array({{{"subtask", 0}, {"bytes", id}}})}});
  }
  s["job"]["checkpoints"]["history"] = history;
  return s;
}
// The ids of a checkpoints answer's history, in its order.
std::vector<int> Ids(const json& checkpoints) {
  std::vector<int> ids;
  for (const json& c : checkpoints["history"]) ids.push_back(c["id"].get<int>());
  return ids;
}

TEST_F(RestApiTest, CheckpointHistoryOutlivesAttemptsAndIsBounded) {
  snapshots_.Publish(WithHistory("j-1", {3, 2, 1}), 10'000);
  // A restart: the new attempt's coordinator history starts over (ids go on).
  snapshots_.Publish(WithHistory("j-1", {5, 4}), 10'250);
  snapshots_.Publish(WithHistory("j-1", {5, 4}), 10'500);  // nothing new
  auto [cs, ck] = Get("/api/v1/job/checkpoints");
  EXPECT_EQ(cs, 200);
  EXPECT_EQ(Ids(ck), (std::vector<int>{5, 4, 3, 2, 1}));
  EXPECT_EQ(ck["history_kept"], kCheckpointHistory);
  EXPECT_EQ(ck["latest_completed"], 3);  // the rest of the document is the snapshot's
  // 150 more, 50 at a time as the coordinator keeps them: the newest 100 stay, and only the
  // newest 10 keep each subtask's numbers.
  for (int first = 6; first < 156; first += 50) {
    json s = WithHistory("j-1", {});
    for (int id = first + 49; id >= first; --id) {
      s["job"]["checkpoints"]["history"].push_back(
          {{"id", id}, {"subtasks", json::array({{{"subtask", 0}}})}});
    }
    snapshots_.Publish(s, 11'000 + first);
  }
  auto [s2, all] = Get("/api/v1/job/checkpoints");
  ASSERT_EQ(all["history"].size(), kCheckpointHistory);
  EXPECT_EQ(all["history"].front()["id"], 155);
  EXPECT_EQ(all["history"].back()["id"], 56);
  for (size_t i = 0; i < all["history"].size(); ++i) {
    EXPECT_EQ(all["history"][i].contains("subtasks"), i < kCheckpointHistoryWithSubtasks) << i;
  }
  // Another job starts a new history.
  snapshots_.Publish(WithHistory("j-2", {1}), 20'000);
  EXPECT_EQ(Ids(Get("/api/v1/job/checkpoints").second), (std::vector<int>{1}));
}

TEST_F(RestApiTest, CheckpointHistoryTakesLimitAndSinceId) {
  snapshots_.Publish(WithHistory("j-1", {9, 8, 7, 6, 5, 4, 3, 2, 1}), 10'000);
  EXPECT_EQ(Ids(Get("/api/v1/job/checkpoints", {{"limit", "3"}}).second),
            (std::vector<int>{9, 8, 7}));
  EXPECT_EQ(Ids(Get("/api/v1/job/checkpoints", {{"since_id", "6"}}).second),
            (std::vector<int>{9, 8, 7}));
  EXPECT_EQ(Ids(Get("/api/v1/job/checkpoints", {{"since_id", "2"}, {"limit", "2"}}).second),
            (std::vector<int>{9, 8}));
  EXPECT_EQ(Ids(Get("/api/v1/job/checkpoints", {{"since_id", "9"}}).second), std::vector<int>{});
  EXPECT_EQ(Ids(Get("/api/v1/job/checkpoints", {{"since_id", "0"}}).second).size(), 9u);
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"limit", "0"},
                                                        {"limit", "x"},
                                                        {"limit", "3 "},
                                                        {"since_id", "-1"},
                                                        {"since_id", ""},
                                                        {"since", "3"}}) {
    EXPECT_EQ(Get("/api/v1/job/checkpoints", {{key, value}}).first, 400) << key << "=" << value;
  }
  EXPECT_EQ(Get("/api/v1/job/checkpoints", {{"limit", "0"}}).second["error"],
            "?limit= must be an integer >= 1, got \"0\": e.g. ?limit=20");
  EXPECT_EQ(Get("/api/v1/job/checkpoints", {{"since", "3"}}).second["error"],
            "unknown query parameter \"since\": /api/v1/job/checkpoints takes limit and "
            "since_id, e.g. ?since_id=41&limit=20");
}

TEST(StatusSnapshotPublisherTest, LatestIsTheLastPublication) {
  StatusSnapshotPublisher p;
  EXPECT_EQ(p.Latest(), nullptr);
  p.Publish(json{{"a", 1}}, 100);
  auto first = p.Latest();
  p.Publish(json{{"a", 2}}, 200);
  auto second = p.Latest();
  EXPECT_EQ(first->status["a"], 1);  // a reader keeps its snapshot
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_EQ(second->status["a"], 2);
  EXPECT_EQ(second->sequence, 2u);
  EXPECT_EQ(second->published_at_ms, 200);
}

}  // namespace
}  // namespace keyflow
