// What the REST snapshot costs the control loop: Coordinator::StatusJson plus the checkpoint
// history, built 4 times a second (ControlServer::kPublishIntervalMs), for a job of 128
// subtasks with 11 checkpoints in its history (10 of them with each subtask's numbers). Prints the
// time per build; the bound is loose (a quarter of the publish interval) so that only a gross
// regression fails it on a loaded machine.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "coordinator/control_server.h"
#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

class StatusCostTest : public CoordinatorHarness {};

TEST_F(StatusCostTest, SnapshotOfA128SubtaskJobWithFullHistory) {
  constexpr int kP = 128;
  std::vector<std::string> ids;
  for (int i = 0; i < kP; ++i) {
    ids.push_back("w" + std::to_string(i));
    Register(ids.back(), i);
  }
  JobSpec spec = Spec(kP, 1000);
  spec.max_parallelism = kP;
  ASSERT_NO_FATAL_FAILURE(Submit(spec));
  ASSERT_NO_FATAL_FAILURE(DeployAll(ids));
  for (int c = 0; c < 11; ++c) {
    ASSERT_NO_FATAL_FAILURE(AdvanceToNextCheckpoint(ids[0]));
    ASSERT_NO_FATAL_FAILURE(AckAll(ids));
  }
  const int64_t now = clock_.MonotonicMillis();
  size_t bytes = 0;
  constexpr int kRuns = 20;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) {
    nlohmann::json status = coord_->StatusJson(now);
    status["job"]["checkpoints"]["history"] = coord_->job()->CheckpointHistoryJson();
    bytes = status.dump().size();
    ASSERT_EQ(status["job"]["subtasks"].size(), static_cast<size_t>(kP));
    ASSERT_EQ(status["job"]["checkpoints"]["history"].size(), 11u);
    ASSERT_EQ(status["job"]["checkpoints"]["history"][0]["subtasks"].size(),
              static_cast<size_t>(kP));
    ASSERT_FALSE(status["job"]["checkpoints"]["history"][10].contains("subtasks"));
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kRuns;
  std::cout << "status snapshot of " << kP << " subtasks and 11 checkpoints: " << ms
            << " ms per build (incl. dump), " << bytes << " bytes\n";
  RecordProperty("build_ms", std::to_string(ms));
  EXPECT_LT(ms, ControlServer::kPublishIntervalMs / 4.0);
}

}  // namespace
}  // namespace keyflow::test
