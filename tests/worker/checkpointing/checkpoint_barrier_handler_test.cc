#include "worker/checkpointing/checkpoint_barrier_handler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keyflow {
namespace {

// Records every callback as a line, in order.
class BarrierHandlerTest : public ::testing::Test {
 protected:
  CheckpointBarrierHandler Make(int32_t channels) {
    CheckpointBarrierHandler::Callbacks cb;
    cb.block_channel = [this](SubtaskIndex c) {
      log.push_back("block " + std::to_string(c.value()));
    };
    cb.unblock_all = [this] { log.push_back("unblock"); };
    cb.snapshot = [this](CheckpointId id, int64_t align_us) {
      log.push_back("snapshot " + std::to_string(id.value()) + " after " +
                    std::to_string(align_us));
    };
    cb.abort = [this](CheckpointId id, const std::string& why) {
      log.push_back("abort " + std::to_string(id.value()) + ": " + why);
    };
    return CheckpointBarrierHandler(channels, cb);
  }
  std::vector<std::string> Take() {
    std::vector<std::string> out;
    out.swap(log);
    return out;
  }
  std::vector<std::string> log;
};

using V = std::vector<std::string>;

TEST_F(BarrierHandlerTest, BlocksEachChannelUntilAllDeliveredTheBarrierThenSnapshots) {
  auto h = Make(3);
  h.Announce(CheckpointId(1), 0);
  h.OnBarrier(SubtaskIndex(1), CheckpointId(1), 10);
  h.OnBarrier(SubtaskIndex(0), CheckpointId(1), 20);
  EXPECT_EQ(Take(), (V{"block 1", "block 0"}));
  EXPECT_TRUE(h.aligning());
  h.OnBarrier(SubtaskIndex(2), CheckpointId(1), 45);
  EXPECT_EQ(Take(), (V{"block 2", "unblock", "snapshot 1 after 35"}));
  EXPECT_FALSE(h.aligning());
  EXPECT_EQ(h.last_triggered(), CheckpointId(1));
}

TEST_F(BarrierHandlerTest, WaitsForTheAnnouncementWhenBarriersComeFirst) {
  auto h = Make(2);
  h.OnBarrier(SubtaskIndex(0), CheckpointId(4), 0);
  h.OnBarrier(SubtaskIndex(1), CheckpointId(4), 5);
  EXPECT_EQ(Take(), (V{"block 0", "block 1"}));
  h.Announce(CheckpointId(4), 9);
  EXPECT_EQ(Take(), (V{"unblock", "snapshot 4 after 9"}));
}

TEST_F(BarrierHandlerTest, FinishedChannelsCountAsAligned) {
  auto h = Make(3);
  h.OnChannelFinished(SubtaskIndex(2), 0);
  h.Announce(CheckpointId(2), 0);
  h.OnBarrier(SubtaskIndex(0), CheckpointId(2), 0);
  EXPECT_EQ(Take(), (V{"block 0"}));
  h.OnChannelFinished(SubtaskIndex(1), 7);  // channel 1's source ended before the trigger
  EXPECT_EQ(Take(), (V{"unblock", "snapshot 2 after 7"}));
}

TEST_F(BarrierHandlerTest, AnnouncementAloneSnapshotsWhenAllChannelsFinished) {
  auto h = Make(2);
  h.OnChannelFinished(SubtaskIndex(0), 0);
  h.OnChannelFinished(SubtaskIndex(1), 0);
  h.Announce(CheckpointId(9), 3);
  EXPECT_EQ(Take(), (V{"unblock", "snapshot 9 after 0"}));
}

TEST_F(BarrierHandlerTest, AnnouncedCheckpointCompletesWhenTheLastChannelFinishes) {
  auto h = Make(2);
  h.OnChannelFinished(SubtaskIndex(0), 0);
  h.Announce(CheckpointId(3), 0);
  EXPECT_EQ(Take(), V{});
  h.OnChannelFinished(SubtaskIndex(1), 5);
  EXPECT_EQ(Take(), (V{"unblock", "snapshot 3 after 0"}));
}

TEST_F(BarrierHandlerTest, HigherBarrierSubsumesThePendingCheckpoint) {
  auto h = Make(2);
  h.Announce(CheckpointId(1), 0);
  h.Announce(CheckpointId(2), 0);
  h.OnBarrier(SubtaskIndex(0), CheckpointId(1), 0);
  h.OnBarrier(SubtaskIndex(1), CheckpointId(2), 0);
  EXPECT_EQ(Take(), (V{"block 0", "unblock", "abort 1: subsumed by checkpoint 2", "block 1"}));
  h.OnBarrier(SubtaskIndex(0), CheckpointId(2), 0);
  EXPECT_EQ(Take(), (V{"block 0", "unblock", "snapshot 2 after 0"}));
  // A late barrier of checkpoint 1 is ignored.
  h.OnBarrier(SubtaskIndex(1), CheckpointId(1), 0);
  EXPECT_EQ(Take(), V{});
}

TEST_F(BarrierHandlerTest, CancelBarrierAndCoordinatorAbortUnblock) {
  auto h = Make(2);
  h.Announce(CheckpointId(5), 0);
  h.OnBarrier(SubtaskIndex(0), CheckpointId(5), 0);
  h.OnCancelBarrier(SubtaskIndex(1), CheckpointId(5));
  EXPECT_EQ(Take(), (V{"block 0", "unblock", "abort 5: cancelled by an upstream subtask"}));
  h.Announce(CheckpointId(6), 0);
  h.OnBarrier(SubtaskIndex(1), CheckpointId(6), 0);
  h.Abort(CheckpointId(6), "expired");
  EXPECT_EQ(Take(), (V{"block 1", "unblock", "abort 6: expired"}));
  // Barriers of the aborted checkpoint that are still in flight start nothing new.
  h.OnBarrier(SubtaskIndex(0), CheckpointId(6), 0);
  h.OnBarrier(SubtaskIndex(0), CheckpointId(5), 0);
  EXPECT_EQ(Take(), V{});
  EXPECT_FALSE(h.aligning());
}

}  // namespace
}  // namespace keyflow
