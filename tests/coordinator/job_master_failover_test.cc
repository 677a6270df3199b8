// Failover of an attempt that lost a subtask without the worker being declared lost, and of an
// attempt whose checkpoints keep failing; then a rescale cut by a coordinator crash at each of
// its steps. Driven message by message through the Coordinator (explicit time, fake outbox, a
// real checkpoint directory), so every interleaving here is deterministic.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/coordinator/coordinator_harness.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

class JobMasterFailoverTest : public CoordinatorHarness {
 protected:
  // Two workers run a 2-subtask job that checkpoints every 500 ms.
  void RunJob(JobSpec spec) { RunOnWorkers(spec); }
  std::string LastFailure() { return JobStatus()["last_failure"].get<std::string>(); }
  // Declines the latest TriggerCheckpoint of `identity` as subtask `subtask`.
  CheckpointId Decline(const std::string& identity, int32_t subtask, const std::string& why) {
    auto t = outbox_.Last<TriggerCheckpoint>(identity);
    EXPECT_TRUE(t.has_value());
    Deliver(identity, DeclineCheckpoint{ids_[identity], t->attempt, SubtaskIndex(subtask),
                                        t->checkpoint, why});
    return t->checkpoint;
  }
};

// A coordinator that stalls past the heartbeat timeout: the worker cancels its subtask and
// registers again from the same connection, keeping its worker id. Its heartbeats look fine, so
// only the registration tells that the attempt lost subtask 1.
TEST_F(JobMasterFailoverTest, AWorkerRegisteringAgainWhileItRunsASubtaskFailsTheAttemptAtOnce) {
  RunJob(Spec(2, 500));
  Advance(200);
  Register("w1", 1);  // the same connection, so the same worker id
  EXPECT_EQ(ids_["w1"], outbox_.To<Registered>("w1").front().worker);
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(LastFailure(),
            "worker 2 (slot 1, host h, pid 1001) registered again: it heard nothing from the "
            "coordinator for longer than the heartbeat timeout and cancelled subtask 1 of "
            "attempt 1");
  EXPECT_EQ(outbox_.Last<CancelTask>("w0")->attempt.value(), 1);
  Advance(1000);  // the restart strategy's first delay
  ASSERT_EQ(outbox_.Last<DeployTask>("w1")->attempt.value(), 2);
  DeployAll({"w0", "w1"});
  EXPECT_EQ(JobStatus()["restarts"], 1);
}

TEST_F(JobMasterFailoverTest, ARegistrationAgainWithoutASubtaskOfTheAttemptChangesNothing) {
  Register("w0", 0);
  Register("w1", 1);
  Register("spare", 2);
  Submit(Spec(2, 500));
  DeployAll({"w0", "w1"});
  Register("spare", 2);  // runs nothing of the attempt
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(coord_->job()->attempt().value(), 1);
  EXPECT_TRUE(outbox_.To<CancelTask>("w0").empty());
}

// The same loss seen from the checkpoint side: the worker declines with subtask -1 ("no subtask
// of this attempt runs on this worker") although its subtask acknowledged the deployment. Before,
// the checkpoint was only aborted, and every later checkpoint too until the job FAILED.
TEST_F(JobMasterFailoverTest, ADeclineFromAWorkerThatDroppedItsSubtaskFailsTheAttemptAtOnce) {
  RunJob(Spec(2, 500));
  AdvanceToNextCheckpoint("w0");
  Decline("w1", -1, "no subtask of this attempt runs on this worker");
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(LastFailure(),
            "worker 2 (slot 1, host h, pid 1001) no longer runs subtask 1 of attempt 1 (no "
            "subtask of this attempt runs on this worker)");
  EXPECT_EQ(JobStatus()["checkpoints"]["consecutive_failures"], 0)
      << "a failover's aborted checkpoint is not a checkpoint failure";
}

// A decline naming the subtask (e.g. the disk is full) is a checkpoint failure, not a lost
// subtask: the attempt goes on.
TEST_F(JobMasterFailoverTest, ADeclineNamingItsSubtaskOnlyFailsTheCheckpoint) {
  RunJob(Spec(2, 500));
  AdvanceToNextCheckpoint("w0");
  Decline("w1", 1, "No space left on device");
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(JobStatus()["checkpoints"]["consecutive_failures"], 1);
}

// Flink's CheckpointFailureManager: more failed checkpoints in a row than tolerated fail the
// attempt, and the restart strategy decides; the next attempt counts from zero. Before, the job
// was FAILED for good (a full checkpoint disk ended it 3 s after it filled).
TEST_F(JobMasterFailoverTest, TooManyCheckpointFailuresFailOverUnderTheRestartStrategy) {
  JobSpec spec = Spec(2, 500);
  spec.tolerable_checkpoint_failures = 1;
  RunJob(spec);
  AdvanceToNextCheckpoint("w0");
  Decline("w0", 0, "No space left on device");
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  AdvanceToNextCheckpoint("w0");
  const CheckpointId last = Decline("w0", 0, "No space left on device");
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);
  const std::string why =
      "2 checkpoints failed in a row, more than --tolerable-checkpoint-failures 1 allows; the "
      "last failure: checkpoint " +
      std::to_string(last.value()) +
      " was declined by subtask 0: No space left on device (fix the cause, e.g. free space in "
      "the checkpoint directory; the job restarts from its latest completed checkpoint)";
  EXPECT_EQ(LastFailure(), why);
  nlohmann::json ck = JobStatus()["checkpoints"];
  EXPECT_EQ(ck["failovers"], 1);
  EXPECT_EQ(ck["failed_total"], 2);
  Advance(1000);
  ASSERT_EQ(outbox_.Last<DeployTask>("w0")->attempt.value(), 2);
  DeployAll({"w0", "w1"});
  ck = JobStatus()["checkpoints"];
  EXPECT_EQ(ck["consecutive_failures"], 0) << "the new attempt counts from zero";
  EXPECT_EQ(ck["failed_total"], 2) << "the totals survive the failover";
  EXPECT_EQ(ck["last_failure"].get<std::string>().rfind("checkpoint ", 0), 0u);
  // Space is back: the new attempt's checkpoints complete.
  CompleteNextCheckpoint({"w0", "w1"});
  EXPECT_EQ(JobStatus()["checkpoints"]["completed_total"], 1);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
}

TEST_F(JobMasterFailoverTest, WithoutRestartsTooManyCheckpointFailuresFailTheJob) {
  JobSpec spec = Spec(2, 500);
  spec.tolerable_checkpoint_failures = 0;
  spec.restart_strategy = "none";
  RunJob(spec);
  AdvanceToNextCheckpoint("w0");
  const CheckpointId last = Decline("w0", 0, "No space left on device");
  ASSERT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason(),
            "1 checkpoints failed in a row, more than --tolerable-checkpoint-failures 0 allows; "
            "the last failure: checkpoint " +
                std::to_string(last.value()) +
                " was declined by subtask 0: No space left on device (fix the cause, e.g. free "
                "space in the checkpoint directory; the job restarts from its latest completed "
                "checkpoint) (restart strategy: none)");
}

// ---- A coordinator crash at every step of a rescale --------------------------------------------

struct Crash {
  std::string step;
};

// Rescales a 2-subtask job to 3 through a savepoint (heap: --via auto) and kills the coordinator
// at step `cut`; a new coordinator on the same directory resumes the job. The restart must
// restore what the committed output depends on: the checkpoint before the rescale while the new
// attempt has not been deployed, the rescale's savepoint once it may have been (the new attempt
// commits the savepoint's output when it restores), and a newer checkpoint once one completed.
class JobMasterRescaleCrashTest : public CoordinatorHarness {
 protected:
  struct Resumed {
    int64_t restored = 0;
    std::string directory;
    int32_t parallelism = 0;
    int64_t next_checkpoint = 0;
  };

  // Checkpoint 1 completes at parallelism 2; `keyflow rescale 3` takes savepoint 2.
  void StartRescale() {
    RunOnWorkers(Spec(2, 500), /*spare_workers=*/1);
    CompleteNextCheckpoint({"w0", "w1"});
    ASSERT_EQ(JobStatus()["checkpoints"]["latest_completed"], 1);
    Deliver("cli", RescaleRequest{3, false, 5000});
    auto t = outbox_.Last<TriggerCheckpoint>("w0");
    ASSERT_TRUE(t.has_value());
    ASSERT_TRUE(t->savepoint());
    ASSERT_EQ(t->checkpoint.value(), 2);
  }
  // The savepoint's acks: the last one completes it, which runs the rescale's steps.
  void CompleteSavepoint() { AckAll({"w0", "w1"}); }

  // A new coordinator resumes the job; the workers register again and it redeploys.
  Resumed Resume() {
    crash_point_ = nullptr;
    const std::string job_id = job_id_;
    Reset();
    EXPECT_OK(coord_->ResumeJobs(now_));
    EXPECT_NE(coord_->job(), nullptr);
    if (coord_->job() == nullptr) return {};
    EXPECT_EQ(coord_->job()->job_id(), job_id);
    for (int slot = 0; slot < 3; ++slot) Register("w" + std::to_string(slot) + "-new", slot);
    Advance(100);
    Resumed r;
    auto d = outbox_.Last<DeployTask>("w0-new");
    EXPECT_TRUE(d.has_value());
    if (!d || !d->restore) return r;
    r.restored = d->restore->checkpoint.value();
    r.directory = d->restore->checkpoint_dir;
    r.parallelism = d->spec.parallelism;
    std::vector<std::string> all;
    for (int i = 0; i < r.parallelism; ++i) all.push_back("w" + std::to_string(i) + "-new");
    DeployAll(all);
    AdvanceToNextCheckpoint("w0-new");
    r.next_checkpoint = outbox_.Last<TriggerCheckpoint>("w0-new")->checkpoint.value();
    return r;
  }

  std::string SavepointDir() const { return dir_.path() + "/" + job_id_ + "/savepoint-2"; }
  std::string CheckpointDir(int n) const {
    return dir_.path() + "/" + job_id_ + "/chk-" + std::to_string(n);
  }

  // Sets the crash hook, then runs the rescale up to `cut` (a step name, or "" for none).
  bool RunUntil(std::string_view cut, bool run_new_attempt) {
    crash_point_ = [cut = std::string(cut)](std::string_view step) {
      if (step == cut) throw Crash{std::string(step)};
    };
    Reset();
    StartRescale();
    if (::testing::Test::HasFatalFailure()) return false;
    job_id_ = coord_->job()->job_id();
    try {
      CompleteSavepoint();
    } catch (const Crash& c) {
      EXPECT_EQ(c.step, cut);
      return true;
    }
    if (!run_new_attempt) return false;
    DeployAll({"w0", "w1", "w2"});
    return false;
  }

  std::string job_id_;
};

TEST_F(JobMasterRescaleCrashTest, CrashBeforeTheSavepointCompletesRestoresTheCheckpointBefore) {
  StartRescale();
  job_id_ = coord_->job()->job_id();
  AckAll({"w0"});  // one of two acks: the savepoint is pending
  Resumed r = Resume();
  EXPECT_EQ(r.restored, 1);
  EXPECT_EQ(r.directory, CheckpointDir(1));
  EXPECT_EQ(r.parallelism, 2);
  // Savepoint 2 never completed: the new coordinator deleted its directory, so its id is free.
  EXPECT_EQ(r.next_checkpoint, 2);
}

// The savepoint is on disk but not in the job record: the old attempt never committed it and no
// new attempt exists, so the checkpoint before the rescale is still exact.
TEST_F(JobMasterRescaleCrashTest, CrashRightAfterTheSavepointCompletedRestoresTheCheckpointBefore) {
  ASSERT_TRUE(RunUntil("rescale-snapshot-completed", false));
  ASSERT_TRUE(PathExists(SavepointDir() + "/_metadata"));
  Resumed r = Resume();
  EXPECT_EQ(r.restored, 1);
  EXPECT_EQ(r.directory, CheckpointDir(1));
  EXPECT_EQ(r.parallelism, 2);
  EXPECT_EQ(r.next_checkpoint, 3);
}

TEST_F(JobMasterRescaleCrashTest, CrashOnceTheSavepointIsRecordedRestoresTheSavepoint) {
  ASSERT_TRUE(RunUntil("rescale-savepoint-recorded", false));
  Resumed r = Resume();
  EXPECT_EQ(r.restored, 2);
  EXPECT_EQ(r.directory, SavepointDir());
  EXPECT_EQ(r.next_checkpoint, 3);
}

// The failing case: killed just after the rescale deployed its new attempt (which commits the
// savepoint's output as it restores), a new coordinator restored checkpoint 1, the sink refused
// to emit again what was committed after it, and the job restarted forever.
TEST_F(JobMasterRescaleCrashTest, CrashAfterTheNewAttemptWasDeployedRestoresTheSavepoint) {
  ASSERT_TRUE(RunUntil("rescale-deployed", false));
  Resumed r = Resume();
  EXPECT_EQ(r.restored, 2);
  EXPECT_EQ(r.directory, SavepointDir());
  EXPECT_EQ(r.parallelism, 3);
  EXPECT_EQ(r.next_checkpoint, 3);
}

TEST_F(JobMasterRescaleCrashTest, CrashWhileTheRescaledJobRunsRestoresTheSavepoint) {
  ASSERT_FALSE(RunUntil("", true));
  ASSERT_EQ(coord_->job()->state(), JobState::kRunning);
  Resumed r = Resume();
  EXPECT_EQ(r.restored, 2);
  EXPECT_EQ(r.directory, SavepointDir());
  EXPECT_EQ(r.parallelism, 3);
}

TEST_F(JobMasterRescaleCrashTest, CrashAfterACheckpointOfTheRescaledJobRestoresThatCheckpoint) {
  ASSERT_FALSE(RunUntil("", true));
  AdvanceToNextCheckpoint("w0");
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_EQ(t->checkpoint.value(), 3);
  AckAll({"w0", "w1", "w2"});
  Resumed r = Resume();
  EXPECT_EQ(r.restored, 3);
  EXPECT_EQ(r.directory, CheckpointDir(3));
  EXPECT_EQ(r.parallelism, 3);
  EXPECT_EQ(r.next_checkpoint, 4);
}

// The recorded savepoint was deleted and nothing newer completed: restoring checkpoint 1 would
// emit again what the rescaled attempt committed, so the job fails with what to do.
TEST_F(JobMasterRescaleCrashTest, ALostRescaleSavepointWithoutANewerCheckpointFailsTheJob) {
  ASSERT_TRUE(RunUntil("rescale-deployed", false));
  std::filesystem::remove_all(SavepointDir());
  crash_point_ = nullptr;
  Reset();
  ASSERT_OK(coord_->ResumeJobs(now_));
  for (int slot = 0; slot < 3; ++slot) Register("w" + std::to_string(slot) + "-new", slot);
  Advance(100);
  ASSERT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason().rfind("savepoint 2 in " + SavepointDir() +
                                                      ", which the job was rescaled from, cannot "
                                                      "be restored (",
                                                  0),
            0u)
      << coord_->job()->failure_reason();
  EXPECT_FALSE(outbox_.Last<DeployTask>("w0-new").has_value());
}

}  // namespace
}  // namespace keyflow::test
