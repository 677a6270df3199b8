// The RocksDB state backend end to end (issue 11): count-window with `--state-backend rocksdb`
// on a real cluster, a worker SIGKILLed mid-run and the job rescaled 2 -> 1 afterwards (from the
// rescale's native checkpoint); the committed output must equal the reference computed from the
// generator's events — which is what a failure-free heap run produces (recovery_test.cc checks
// the heap against the same reference). Also: status shows the backend and state bytes per subtask,
// the subtask directories are deleted when the subtasks end, a savepoint of a RocksDB job restores
// into the heap backend, and bad flags are refused with a sentence.
//
// Every wait polls `keyflow status --json` with a deadline; nothing sleeps to synchronise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

class RocksDbBackendTest : public CountWindowClusterTest {
 protected:
  static std::vector<std::string> RunArgs(const std::string& output,
                                          std::vector<std::string> extra) {
    return CountWindowArgs(kSixSecondsOfInput, output, std::move(extra));
  }
};

TEST_F(RocksDbBackendTest, KilledWorkerAndRescaleGiveTheOutputOfAFailureFreeRun) {
  const std::vector<std::string> reference = Reference(kSixSecondsOfInput);
  const std::string output = dir_.path() + "/output";
  const std::string state_dir = dir_.Subdir("state");
  auto job_id = SubmitJob(
      *cluster_, RunArgs(output, {"--parallelism", "2", "--checkpoint-interval", "300ms",
                                  "--state-backend", "rocksdb", "--state-dir", state_dir}));
  ASSERT_OK(job_id);

  // Running on RocksDB, with state, and checkpoints completing.
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) {
        if (j.value("state", "") != "RUNNING" ||
            j["checkpoints"].value("latest_completed", 0) < 2) {
          return false;
        }
        for (const auto& s : j["subtasks"]) {
          if (s.value("state_backend", "") != "rocksdb" || s.value("state_keys", 0) == 0 ||
              s.value("state_bytes_memory", 0) == 0) {
            return false;
          }
        }
        return true;
      },
      "2 checkpoints, every subtask with RocksDB state");
  EXPECT_EQ(job.value("state_backend", ""), "rocksdb");
  EXPECT_EQ(SubtaskStateDirectories(state_dir).size(), 2u);

  ASSERT_NO_FATAL_FAILURE(KillAndRestartWorker(1, &job));
  job = RescaleToOneUntilTheEnd(job.value("attempt", 0));
  EXPECT_EQ(job.value("late_records", -1), 0);
  // The rescale restored from its own checkpoint's native snapshots, both old subtasks' (one
  // reopened and clipped, the other's rows ingested), not from a canonical savepoint.
  const int64_t restored_from = job.value("restored_from", int64_t{0});
  EXPECT_GT(restored_from, 0);
  EXPECT_THAT(ReadFileOrEmpty(cluster_->WorkerLog(0)),
              ::testing::ContainsRegex(
                  "state restored subtask=0 checkpoint=" + std::to_string(restored_from) +
                  " files=2 shared_files=[0-9]+ native=2 "))
      << cluster_->LogExcerpts();

  ExpectCountWindowOutput(output, reference,
                          "RocksDB: killed worker + rescale 2 -> 1 vs reference");

  // Every subtask that ended deleted its directory, and the SIGKILLed worker's was removed by
  // the next deployment on that disk (its lock died with it).
  std::vector<std::string> left = SubtaskStateDirectories(state_dir);
  EXPECT_TRUE(left.empty()) << ::testing::PrintToString(left);
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  const std::string cluster_id = (*st)["coordinator"].value("incarnation", "");
  ASSERT_FALSE(cluster_id.empty());
  EXPECT_THAT(ReadFileOrEmpty(cluster_->WorkerLog(0)) + ReadFileOrEmpty(cluster_->WorkerLog(1)),
              HasSubstr("removed the RocksDB working state of a dead attempt: " + state_dir + "/" +
                        cluster_id + "/" + *job_id + "/attempt-1/subtask-1"));
}

TEST_F(RocksDbBackendTest, ASavepointOfARocksDbJobRestoresIntoTheHeapBackend) {
  const std::vector<std::string> reference = Reference(kSixSecondsOfInput);
  const std::string output = dir_.path() + "/output";
  MustRun(RunArgs(output, {"--parallelism", "2", "--state-backend", "rocksdb", "--state-dir",
                           dir_.Subdir("state")}));
  WaitForJob([](const nlohmann::json& j) { return j.value("records_processed", 0) > 6000; },
             "6000 records processed");
  const std::string savepoint = StopWithSavepoint();
  ASSERT_FALSE(savepoint.empty());

  MustRun(RunArgs(
      output, {"--parallelism", "1", "--state-backend", "heap", "--from-savepoint", savepoint}));
  nlohmann::json job = WaitForJob(
      [&](const nlohmann::json& j) {
        return j.value("state", "") == "FINISHED" && j.value("restored_from", 0) > 0;
      },
      "the heap job restored from the RocksDB savepoint to end");
  EXPECT_EQ(job.value("state_backend", ""), "heap");
  ExpectCountWindowOutput(output, reference,
                          "RocksDB savepoint restored into the heap vs reference");
}

TEST_F(RocksDbBackendTest, BadStateBackendFlagsAreRefusedWithASentence) {
  auto r = cluster_->Cli(RunArgs(dir_.path() + "/o", {"--state-backend", "leveldb"}));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--state-backend must be heap or rocksdb, not 'leveldb'"));
  r = cluster_->Cli(RunArgs(dir_.path() + "/o", {"--state-dir", "/tmp/x"}));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--state-dir is the working directory of --state-backend rocksdb"));
}

TEST_F(RocksDbBackendTest, AStateDirThatCannotBeCreatedFailsTheJobWithTheSentence) {
  const std::string file = dir_.path() + "/not-a-dir";
  { std::ofstream(file) << "x"; }
  MustRun(RunArgs(dir_.path() + "/o", {"--parallelism", "1", "--state-backend", "rocksdb",
                                       "--state-dir", file, "--restart-strategy", "none"}));
  nlohmann::json job = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "FAILED"; }, "the failure");
  EXPECT_THAT(job.dump(), HasSubstr("cannot use the RocksDB state directory " + file));
  EXPECT_THAT(job.dump(), HasSubstr("pass --state-dir a directory on a local disk that the "
                                    "worker can write"));
}

}  // namespace
}  // namespace keyflow::test
