// Incremental checkpoints end to end (issue 11, requirements 4, 5, 7): count-window with the
// default `--incremental true` on a real cluster. The heap backend writes key-group-incremental
// checkpoints into the job's shared directory, RocksDB native ones (SST files there); a worker
// SIGKILLed mid-run and a rescale 2 -> 1 afterwards restore from them, and the committed output
// equals the reference of a failure-free run. With few keys changing, later checkpoints write
// fewer bytes than the first (the workers' "snapshot written" log lines). `--incremental false`
// writes full checkpoints; a bad value is refused with a sentence.
//
// Every wait polls `keyflow status --json` with a deadline; nothing sleeps to synchronise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/count_window_fixture.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class IncrementalCheckpointTest : public CountWindowClusterTest {
 protected:
  // What the workers logged for each snapshot: (subtask, checkpoint) -> (incremental,
  // written_bytes), from their "snapshot written" lines.
  struct Written {
    bool incremental = false;
    uint64_t bytes = 0;
  };
  std::map<std::pair<int, int64_t>, Written> SnapshotsWritten() {
    std::map<std::pair<int, int64_t>, Written> out;
    const std::regex line(
        "snapshot written subtask=([0-9]+) checkpoint=([0-9]+) incremental=(true|false) "
        "written_bytes=([0-9]+)");
    for (int slot = 0; slot < 2; ++slot) {
      std::ifstream in(cluster_->WorkerLog(slot));
      std::string l;
      std::smatch m;
      while (std::getline(in, l)) {
        if (std::regex_search(l, m, line)) {
          out[{std::stoi(m[1]), std::stoll(m[2])}] = Written{m[3] == "true", std::stoull(m[4])};
        }
      }
    }
    return out;
  }

  // Runs count-window at parallelism 2 with incremental checkpoints (plus `extra`), SIGKILLs
  // worker 1 after 3 completed checkpoints, rescales the restarted attempt to 1 once it
  // completed a checkpoint of its own, and compares the output with the reference.
  // `sst`: the backend is RocksDB, whose keyed state is in native SST files.
  void KillAndRescale(std::vector<std::string> extra, bool sst, const std::string& what) {
    const std::vector<std::string> reference = Reference(kSixSecondsOfInput);
    const std::string output = dir_.path() + "/output";
    auto job_id =
        SubmitJob(*cluster_, CountWindowArgs(kSixSecondsOfInput, output, std::move(extra)));
    ASSERT_OK(job_id);

    WaitForJob(
        [](const nlohmann::json& j) {
          return j.value("state", "") == "RUNNING" &&
                 j["checkpoints"].value("latest_completed", 0) >= 3;
        },
        "3 completed checkpoints");
    // The checkpoints were incremental: their files are in the shared directory.
    std::vector<std::string> shared;
    for (const auto& e : fs::directory_iterator(SharedDir(*job_id))) {
      shared.push_back(e.path().filename().string());
    }
    EXPECT_FALSE(shared.empty());
    int sst_files = 0;
    for (const std::string& name : shared) {
      if (name.ends_with(".sst")) {
        ++sst_files;
        continue;
      }
      EXPECT_THAT(name, ::testing::MatchesRegex("[0-9a-f]{32}-[0-9]+-[01]\\.kgs")) << name;
    }
    EXPECT_EQ(sst_files > 0, sst) << ::testing::PrintToString(shared);

    nlohmann::json job;
    ASSERT_NO_FATAL_FAILURE(KillAndRestartWorker(1, &job));
    const int attempt = job.value("attempt", 0);
    // Let the restored attempt complete an incremental checkpoint of its own before rescaling.
    const int restored_from = job.value("restored_from", 0);
    WaitForJob(
        [&](const nlohmann::json& j) {
          return j["checkpoints"].value("latest_completed", 0) > restored_from + 1;
        },
        "a checkpoint of the restarted attempt");

    RescaleToOneUntilTheEnd(attempt);
    ExpectCountWindowOutput(output, reference, what);
  }

  std::string SharedDir(const std::string& job_id) const {
    return cluster_->CheckpointDir() + "/" + job_id + "/shared";
  }
};

TEST_F(IncrementalCheckpointTest, HeapKilledWorkerAndRescaleGiveTheOutputOfAFailureFreeRun) {
  KillAndRescale({"--parallelism", "2", "--checkpoint-interval", "300ms"},
                 /*sst=*/false, "heap incremental: killed worker + rescale 2 -> 1");
}

TEST_F(IncrementalCheckpointTest, RocksDbKilledWorkerAndRescaleGiveTheOutputOfAFailureFreeRun) {
  KillAndRescale({"--parallelism", "2", "--checkpoint-interval", "300ms", "--state-backend",
                  "rocksdb", "--state-dir", dir_.Subdir("state")},
                 /*sst=*/true, "rocksdb incremental: killed worker + rescale 2 -> 1");
}

TEST_F(IncrementalCheckpointTest, WithFewKeysChangingLaterCheckpointsWriteLessThanTheFirst) {
  // Two keys in one split, slow: each checkpoint after the first changes at most two key
  // groups of the subtask's 128.
  const std::string input = "gen:events=4000,keys=2,splits=1,seed=5,rate=1000";
  MustRun(CountWindowArgs(input, dir_.path() + "/output",
                          {"--parallelism", "1", "--checkpoint-interval", "200ms"}));
  WaitForJob(
      [](const nlohmann::json& j) { return j["checkpoints"].value("latest_completed", 0) >= 4; },
      "4 completed checkpoints");
  auto written = SnapshotsWritten();
  ASSERT_GE(written.size(), 4u) << cluster_->LogExcerpts();
  auto first = written.begin();
  EXPECT_TRUE(first->second.incremental);
  for (auto it = std::next(first); it != written.end(); ++it) {
    EXPECT_TRUE(it->second.incremental) << "checkpoint " << it->first.second;
    EXPECT_LT(it->second.bytes, first->second.bytes)
        << "checkpoint " << it->first.second << " wrote as much as the first";
  }
}

TEST_F(IncrementalCheckpointTest, IncrementalFalseWritesFullCheckpointsAndBadValuesAreRefused) {
  auto r = cluster_->Cli(
      CountWindowArgs(kSixSecondsOfInput, dir_.path() + "/o", {"--incremental", "maybe"}));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--incremental must be true or false, not 'maybe'"));

  const std::string input = "gen:events=2000,keys=2,splits=1,seed=5,rate=1000";
  MustRun(CountWindowArgs(
      input, dir_.path() + "/output",
      {"--parallelism", "1", "--checkpoint-interval", "200ms", "--incremental", "false"}));
  WaitForJob(
      [](const nlohmann::json& j) { return j["checkpoints"].value("latest_completed", 0) >= 2; },
      "2 completed checkpoints");
  auto written = SnapshotsWritten();
  ASSERT_GE(written.size(), 2u) << cluster_->LogExcerpts();
  for (const auto& [key, w] : written) {
    EXPECT_FALSE(w.incremental) << "checkpoint " << key.second;
  }
}

}  // namespace
}  // namespace keyflow::test
