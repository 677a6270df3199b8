// KeyGroupChangeTracker: the dirty tracking of key-group-incremental checkpoints.
#include "state/snapshot/key_group_change_tracker.h"

#include <gtest/gtest.h>

#include <vector>

namespace keyflow {
namespace {

// Stands in for the AsyncKeyedSnapshot being written: records which key groups it was asked to
// capture.
class RecordingSnapshot final : public KeyGroupWriteGuard {
 public:
  explicit RecordingSnapshot(int32_t n) : KeyGroupWriteGuard(n) {}
  std::vector<int32_t> captured;

 private:
  void SerializeBeforeWrite(int32_t index) override {
    captured.push_back(index);
    state_[index].store(kSerialized);
  }
};

std::vector<bool> Only(std::initializer_list<int> changed, int n = 8) {
  std::vector<bool> v(static_cast<size_t>(n), false);
  for (int i : changed) v[static_cast<size_t>(i)] = true;
  return v;
}

TEST(KeyGroupChangeTracker, RecordsTheKeyGroupsChangedSinceACheckpointsSynchronousPart) {
  KeyGroupChangeTracker t(8);
  t.BeforeWrite(1);  // before checkpoint 1: in checkpoint 1's state
  t.StartInterval(CheckpointId(1));
  t.BeforeWrite(2);
  t.BeforeWrite(2);
  t.BeforeWrite(5);
  EXPECT_EQ(t.ChangedSince(CheckpointId(1)), Only({2, 5}));
  t.StartInterval(CheckpointId(2));
  t.BeforeWrite(3);
  t.StartInterval(CheckpointId(3));
  // Base 1: every interval since its sync point; base 2: only the one after it.
  EXPECT_EQ(t.ChangedSince(CheckpointId(1)), Only({2, 3, 5}));
  EXPECT_EQ(t.ChangedSince(CheckpointId(2)), Only({3}));
  EXPECT_EQ(t.ChangedSince(CheckpointId(3)), Only({}));
}

TEST(KeyGroupChangeTracker, AnUnknownOrDroppedBaseMeansEveryKeyGroup) {
  KeyGroupChangeTracker t(8);
  EXPECT_EQ(t.ChangedSince(CheckpointId(1)), std::vector<bool>(8, true));
  t.StartInterval(CheckpointId(1));
  t.BeforeWrite(4);
  t.StartInterval(CheckpointId(2));
  EXPECT_EQ(t.intervals(), 3u);
  t.DropBefore(CheckpointId(2));  // 2 completed: the intervals before it are not needed
  EXPECT_EQ(t.intervals(), 1u);
  EXPECT_EQ(t.ChangedSince(CheckpointId(1)), std::vector<bool>(8, true));
  EXPECT_EQ(t.ChangedSince(CheckpointId(2)), Only({}));
  EXPECT_EQ(t.ChangedSince(CheckpointId(0)), std::vector<bool>(8, true));
}

TEST(KeyGroupChangeTracker, TheSnapshotSeesOnlyTheFirstWriteOfEachKeyGroupOfItsInterval) {
  KeyGroupChangeTracker t(8);
  RecordingSnapshot s(8);
  t.BeforeWrite(6);  // no snapshot yet: nothing to capture
  t.StartInterval(CheckpointId(1));
  t.SetSnapshot(&s);
  t.BeforeWrite(2);
  t.BeforeWrite(2);
  t.BeforeWrite(6);
  t.BeforeWrite(2);
  EXPECT_EQ(s.captured, (std::vector<int32_t>{2, 6}));
  t.SetSnapshot(nullptr);  // written
  t.BeforeWrite(7);
  EXPECT_EQ(s.captured, (std::vector<int32_t>{2, 6}));
  EXPECT_EQ(t.ChangedSince(CheckpointId(1)), Only({2, 6, 7}));
  // The next interval starts over: its first writes take the slow path again.
  RecordingSnapshot s2(8);
  t.StartInterval(CheckpointId(2));
  t.SetSnapshot(&s2);
  t.BeforeWrite(2);
  EXPECT_EQ(s2.captured, (std::vector<int32_t>{2}));
}

}  // namespace
}  // namespace keyflow
