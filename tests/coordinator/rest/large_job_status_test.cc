// The REST snapshot of a large job: Coordinator::StatusJson plus the checkpoint history, as the
// control server publishes it every ControlServer::kPublishIntervalMs, for a job of 128
// subtasks with 11 checkpoints in its history. The status keeps each subtask's numbers for the
// 10 newest checkpoints only, which bounds the snapshot's size. What a build costs is measured
// by tests/bench/status_bench.cc (scripts/bench.sh), not here: a timed test fails on a loaded
// machine.
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

class LargeJobStatusTest : public CoordinatorHarness {};

TEST_F(LargeJobStatusTest, KeepsEachSubtasksNumbersForTheTenNewestCheckpointsOnly) {
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
  nlohmann::json status = coord_->StatusJson(now);
  status["job"]["checkpoints"]["history"] = coord_->job()->CheckpointHistoryJson();
  ASSERT_EQ(status["job"]["subtasks"].size(), static_cast<size_t>(kP));
  const nlohmann::json& history = status["job"]["checkpoints"]["history"];
  ASSERT_EQ(history.size(), 11u);
  for (size_t c = 0; c < 10; ++c) {
    EXPECT_EQ(history[c]["subtasks"].size(), static_cast<size_t>(kP)) << "checkpoint " << c;
  }
  EXPECT_FALSE(history[10].contains("subtasks"));
  // Two builds of the same state are the same bytes (nothing in it depends on the build).
  nlohmann::json again = coord_->StatusJson(now);
  again["job"]["checkpoints"]["history"] = coord_->job()->CheckpointHistoryJson();
  EXPECT_EQ(again.dump(), status.dump());
}

}  // namespace
}  // namespace keyflow::test
