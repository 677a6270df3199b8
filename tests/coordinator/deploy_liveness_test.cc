// A worker deploying a task may be silent for longer than the heartbeat timeout (its control
// loop loads the job library and opens the sink before it answers): the deploy timeout bounds
// that silence instead, and only until the worker answers.
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

class DeployLivenessTest : public CoordinatorHarness {
 protected:
  void SetUp() override {
    Register("w0", 0);
    Register("w1", 1);
    Submit(Spec(2, 0));
    ASSERT_EQ(coord_->job()->state(), JobState::kDeploying);
  }
};

TEST_F(DeployLivenessTest, AWorkerSilentWhileDeployingIsNotLostWithinTheDeployTimeout) {
  AnswerDeployment("w0");
  Kill("w1");  // busy deploying: no heartbeat for 3 s (the heartbeat timeout is 1 s)
  Advance(3000);
  ASSERT_EQ(coord_->job()->state(), JobState::kDeploying) << coord_->job()->failure_reason();
  dead_.erase("w1");
  AnswerDeployment("w1");
  Advance(100);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  // Deployed: the heartbeat timeout applies again.
  Kill("w1");
  Advance(1100);
  EXPECT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason(),
            "worker 2 (slot 1, host h, pid 1001) was lost: no heartbeat for 1100 ms (timeout "
            "1000 ms) (restart strategy: none)");
}

TEST_F(DeployLivenessTest, AWorkerThatNeverAnswersItsDeploymentFailsTheAttemptAtTheDeployTimeout) {
  AnswerDeployment("w0");
  Kill("w1");
  Advance(5000);
  ASSERT_EQ(coord_->job()->state(), JobState::kDeploying);
  Advance(100);
  EXPECT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason(),
            "worker 2 (slot 1, host h, pid 1001) was lost: no heartbeat for 5100 ms (deploying its "
            "task, deploy timeout 5000 ms) (restart strategy: none)");
}

}  // namespace
}  // namespace keyflow::test
