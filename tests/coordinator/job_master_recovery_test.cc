// Recovery, final checkpoint, rescaling and coordinator restart, driven message by message
// through the Coordinator with a fake outbox and explicit time (no sockets, no sleeps). The
// checkpoint storage is real (a temp dir): acks point at small state files the test writes.
#include <gtest/gtest.h>

#include <filesystem>

#include <map>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "common/file_io.h"
#include "common/key_group_assignment.h"
#include "coordinator/coordinator.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/coordinator/coordinator_harness.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

class RecoveryTest : public test::CoordinatorHarness {
 protected:
  // Acknowledges the latest TriggerCheckpoint sent to `identity` with a key-group-incremental
  // handle naming `names` in the job's shared directory (new names are written, 10 bytes each).
  void AckShared(const std::string& identity, const std::vector<std::string>& names) {
    auto t = outbox_.Last<TriggerCheckpoint>(identity);
    ASSERT_TRUE(t.has_value());
    ASSERT_TRUE(t->incremental);
    auto d = outbox_.Last<DeployTask>(identity);
    std::vector<SharedStateFile> files;
    for (const std::string& name : names) {
      const std::string path = t->shared_directory + "/" + name;
      if (!PathExists(path)) {
        ASSERT_OK(WriteFileAtomically(path, std::string(10, 's')));
      }
      files.push_back(SharedStateFile{name, 10, 0x5000});
    }
    AcknowledgeCheckpoint a;
    a.worker = ids_[identity];
    a.attempt = t->attempt;
    a.subtask = d->subtask;
    a.checkpoint = t->checkpoint;
    a.keyed_state = ckpt_test::TestIncrementalHandle(d->key_groups, std::move(files));
    if (d->subtask.value() == 0) {
      a.split_positions["0"] = test::GeneratorSplitAt(t->checkpoint.value());
    }
    a.written_bytes = 10;
    coord_->OnMessage(identity, a, now_);
  }
};

TEST_F(RecoveryTest, RestartsFromTheLatestCompletedCheckpointWhenAWorkerIsLost) {
  RunOnWorkers(Spec(2, 500));
  AdvanceToNextCheckpoint("w0");  // periodic checkpoint 1
  AckAll({"w0", "w1"});
  EXPECT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 1);
  Kill("w1");
  Advance(1200);  // heartbeat timeout -> attempt fails, restart waits for a replacement
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(outbox_.Last<CancelTask>("w0")->attempt.value(), 1);
  Register("w1b", 1);  // the respawned worker
  Advance(100);
  auto d0 = outbox_.Last<DeployTask>("w0");
  auto d1 = outbox_.Last<DeployTask>("w1b");
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->attempt.value(), 2);
  ASSERT_TRUE(d0->restore.has_value());
  EXPECT_EQ(d0->restore->checkpoint.value(), 1);
  ASSERT_EQ(d0->restore->keyed_state.size(), 1u);  // same parallelism: its own old file
  EXPECT_EQ(d0->restore->keyed_state[0].range, KeyGroupRange::Of(0, 3));
  EXPECT_EQ(d1->restore->keyed_state[0].range, KeyGroupRange::Of(4, 7));
  // The only source split (split 0 -> subtask 0) at checkpoint 1's position.
  EXPECT_EQ(d0->source_splits, std::vector<std::string>{test::GeneratorSplitAt(1)});
  EXPECT_TRUE(d1->source_splits.empty());
  EXPECT_TRUE(d0->no_more_splits && d1->no_more_splits);
  DeployAll({"w0", "w1b"});
  auto status = coord_->StatusJson(now_)["job"];
  EXPECT_EQ(status["restored_from"], 1);
  EXPECT_EQ(status["restarts"], 1);
}

TEST_F(RecoveryTest, WorkerDyingMidCheckpointAbortsItAndTheRestartUsesThePreviousOne) {
  RunOnWorkers(Spec(2, 500));
  AdvanceToNextCheckpoint("w0");  // checkpoint 1 completes
  AckAll({"w0", "w1"});
  AdvanceToNextCheckpoint("w0");  // checkpoint 2: w0 acks (its file is written), w1 dies
  const auto trigger2 = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_EQ(trigger2->checkpoint.value(), 2);
  AckAll({"w0"});
  Kill("w1");
  Advance(1200);  // heartbeat timeout
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_FALSE(std::filesystem::exists(trigger2->directory + "/_metadata"))
      << "an aborted checkpoint never gets metadata";
  nlohmann::json checkpoints = coord_->StatusJson(now_)["job"]["checkpoints"];
  EXPECT_EQ(checkpoints["latest_completed"], 1);
  EXPECT_EQ(checkpoints["pending"], 0);
  ASSERT_FALSE(checkpoints["recent"].empty());
  EXPECT_EQ(checkpoints["recent"][0]["id"], 2);
  EXPECT_EQ(checkpoints["recent"][0]["state"], "ABORTED");

  Register("w1b", 1);
  Advance(100);
  auto d0 = outbox_.Last<DeployTask>("w0");
  ASSERT_TRUE(d0.has_value() && d0->restore.has_value());
  EXPECT_EQ(d0->attempt.value(), 2);
  EXPECT_EQ(d0->restore->checkpoint.value(), 1);
  EXPECT_EQ(d0->source_splits, std::vector<std::string>{test::GeneratorSplitAt(1)});
  DeployAll({"w0", "w1b"});
  AdvanceToNextCheckpoint("w0");  // ids are never reused
  EXPECT_EQ(outbox_.Last<TriggerCheckpoint>("w0")->checkpoint.value(), 3);
}

TEST_F(RecoveryTest, CorruptedNewestCheckpointFallsBackToThePreviousOne) {
  RunOnOneWorker(Spec(1, 500));
  CompleteNextCheckpoint({"w0"});
  CompleteNextCheckpoint({"w0"});
  EXPECT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 2);
  // The worker fails; the restart restores checkpoint 2, whose file turns out to be corrupted.
  TaskFailed f{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"};
  coord_->OnMessage("w0", f, now_);
  Advance(300);
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 2);
  EXPECT_EQ(d->restore->checkpoint.value(), 2);
  DeployAll({"w0"});
  TaskFailed corrupted{ids_["w0"], AttemptNumber(2), SubtaskIndex(0),
                       "checkpoint 2 cannot be restored: checksum mismatch", CheckpointId(2)};
  coord_->OnMessage("w0", corrupted, now_);
  Advance(1000);
  d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 3);
  EXPECT_EQ(d->restore->checkpoint.value(), 1);
}

// A job started --from-savepoint of ANOTHER job's chk-3, which the worker cannot read at the first
// attempt (a corrupted_checkpoint of id 3), later completes its own chk-3: a different checkpoint
// with the same id. The job master names checkpoints by directory, so the next restart restores
// the job's own chk-3 (named by id, it would have been skipped as corrupt for chk-2).
// --from-savepoint of another job's checkpoint 3, which the worker finds corrupted, before the
// job has a checkpoint of its own: the job fails with the sentence instead of restoring the
// same savepoint at every restart (or starting over without its state), and the savepoint is
// left as it is. (The job's own checkpoint 3, had it one, would not be marked: the job master
// knows checkpoints by directory.)
TEST_F(RecoveryTest, ACorruptedSavepointWithoutACheckpointOfTheJobsOwnFailsTheJobAtOnce) {
  RunOnOneWorker(Spec(1, 500));
  for (int i = 0; i < 3; ++i) {
    CompleteNextCheckpoint({"w0"});
  }
  const std::string other = outbox_.Last<TriggerCheckpoint>("w0")->directory;
  ASSERT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 3);
  const std::string other_job = coord_->job()->job_id();
  coord_->OnMessage("cli", CancelJob{}, now_);

  JobSpec spec = Spec(1, 500);
  spec.from_savepoint = other;
  Submit(spec);
  ASSERT_NE(coord_->job()->job_id(), other_job);
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 1);
  ASSERT_TRUE(d->restore.has_value());
  EXPECT_EQ(d->restore->checkpoint.value(), 3);
  EXPECT_EQ(d->restore->checkpoint_dir, other);
  DeployAll({"w0"});
  const std::string why = "checkpoint 3 cannot be restored: state file " + other +
                          "/subtask-0.kgs does not match the checkpoint metadata (checksum)";
  coord_->OnMessage(
      "w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), why, CheckpointId(3)}, now_);
  Advance(1000);
  EXPECT_EQ(outbox_.Last<DeployTask>("w0")->attempt.value(), 1) << "no attempt 2";
  ASSERT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason(),
            "checkpoint 3 in " + other + " cannot be restored (" + why +
                ") and the job has no completed checkpoint of its own to fall back to: the job "
                "cannot continue; run it again with --from-savepoint of another savepoint or "
                "checkpoint, or without --from-savepoint to start from the beginning of the "
                "input");
  EXPECT_TRUE(PathExists(other + "/_metadata"));
  EXPECT_TRUE(PathExists(other + "/subtask-0.kgs"));
}

// A worker's restore that fails without naming a corrupted checkpoint (an I/O error: it may
// pass) restores the same savepoint again.
TEST_F(RecoveryTest, ASavepointRestoreThatFailedWithoutCorruptionIsRetried) {
  RunOnOneWorker(Spec(1, 500));
  CompleteNextCheckpoint({"w0"});
  const std::string other = outbox_.Last<TriggerCheckpoint>("w0")->directory;
  coord_->OnMessage("cli", CancelJob{}, now_);

  JobSpec spec = Spec(1, 500);
  spec.from_savepoint = other;
  Submit(spec);
  DeployAll({"w0"});
  coord_->OnMessage("w0",
                    TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0),
                               "cannot open " + other + "/subtask-0.kgs (Input/output error)"},
                    now_);
  Advance(1000);
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 2);
  ASSERT_TRUE(d->restore.has_value());
  EXPECT_EQ(d->restore->checkpoint_dir, other);
  EXPECT_NE(coord_->job()->state(), JobState::kFailed);
}

// --retained-checkpoints 1 and a crash between "chk2 completed" and "chk1 deleted" leave both on
// disk; chk2 is corrupt (a truncated shared file), so the restart restores chk1. The new
// attempt's retention must not delete its restore point or the shared files it references; chk2
// stays on disk until a newer checkpoint completes, then both go with their unshared files.
TEST_F(RecoveryTest, RetentionNeverDeletesTheCheckpointAnAttemptRestoresFrom) {
  JobSpec spec = Spec(1, 500);
  spec.retained_checkpoints = 1;
  RunOnOneWorker(spec);
  AdvanceToNextCheckpoint("w0");
  AckShared("w0", {"common.kgs", "only-1.kgs"});
  ASSERT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 1);
  CheckpointStorage storage(dir_.path());
  const std::string job = coord_->job()->job_id();
  const std::string chk1 = storage.CheckpointDirectory(job, CheckpointId(1));
  const std::string chk2 = storage.CheckpointDirectory(job, CheckpointId(2));
  const std::string shared = storage.SharedDirectory(job);
  TempDir backup("recovery-backup");
  std::filesystem::copy(chk1, backup.path() + "/chk-1", std::filesystem::copy_options::recursive);
  std::filesystem::copy(shared + "/only-1.kgs", backup.path() + "/only-1.kgs");
  AdvanceToNextCheckpoint("w0");
  AckShared("w0", {"common.kgs", "only-2.kgs"});
  ASSERT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 2);
  ASSERT_FALSE(PathExists(chk1)) << "retention 1";
  ASSERT_FALSE(PathExists(shared + "/only-1.kgs"));
  // The crash before the deletion: chk1 and its file are back.
  std::filesystem::copy(backup.path() + "/chk-1", chk1, std::filesystem::copy_options::recursive);
  std::filesystem::copy(backup.path() + "/only-1.kgs", shared + "/only-1.kgs");
  std::filesystem::resize_file(shared + "/only-2.kgs", 3);

  coord_->OnMessage("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"}, now_);
  Advance(300);
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 2);
  ASSERT_TRUE(d->restore.has_value());
  EXPECT_EQ(d->restore->checkpoint.value(), 1);
  EXPECT_TRUE(PathExists(chk1 + "/_metadata")) << "the restore point was deleted";
  EXPECT_TRUE(PathExists(shared + "/common.kgs"));
  EXPECT_TRUE(PathExists(shared + "/only-1.kgs"));
  EXPECT_TRUE(PathExists(chk2 + "/_metadata")) << "the corrupt one stays for the user";
  EXPECT_TRUE(PathExists(shared + "/only-2.kgs"));
  DeployAll({"w0"});
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["checkpoints"]["latest_completed"], 1);
  // A late upload of attempt 1 (checkpoint 2's, after the sweep): its new file goes, the shared
  // one the restore point references stays.
  ASSERT_OK(WriteFileAtomically(shared + "/late-2.kgs", std::string(10, 's')));
  AcknowledgeCheckpoint late;
  late.worker = ids_["w0"];
  late.attempt = AttemptNumber(1);
  late.subtask = SubtaskIndex(0);
  late.checkpoint = CheckpointId(2);
  late.keyed_state = ckpt_test::TestIncrementalHandle(
      KeyGroupRange::Of(0, 7),
      {SharedStateFile{"common.kgs", 10, 0x5000}, SharedStateFile{"late-2.kgs", 10, 0x5000}});
  coord_->OnMessage("w0", late, now_);
  EXPECT_FALSE(PathExists(shared + "/late-2.kgs"));
  EXPECT_TRUE(PathExists(shared + "/common.kgs"));

  AdvanceToNextCheckpoint("w0");
  ASSERT_EQ(outbox_.Last<TriggerCheckpoint>("w0")->checkpoint.value(), 3);
  AckShared("w0", {"common.kgs", "only-3.kgs"});
  ASSERT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 3);
  EXPECT_FALSE(PathExists(chk1));
  EXPECT_FALSE(PathExists(chk2));
  EXPECT_FALSE(PathExists(shared + "/only-1.kgs"));
  EXPECT_FALSE(PathExists(shared + "/only-2.kgs"));
  EXPECT_TRUE(PathExists(shared + "/common.kgs"));
  EXPECT_TRUE(PathExists(shared + "/only-3.kgs"));
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["checkpoints"]["latest_completed"], 3);
}

TEST_F(RecoveryTest, NonRecoverableTaskFailureFailsTheJobWithoutARestart) {
  JobSpec spec = Spec(2, 500);
  spec.restart_strategy = "fixed-delay";
  spec.restart_attempts = 100;
  RunOnWorkers(spec);
  CompleteNextCheckpoint({"w0", "w1"});
  TaskFailed f{
      ids_["w1"],      AttemptNumber(1),
      SubtaskIndex(1), "input file /in/b.jsonl does not exist (deleted after the job started?)",
      CheckpointId(0), /*non_recoverable=*/true};
  coord_->OnMessage("w1", f, now_);
  EXPECT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason(),
            "subtask 1 on " + coord_->workers().Find(ids_["w1"])->Describe() +
                " failed: input file /in/b.jsonl does not exist (deleted after the job "
                "started?): the job cannot continue (no restart can help); once the cause is "
                "fixed (e.g. the input is back), run it again with --from-savepoint <its latest "
                "checkpoint>");
  EXPECT_EQ(outbox_.Last<CancelTask>("w0")->attempt.value(), 1);
  Advance(5000);
  EXPECT_EQ(outbox_.Last<DeployTask>("w0")->attempt.value(), 1);  // never redeployed
}

TEST_F(RecoveryTest, RecoverableTaskFailureIsRestarted) {
  JobSpec spec = Spec(1, 500);
  spec.restart_strategy = "fixed-delay";
  RunOnOneWorker(spec);
  coord_->OnMessage(
      "w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "cannot open: EIO"}, now_);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  Advance(1000);
  EXPECT_EQ(outbox_.Last<DeployTask>("w0")->attempt.value(), 2);
}

TEST_F(RecoveryTest, TruncatedStateFileIsSkippedWhenPlanningTheRestore) {
  RunOnOneWorker(Spec(1, 500));
  CompleteNextCheckpoint({"w0"});
  CompleteNextCheckpoint({"w0"});
  CheckpointStorage storage(dir_.path());
  std::string newest = storage.CheckpointDirectory(coord_->job()->job_id(), CheckpointId(2)) + "/" +
                       CheckpointStorage::SubtaskStateFileName(SubtaskIndex(0));
  ASSERT_OK(WriteFileAtomically(newest, "short"));
  coord_->OnMessage("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"}, now_);
  Advance(300);
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 2);
  EXPECT_EQ(d->restore->checkpoint.value(), 1);
}

// Issue 9, Liveness 2: checkpoint 2 completed with a sink committable (its notification
// committed that part file); restoring checkpoint 1 would emit those results again, so the job
// fails with a sentence naming the corrupt file, the output at stake and the choices.
TEST_F(RecoveryTest, FallbackThatWouldReplayCommittedOutputFailsTheJobInsteadOfRestoring) {
  JobSpec spec = Spec(1, 500);
  spec.output_dir = "/data/out";
  RunOnOneWorker(spec);
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0"}, 10, {"part-file-of-checkpoint-1"});
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0"}, 10, {"part-file-of-checkpoint-2"});
  ASSERT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint.value(), 2);
  CheckpointStorage storage(dir_.path());
  const std::string job = coord_->job()->job_id();
  const std::string chk1 = storage.CheckpointDirectory(job, CheckpointId(1));
  const std::string chk2 = storage.CheckpointDirectory(job, CheckpointId(2));
  ASSERT_OK(WriteFileAtomically(chk2 + "/subtask-0.kgs", "short"));
  coord_->OnMessage("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"}, now_);
  Advance(300);
  EXPECT_EQ(outbox_.To<DeployTask>("w0").size(), 1u);  // no second attempt
  ASSERT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_->job()->failure_reason(),
            "the newest completed checkpoint cannot be restored: checkpoint 2 in " + chk2 +
                " (state file " + chk2 +
                "/subtask-0.kgs of subtask 0 of checkpoint 2 is truncated: expected 80 bytes, "
                "found 5), and falling back to checkpoint 1 would emit again the results of 1 "
                "part file(s) already committed in /data/out after it, which keyflow never "
                "retracts; either accept the replay with keyflow run ... --from-savepoint " +
                chk1 +
                " (the replayed results go to new part files next to the committed ones, so a "
                "reader sees those results twice), or repair or restore the corrupt file and "
                "resume with keyflow run ... --from-savepoint " +
                chk2);
}

// The same through the worker's report (a flipped byte only the checksums see).
TEST_F(RecoveryTest, CorruptionFoundByTheWorkerWithCommittedOutputFailsTheJob) {
  RunOnOneWorker(Spec(1, 500));
  CompleteNextCheckpoint({"w0"});
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0"}, 10, {"c2"});
  coord_->OnMessage("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"}, now_);
  Advance(300);
  DeployAll({"w0"});
  TaskFailed corrupted{ids_["w0"], AttemptNumber(2), SubtaskIndex(0),
                       "checkpoint 2 cannot be restored: state file /x/subtask-0.kgs is corrupt",
                       CheckpointId(2)};
  coord_->OnMessage("w0", corrupted, now_);
  Advance(1000);
  EXPECT_EQ(outbox_.Last<DeployTask>("w0")->attempt.value(), 2);
  ASSERT_EQ(coord_->job()->state(), JobState::kFailed);
  const std::string& why = coord_->job()->failure_reason();
  EXPECT_NE(why.find("(checkpoint 2 cannot be restored: state file /x/subtask-0.kgs is "
                     "corrupt), and falling back to checkpoint 1 would emit again the results "
                     "of 1 part file(s) already committed in the output directory"),
            std::string::npos)
      << why;
}

// A newer checkpoint whose committables the older one holds too (its notification committed
// nothing new) falls back automatically, as without a sink.
TEST_F(RecoveryTest, FallbackWithoutNewerCommittedOutputStaysAutomatic) {
  RunOnOneWorker(Spec(1, 500));
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0"}, 10, {"c1"});
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0"}, 10, {"c1"});  // checkpoint 1's notification did not arrive before 2
  CheckpointStorage storage(dir_.path());
  ASSERT_TRUE(
      WriteFileAtomically(
          storage.CheckpointDirectory(coord_->job()->job_id(), CheckpointId(2)) + "/subtask-0.kgs",
          "short")
          .ok());
  coord_->OnMessage("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"}, now_);
  Advance(300);
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 2);
  EXPECT_EQ(d->restore->checkpoint.value(), 1);
  EXPECT_EQ(d->restore->sink_committables, (std::vector<std::string>{"c1"}));
}

TEST_F(RecoveryTest, ScalesDownWhenALostWorkerIsNotReplacedInTime) {
  RunOnWorkers(Spec(2, 500));
  CompleteNextCheckpoint({"w0", "w1"});
  Kill("w1");
  Advance(1500);  // lost after 1 s, then the 200 ms restart delay
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_NE(coord_->StatusJson(now_)["job"]["waiting_for"].get<std::string>().find(
                "waiting for 1 replacement worker(s)"),
            std::string::npos);
  Advance(1700);  // the replacement timeout (2 s after the failure) passes
  auto d = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(d->attempt.value(), 2);
  EXPECT_EQ(d->spec.parallelism, 1);
  EXPECT_EQ(d->key_groups, KeyGroupRange::Of(0, 7));
  EXPECT_EQ(d->restore->keyed_state.size(), 2u);  // both old files hold its key groups
}

TEST_F(RecoveryTest, WithoutCheckpointingALostWorkerFailsTheJob) {
  RunOnWorkers(Spec(2, 0));
  Kill("w1");
  Advance(1200);
  EXPECT_EQ(coord_->job()->state(), JobState::kFailed);
  EXPECT_NE(coord_->job()->failure_reason().find("(restart strategy: none)"), std::string::npos);
}

TEST_F(RecoveryTest, FinalCheckpointCommitsBeforeTheJobFinishes) {
  Register("w0", 0);
  Register("w1", 1);
  Submit(Spec(2, 60'000));  // periodic checkpoints far away: only the final one happens
  DeployAll({"w0", "w1"});
  for (const char* w : {"w0", "w1"}) {
    coord_->OnMessage(
        w, TaskInputEnded{ids_[w], AttemptNumber(1), outbox_.Last<DeployTask>(w)->subtask}, now_);
  }
  EXPECT_EQ(coord_->job()->state(), JobState::kFinishing);
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(t.has_value());
  AckAll({"w0", "w1"});
  EXPECT_EQ(outbox_.Last<NotifyCheckpointComplete>("w1")->checkpoint, t->checkpoint);
  auto m = CheckpointStorage::ReadMetadata(t->directory);
  ASSERT_OK(m);
  EXPECT_TRUE(m->final);
  for (const char* w : {"w0", "w1"}) {
    coord_->OnMessage(
        w, TaskFinished{ids_[w], AttemptNumber(1), outbox_.Last<DeployTask>(w)->subtask, {}}, now_);
  }
  EXPECT_EQ(coord_->job()->state(), JobState::kFinished);
}

// A heap job's rescale (via auto) takes a savepoint.
TEST_F(RecoveryTest, RescaleTakesASavepointAndRedeploysWhereEachSubtaskGetsItsFiles) {
  RunOnWorkers(Spec(2, 60'000), 1);
  coord_->OnMessage("cli", RescaleRequest{3, false, 5000}, now_);
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->savepoint());
  EXPECT_EQ(coord_->job()->state(), JobState::kRescaling);
  AckAll({"w0", "w1"});
  ASSERT_EQ(outbox_.Last<CancelTask>("w0")->attempt.value(), 1);
  EXPECT_FALSE(outbox_.Last<NotifyCheckpointComplete>("w0").has_value());  // savepoint
  auto d2 = outbox_.Last<DeployTask>("w2");
  ASSERT_TRUE(d2.has_value());
  EXPECT_EQ(d2->attempt.value(), 2);
  EXPECT_EQ(d2->spec.parallelism, 3);
  EXPECT_EQ(d2->key_groups, KeyGroupRange::Of(6, 7));
  ASSERT_EQ(d2->restore->keyed_state.size(), 1u);  // only old subtask 1 holds 6..7
  EXPECT_EQ(d2->restore->keyed_state[0].range, KeyGroupRange::Of(4, 7));
  EXPECT_EQ(outbox_.Last<DeployTask>("w1")->restore->keyed_state.size(), 2u);  // 3..5
  size_t replies = outbox_.To<Reply>("cli").size();
  DeployAll({"w0", "w1", "w2"});
  EXPECT_EQ(outbox_.To<Reply>("cli").size(), replies);  // deployed, but not restored yet
  for (const char* w : {"w0", "w1", "w2"}) {
    coord_->OnMessage(
        w, TaskRunning{ids_[w], AttemptNumber(2), outbox_.Last<DeployTask>(w)->subtask, 5, 100},
        now_);
  }
  ASSERT_EQ(outbox_.To<Reply>("cli").size(), replies + 1);
  EXPECT_TRUE(outbox_.Last<Reply>("cli")->ok);
  EXPECT_EQ(coord_->job()->spec().parallelism, 3);
}

// A RocksDB job's rescale (via auto) takes a checkpoint of the job's own kind, even while a
// periodic one is pending (max concurrent checkpoints 1): no subtask of the old attempt commits
// it (it gets no NotifyCheckpointComplete), the new attempt restores from it, and it is one of
// the job's completed checkpoints.
TEST_F(RecoveryTest, RescaleOfARocksDbJobTakesAForcedCheckpointNobodyCommitsAndRedeploysFromIt) {
  Register("w0", 0);
  Register("w1", 1);
  Register("w2", 2);
  JobSpec spec = Spec(2, 500);
  spec.state_backend = "rocksdb";
  Submit(spec);
  DeployAll({"w0", "w1"});
  AdvanceToNextCheckpoint("w0");
  auto periodic = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(periodic.has_value());
  coord_->OnMessage("cli", RescaleRequest{3, false, 5000}, now_);
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->checkpoint.value(), periodic->checkpoint.value() + 1)
      << "triggered although the periodic checkpoint is pending";
  EXPECT_EQ(t->type, CheckpointType::kCheckpoint);
  EXPECT_NE(t->directory.find("/chk-" + std::to_string(t->checkpoint.value())), std::string::npos)
      << t->directory;
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["rescale"]["phase"], "checkpoint");
  Advance(2000);  // no periodic checkpoint starts meanwhile
  EXPECT_EQ(outbox_.Last<TriggerCheckpoint>("w0")->checkpoint, t->checkpoint);
  AckAll({"w0", "w1"});
  ASSERT_EQ(outbox_.Last<CancelTask>("w0")->attempt.value(), 1);
  EXPECT_FALSE(outbox_.Last<NotifyCheckpointComplete>("w0").has_value());
  EXPECT_FALSE(outbox_.Last<NotifyCheckpointComplete>("w1").has_value());
  auto d2 = outbox_.Last<DeployTask>("w2");
  ASSERT_TRUE(d2.has_value());
  EXPECT_EQ(d2->attempt.value(), 2);
  EXPECT_EQ(d2->spec.parallelism, 3);
  ASSERT_TRUE(d2->restore.has_value());
  EXPECT_EQ(d2->restore->checkpoint, t->checkpoint);
  EXPECT_EQ(d2->restore->checkpoint_dir, t->directory);
  ASSERT_EQ(d2->restore->keyed_state.size(), 1u);  // only old subtask 1 holds 6..7
  EXPECT_EQ(d2->restore->keyed_state[0].range, KeyGroupRange::Of(4, 7));
  EXPECT_EQ(outbox_.Last<DeployTask>("w1")->restore->keyed_state.size(), 2u);  // 3..5
  auto completed = CheckpointStorage(dir_.path()).ListCompletedCheckpoints(coord_->job()->job_id());
  ASSERT_OK(completed);
  ASSERT_FALSE(completed->empty());
  EXPECT_EQ(completed->back().id, t->checkpoint);
  EXPECT_FALSE(completed->back().savepoint);
  size_t replies = outbox_.To<Reply>("cli").size();
  DeployAll({"w0", "w1", "w2"});
  for (const char* w : {"w0", "w1", "w2"}) {
    coord_->OnMessage(
        w, TaskRunning{ids_[w], AttemptNumber(2), outbox_.Last<DeployTask>(w)->subtask, 5, 100},
        now_);
  }
  ASSERT_EQ(outbox_.To<Reply>("cli").size(), replies + 1);
  EXPECT_TRUE(outbox_.Last<Reply>("cli")->ok) << outbox_.Last<Reply>("cli")->message;
  EXPECT_EQ(coord_->job()->spec().parallelism, 3);
}

TEST_F(RecoveryTest, StopWithSavepointCancelsTheJobAfterTheSavepoint) {
  RunOnOneWorker(Spec(1, 500));
  coord_->OnMessage("cli", StopJob{""}, now_);
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(t && t->savepoint());
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["state"], "STOPPING");
  Advance(2000);  // no periodic checkpoint may start meanwhile
  EXPECT_EQ(outbox_.To<TriggerCheckpoint>("w0").size(), 1u);
  AckAll({"w0"});
  EXPECT_EQ(coord_->job()->state(), JobState::kCanceled);
  auto r = outbox_.Last<Reply>("cli");
  ASSERT_TRUE(r->ok) << r->message;
  EXPECT_NE(r->message.find("job stopped with savepoint 1: " + t->directory), std::string::npos);
  EXPECT_OK(CheckpointStorage::ReadMetadata(t->directory));
}

TEST_F(RecoveryTest, SubmissionsInTheSameSecondGetDistinctJobIds) {
  Register("w0", 0);
  Submit(Spec(1, 0));
  std::string first = coord_->job()->job_id();
  coord_->OnMessage("cli", CancelJob{}, now_);
  Submit(Spec(1, 0));
  EXPECT_EQ(coord_->job()->job_id(), first + "-2");
}

TEST_F(RecoveryTest, RescaleRefusalsLeaveTheJobRunningUntouched) {
  RunOnWorkers(Spec(2, 60'000));
  coord_->OnMessage("cli", RescaleRequest{9, false, 0}, now_);
  EXPECT_EQ(outbox_.Last<Reply>("cli")->message,
            "cannot rescale job " + coord_->job()->job_id() +
                " to 9: it must be between 1 and the job's max parallelism 8 (its number of key "
                "groups, fixed for the lifetime of the job and its checkpoints); the job keeps "
                "running at parallelism 2");
  coord_->OnMessage("cli", RescaleRequest{3, false, 0}, now_);  // only 2 workers
  Advance(100);
  EXPECT_FALSE(outbox_.Last<Reply>("cli")->ok);
  EXPECT_NE(outbox_.Last<Reply>("cli")->message.find("needs 3 workers but only 2 registered"),
            std::string::npos);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(coord_->job()->attempt().value(), 1);
  EXPECT_FALSE(outbox_.Last<CancelTask>("w0").has_value());
}

TEST_F(RecoveryTest, RescalePlanListsEveryKeyGroupOnceWithBytes) {
  RunOnWorkers(Spec(2, 500));
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0", "w1"}, 7);
  coord_->OnMessage("cli", RescaleRequest{3, true, 0}, now_);
  auto r = outbox_.Last<Reply>("cli");
  ASSERT_TRUE(r->ok) << r->message;
  auto plan = nlohmann::json::parse(r->json);
  EXPECT_EQ(plan["old_parallelism"], 2);
  EXPECT_EQ(plan["new_parallelism"], 3);
  // New ranges of (8, 3): [0,2] [3,5] [6,7]; 7 bytes per key group.
  EXPECT_EQ(plan["bytes_per_new_subtask"], nlohmann::json({21, 21, 14}));
  int covered = 0;
  for (const auto& mv : plan["moves"]) {
    covered += mv["last_key_group"].get<int>() - mv["first_key_group"].get<int>() + 1;
  }
  EXPECT_EQ(covered, 8);
  EXPECT_EQ(coord_->job()->attempt().value(), 1);  // nothing changed
}

TEST_F(RecoveryTest, RestartedCoordinatorResumesTheRunningJobFromItsLatestCheckpoint) {
  RunOnOneWorker(Spec(1, 500));
  CompleteNextCheckpoint({"w0"});
  std::string job_id = coord_->job()->job_id();
  // The coordinator dies (no clean cancel) and a new one starts on the same directory.
  Reset();
  ids_.clear();
  ASSERT_OK(coord_->ResumeJobs(now_));
  ASSERT_NE(coord_->job(), nullptr);
  EXPECT_EQ(coord_->job()->job_id(), job_id);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  Register("w0-again", 0);
  Advance(100);
  auto d = outbox_.Last<DeployTask>("w0-again");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->attempt.value(), 2);  // continues after the last recorded attempt
  EXPECT_EQ(d->restore->checkpoint.value(), 1);
  EXPECT_EQ(d->job_id, job_id);
}

// Issue 9, "a job can hang in FINISHING forever": subtask 0's input ends, a periodic checkpoint
// completes (the old worker took it as its final one and finished), subtask 1's input ends,
// the final checkpoint goes out and subtask 0's worker declines it: its subtask already ended.
// The decline must abort it, the final one is triggered again, and the job finishes.
TEST_F(RecoveryTest, APeriodicCheckpointRacingTheEndOfInputStillLetsTheJobFinish) {
  RunOnWorkers(Spec(2, 500));
  coord_->OnMessage("w0", TaskInputEnded{ids_["w0"], AttemptNumber(1), SubtaskIndex(0)}, now_);
  AdvanceToNextCheckpoint("w0");
  auto periodic = outbox_.Last<TriggerCheckpoint>("w0");
  EXPECT_EQ(periodic->type, CheckpointType::kCheckpoint);
  AckAll({"w0", "w1"});
  EXPECT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint, periodic->checkpoint);

  coord_->OnMessage("w1", TaskInputEnded{ids_["w1"], AttemptNumber(1), SubtaskIndex(1)}, now_);
  ASSERT_EQ(coord_->job()->state(), JobState::kFinishing);
  auto final1 = outbox_.Last<TriggerCheckpoint>("w1");
  ASSERT_TRUE(final1.has_value());
  EXPECT_EQ(final1->type, CheckpointType::kFinal);
  EXPECT_GT(final1->checkpoint, periodic->checkpoint);
  coord_->OnMessage(
      "w0",
      DeclineCheckpoint{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), final1->checkpoint,
                        "subtask 0 of this attempt already ended on this worker"},
      now_);
  auto aborted = outbox_.Last<NotifyCheckpointAborted>("w1");
  ASSERT_TRUE(aborted.has_value()) << "the decline was ignored";
  EXPECT_EQ(aborted->checkpoint, final1->checkpoint);
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["checkpoints"]["recent"][0]["failure"],
            "checkpoint " + std::to_string(final1->checkpoint.value()) +
                " was declined by subtask 0: subtask 0 of this attempt already ended on this "
                "worker");

  const size_t triggers = outbox_.To<TriggerCheckpoint>("w0").size();
  Advance(2000);  // FINISHING: no periodic checkpoint, exactly one new final one
  ASSERT_EQ(outbox_.To<TriggerCheckpoint>("w0").size(), triggers + 1);
  auto final2 = outbox_.Last<TriggerCheckpoint>("w0");
  EXPECT_EQ(final2->type, CheckpointType::kFinal);
  EXPECT_GT(final2->checkpoint, final1->checkpoint);
  AckAll({"w0", "w1"});
  EXPECT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint, final2->checkpoint);
  Advance(2000);  // the final checkpoint completed: nothing is triggered any more
  EXPECT_EQ(outbox_.To<TriggerCheckpoint>("w0").size(), triggers + 1);
  for (const char* w : {"w0", "w1"}) {
    coord_->OnMessage(
        w, TaskFinished{ids_[w], AttemptNumber(1), outbox_.Last<DeployTask>(w)->subtask, {}}, now_);
  }
  EXPECT_EQ(coord_->job()->state(), JobState::kFinished);
}

TEST_F(RecoveryTest, PendingPeriodicCheckpointMayCompleteAfterTheJobEntersFinishing) {
  RunOnOneWorker(Spec(1, 500));
  AdvanceToNextCheckpoint("w0");
  auto periodic = outbox_.Last<TriggerCheckpoint>("w0");
  coord_->OnMessage("w0", TaskInputEnded{ids_["w0"], AttemptNumber(1), SubtaskIndex(0)}, now_);
  ASSERT_EQ(coord_->job()->state(), JobState::kFinishing);
  // The final checkpoint does not wait for the periodic one (it bypasses max concurrent).
  auto final1 = outbox_.Last<TriggerCheckpoint>("w0");
  EXPECT_EQ(final1->type, CheckpointType::kFinal);
  EXPECT_EQ(final1->checkpoint.value(), periodic->checkpoint.value() + 1);
  // Both complete in order: the periodic one only commits, the final one ends the job.
  AckAll({"w0"});  // acks the final one (the last trigger)
  EXPECT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint, final1->checkpoint);
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["checkpoints"]["pending"], 0) << "periodic subsumed";
  coord_->OnMessage("w0", TaskFinished{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), {}}, now_);
  EXPECT_EQ(coord_->job()->state(), JobState::kFinished);
}

TEST_F(RecoveryTest, MoreThanTheTolerableConsecutiveCheckpointFailuresFailTheAttempt) {
  JobSpec spec = Spec(1, 500);
  spec.tolerable_checkpoint_failures = 2;
  RunOnOneWorker(spec);
  auto decline_next = [&] {
    AdvanceToNextCheckpoint("w0");
    auto t = outbox_.Last<TriggerCheckpoint>("w0");
    coord_->OnMessage("w0",
                      DeclineCheckpoint{ids_["w0"], AttemptNumber(1), SubtaskIndex(0),
                                        t->checkpoint, "No space left on device"},
                      now_);
    return t->checkpoint.value();
  };
  decline_next();
  decline_next();
  nlohmann::json ck = coord_->StatusJson(now_)["job"]["checkpoints"];
  EXPECT_EQ(ck["consecutive_failures"], 2);
  EXPECT_EQ(ck["tolerable_failures"], 2);
  AdvanceToNextCheckpoint("w0");
  AckAll({"w0"});  // a completed checkpoint resets the count
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["checkpoints"]["consecutive_failures"], 0);
  decline_next();
  decline_next();
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  int64_t last = decline_next();
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);  // the restart strategy decides
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["last_failure"],
            "3 checkpoints failed in a row, more than --tolerable-checkpoint-failures 2 allows; "
            "the last failure: checkpoint " +
                std::to_string(last) +
                " was declined by subtask 0: No space left on device (fix the cause, e.g. free "
                "space in the checkpoint directory; the job restarts from its latest completed "
                "checkpoint)");
  EXPECT_EQ(outbox_.Last<CancelTask>("w0")->attempt.value(), 1);
}

TEST_F(RecoveryTest, CheckpointsAbortedByAFailoverAreNotCountedAsFailures) {
  JobSpec spec = Spec(1, 500);
  spec.tolerable_checkpoint_failures = 0;
  RunOnOneWorker(spec);
  AdvanceToNextCheckpoint("w0");  // pending when the subtask fails
  coord_->OnMessage("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"}, now_);
  Advance(300);
  ASSERT_EQ(outbox_.Last<DeployTask>("w0")->attempt.value(), 2);
  DeployAll({"w0"});
  EXPECT_EQ(coord_->StatusJson(now_)["job"]["checkpoints"]["consecutive_failures"], 0);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
}

// The deploy timeout applies to the new attempt a rescale deploys; the job then restarts per
// its restart strategy (from the rescale's checkpoint, at the new parallelism).
TEST_F(RecoveryTest, ADeployThatTimesOutAfterARescaleRestartsTheJob) {
  RunOnWorkers(Spec(2, 60'000), 1);
  coord_->OnMessage("cli", RescaleRequest{3, false, 5000, RescaleRequest::Via::kCheckpoint}, now_);
  auto rescale_checkpoint = outbox_.Last<TriggerCheckpoint>("w0");
  ASSERT_TRUE(rescale_checkpoint.has_value());
  EXPECT_EQ(rescale_checkpoint->type, CheckpointType::kCheckpoint);
  AckAll({"w0", "w1"});
  ASSERT_EQ(coord_->job()->attempt().value(), 2);
  const size_t replies = outbox_.To<Reply>("cli").size();
  for (const char* w : {"w0", "w1"}) {  // w2 never answers its DeployTask
    auto d = outbox_.Last<DeployTask>(w);
    TaskDeployed r{ids_[w], AttemptNumber(2), d->subtask, {"tcp://x:1", "tcp://x:1", "tcp://x:1"}};
    coord_->OnMessage(w, r, now_);
  }
  Advance(4900);
  EXPECT_EQ(coord_->job()->state(), JobState::kDeploying);
  Advance(200);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(coord_->job()->StatusJson(now_)["last_failure"].get<std::string>().rfind(
                "deployment timed out after 5000 ms waiting for ", 0),
            0u);
  ASSERT_EQ(outbox_.To<Reply>("cli").size(), replies + 1);
  EXPECT_FALSE(outbox_.Last<Reply>("cli")->ok);
  EXPECT_NE(outbox_.Last<Reply>("cli")->message.find("the rescale was interrupted"),
            std::string::npos);
  Advance(1000);
  auto d = outbox_.Last<DeployTask>("w2");
  ASSERT_EQ(d->attempt.value(), 3);
  EXPECT_EQ(d->spec.parallelism, 3);
  ASSERT_TRUE(d->restore.has_value());
  EXPECT_EQ(d->restore->checkpoint, rescale_checkpoint->checkpoint);
}

}  // namespace
}  // namespace keyflow
