// Job counters in status: kept after cancel (with per-subtask CANCELED states) and added up
// over the attempts of a job (including the records a restore replays).
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

class JobCountersTest : public CoordinatorHarness {
 protected:
  static SubtaskMetrics Metrics(int64_t in, int64_t processed, int64_t out, int64_t bad,
                                int64_t late) {
    SubtaskMetrics m;
    m.records_in = in;
    m.records_processed = processed;
    m.records_out = out;
    m.bad_records = bad;
    m.late_records = late;
    return m;
  }
  // The job's records_in, records_processed, records_out, bad_records and late_records.
  static nlohmann::json CountersOf(const nlohmann::json& job) {
    return nlohmann::json::array({job["records_in"], job["records_processed"], job["records_out"],
                                  job["bad_records"], job["late_records"]});
  }
  // A job of parallelism 2 running on workers w0 (subtask 0) and w1 (subtask 1).
  void DeployOnTwoWorkers() { RunOnWorkers(Spec(2, 500)); }
};

TEST_F(JobCountersTest, CanceledJobKeepsItsFinalCountersAndSubtaskStates) {
  DeployOnTwoWorkers();
  metrics_["w0"] = Metrics(100, 90, 5, 1, 2);
  metrics_["w1"] = Metrics(200, 180, 7, 0, 3);
  Advance(200);
  coord_->OnMessage("cli", CancelJob{}, now_);
  ASSERT_EQ(coord_->job()->state(), JobState::kCanceled);
  metrics_.clear();  // the workers dropped their subtasks: idle heartbeats with zeros
  Advance(500);
  nlohmann::json job = JobStatus();
  EXPECT_EQ(job["state"], "CANCELED");
  EXPECT_EQ(CountersOf(job), nlohmann::json::array({300, 270, 12, 1, 5}));
  ASSERT_EQ(job["subtasks"].size(), 2u);
  EXPECT_EQ(job["subtasks"][0]["state"], "CANCELED");
  EXPECT_EQ(job["subtasks"][1]["state"], "CANCELED");
  EXPECT_EQ(job["subtasks"][0]["records_in"], 100);
  EXPECT_EQ(job["subtasks"][1]["records_in"], 200);
  EXPECT_EQ(job["subtasks"][1]["records_in_per_s"], 0.0);
}

TEST_F(JobCountersTest, CountersAddUpEveryAttemptOfTheJob) {
  DeployOnTwoWorkers();
  metrics_["w0"] = Metrics(100, 100, 4, 1, 0);
  metrics_["w1"] = Metrics(50, 50, 2, 0, 1);
  Advance(200);
  Kill("w1");  // lost: its last heartbeat's counters still count
  Advance(1200);
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(JobStatus()["records_in"], 150);
  EXPECT_EQ(JobStatus()["subtasks"][1]["state"], "CANCELED");
  Register("w1b", 1);
  metrics_["w0"] = metrics_["w1b"] = SubtaskMetrics{};
  Advance(100);
  ASSERT_EQ(coord_->job()->attempt().value(), 2);
  DeployAll({"w0", "w1b"});
  metrics_["w0"] = Metrics(30, 20, 1, 0, 0);
  metrics_["w1b"] = Metrics(10, 10, 0, 2, 0);
  Advance(200);
  nlohmann::json job = JobStatus();
  EXPECT_EQ(CountersOf(job), nlohmann::json::array({190, 180, 7, 3, 1}));
  EXPECT_EQ(job["current_attempt"]["records_in"], 40);
  EXPECT_EQ(job["current_attempt"]["records_processed"], 30);
  EXPECT_EQ(job["subtasks"][0]["state"], "RESTORING");
}

// Between two heartbeats subtask 0 processes 30 more records and fails; its failure carries its
// counters. Subtask 1 is cancelled and sends its last counters (20 more records) when it
// drops the subtask; then its idle heartbeats (zeros) do not count.
TEST_F(JobCountersTest, AFailedAttemptCountsWhatItsSubtasksDidUpToTheFailure) {
  DeployOnTwoWorkers();
  metrics_["w0"] = Metrics(100, 100, 4, 1, 0);
  metrics_["w1"] = Metrics(50, 50, 2, 0, 1);
  Advance(200);
  const AttemptNumber attempt = coord_->job()->attempt();
  TaskFailed failed{ids_["w0"], attempt, SubtaskIndex(0), "boom"};
  failed.metrics = Metrics(130, 130, 4, 1, 0);
  Deliver("w0", failed);
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);
  Deliver("w1", WorkerHeartbeat{ids_["w1"], attempt, Metrics(70, 70, 3, 0, 1)});
  Deliver("w1", WorkerHeartbeat{ids_["w1"], attempt, SubtaskMetrics{}});
  nlohmann::json job = JobStatus();
  EXPECT_EQ(CountersOf(job), nlohmann::json::array({200, 200, 7, 1, 1}));
  EXPECT_EQ(job["subtasks"][0]["state"], "CANCELED");
  EXPECT_EQ(job["subtasks"][1]["records_in"], 70);
}

}  // namespace
}  // namespace keyflow::test
