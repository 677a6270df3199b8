#include "checkpoint/checkpoint_coordinator.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "common/file_io.h"
#include "tests/checkpoint/checkpoint_coordinator_fixture.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/testutil/file_modes.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

constexpr int32_t kM = 8;
constexpr int32_t kP = 3;
const AttemptNumber kAttempt(2);

class CheckpointCoordinatorTest : public ckpt_test::CheckpointCoordinatorFixture {
 protected:
  CheckpointCoordinatorTest()
      : CheckpointCoordinatorFixture("job-7", kM, kP, kAttempt, "ckpt-coord") {
    MakeCoordinator(CheckpointConfig{});
  }

  void MakeCoordinator(CheckpointConfig config, int64_t first_id = 1) {
    CreateCoordinator(ckpt_test::TestSpec(kM, kP), config, first_id);
  }

  AcknowledgeCheckpoint Ack(int64_t id, int32_t subtask) {
    AcknowledgeCheckpoint a = AckHeader(id, subtask);
    a.keyed_state = ckpt_test::TestHandle(
        CheckpointStorage::SubtaskStateFileName(SubtaskIndex(subtask)), ranges_[subtask]);
    a.split_positions = {{"split-" + std::to_string(subtask), std::to_string(100 * id)}};
    a.sink_committables = {"c-" + std::to_string(subtask) + "-" + std::to_string(id)};
    a.sync_duration_us = 10 * (subtask + 1);
    a.async_duration_us = 1000 + subtask;
    a.alignment_duration_us = 7;
    return a;
  }
  DeclineCheckpoint Decline(int64_t id, int32_t subtask, std::string reason) {
    return DeclineCheckpoint{WorkerId(100 + subtask), kAttempt, SubtaskIndex(subtask),
                             CheckpointId(id), std::move(reason)};
  }

  // Triggers a checkpoint (or savepoint) and returns its id.
  int64_t TriggerOk(int64_t now_ms, bool savepoint = false,
                    CheckpointCoordinator::RequestCallback cb = nullptr,
                    const std::string& dir = "") {
    auto r =
        cc().Trigger(now_ms, savepoint ? CheckpointType::kSavepoint : CheckpointType::kCheckpoint,
                     dir, std::move(cb));
    EXPECT_OK(r);
    if (!r.ok() || r->empty()) return -1;
    return std::get<TriggerCheckpoint>(r->front().message).checkpoint.value();
  }
  // Acks from every subtask; returns the messages of the last ack.
  std::vector<Outgoing> AckAll(int64_t id, int64_t now_ms) {
    std::vector<Outgoing> last;
    for (int32_t i = 0; i < kP; ++i) {
      auto out = cc().OnAcknowledge(Ack(id, i), now_ms);
      if (i + 1 < kP) {
        EXPECT_TRUE(out.empty()) << "subtask " << i;
      }
      last = std::move(out);
    }
    return last;
  }
  std::string SavepointDir(int64_t id) {
    return storage_.SavepointDirectory(kJob, CheckpointId(id));
  }
  static std::vector<int64_t> TriggeredIds(const std::vector<Outgoing>& out) {
    std::vector<int64_t> ids;
    for (const Outgoing& o : out) {
      if (auto* t = std::get_if<TriggerCheckpoint>(&o.message)) {
        if (o.subtask.value() == 0) ids.push_back(t->checkpoint.value());
      }
    }
    return ids;
  }
};

TEST_F(CheckpointCoordinatorTest, TriggerCreatesTheDirectoryAndOneTriggerPerSubtask) {
  auto out = cc().Trigger(/*now_ms=*/50, CheckpointType::kCheckpoint, "");
  ASSERT_OK(out);
  ASSERT_EQ(out->size(), static_cast<size_t>(kP));
  for (int32_t i = 0; i < kP; ++i) {
    const Outgoing& o = (*out)[static_cast<size_t>(i)];
    EXPECT_EQ(o.subtask, SubtaskIndex(i));
    const auto& t = std::get<TriggerCheckpoint>(o.message);
    EXPECT_EQ(t.attempt, kAttempt);
    EXPECT_EQ(t.checkpoint, CheckpointId(1));
    EXPECT_EQ(t.timestamp_ms, 1'700'000'000'000);  // wall clock, not now_ms
    EXPECT_EQ(t.type, CheckpointType::kCheckpoint);
    EXPECT_EQ(t.directory, tmp_.path() + "/job-7/chk-1");
  }
  EXPECT_TRUE(std::filesystem::is_directory(Dir(1)));
  EXPECT_EQ(cc().num_pending(), 1u);
  ASSERT_EQ(cc().PendingStats().size(), 1u);
  EXPECT_EQ(cc().PendingStats()[0].state, CheckpointState::kPending);
}

TEST_F(CheckpointCoordinatorTest, IdsStartAtFirstIdAndIncrease) {
  MakeCoordinator(CheckpointConfig{}, /*first_id=*/5);
  EXPECT_EQ(cc().next_id(), 5);
  EXPECT_EQ(TriggerOk(0), 5);
  AckAll(5, 1);
  EXPECT_EQ(TriggerOk(2, /*savepoint=*/true), 6);
  EXPECT_EQ(TriggerOk(3), 7);  // concurrently with the savepoint
  EXPECT_EQ(cc().next_id(), 8);
}

TEST_F(CheckpointCoordinatorTest, AllAcksWriteMetadataThenNotifyEverySubtask) {
  clock_.Set(Timestamp(1000));
  std::optional<Result<CheckpointLocation>> done;
  int64_t id =
      TriggerOk(100, false, [&](const Result<CheckpointLocation>& r, int64_t) { done = r; });
  clock_.Set(Timestamp(1250));
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 2), 110).empty());
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 0), 120).empty());
  EXPECT_FALSE(PathExists(Dir(id) + "/_metadata")) << "not complete before the last ack";
  EXPECT_FALSE(done.has_value());
  auto out = cc().OnAcknowledge(Ack(id, 1), 130);

  ASSERT_EQ(out.size(), static_cast<size_t>(kP));
  for (int32_t i = 0; i < kP; ++i) {
    EXPECT_EQ(out[static_cast<size_t>(i)].subtask, SubtaskIndex(i));
    const auto& n = std::get<NotifyCheckpointComplete>(out[static_cast<size_t>(i)].message);
    EXPECT_EQ(n.attempt, kAttempt);
    EXPECT_EQ(n.checkpoint, CheckpointId(id));
  }
  auto m = CheckpointStorage::ReadMetadata(Dir(id));
  ASSERT_OK(m);
  EXPECT_EQ(m->job_id, kJob);
  EXPECT_EQ(m->id, CheckpointId(1));
  EXPECT_EQ(m->timestamp_ms, 1000);
  EXPECT_EQ(m->completed_ms, 1250);
  EXPECT_FALSE(m->savepoint);
  EXPECT_EQ(m->attempt, kAttempt);
  EXPECT_EQ(m->spec.job_name, "count-window");
  ASSERT_EQ(m->subtasks.size(), 3u);
  for (int32_t i = 0; i < kP; ++i) {
    const auto& h = m->subtasks[static_cast<size_t>(i)].keyed_state;
    EXPECT_EQ(m->subtasks[static_cast<size_t>(i)].subtask, SubtaskIndex(i));
    EXPECT_EQ(h.path, "subtask-" + std::to_string(i) + ".kgs");
    EXPECT_EQ(h.range, ranges_[static_cast<size_t>(i)]);
    EXPECT_EQ(h.lengths, Ack(id, i).keyed_state.lengths);
  }
  EXPECT_EQ(m->split_positions, (std::map<std::string, std::string>{
                                    {"split-0", "100"}, {"split-1", "100"}, {"split-2", "100"}}));
  EXPECT_EQ(m->sink_committables, (std::vector<std::string>{"c-2-1", "c-0-1", "c-1-1"}));

  ASSERT_TRUE(done.has_value());
  ASSERT_TRUE(done->ok());
  EXPECT_EQ((*done)->id, CheckpointId(1));
  EXPECT_EQ((*done)->directory, Dir(1));
  ASSERT_TRUE(cc().latest_completed().has_value());
  EXPECT_EQ(cc().latest_completed()->id, CheckpointId(1));
  EXPECT_EQ(cc().num_pending(), 0u);
  ASSERT_EQ(cc().history().size(), 1u);
  const CheckpointStats& s = cc().history().front();
  EXPECT_EQ(s.state, CheckpointState::kCompleted);
  EXPECT_EQ(s.duration_ms, 30);
  EXPECT_EQ(s.trigger_wall_ms, 1000);
  EXPECT_EQ(s.acknowledged, 3);
  EXPECT_EQ(s.state_bytes, m->TotalStateBytes());
  EXPECT_EQ(s.max_sync_us, 30);
  EXPECT_EQ(s.max_async_us, 1002);
  EXPECT_EQ(s.max_alignment_us, 7);
}

TEST_F(CheckpointCoordinatorTest, AbsoluteHandlePathInsideTheDirectoryIsStoredRelative) {
  int64_t id = TriggerOk(0);
  AcknowledgeCheckpoint a = Ack(id, 0);
  a.keyed_state.path = Dir(id) + "/subtask-0.kgs";
  EXPECT_TRUE(cc().OnAcknowledge(a, 1).empty());
  cc().OnAcknowledge(Ack(id, 1), 1);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(cc().OnAcknowledge(Ack(id, 2), 1)), 3u);
  EXPECT_EQ(CheckpointStorage::ReadMetadata(Dir(id))->subtasks[0].keyed_state.path,
            "subtask-0.kgs");
}

TEST_F(CheckpointCoordinatorTest, DuplicateAcksAreIgnored) {
  int64_t id = TriggerOk(0);
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 0), 1).empty());
  AcknowledgeCheckpoint again = Ack(id, 0);
  again.keyed_state.checksum = 999;
  EXPECT_TRUE(cc().OnAcknowledge(again, 2).empty());
  EXPECT_TRUE(cc().OnAcknowledge(again, 2).empty());
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 1), 3).empty()) << "two duplicates did not complete it";
  EXPECT_EQ(Count<NotifyCheckpointComplete>(cc().OnAcknowledge(Ack(id, 2), 4)), 3u);
  EXPECT_EQ(CheckpointStorage::ReadMetadata(Dir(id))->subtasks[0].keyed_state.checksum,
            Ack(id, 0).keyed_state.checksum)
      << "the first ack counts";
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 2), 5).empty()) << "ack after completion";
}

TEST_F(CheckpointCoordinatorTest, AcksOfAnOlderAttemptAreIgnored) {
  int64_t id = TriggerOk(0);
  AckAll(id, 1);  // completes 1
  id = TriggerOk(2);
  cc().OnAcknowledge(Ack(id, 0), 3);
  cc().OnAcknowledge(Ack(id, 1), 3);
  AcknowledgeCheckpoint stale = Ack(id, 2);
  stale.attempt = AttemptNumber(1);
  EXPECT_TRUE(cc().OnAcknowledge(stale, 4).empty());
  EXPECT_EQ(cc().num_pending(), 1u);
  EXPECT_FALSE(PathExists(Dir(id) + "/_metadata"));
  DeclineCheckpoint stale_decline = Decline(id, 2, "old");
  stale_decline.attempt = AttemptNumber(1);
  EXPECT_TRUE(cc().OnDecline(stale_decline, 4).empty());
  EXPECT_EQ(cc().num_pending(), 1u);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(cc().OnAcknowledge(Ack(id, 2), 5)), 3u);
}

TEST_F(CheckpointCoordinatorTest, AcksForUnknownOrExpiredIdsAndUnknownSubtasksAreIgnored) {
  MakeCoordinator(CheckpointConfig{.timeout_ms = 100});
  EXPECT_TRUE(cc().OnAcknowledge(Ack(42, 0), 0).empty()) << "never triggered";
  int64_t id = TriggerOk(0);
  AcknowledgeCheckpoint stranger = Ack(id, 0);
  stranger.subtask = SubtaskIndex(kP);
  EXPECT_TRUE(cc().OnAcknowledge(stranger, 1).empty());
  cc().OnAcknowledge(Ack(id, 0), 1);
  cc().OnAcknowledge(Ack(id, 1), 1);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(cc().OnTick(100)), 3u);  // expired
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 2), 101).empty()) << "late ack";
  EXPECT_FALSE(PathExists(Dir(id)));
  EXPECT_FALSE(cc().latest_completed().has_value());
  EXPECT_EQ(cc().history().front().state, CheckpointState::kExpired);
}

TEST_F(CheckpointCoordinatorTest, DeclineAbortsOnlyThatCheckpointAndTheNextOneProceeds) {
  std::optional<Status> failure;
  int64_t id = TriggerOk(
      0, false, [&](const Result<CheckpointLocation>& r, int64_t) { failure = r.status(); });
  cc().OnAcknowledge(Ack(id, 0), 1);
  auto out = cc().OnDecline(Decline(id, 1, "snapshot file write failed: disk full"), 5);
  ASSERT_EQ(out.size(), static_cast<size_t>(kP));
  for (int32_t i = 0; i < kP; ++i) {
    EXPECT_EQ(out[static_cast<size_t>(i)].subtask, SubtaskIndex(i));
    const auto& a = std::get<NotifyCheckpointAborted>(out[static_cast<size_t>(i)].message);
    EXPECT_EQ(a.attempt, kAttempt);
    EXPECT_EQ(a.checkpoint, CheckpointId(id));
    EXPECT_EQ(a.reason,
              "checkpoint 1 was declined by subtask 1: snapshot file write failed: "
              "disk full");
  }
  EXPECT_FALSE(PathExists(Dir(id))) << "the aborted checkpoint's directory is deleted";
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->code(), StatusCode::kAborted);
  EXPECT_EQ(cc().history().front().state, CheckpointState::kAborted);
  EXPECT_EQ(cc().history().front().duration_ms, 5);
  EXPECT_NE(cc().history().front().failure.find("disk full"), std::string::npos);
  EXPECT_TRUE(cc().OnDecline(Decline(id, 2, "again"), 6).empty()) << "second decline: no-op";
  EXPECT_TRUE(cc().OnAcknowledge(Ack(id, 2), 6).empty());

  int64_t next = TriggerOk(10);
  EXPECT_EQ(next, 2);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(AckAll(next, 11)), 3u);
  EXPECT_EQ(cc().latest_completed()->id, CheckpointId(2));
}

TEST_F(CheckpointCoordinatorTest, DeclineLeavesOtherPendingCheckpointsRunning) {
  MakeCoordinator(CheckpointConfig{.max_concurrent = 2});
  int64_t a = TriggerOk(0);
  int64_t b = TriggerOk(1);
  cc().OnAcknowledge(Ack(b, 0), 2);
  auto out = cc().OnDecline(Decline(a, 2, "alignment cancelled"), 3);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 3u);
  EXPECT_EQ(std::get<NotifyCheckpointAborted>(out[0].message).checkpoint, CheckpointId(a));
  EXPECT_EQ(cc().num_pending(), 1u);
  EXPECT_TRUE(PathExists(Dir(b)));
  cc().OnAcknowledge(Ack(b, 1), 4);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(cc().OnAcknowledge(Ack(b, 2), 5)), 3u);
  EXPECT_EQ(cc().latest_completed()->id, CheckpointId(b));
}

TEST_F(CheckpointCoordinatorTest, TimeoutExpiresThePendingCheckpoint) {
  MakeCoordinator(CheckpointConfig{.timeout_ms = 1000});
  std::optional<Status> failure;
  int64_t id = TriggerOk(
      500, false, [&](const Result<CheckpointLocation>& r, int64_t) { failure = r.status(); });
  cc().OnAcknowledge(Ack(id, 0), 600);
  EXPECT_TRUE(cc().OnTick(1499).empty());
  EXPECT_EQ(cc().num_pending(), 1u);
  auto out = cc().OnTick(1500);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 3u);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_NE(std::get<NotifyCheckpointAborted>(out[0].message).reason.find("expired"),
            std::string::npos);
  EXPECT_EQ(cc().num_pending(), 0u);
  EXPECT_FALSE(PathExists(Dir(id)));
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cc().history().front().state, CheckpointState::kExpired);
  EXPECT_EQ(cc().history().front().duration_ms, 1000);
}

TEST_F(CheckpointCoordinatorTest, MaxConcurrentIsHonouredForCheckpointsButNotSavepoints) {
  int64_t first = TriggerOk(0);
  auto second = cc().Trigger(1, CheckpointType::kCheckpoint, "");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("too many concurrent checkpoints"), std::string::npos);
  EXPECT_EQ(TriggerOk(2, /*savepoint=*/true), 2) << "savepoints bypass max concurrent";
  EXPECT_EQ(cc().next_id(), 3) << "a refused trigger uses no id";
  AckAll(first, 3);
  EXPECT_EQ(TriggerOk(4), 3);
}

TEST_F(CheckpointCoordinatorTest, PeriodicTriggersStopAtMaxConcurrent) {
  MakeCoordinator(CheckpointConfig{.interval_ms = 100, .max_concurrent = 2});
  EXPECT_TRUE(cc().OnTick(0).empty());
  EXPECT_EQ(TriggeredIds(cc().OnTick(100)), std::vector<int64_t>{1});
  EXPECT_EQ(TriggeredIds(cc().OnTick(200)), std::vector<int64_t>{2});
  EXPECT_TRUE(cc().OnTick(300).empty());
  EXPECT_TRUE(cc().OnTick(1000).empty());
  EXPECT_EQ(cc().num_pending(), 2u);
  AckAll(2, 1001);  // completes 2, subsumes 1
  EXPECT_EQ(cc().num_pending(), 0u);
  EXPECT_EQ(TriggeredIds(cc().OnTick(1002)), std::vector<int64_t>{3});
}

TEST_F(CheckpointCoordinatorTest, IntervalIsMeasuredFromThePreviousTrigger) {
  MakeCoordinator(CheckpointConfig{.interval_ms = 1000});
  EXPECT_TRUE(cc().OnTick(0).empty()) << "the first tick starts the clock";
  EXPECT_TRUE(cc().OnTick(999).empty());
  auto out = cc().OnTick(1000);
  EXPECT_EQ(TriggeredIds(out), std::vector<int64_t>{1});
  EXPECT_EQ(out.size(), static_cast<size_t>(kP));
  AckAll(1, 1200);
  EXPECT_TRUE(cc().OnTick(1999).empty());
  EXPECT_EQ(TriggeredIds(cc().OnTick(2000)), std::vector<int64_t>{2});
  AckAll(2, 2001);
  // A tick that comes late triggers once, and the next interval counts from then.
  EXPECT_EQ(TriggeredIds(cc().OnTick(3500)), std::vector<int64_t>{3});
  AckAll(3, 3501);
  EXPECT_TRUE(cc().OnTick(4499).empty());
  EXPECT_EQ(TriggeredIds(cc().OnTick(4500)), std::vector<int64_t>{4});
}

TEST_F(CheckpointCoordinatorTest, NoPeriodicCheckpointsWithoutAnInterval) {
  EXPECT_TRUE(cc().OnTick(0).empty());
  EXPECT_TRUE(cc().OnTick(10'000'000).empty());
  EXPECT_EQ(cc().num_pending(), 0u);
}

TEST_F(CheckpointCoordinatorTest, MinPauseIsMeasuredFromTheLastCompletion) {
  MakeCoordinator(CheckpointConfig{.interval_ms = 100, .min_pause_ms = 500});
  cc().OnTick(0);
  EXPECT_EQ(TriggeredIds(cc().OnTick(100)), std::vector<int64_t>{1});
  AckAll(1, 400);
  EXPECT_TRUE(cc().OnTick(500).empty()) << "interval passed, pause not";
  EXPECT_TRUE(cc().OnTick(899).empty());
  EXPECT_EQ(TriggeredIds(cc().OnTick(900)), std::vector<int64_t>{2});
}

TEST_F(CheckpointCoordinatorTest, RequestedCheckpointsAndSavepointsBypassMinPause) {
  MakeCoordinator(CheckpointConfig{.interval_ms = 100, .min_pause_ms = 10'000});
  int64_t id = TriggerOk(0);
  AckAll(id, 10);
  EXPECT_EQ(TriggerOk(11), 2) << "requested checkpoint right after a completion";
  EXPECT_EQ(TriggerOk(12, /*savepoint=*/true), 3);
}

TEST_F(CheckpointCoordinatorTest, RetentionKeepsTheNewestCheckpointsAndNeverDeletesSavepoints) {
  MakeCoordinator(CheckpointConfig{.retained = 2});
  for (int64_t id = 1; id <= 6; ++id) {
    EXPECT_EQ(TriggerOk(id * 10, /*savepoint=*/id == 3), id);
    AckAll(id, id * 10 + 1);
  }
  EXPECT_FALSE(PathExists(Dir(1)));
  EXPECT_FALSE(PathExists(Dir(2)));
  EXPECT_FALSE(PathExists(Dir(4)));
  EXPECT_TRUE(PathExists(SavepointDir(3) + "/_metadata"));
  EXPECT_TRUE(PathExists(Dir(5) + "/_metadata"));
  EXPECT_TRUE(PathExists(Dir(6) + "/_metadata"));
  ASSERT_EQ(cc().retained_checkpoints().size(), 2u);
  EXPECT_EQ(cc().retained_checkpoints()[0].id, CheckpointId(5));
  EXPECT_EQ(cc().retained_checkpoints()[1].id, CheckpointId(6));
  auto listed = storage_.ListCompletedCheckpoints(kJob);
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ(listed->back().id, CheckpointId(6));
}

TEST_F(CheckpointCoordinatorTest, RecoveredCheckpointsCountForRetentionAndLatest) {
  // Two checkpoints of an earlier attempt on disk.
  for (int64_t id = 1; id <= 2; ++id) {
    CheckpointCoordinator earlier(kJob, ckpt_test::TestSpec(kM, kP), kAttempt, {}, &storage_,
                                  &clock_, id);
    auto t = earlier.Trigger(0, CheckpointType::kCheckpoint, "");
    ASSERT_OK(t);
    for (int32_t i = 0; i < kP; ++i) earlier.OnAcknowledge(Ack(id, i), 1);
  }
  MakeCoordinator(CheckpointConfig{.retained = 2}, *storage_.MaxUsedId(kJob) + 1);
  cc().RecoverCompleted(*storage_.ListCompletedCheckpoints(kJob));
  EXPECT_EQ(cc().latest_completed()->id, CheckpointId(2));
  int64_t id = TriggerOk(10);
  EXPECT_EQ(id, 3);
  AckAll(id, 11);
  EXPECT_FALSE(PathExists(Dir(1)));
  EXPECT_TRUE(PathExists(Dir(2)));
  EXPECT_TRUE(PathExists(Dir(3)));
}

TEST_F(CheckpointCoordinatorTest, SavepointsGetNoCompletionNotificationButTheirCallbackFires) {
  int64_t before = TriggerOk(0);
  AckAll(before, 1);
  std::optional<Result<CheckpointLocation>> done;
  int64_t id = TriggerOk(2, true, [&](const Result<CheckpointLocation>& r, int64_t) { done = r; });
  auto out = AckAll(id, 3);
  EXPECT_TRUE(out.empty()) << "no NotifyCheckpointComplete for a savepoint";
  ASSERT_TRUE(done.has_value());
  ASSERT_TRUE(done->ok());
  EXPECT_TRUE((*done)->savepoint);
  EXPECT_EQ((*done)->id, CheckpointId(id));
  EXPECT_EQ((*done)->directory, SavepointDir(id));
  auto m = CheckpointStorage::ReadMetadata(SavepointDir(id));
  ASSERT_OK(m);
  EXPECT_TRUE(m->savepoint);
  EXPECT_EQ(cc().latest_completed()->id, CheckpointId(before)) << "savepoints are not stored";
  EXPECT_TRUE(cc().history().front().savepoint);
  EXPECT_EQ(cc().history().front().state, CheckpointState::kCompleted);
}

TEST_F(CheckpointCoordinatorTest, SavepointGoesToTheGivenDirectory) {
  const std::string target = tmp_.File("my-savepoints/sp1");
  std::optional<Result<CheckpointLocation>> done;
  auto t = cc().Trigger(0, CheckpointType::kSavepoint, target,
                        [&](const Result<CheckpointLocation>& r, int64_t) { done = r; });
  ASSERT_OK(t);
  EXPECT_EQ(std::get<TriggerCheckpoint>(t->front().message).directory, target);
  EXPECT_EQ(std::get<TriggerCheckpoint>(t->front().message).type, CheckpointType::kSavepoint);
  AckAll(1, 1);
  ASSERT_TRUE(done.has_value() && done->ok());
  EXPECT_EQ((*done)->directory, target);
  EXPECT_TRUE(PathExists(target + "/_metadata"));

  // A directory that already holds something is refused, and no callback runs.
  bool called = false;
  auto again =
      cc().Trigger(2, CheckpointType::kSavepoint, target, [&](auto, int64_t) { called = true; });
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(called);
  EXPECT_TRUE(PathExists(target + "/_metadata")) << "left untouched";
}

TEST_F(CheckpointCoordinatorTest, CompletionSubsumesOlderPendingCheckpointsButNotSavepoints) {
  MakeCoordinator(CheckpointConfig{.max_concurrent = 3});
  std::optional<Status> first_result;
  int64_t c1 = TriggerOk(
      0, false, [&](const Result<CheckpointLocation>& r, int64_t) { first_result = r.status(); });
  int64_t s2 = TriggerOk(1, true);
  int64_t c3 = TriggerOk(2);
  int64_t c4 = TriggerOk(3);
  cc().OnAcknowledge(Ack(c1, 0), 4);
  auto out = AckAll(c3, 5);
  // Abort notifications of 1 first, then the completion of 3.
  ASSERT_EQ(out.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& a = std::get<NotifyCheckpointAborted>(out[i].message);
    EXPECT_EQ(a.checkpoint, CheckpointId(c1));
    EXPECT_EQ(a.reason, "checkpoint 1 was subsumed by checkpoint 3");
    EXPECT_EQ(std::get<NotifyCheckpointComplete>(out[i + 3].message).checkpoint, CheckpointId(c3));
  }
  ASSERT_TRUE(first_result.has_value());
  EXPECT_EQ(first_result->code(), StatusCode::kAborted);
  EXPECT_FALSE(PathExists(Dir(c1)));
  EXPECT_EQ(cc().num_pending(), 2u) << "savepoint 2 and the newer checkpoint 4 go on";
  auto pending = cc().PendingStats();
  EXPECT_EQ(pending[0].id, CheckpointId(s2));
  EXPECT_EQ(pending[1].id, CheckpointId(c4));
  EXPECT_TRUE(AckAll(s2, 6).empty());
  EXPECT_TRUE(PathExists(SavepointDir(s2) + "/_metadata"));
}

TEST_F(CheckpointCoordinatorTest, AbortAllAbortsEveryPendingCheckpointWithoutNotifying) {
  MakeCoordinator(CheckpointConfig{.max_concurrent = 2});
  std::vector<Status> results;
  auto cb = [&](const Result<CheckpointLocation>& r, int64_t) { results.push_back(r.status()); };
  int64_t a = TriggerOk(0, false, cb);
  int64_t b = TriggerOk(1, true, cb);
  cc().OnAcknowledge(Ack(a, 0), 2);
  cc().AbortAll("worker 3 lost", 0);
  EXPECT_EQ(cc().num_pending(), 0u);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].code(), StatusCode::kAborted);
  EXPECT_EQ(results[0].message(), "checkpoint 1 was aborted: worker 3 lost");
  EXPECT_EQ(results[1].message(), "checkpoint 2 was aborted: worker 3 lost");
  EXPECT_FALSE(PathExists(Dir(a)));
  EXPECT_FALSE(PathExists(SavepointDir(b)));
  EXPECT_EQ(cc().history().size(), 2u);
  EXPECT_TRUE(cc().OnAcknowledge(Ack(a, 1), 3).empty());
}

TEST_F(CheckpointCoordinatorTest, AckWithAHandleForAnotherRangeAbortsTheCheckpoint) {
  int64_t id = TriggerOk(0);
  AcknowledgeCheckpoint wrong = Ack(id, 1);
  wrong.keyed_state = Ack(id, 0).keyed_state;
  auto out = cc().OnAcknowledge(wrong, 1);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 3u);
  EXPECT_NE(cc().history().front().failure.find("invalid state handle"), std::string::npos);
  EXPECT_EQ(cc().num_pending(), 0u);
}

// Issue 13: a forged ack must not put a path outside the checkpoint directory into `_metadata`.
TEST_F(CheckpointCoordinatorTest, AcksWhoseStateFileLeadsOutOfTheDirectoryAbortTheCheckpoint) {
  TempDir outside{"ckpt-outside"};
  const std::string target = outside.File("victim");
  ASSERT_OK(WriteFileAtomically(target, "root-owned bytes"));
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  int64_t now = 0;
  for (const std::string& bad : {std::string("../../../victim"), std::string("sub/../../x"), target,
                                 std::string("link-out"), std::string("")}) {
    int64_t id = TriggerOk(now);
    if (bad == "link-out") {
      ASSERT_EQ(::symlink(target.c_str(), (Dir(id) + "/link-out").c_str()), 0);
    }
    AcknowledgeCheckpoint forged = Ack(id, 1);
    forged.keyed_state.path = bad;
    cc().OnAcknowledge(Ack(id, 0), now + 1);
    auto out = cc().OnAcknowledge(forged, now + 1);
    EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 3u) << bad;
    EXPECT_EQ(cc().num_pending(), 0u) << bad;
    const std::string failure = cc().history().front().failure;
    EXPECT_NE(failure.find("subtask 1 acknowledged checkpoint " + std::to_string(id) +
                           " with an invalid state handle: its state file path"),
              std::string::npos)
        << failure;
    EXPECT_FALSE(PathExists(CheckpointStorage::MetadataPath(Dir(id)))) << bad;
    now += 10;
  }
  EXPECT_EQ(*ReadFileToString(target), "root-owned bytes");
  EXPECT_EQ(test::Mode(target), 0600u);
}

TEST_F(CheckpointCoordinatorTest, CheckpointDirectoriesAndMetadataArePrivate) {
  int64_t id = TriggerOk(0);
  AckAll(id, 1);
  for (const std::string& dir : {storage_.root(), storage_.JobDirectory(kJob), Dir(id)}) {
    // The root is the test's TempDir (mkdtemp: 0700); the rest was created by the storage.
    EXPECT_EQ(test::Mode(dir), 0700u) << dir;
  }
  EXPECT_EQ(test::Mode(CheckpointStorage::MetadataPath(Dir(id))), 0600u);
}

TEST_F(CheckpointCoordinatorTest, MetadataWriteFailureAbortsTheCheckpoint) {
  std::optional<Status> failure;
  int64_t id = TriggerOk(
      0, false, [&](const Result<CheckpointLocation>& r, int64_t) { failure = r.status(); });
  cc().OnAcknowledge(Ack(id, 0), 1);
  cc().OnAcknowledge(Ack(id, 1), 1);
  ASSERT_OK(RemoveAll(Dir(id)));  // the storage lost the directory
  auto out = cc().OnAcknowledge(Ack(id, 2), 2);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), 3u);
  EXPECT_EQ(Count<NotifyCheckpointComplete>(out), 0u);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->code(), StatusCode::kIoError);
  EXPECT_FALSE(cc().latest_completed().has_value());
}

TEST_F(CheckpointCoordinatorTest, HistoryIsBoundedAndMostRecentFirst) {
  for (int64_t id = 1; id <= 60; ++id) {
    TriggerOk(id);
    AckAll(id, id);
  }
  ASSERT_EQ(cc().history().size(), CheckpointCoordinator::kHistorySize);
  EXPECT_EQ(cc().history().front().id, CheckpointId(60));
  EXPECT_EQ(cc().history().back().id, CheckpointId(11));
}

TEST_F(CheckpointCoordinatorTest, ADeclineNamingNoSubtaskAbortsThePendingCheckpoint) {
  // Issue 9: a worker whose subtask already ended declined the final checkpoint as subtask -1;
  // the decline was ignored and the checkpoint waited forever.
  std::optional<Status> failure;
  int64_t id = TriggerOk(
      0, false, [&](const Result<CheckpointLocation>& r, int64_t) { failure = r.status(); });
  cc().OnAcknowledge(Ack(id, 0), 1);
  DeclineCheckpoint d = Decline(id, -1, "no subtask of this attempt runs on this worker");
  auto out = cc().OnDecline(d, 2);
  EXPECT_EQ(Count<NotifyCheckpointAborted>(out), static_cast<size_t>(kP));
  EXPECT_EQ(cc().num_pending(), 0u);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->message(),
            "checkpoint 1 was declined by worker 99 (no subtask of checkpoint 1): no subtask of "
            "this attempt runs on this worker");
  EXPECT_EQ(cc().consecutive_failures(), 1);
}

TEST_F(CheckpointCoordinatorTest, TheFinalCheckpointIsTypedAndBypassesMaxConcurrent) {
  int64_t periodic = TriggerOk(0);
  auto final_out = cc().Trigger(1, CheckpointType::kFinal, "");
  ASSERT_OK(final_out);
  EXPECT_EQ(std::get<TriggerCheckpoint>(final_out->front().message).type, CheckpointType::kFinal);
  EXPECT_EQ(cc().num_pending(), 2u);
  AckAll(periodic + 1, 2);
  ASSERT_TRUE(cc().history().front().final);
  EXPECT_EQ(cc().history().front().state, CheckpointState::kCompleted);
  // The older periodic one is subsumed by the completed final checkpoint.
  EXPECT_EQ(cc().num_pending(), 0u);
}

TEST_F(CheckpointCoordinatorTest, EndPeriodicStopsTriggeringButLetsPendingOnesComplete) {
  MakeCoordinator(CheckpointConfig{.interval_ms = 100});
  EXPECT_TRUE(cc().OnTick(0).empty());
  auto out = cc().OnTick(100);
  ASSERT_EQ(Count<TriggerCheckpoint>(out), static_cast<size_t>(kP));
  cc().EndPeriodic();
  EXPECT_EQ(Count<NotifyCheckpointComplete>(AckAll(1, 150)), static_cast<size_t>(kP));
  EXPECT_TRUE(cc().OnTick(1000).empty()) << "no periodic trigger after EndPeriodic";
}

TEST_F(CheckpointCoordinatorTest, CountsConsecutiveFailuresAndACompletionResetsThem) {
  MakeCoordinator(CheckpointConfig{.timeout_ms = 100});
  int64_t a = TriggerOk(0);
  cc().OnDecline(Decline(a, 1, "disk full"), 1);
  EXPECT_EQ(cc().consecutive_failures(), 1);
  TriggerOk(2);
  cc().OnTick(102);  // expired
  EXPECT_EQ(cc().consecutive_failures(), 2);
  EXPECT_NE(cc().last_failure().find("expired after 100 ms"), std::string::npos)
      << cc().last_failure();
  int64_t c = TriggerOk(200);
  AcknowledgeCheckpoint bad = Ack(c, 0);
  bad.keyed_state.range = KeyGroupRange::Of(5, 7);
  cc().OnAcknowledge(bad, 201);  // an invalid handle is a failure too
  EXPECT_EQ(cc().consecutive_failures(), 3);
  int64_t d = TriggerOk(300);
  AckAll(d, 301);
  EXPECT_EQ(cc().consecutive_failures(), 0);
  EXPECT_NE(cc().last_failure().find("invalid state handle"), std::string::npos)
      << "the last failure stays visible";
}

TEST_F(CheckpointCoordinatorTest, AbortsCausedByTheJobAreNotFailures) {
  MakeCoordinator(CheckpointConfig{.max_concurrent = 3});
  TriggerOk(0);
  int64_t b = TriggerOk(1);
  AckAll(b, 2);  // subsumes checkpoint 1: not a failure
  EXPECT_EQ(cc().consecutive_failures(), 0);
  TriggerOk(3);
  cc().StopPeriodic("a rescale takes a savepoint", 4);
  EXPECT_EQ(cc().consecutive_failures(), 0);
  cc().ResumePeriodic();
  TriggerOk(5);
  cc().AbortAll("worker 3 lost", 6);
  EXPECT_EQ(cc().consecutive_failures(), 0);
  EXPECT_EQ(cc().num_pending(), 0u);
}

TEST_F(CheckpointCoordinatorTest, ANewAttemptContinuesTheFailureCount) {
  cc().ContinueFailureCount(4, "checkpoint 9 was declined by subtask 0: disk full");
  int64_t a = TriggerOk(0);
  cc().OnDecline(Decline(a, 0, "disk full"), 1);
  EXPECT_EQ(cc().consecutive_failures(), 5);
}

}  // namespace
}  // namespace keyflow
