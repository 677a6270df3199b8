// CheckpointCoordinator with incremental acknowledgements (issue 11), driven message by message:
// the shared directory in triggers, reference counting through completion, retention, aborts,
// late acks and a coordinator restart.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <optional>

#include "checkpoint/checkpoint_coordinator.h"
#include "checkpoint/state_assignment.h"
#include "common/file_io.h"
#include "tests/checkpoint/checkpoint_coordinator_fixture.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

constexpr int32_t kM = 8;
constexpr int32_t kP = 2;
const AttemptNumber kAttempt(1);

class IncrementalCheckpointCoordinatorTest : public ckpt_test::CheckpointCoordinatorFixture {
 protected:
  IncrementalCheckpointCoordinatorTest()
      : CheckpointCoordinatorFixture("job-inc", kM, kP, kAttempt, "ckpt-inc") {
    Make(/*retained=*/1);
  }

  void Make(int32_t retained, int64_t first_id = 1, bool incremental = true) {
    CheckpointConfig config;
    config.retained = retained;
    config.max_concurrent = 3;
    JobSpec spec = ckpt_test::TestSpec(kM, kP);
    spec.incremental_checkpoints = incremental;
    CreateCoordinator(spec, config, first_id);
  }

  // A shared file of `size` bytes written into the job's shared directory.
  // Two completed checkpoints with retention 2, each with its own shared file x-0.kgs /
  // x-10.kgs, then a new attempt with retention 1 (first id 3): what it recovers.
  std::vector<CheckpointLocation> TwoCheckpointsThenRetentionOne() {
    Make(/*retained=*/2);
    for (int64_t at : {0, 10}) {
      SharedStateFile x = Shared("x-" + std::to_string(at) + ".kgs", 10);
      Checkpoint(at, {x}, {x});
    }
    auto completed = storage_.ListCompletedCheckpoints(kJob);
    EXPECT_OK(completed);
    EXPECT_EQ(completed.ok() ? completed->size() : 0u, 2u);
    Make(/*retained=*/1, /*first_id=*/3);
    return completed.ok() ? *completed : std::vector<CheckpointLocation>{};
  }
  SharedStateFile Shared(const std::string& name, uint64_t size) {
    EXPECT_OK(CreateDirectories(SharedDir()));
    EXPECT_OK(WriteFileAtomically(SharedDir() + "/" + name, std::string(size, 's')));
    return SharedStateFile{name, size, 0xC000 + size};
  }
  bool SharedExists(const std::string& name) { return PathExists(SharedDir() + "/" + name); }
  // Those of `names` that exist in the shared directory, in the order given.
  std::vector<std::string> ExistingShared(const std::vector<std::string>& names) {
    std::vector<std::string> existing;
    for (const std::string& name : names) {
      if (SharedExists(name)) existing.push_back(name);
    }
    return existing;
  }
  std::string SharedDir() { return storage_.SharedDirectory(kJob); }

  AcknowledgeCheckpoint Ack(int64_t id, int32_t subtask, std::vector<SharedStateFile> files,
                            uint64_t written) {
    AcknowledgeCheckpoint a = AckHeader(id, subtask);
    a.keyed_state =
        ckpt_test::TestIncrementalHandle(ranges_[static_cast<size_t>(subtask)], std::move(files));
    a.written_bytes = written;
    return a;
  }
  int64_t Trigger(int64_t now_ms, CheckpointType type = CheckpointType::kCheckpoint) {
    auto r = cc().Trigger(now_ms, type, "");
    EXPECT_OK(r);
    if (!r.ok()) return -1;
    const auto& t = std::get<TriggerCheckpoint>(r->front().message);
    last_trigger_ = t;
    return t.checkpoint.value();
  }

  // The first checkpoint most tests start from, triggered at 0 and complete: subtask 0 writes
  // a-1.kgs (100 bytes), subtask 1 b-1.kgs (200 bytes).
  struct FirstCheckpoint {
    int64_t id;
    SharedStateFile a1, b1;
  };
  FirstCheckpoint CompleteFirstCheckpoint() {
    SharedStateFile a1 = Shared("a-1.kgs", 100), b1 = Shared("b-1.kgs", 200);
    int64_t id1 = Trigger(0);
    cc().OnAcknowledge(Ack(id1, 0, {a1}, 100), 1);
    cc().OnAcknowledge(Ack(id1, 1, {b1}, 200), 2);
    return FirstCheckpoint{id1, a1, b1};
  }

  // Triggers a checkpoint at `now_ms` that both subtasks acknowledge with these files; returns
  // its id.
  int64_t Checkpoint(int64_t now_ms, std::vector<SharedStateFile> subtask0,
                     std::vector<SharedStateFile> subtask1) {
    int64_t id = Trigger(now_ms);
    cc().OnAcknowledge(Ack(id, 0, std::move(subtask0), 1), now_ms + 1);
    cc().OnAcknowledge(Ack(id, 1, std::move(subtask1), 1), now_ms + 2);
    return id;
  }

  TriggerCheckpoint last_trigger_;
};

TEST_F(IncrementalCheckpointCoordinatorTest, TriggersCarryTheSharedDirectoryExceptForSavepoints) {
  Trigger(0);
  EXPECT_TRUE(last_trigger_.incremental);
  EXPECT_EQ(last_trigger_.shared_directory, tmp_.path() + "/job-inc/shared");
  struct stat st;
  ASSERT_EQ(::stat(SharedDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  Trigger(1, CheckpointType::kSavepoint);
  EXPECT_FALSE(last_trigger_.incremental);
  EXPECT_EQ(last_trigger_.shared_directory, "");
  Trigger(2, CheckpointType::kFinal);
  EXPECT_TRUE(last_trigger_.incremental) << "a final checkpoint may be incremental";

  Make(1, /*first_id=*/10, /*incremental=*/false);
  Trigger(3);
  EXPECT_FALSE(last_trigger_.incremental) << "--incremental false";
  EXPECT_EQ(last_trigger_.shared_directory, "");
}

// chk1 writes new files, chk2 references them, retention 1 keeps them; chk3 no longer uses the
// first ones: they go when chk2 is subsumed.
TEST_F(IncrementalCheckpointCoordinatorTest, RetentionNeverDeletesAFileARetainedCheckpointUses) {
  SharedStateFile a1 = Shared("a-1.kgs", 100), b1 = Shared("b-1.kgs", 200);
  int64_t id1 = Trigger(0);
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id1, 0, {a1}, 100), 1).empty());
  auto done = cc().OnAcknowledge(Ack(id1, 1, {b1}, 200), 2);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(done), 2u);
  ASSERT_EQ(cc().history().front().state, CheckpointState::kCompleted);
  EXPECT_EQ(cc().history().front().written_bytes, 300u);
  EXPECT_EQ(cc().history().front().state_bytes, 300u);

  SharedStateFile a2 = Shared("a-2.kgs", 10);
  int64_t id2 = Trigger(10);
  cc().OnAcknowledge(Ack(id2, 0, {a1, a2}, 10), 11);
  done = cc().OnAcknowledge(Ack(id2, 1, {b1}, 0), 12);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(done), 2u);
  const CheckpointStats& st2 = cc().history().front();
  EXPECT_EQ(st2.written_bytes, 10u);
  EXPECT_EQ(st2.state_bytes, 310u);
  ASSERT_EQ(st2.subtasks.size(), 2u);
  EXPECT_EQ(st2.subtasks[0].written_bytes, 10u);
  EXPECT_EQ(st2.subtasks[0].state_bytes, 110u);
  EXPECT_FALSE(PathExists(Dir(id1))) << "chk-1 subsumed by retention";
  EXPECT_TRUE(SharedExists("a-1.kgs")) << "chk-2 references it";
  EXPECT_TRUE(SharedExists("b-1.kgs"));
  EXPECT_EQ(cc().shared_state().ReferencesOf("a-1.kgs"), (std::vector<int64_t>{id2}));
  auto m2 = CheckpointStorage::ReadMetadata(Dir(id2));
  ASSERT_OK(m2);
  EXPECT_EQ(m2->TotalWrittenBytes(), 10u);
  EXPECT_EQ(m2->TotalStateBytes(), 310u);
  EXPECT_EQ(m2->subtasks[0].keyed_state.shared_files.size(), 2u);
  EXPECT_OK(CheckpointStorage::VerifyStateFiles(Dir(id2), *m2));

  SharedStateFile a3 = Shared("a-3.kgs", 50), b3 = Shared("b-3.kgs", 60);
  int64_t id3 = Trigger(20);
  cc().OnAcknowledge(Ack(id3, 0, {a2, a3}, 50), 21);
  cc().OnAcknowledge(Ack(id3, 1, {b3}, 60), 22);
  EXPECT_FALSE(PathExists(Dir(id2)));
  EXPECT_EQ(ExistingShared({"a-1.kgs", "b-1.kgs", "a-2.kgs", "a-3.kgs", "b-3.kgs"}),
            (std::vector<std::string>{"a-2.kgs", "a-3.kgs", "b-3.kgs"}));
  EXPECT_EQ(cc().shared_state().size(), 3u);
}

TEST_F(IncrementalCheckpointCoordinatorTest, APendingCheckpointThatAcknowledgedAFileProtectsIt) {
  auto [id1, a1, b1] = CompleteFirstCheckpoint();
  // chk2 and chk3 pending; chk3's subtask 0 acknowledges a-1 first, then chk2 completes
  // without it and retention drops chk1.
  int64_t id2 = Trigger(10);
  int64_t id3 = Trigger(11);
  cc().OnAcknowledge(Ack(id3, 0, {a1}, 0), 12);
  SharedStateFile a2 = Shared("a-2.kgs", 10), b2 = Shared("b-2.kgs", 20);
  cc().OnAcknowledge(Ack(id2, 0, {a2}, 10), 13);
  cc().OnAcknowledge(Ack(id2, 1, {b2}, 20), 14);
  EXPECT_FALSE(PathExists(Dir(id1)));
  EXPECT_FALSE(SharedExists("b-1.kgs")) << "nobody references it any more";
  EXPECT_TRUE(SharedExists("a-1.kgs")) << "pending chk3 acknowledged it";
  auto done = cc().OnAcknowledge(Ack(id3, 1, {b2}, 0), 15);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(done), 2u);
  EXPECT_TRUE(SharedExists("a-1.kgs"));
  EXPECT_FALSE(SharedExists("a-2.kgs")) << "chk2 subsumed; chk3 does not use it";
  EXPECT_TRUE(SharedExists("b-2.kgs"));
}

TEST_F(IncrementalCheckpointCoordinatorTest, AnAbortedCheckpointDeletesOnlyItsNewFiles) {
  auto [id1, a1, b1] = CompleteFirstCheckpoint();
  SharedStateFile a2 = Shared("a-2.kgs", 10);
  int64_t id2 = Trigger(10);
  cc().OnAcknowledge(Ack(id2, 0, {a1, a2}, 10), 11);
  auto out = cc().OnDecline(
      DeclineCheckpoint{WorkerId(101), kAttempt, SubtaskIndex(1), CheckpointId(id2), "disk full"},
      12);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 2u);
  EXPECT_FALSE(SharedExists("a-2.kgs")) << "new in the aborted checkpoint";
  EXPECT_TRUE(SharedExists("a-1.kgs")) << "the retained chk1 uses it";
  EXPECT_TRUE(SharedExists("b-1.kgs"));

  // A late ack of the aborted checkpoint (subtask 1 uploaded after the decline): its new file
  // is deleted, the registered ones stay.
  SharedStateFile b2 = Shared("b-2.kgs", 20);
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id2, 1, {b1, b2}, 20), 13).empty());
  EXPECT_FALSE(SharedExists("b-2.kgs"));
  EXPECT_TRUE(SharedExists("b-1.kgs"));

  // Expiry too.
  SharedStateFile a3 = Shared("a-3.kgs", 30);
  int64_t id3 = Trigger(20);
  cc().OnAcknowledge(Ack(id3, 0, {a1, a3}, 30), 21);
  cc().OnTick(20 + CheckpointConfig{}.timeout_ms);
  EXPECT_EQ(cc().history().front().state, CheckpointState::kExpired);
  EXPECT_FALSE(SharedExists("a-3.kgs"));
  EXPECT_TRUE(SharedExists("a-1.kgs"));
  // AbortAll (failover): the same.
  SharedStateFile a4 = Shared("a-4.kgs", 40);
  int64_t id4 = Trigger(1'000'000);
  cc().OnAcknowledge(Ack(id4, 0, {a1, a4}, 40), 1'000'001);
  cc().AbortAll("a worker failed", 1'000'002);
  EXPECT_FALSE(SharedExists("a-4.kgs"));
  EXPECT_TRUE(SharedExists("a-1.kgs"));
}

TEST_F(IncrementalCheckpointCoordinatorTest, AMissingOrResizedSharedFileFailsTheCompletion) {
  SharedStateFile a1 = Shared("a-1.kgs", 100), b1 = Shared("b-1.kgs", 200);
  int64_t id1 = Trigger(0);
  cc().OnAcknowledge(Ack(id1, 0, {a1}, 100), 1);
  ASSERT_OK(RemoveFile(SharedDir() + "/b-1.kgs"));
  auto out = cc().OnAcknowledge(Ack(id1, 1, {b1}, 200), 2);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 2u);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(out), 0u);
  const CheckpointStats& st = cc().history().front();
  EXPECT_EQ(st.state, CheckpointState::kAborted);
  EXPECT_EQ(st.failure, "checkpoint 1 cannot complete: its shared file " + SharedDir() +
                            "/b-1.kgs is missing; a later checkpoint writes the state again "
                            "(check that nothing else deletes files in the shared directory)");
  EXPECT_EQ(cc().consecutive_failures(), 1);
  EXPECT_FALSE(PathExists(Dir(id1)));
  EXPECT_FALSE(SharedExists("a-1.kgs")) << "new in the failed checkpoint";
  EXPECT_FALSE(cc().latest_completed().has_value());

  SharedStateFile a2 = Shared("a-2.kgs", 100);
  SharedStateFile b2 = Shared("b-2.kgs", 200);
  int64_t id2 = Trigger(10);
  cc().OnAcknowledge(Ack(id2, 0, {a2}, 100), 11);
  ASSERT_OK(WriteFileAtomically(SharedDir() + "/b-2.kgs", std::string(199, 's')));
  cc().OnAcknowledge(Ack(id2, 1, {b2}, 200), 12);
  EXPECT_NE(cc().history().front().failure.find("b-2.kgs has 199 bytes, the acknowledgement says "
                                                "200"),
            std::string::npos)
      << cc().history().front().failure;
}

TEST_F(IncrementalCheckpointCoordinatorTest, InvalidIncrementalAcksAbortTheCheckpoint) {
  auto aborted_with = [&](AcknowledgeCheckpoint ack, const std::string& needle) {
    const int64_t id = ack.checkpoint.value();
    auto out = cc().OnAcknowledge(ack, 1);
    EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 2u) << needle;
    EXPECT_EQ(cc().history().front().id, CheckpointId(id));
    EXPECT_NE(cc().history().front().failure.find(needle), std::string::npos)
        << cc().history().front().failure;
  };
  SharedStateFile a1 = Shared("a-1.kgs", 100);
  int64_t sp = Trigger(0, CheckpointType::kSavepoint);
  aborted_with(Ack(sp, 0, {a1}, 100),
               "subtask 0 acknowledged checkpoint " + std::to_string(sp) +
                   " with an invalid state handle: it references shared files, but the trigger "
                   "asked for a savepoint, which must be self-contained");
  EXPECT_TRUE(SharedExists("a-1.kgs")) << "not registered: not deleted";

  AcknowledgeCheckpoint bad_name = Ack(Trigger(0), 0, {a1}, 100);
  bad_name.keyed_state.shared_files[0].name = "../a-1.kgs";
  aborted_with(bad_name, "shared file name '../a-1.kgs' is not a plain file name");
  EXPECT_TRUE(SharedExists("a-1.kgs"));

  AcknowledgeCheckpoint short_blocks = Ack(Trigger(0), 1, {a1}, 100);
  short_blocks.keyed_state.block_file.pop_back();
  aborted_with(short_blocks, "subtask 1 must have one block file index per key group (4), has 3");

  // Every subtask native or none: found when the last ack arrives.
  SharedStateFile sst = Shared("s-0.sst", 1000);
  int64_t mixed = Trigger(0);
  AcknowledgeCheckpoint native = Ack(mixed, 0, {a1}, 1000);
  native.native_state = ckpt_test::TestNativeHandle(0, ranges_[0], {sst});
  ASSERT_OK(CreateDirectories(Dir(mixed) + "/subtask-0-db"));
  EXPECT_TRUE(cc().OnAcknowledge(native, 1).empty());
  aborted_with(Ack(mixed, 1, {Shared("b-1.kgs", 5)}, 5),
               "checkpoint " + std::to_string(mixed) +
                   " cannot complete: its acknowledgements do not form a valid checkpoint: "
                   "subtask 1 has no native state but subtask 0 has");
  EXPECT_FALSE(SharedExists("s-0.sst"));
  EXPECT_FALSE(SharedExists("b-1.kgs"));

  Make(1, 100, /*incremental=*/false);
  aborted_with(Ack(Trigger(0), 0, {a1}, 100), "the trigger asked for a full checkpoint");
}

TEST_F(IncrementalCheckpointCoordinatorTest, NativeHandlesReachTheMetadataAndTheRestore) {
  SharedStateFile s0 = Shared("s-0-7.sst", 1000), s1 = Shared("s-1-7.sst", 2000);
  int64_t id = Trigger(0);
  for (int32_t i = 0; i < kP; ++i) {
    AcknowledgeCheckpoint a = AckHeader(id, i);
    // Timers in a full canonical file, keyed state native.
    a.keyed_state = ckpt_test::TestHandle(CheckpointStorage::SubtaskStateFileName(SubtaskIndex(i)),
                                          ranges_[static_cast<size_t>(i)]);
    a.native_state =
        ckpt_test::TestNativeHandle(i, ranges_[static_cast<size_t>(i)], {i == 0 ? s0 : s1});
    a.written_bytes = 3000;
    cc().OnAcknowledge(a, 1 + i);
  }
  ASSERT_EQ(cc().history().front().state, CheckpointState::kCompleted)
      << cc().history().front().failure;
  auto m = CheckpointStorage::ReadMetadata(Dir(id));
  ASSERT_OK(m);
  ASSERT_TRUE(m->subtasks[1].native_state.has_value());
  EXPECT_EQ(m->subtasks[1].native_state->shared_files[0].name, "s-1-7.sst");
  EXPECT_EQ(m->TotalWrittenBytes(), 6000u);

  // Rescale 2 -> 3: new subtask 1 (key groups 3-5) overlaps both old subtasks.
  auto assignments = AssignState(*m, Dir(id), 3);
  ASSERT_EQ(assignments.size(), 3u);
  const RestoreAssignment& r1 = assignments[1];
  ASSERT_EQ(r1.keyed_state.size(), 2u);
  ASSERT_EQ(r1.native_state.size(), 2u);
  EXPECT_EQ(r1.native_state[0].range, ranges_[0]);
  EXPECT_EQ(r1.native_state[1].range, ranges_[1]);
  EXPECT_EQ(r1.keyed_state[1].path, Dir(id) + "/subtask-1.kgs");
  EXPECT_EQ(r1.native_state[1].private_files[0].path, "subtask-1-db/MANIFEST-000001")
      << "relative to checkpoint_dir";
  EXPECT_EQ(r1.shared_dir, SharedDir());
  EXPECT_EQ(assignments[0].native_state.size(), 1u);
}

TEST_F(IncrementalCheckpointCoordinatorTest, AssignStateKeepsTheEmptyPathOfIncrementalHandles) {
  auto [id, a1, b1] = CompleteFirstCheckpoint();
  auto m = CheckpointStorage::ReadMetadata(Dir(id));
  ASSERT_OK(m);
  auto same = AssignState(*m, Dir(id), kP);
  EXPECT_EQ(same[0].keyed_state[0].path, "");
  EXPECT_EQ(same[0].keyed_state[0].shared_files[0].name, "a-1.kgs");
  EXPECT_TRUE(same[0].native_state.empty());
  EXPECT_EQ(same[1].shared_dir, SharedDir());
  // A full checkpoint: no shared directory.
  auto full = AssignState(ckpt_test::TestMetadata(kM, kP), Dir(id), kP);
  EXPECT_EQ(full[0].shared_dir, "");
}

// A restarted coordinator (a new attempt, or the coordinator process) rebuilds the registry from
// the retained checkpoints, applies retention and deletes what nothing references.
TEST_F(IncrementalCheckpointCoordinatorTest, RecoveryRebuildsTheRegistryAndDeletesOrphans) {
  Make(/*retained=*/2);
  auto [id1, a1, b1] = CompleteFirstCheckpoint();
  SharedStateFile a2 = Shared("a-2.kgs", 10);
  int64_t id2 = Trigger(10);
  cc().OnAcknowledge(Ack(id2, 0, {a2}, 10), 11);
  cc().OnAcknowledge(Ack(id2, 1, {b1}, 0), 12);
  // The coordinator dies while chk3 uploads: its files stay behind.
  Trigger(20);
  Shared("a-3.kgs", 7);
  Shared("b-3.kgs", 9);

  Make(/*retained=*/1, /*first_id=*/4);
  auto completed = storage_.ListCompletedCheckpoints(kJob);
  ASSERT_OK(completed);
  ASSERT_EQ(completed->size(), 2u);
  cc().RecoverCompleted(*completed);
  EXPECT_FALSE(PathExists(Dir(id1))) << "retention 1";
  EXPECT_FALSE(SharedExists("a-1.kgs")) << "only chk1 used it";
  EXPECT_TRUE(SharedExists("b-1.kgs")) << "chk2 uses it";
  EXPECT_TRUE(SharedExists("a-2.kgs"));
  EXPECT_FALSE(SharedExists("a-3.kgs")) << "orphan of the chk3 that never completed";
  EXPECT_FALSE(SharedExists("b-3.kgs"));
  EXPECT_EQ(cc().shared_state().ReferencesOf("b-1.kgs"), (std::vector<int64_t>{id2}));

  // The next checkpoint references chk2's files and completes; then chk2's go.
  SharedStateFile a4 = Shared("a-4.kgs", 40), b4 = Shared("b-4.kgs", 50);
  int64_t id4 = Trigger(30);
  EXPECT_EQ(id4, 4);
  cc().OnAcknowledge(Ack(id4, 0, {a4}, 40), 31);
  cc().OnAcknowledge(Ack(id4, 1, {b1, b4}, 50), 32);
  EXPECT_EQ(ExistingShared({"a-2.kgs", "b-1.kgs", "a-4.kgs"}),
            (std::vector<std::string>{"b-1.kgs", "a-4.kgs"}));
}

// Retained 1 after a crash between "chk3 completed" and "chk2 deleted": both are on disk, chk3 is
// corrupt, the new attempt restores chk2. Retention must not delete the restore point (nor its
// shared files) before a newer checkpoint completes; chk3 stays on disk for the user, never
// counted as retained, and goes with chk2 once chk4 completes.
TEST_F(IncrementalCheckpointCoordinatorTest, ARestoredCheckpointSurvivesRetentionUntilANewerOne) {
  Make(/*retained=*/2);
  SharedStateFile x1 = Shared("x-1.kgs", 11), y1 = Shared("y-1.kgs", 12);
  int64_t id1 = Checkpoint(0, {x1}, {y1});
  SharedStateFile x2 = Shared("x-2.kgs", 21), y2 = Shared("y-2.kgs", 22);
  int64_t id2 = Checkpoint(10, {x1, x2}, {y2});
  SharedStateFile x3 = Shared("x-3.kgs", 31), y3 = Shared("y-3.kgs", 32);
  int64_t id3 = Checkpoint(20, {x2, x3}, {y3});
  ASSERT_FALSE(PathExists(Dir(id1)));
  ASSERT_FALSE(SharedExists("y-1.kgs"));
  auto completed = storage_.ListCompletedCheckpoints(kJob);
  ASSERT_OK(completed);
  ASSERT_EQ(completed->size(), 2u);
  Shared("orphan-3.kgs", 5);  // an upload of a checkpoint that never completed

  // Without protection, retention 1 would delete the restore point right away.
  Make(/*retained=*/1, /*first_id=*/4);
  CheckpointCoordinator::RecoverOptions recover;
  recover.restore = Dir(id2);
  recover.unrestorable = {Dir(id3)};
  cc().RecoverCompleted(*completed, recover);
  EXPECT_TRUE(PathExists(Dir(id2) + "/_metadata")) << "the restore point";
  for (const char* name : {"x-1.kgs", "x-2.kgs", "y-2.kgs"}) {
    EXPECT_TRUE(SharedExists(name)) << name << " is referenced by the restore point";
  }
  EXPECT_TRUE(PathExists(Dir(id3) + "/_metadata")) << "kept for the user";
  EXPECT_EQ(ExistingShared({"x-3.kgs", "y-3.kgs", "orphan-3.kgs"}),
            (std::vector<std::string>{"x-3.kgs", "y-3.kgs"}));
  ASSERT_TRUE(cc().latest_completed().has_value());
  EXPECT_EQ(cc().latest_completed()->id.value(), id2) << "never the corrupt one";
  ASSERT_EQ(cc().retained_checkpoints().size(), 1u);

  // chk4 (restored from chk2) references chk2's x-1 and y-2; when it completes, chk2 and chk3 go
  // with the files only they used.
  SharedStateFile x4 = Shared("x-4.kgs", 41);
  int64_t id4 = Trigger(30);
  EXPECT_EQ(id4, 4);
  cc().OnAcknowledge(Ack(id4, 0, {x1, x4}, 41), 31);
  auto done = cc().OnAcknowledge(Ack(id4, 1, {y2}, 0), 32);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(done), 2u);
  EXPECT_FALSE(PathExists(Dir(id2)));
  EXPECT_FALSE(PathExists(Dir(id3)));
  EXPECT_EQ(ExistingShared({"x-2.kgs", "x-3.kgs", "y-3.kgs", "x-1.kgs", "y-2.kgs", "x-4.kgs"}),
            (std::vector<std::string>{"x-1.kgs", "y-2.kgs", "x-4.kgs"}));
  EXPECT_EQ(cc().shared_state().size(), 3u);
  EXPECT_EQ(cc().retained_checkpoints().size(), 1u);
}

// The same recovery without options: retention 1 deletes chk2 (what the job master used to do
// while restoring from it).
TEST_F(IncrementalCheckpointCoordinatorTest, WithoutARestorePointRetentionAppliesAtRecovery) {
  cc().RecoverCompleted(TwoCheckpointsThenRetentionOne());
  EXPECT_FALSE(PathExists(Dir(1)));
  EXPECT_FALSE(SharedExists("x-0.kgs"));
  EXPECT_TRUE(SharedExists("x-10.kgs"));
}

// RecoverOptions name checkpoints by directory: another job's chk-1 restored --from-savepoint and
// another job's corrupt chk-2 share ids with this job's own, which are neither protected nor
// unrestorable because of them.
TEST_F(IncrementalCheckpointCoordinatorTest, AnotherJobsCheckpointsWithTheSameIdsChangeNothing) {
  std::vector<CheckpointLocation> completed = TwoCheckpointsThenRetentionOne();
  CheckpointCoordinator::RecoverOptions recover;
  recover.restore = "/elsewhere/other-job/chk-1";
  recover.unrestorable = {"/elsewhere/other-job/chk-2"};
  cc().RecoverCompleted(completed, recover);
  EXPECT_FALSE(PathExists(Dir(1))) << "retention 1, and this job's chk-1 is no restore point";
  EXPECT_FALSE(SharedExists("x-0.kgs"));
  EXPECT_TRUE(PathExists(Dir(2) + "/_metadata"));
  ASSERT_TRUE(cc().latest_completed().has_value()) << "chk-2 is restorable";
  EXPECT_EQ(cc().latest_completed()->id.value(), 2);
}

// An upload of the previous attempt that finishes after the recovery sweep: its ack is ignored
// and the files nothing references are deleted; a file a retained checkpoint uses stays.
TEST_F(IncrementalCheckpointCoordinatorTest, AnAckOfAnEarlierAttemptDeletesOnlyItsNewFiles) {
  SharedStateFile x1 = Shared("x-1.kgs", 10), y1 = Shared("y-1.kgs", 20);
  int64_t id1 = Checkpoint(0, {x1}, {y1});
  Trigger(10);  // chk2 of attempt 1, aborted by the failover
  cc().AbortAll("the attempt failed", 11);
  auto completed = storage_.ListCompletedCheckpoints(kJob);
  ASSERT_OK(completed);
  CheckpointConfig config;
  config.retained = 1;
  config.max_concurrent = 3;
  coordinator_.emplace(kJob, ckpt_test::TestSpec(kM, kP), AttemptNumber(2), config, &storage_,
                       &clock_, /*first_id=*/3);
  cc().RecoverCompleted(*completed, {Dir(id1), {}});
  int64_t id3 = Trigger(20);
  SharedStateFile x3 = Shared("x-3.kgs", 30);  // attempt 2's upload, not yet acknowledged
  SharedStateFile x2 = Shared("x-2.kgs", 7);   // attempt 1's, written after the sweep
  AcknowledgeCheckpoint stale = Ack(2, 0, {x1, x2}, 7);
  ASSERT_EQ(stale.attempt, kAttempt);
  EXPECT_TRUE(cc().OnAcknowledge(stale, 21).empty());
  EXPECT_FALSE(SharedExists("x-2.kgs"));
  EXPECT_TRUE(SharedExists("x-1.kgs")) << "chk1 (retained) references it";
  EXPECT_TRUE(SharedExists("x-3.kgs"));
  AcknowledgeCheckpoint a = Ack(id3, 0, {x1, x3}, 30), b = Ack(id3, 1, {y1}, 0);
  a.attempt = b.attempt = AttemptNumber(2);
  cc().OnAcknowledge(a, 22);
  auto done = cc().OnAcknowledge(b, 23);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(done), 2u);
  EXPECT_EQ(cc().latest_completed()->id.value(), id3);
}

}  // namespace
}  // namespace keyflow
