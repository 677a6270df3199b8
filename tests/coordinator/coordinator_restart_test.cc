// A coordinator restart while a CLI command is in progress: the job record keeps the command,
// the restarted coordinator (a new incarnation) reports it aborted — or completed, for a
// rescale already deployed — and deletes the savepoint directory it left without _metadata.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/coordinator/coordinator_harness.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

class CoordinatorRestartTest : public CoordinatorHarness {
 protected:
  CoordinatorRestartTest() { Reset("first"); }

  void RunJob(int workers, int32_t parallelism) {
    for (int i = 0; i < workers; ++i) Register("w" + std::to_string(i), i);
    Submit(Spec(parallelism, 60'000));
    std::vector<std::string> ids;
    for (int i = 0; i < parallelism; ++i) ids.push_back("w" + std::to_string(i));
    DeployAll(ids);
  }

  // The coordinator process dies and a new one starts on the same checkpoint directory.
  nlohmann::json Restart() {
    Reset("second");
    EXPECT_OK(coord_->ResumeJobs(now_));
    EXPECT_NE(coord_->job(), nullptr);
    return coord_->job() != nullptr ? JobStatus() : nlohmann::json();
  }

  JobRecord Record() {
    auto records = CheckpointStorage(dir_.path()).ListJobRecords();
    EXPECT_TRUE(records.ok() && records->size() == 1u);
    return records.ok() && !records->empty() ? records->front() : JobRecord{};
  }
};

TEST_F(CoordinatorRestartTest, StatusNamesTheCoordinatorIncarnation) {
  EXPECT_EQ(coord_->StatusJson(now_)["coordinator"]["incarnation"], "first");
  CoordinatorOptions o;
  o.job.checkpoint_root = dir_.path();
  Coordinator a(o, &outbox_, &clock_), b(o, &outbox_, &clock_);
  EXPECT_NE(a.incarnation(), b.incarnation()) << "a new one per process start";
  EXPECT_EQ(a.incarnation().rfind("1764442799000-", 0), 0u) << a.incarnation();
}

TEST_F(CoordinatorRestartTest, RescaleInProgressIsReportedAbortedAfterARestart) {
  RunJob(2, 2);
  RescaleRequest req;
  req.new_parallelism = 3;
  req.wait_for_workers_ms = 60'000;  // only 2 workers: it waits
  coord_->OnMessage("cli2", req, now_);
  EXPECT_TRUE(outbox_.To<Reply>("cli2").empty());
  EXPECT_EQ(JobStatus()["commands_in_progress"], nlohmann::json::array({"rescale to 3"}));
  ASSERT_EQ(Record().pending_commands.size(), 1u);
  EXPECT_EQ(Record().pending_commands[0].retry, "keyflow rescale 3");

  nlohmann::json job = Restart();
  EXPECT_EQ(coord_->StatusJson(now_)["coordinator"]["incarnation"], "second");
  EXPECT_EQ(job["last_command"]["command"], "rescale to 3");
  EXPECT_EQ(job["last_command"]["outcome"],
            "aborted by a coordinator restart — the job runs at parallelism 2; run `keyflow "
            "rescale 3` again");
  EXPECT_FALSE(job.contains("commands_in_progress"));
  JobRecord r = Record();
  EXPECT_TRUE(r.pending_commands.empty()) << "reported once, not at every restart";
  EXPECT_EQ(r.last_command.what, "rescale to 3");
}

TEST_F(CoordinatorRestartTest, AbortedSavepointDirectoryIsDeletedAtResume) {
  RunJob(2, 2);
  coord_->OnMessage("cli2", CheckpointRequest{true, ""}, now_);
  auto trigger = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(trigger.has_value() && trigger->savepoint());
  AckAll({"w0"});  // w1 never acknowledges: the directory has a state file, no _metadata
  ASSERT_TRUE(std::filesystem::exists(trigger->directory + "/subtask-0.kgs"));
  ASSERT_FALSE(std::filesystem::exists(trigger->directory + "/_metadata"));

  nlohmann::json job = Restart();
  EXPECT_FALSE(std::filesystem::exists(trigger->directory));
  EXPECT_EQ(job["last_command"]["command"], "savepoint");
  EXPECT_EQ(job["last_command"]["outcome"],
            "aborted by a coordinator restart — the job runs at parallelism 2; run `keyflow "
            "savepoint` again");
}

TEST_F(CoordinatorRestartTest, CompletedSavepointSurvivesAndIsTheLastCommand) {
  RunJob(1, 1);
  coord_->OnMessage("cli2", CheckpointRequest{true, ""}, now_);
  auto trigger = outbox_.Last<TriggerCheckpoint>("w0");
  AckAll({"w0"});
  ASSERT_TRUE(outbox_.Last<Reply>("cli2")->ok) << outbox_.Last<Reply>("cli2")->message;
  EXPECT_EQ(JobStatus()["last_command"]["outcome"], "completed: " + trigger->directory);
  nlohmann::json job = Restart();
  EXPECT_TRUE(std::filesystem::exists(trigger->directory + "/_metadata"));
  EXPECT_EQ(job["last_command"]["outcome"], "completed: " + trigger->directory);
}

TEST_F(CoordinatorRestartTest, RescaleAlreadyDeployedIsReportedCompleted) {
  RunJob(3, 2);
  RescaleRequest req;
  req.new_parallelism = 3;
  coord_->OnMessage("cli2", req, now_);
  AckAll({"w0", "w1"});  // the rescale savepoint completes; attempt 2 deploys at 3
  ASSERT_EQ(coord_->job()->attempt().value(), 2);
  ASSERT_EQ(outbox_.Last<DeployTask>("w2")->spec.parallelism, 3);
  nlohmann::json job = Restart();
  EXPECT_EQ(job["parallelism"], 3);
  EXPECT_EQ(job["last_command"]["outcome"],
            "completed before the coordinator restarted — the job runs at parallelism 3");
}

TEST_F(CoordinatorRestartTest, RefusedCommandIsNotRecorded) {
  RunJob(2, 2);
  RescaleRequest req;
  req.new_parallelism = 99;  // above the max parallelism 8: refused at once
  coord_->OnMessage("cli2", req, now_);
  ASSERT_FALSE(outbox_.Last<Reply>("cli2")->ok);
  EXPECT_FALSE(JobStatus().contains("last_command"));
  EXPECT_TRUE(Record().pending_commands.empty());
}

}  // namespace
}  // namespace keyflow::test
