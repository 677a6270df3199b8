// What the status JSON carries for /metrics and the dashboard (issue 12): each worker's process
// usage with its CPU percentage between heartbeats, each subtask's latency, state backend and
// worker id, and checkpoint totals that survive a restart — driven message by message.
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

class ObservabilityStatusTest : public CoordinatorHarness {
 protected:
  void HeartbeatWithUsage(const std::string& identity, int64_t rss, int64_t user_ms,
                          int64_t system_ms, int64_t fds) {
    WorkerHeartbeat hb{ids_[identity], AttemptNumber(0), SubtaskMetrics{}, {}};
    hb.usage = ProcessUsage{rss, user_ms, system_ms, fds};
    Deliver(identity, hb);
  }
};

TEST_F(ObservabilityStatusTest, WorkerUsageAndCpuPercentBetweenHeartbeats) {
  Register("w0", 0);
  EXPECT_EQ(coord_->StatusJson(now_)["workers"][0]["usage"]["rss_bytes"], 0);  // none yet
  HeartbeatWithUsage("w0", 100 << 20, 1000, 500, 42);
  now_ += 1000;
  HeartbeatWithUsage("w0", 101 << 20, 1300, 600, 43);  // 400 ms of CPU in 1000 ms
  nlohmann::json u = coord_->StatusJson(now_)["workers"][0]["usage"];
  EXPECT_EQ(u["rss_bytes"], 101 << 20);
  EXPECT_EQ(u["cpu_user_seconds"], 1.3);
  EXPECT_EQ(u["cpu_system_seconds"], 0.6);
  EXPECT_EQ(u["cpu_seconds"], 1.9);
  EXPECT_EQ(u["cpu_percent"], 40.0);
  EXPECT_EQ(u["open_fds"], 43);
}

TEST_F(ObservabilityStatusTest, SubtaskShowsItsWorkerLatencyAndStateBackend) {
  WorkerId w0 = Register("w0", 0);
  Submit(Spec(1, 0));
  DeployAll({"w0"});
  SubtaskMetrics m;
  m.latency.bucket_counts.assign(kLatencyBuckets, 0);
  m.latency.bucket_counts[2] = 3;  // <= 250 us
  m.latency.bucket_counts[5] = 1;  // <= 2.5 ms
  m.latency.count = 4;
  m.latency.sum_us = 2900;
  m.latency.p50_us = 200;
  m.latency.p99_us = 2000;
  m.state_backend = "heap";
  m.state_bytes_memory = 4096;
  metrics_["w0"] = m;
  Advance(100);
  nlohmann::json s = JobStatus()["subtasks"][0];
  EXPECT_EQ(s["worker_id"], w0.value());
  EXPECT_EQ(s["state_backend"], "heap");
  EXPECT_EQ(s["state_bytes_memory"], 4096);
  EXPECT_EQ(s["state_bytes_disk"], 0);
  EXPECT_EQ(s["latency"]["count"], 4);
  EXPECT_EQ(s["latency"]["sum_us"], 2900);
  EXPECT_EQ(s["latency"]["bucket_counts"].size(), kLatencyBuckets);
  EXPECT_EQ(s["latency"]["bucket_counts"][2], 3);
  EXPECT_EQ(s["latency"]["p50_ms"], 0.2);
  EXPECT_EQ(s["latency"]["p99_ms"], 2.0);
  EXPECT_TRUE(s["latency"]["p999_ms"].is_null());  // -1: no sample in the window
  EXPECT_EQ(s["latency"]["mean_ms"], 0.725);       // 2900 us / 4
}

TEST_F(ObservabilityStatusTest, CheckpointTotalsCountCompletedAndFailedAcrossAttempts) {
  RunOnWorkers(Spec(2, 500));
  CompleteNextCheckpoint({"w0", "w1"});
  AdvanceToNextCheckpoint("w0");
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  Deliver("w0",
          DeclineCheckpoint{ids_["w0"], t->attempt, SubtaskIndex(0), t->checkpoint, "disk full"});
  nlohmann::json ck = JobStatus()["checkpoints"];
  EXPECT_EQ(ck["completed_total"], 1);
  EXPECT_EQ(ck["failed_total"], 1);
  Kill("w1");  // a restart: a new checkpoint coordinator continues the totals
  Advance(1200);
  Register("w1b", 1);
  Advance(100);
  ASSERT_EQ(coord_->job()->attempt().value(), 2);
  DeployAll({"w0", "w1b"});
  CompleteNextCheckpoint({"w0", "w1b"});
  ck = JobStatus()["checkpoints"];
  EXPECT_EQ(ck["completed_total"], 2);
  EXPECT_EQ(ck["failed_total"], 1);
}

}  // namespace
}  // namespace keyflow::test
