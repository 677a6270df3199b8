// The RocksDB working state of two clusters started from one directory (issue: two clusters
// deleted each other's SST files and a job FAILED): both run a RocksDB job with the same job id
// and the same --state-dir at the same time; each subtask gets its own directory under its
// cluster's incarnation, both jobs give exactly the output of a failure-free run, and nothing is
// left behind.
//
// Every wait polls `keyflow status --json` with a deadline; nothing sleeps to synchronise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kCount = 20, kTimeoutMs = 2'000;
// About 4 s of input: both jobs run at the same time for a while.
constexpr char kInput[] = "gen:events=16000,keys=500,splits=1,seed=5,skew=1,rate=4000";

uint32_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0xFFFF;
}

Result<std::unique_ptr<Cluster>> OneWorkerCluster(const std::string& dir) {
  ClusterOptions o;
  o.workers = 1;
  o.coordinator_args = {"--heartbeat-interval", "100ms", "--heartbeat-timeout", "5s"};
  return Cluster::Start(dir, o);
}

TEST(StateDirectoryTest, TwoClustersFromOneDirectoryKeepTheirRocksDbStateApart) {
  TestDir dir;
  auto a = OneWorkerCluster(dir.Subdir("cluster-a"));
  ASSERT_OK(a);
  auto b = OneWorkerCluster(dir.Subdir("cluster-b"));
  ASSERT_OK(b);
  const std::string state = dir.Subdir("state");  // the directory both clusters use
  auto args = [&](const std::string& output) {
    return CountWindowRunArgs(kInput, output, kCount, kTimeoutMs,
                              {"--parallelism", "1", "--checkpoint-interval", "300ms",
                               "--state-backend", "rocksdb", "--state-dir", state});
  };

  // Job ids are <name>-<UTC second>: submitted in the same second, both jobs get the same id.
  std::string id_a, id_b;
  for (int tries = 0; tries < 3 && (id_a.empty() || id_a != id_b); ++tries) {
    if (!id_a.empty()) {
      ASSERT_OK((*a)->Cli({"cancel"}));
      ASSERT_OK((*b)->Cli({"cancel"}));
    }
    // Start right after a second begins, so both submissions fall into it.
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auto into_second = std::chrono::duration_cast<std::chrono::milliseconds>(now) % 1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(1000) - into_second);
    auto ja = SubmitJob(**a, args(dir.path() + "/out-a-" + std::to_string(tries)));
    auto jb = SubmitJob(**b, args(dir.path() + "/out-b-" + std::to_string(tries)));
    ASSERT_OK(ja);
    ASSERT_OK(jb);
    id_a = *ja;
    id_b = *jb;
  }
  ASSERT_EQ(id_a, id_b) << "the two jobs need the same id for this test";

  // Both run on RocksDB at once, each in a directory of its own cluster.
  auto running = [](const nlohmann::json& s) {
    return s["job"].is_object() && s["job"].value("state", "") == "RUNNING" &&
           s["job"]["checkpoints"].value("latest_completed", 0) >= 1;
  };
  auto sa = (*a)->WaitForStatus(running, Duration::Seconds(30), "cluster a running");
  auto sb = (*b)->WaitForStatus(running, Duration::Seconds(30), "cluster b running");
  ASSERT_OK(sa);
  ASSERT_OK(sb);
  const std::string cluster_a = (*sa)["coordinator"].value("incarnation", "");
  const std::string cluster_b = (*sb)["coordinator"].value("incarnation", "");
  ASSERT_NE(cluster_a, cluster_b);
  std::vector<std::string> dirs = SubtaskStateDirectories(state);
  std::sort(dirs.begin(), dirs.end());
  std::vector<std::string> expected = {cluster_a + "/" + id_a + "/attempt-1/subtask-0",
                                       cluster_b + "/" + id_b + "/attempt-1/subtask-0"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(dirs, expected);
  for (const std::string& d : dirs) {
    EXPECT_EQ(ModeOf(state + "/" + d), 0700u) << d;
    EXPECT_EQ(ModeOf(state + "/" + d.substr(0, d.find('/'))), 0700u) << d;
  }

  for (Cluster* c : {a->get(), b->get()}) {
    auto end = c->WaitForStatus(
        [](const nlohmann::json& s) {
          const std::string st = s["job"].is_object() ? s["job"].value("state", "") : "";
          return st == "FINISHED" || st == "FAILED" || st == "CANCELED";
        },
        Duration::Seconds(90), "the end of the job");
    ASSERT_OK(end) << end.status().ToString() << c->LogExcerpts();
    EXPECT_EQ((*end)["job"].value("state", ""), "FINISHED") << (*end)["job"].dump();
    EXPECT_EQ((*end)["job"].value("restarts", -1), 0) << (*end)["job"].dump();
  }
  const std::vector<std::string> reference = ReferenceCountWindowRun(kInput, kCount, kTimeoutMs);
  for (const char* out : {"/out-a-", "/out-b-"}) {
    std::string last;
    for (int t = 0; t < 3; ++t) {
      if (fs::exists(dir.path() + out + std::to_string(t)))
        last = dir.path() + out + std::to_string(t);
    }
    ExpectCountWindowOutput(last, reference, std::string("cluster") + out);
  }
  EXPECT_TRUE(SubtaskStateDirectories(state).empty())
      << ::testing::PrintToString(SubtaskStateDirectories(state));
}

}  // namespace
}  // namespace keyflow::test
