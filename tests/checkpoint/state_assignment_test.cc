#include "checkpoint/state_assignment.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ckpt_test::TestBlockLength;
using ckpt_test::TestMetadata;

const std::string kDir = "/ckpt/job/chk-4";

std::vector<std::string> Paths(const RestoreAssignment& a) {
  std::vector<std::string> paths;
  for (const auto& h : a.keyed_state) paths.push_back(h.path);
  return paths;
}

TEST(ValidateRestore, AcceptsAnyParallelismUpToMaxParallelism) {
  CheckpointMetadata m = TestMetadata(128, 2);
  EXPECT_OK(ValidateRestore(m, 1, 0));
  EXPECT_OK(ValidateRestore(m, 128, 0));
  EXPECT_OK(ValidateRestore(m, 5, 128)) << "the same max parallelism, explicitly";
}

TEST(ValidateRestore, RefusesParallelismBelowOne) {
  Status s = ValidateRestore(TestMetadata(128, 2), 0, 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "parallelism must be at least 1, got 0");
  EXPECT_FALSE(ValidateRestore(TestMetadata(128, 2), -3, 0).ok());
}

TEST(ValidateRestore, RefusesParallelismAboveMaxParallelism) {
  Status s = ValidateRestore(TestMetadata(128, 2, 7), 129, 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "parallelism 129 is larger than the max parallelism 128 of checkpoint 7 (each "
            "subtask needs at least one key group): choose a parallelism between 1 and 128");
}

TEST(ValidateRestore, RefusesAnotherMaxParallelismAndSaysWhatToDo) {
  Status s = ValidateRestore(TestMetadata(128, 2), 2, 256);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "the checkpoint was taken with max parallelism 128; the number of key groups is "
            "fixed for the lifetime of a job and its checkpoints: restore with "
            "--max-parallelism 128 (or leave it unset)");
  EXPECT_FALSE(ValidateRestore(TestMetadata(128, 2), 2, 64).ok());
}

TEST(AssignState, SameParallelismGivesEachSubtaskExactlyItsOldHandle) {
  CheckpointMetadata m = TestMetadata(128, 3, 4);
  auto assignments = AssignState(m, kDir, 3);
  ASSERT_EQ(assignments.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const RestoreAssignment& a = assignments[i];
    EXPECT_EQ(a.checkpoint, CheckpointId(4));
    EXPECT_EQ(a.checkpoint_dir, kDir);
    ASSERT_EQ(a.keyed_state.size(), 1u);
    const KeyGroupsStateHandle& h = a.keyed_state[0];
    const KeyGroupsStateHandle& old = m.subtasks[i].keyed_state;
    EXPECT_EQ(h.path, kDir + "/subtask-" + std::to_string(i) + ".kgs");
    EXPECT_EQ(h.range, old.range);
    EXPECT_EQ(h.offsets, old.offsets);
    EXPECT_EQ(h.lengths, old.lengths);
    EXPECT_EQ(h.size, old.size);
    EXPECT_EQ(h.checksum, old.checksum);
    EXPECT_EQ(a.sink_committables, m.sink_committables);
  }
}

TEST(AssignState, ScaleOutGivesEachNewSubtaskTheIntersectingOldFilesWhole) {
  // M = 8: old P=2 [0-3] [4-7]; new P'=3 [0-2] [3-5] [6-7].
  CheckpointMetadata m = TestMetadata(8, 2);
  auto a = AssignState(m, kDir, 3);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(Paths(a[0]), (std::vector<std::string>{kDir + "/subtask-0.kgs"}));
  EXPECT_EQ(Paths(a[1]),
            (std::vector<std::string>{kDir + "/subtask-0.kgs", kDir + "/subtask-1.kgs"}));
  EXPECT_EQ(Paths(a[2]), (std::vector<std::string>{kDir + "/subtask-1.kgs"}));
  EXPECT_EQ(a[1].keyed_state[0].range, KeyGroupRange::Of(0, 3)) << "whole handle, not narrowed";
  EXPECT_EQ(a[1].keyed_state[1].offsets, m.subtasks[1].keyed_state.offsets);
  for (const auto& x : a) {
    EXPECT_EQ(x.sink_committables, m.sink_committables) << "union state: every subtask, all";
  }
}

TEST(AssignState, ScaleInToOneSubtaskGetsEveryFile) {
  CheckpointMetadata m = TestMetadata(128, 4);
  auto a = AssignState(m, kDir, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].keyed_state.size(), 4u);
}

TEST(PlanRescale, ListsMovesBytesAndChangedOwners) {
  CheckpointMetadata m = TestMetadata(8, 2);
  RescalePlan plan = PlanRescale(m, 3);
  EXPECT_EQ(plan.old_parallelism, 2);
  EXPECT_EQ(plan.new_parallelism, 3);
  EXPECT_EQ(plan.max_parallelism, 8);
  ASSERT_EQ(plan.moves.size(), 4u);
  auto expect_move = [&](size_t k, int32_t from, int32_t to, int32_t first, int32_t last) {
    const KeyGroupMove& mv = plan.moves[k];
    EXPECT_EQ(mv.old_subtask, from) << k;
    EXPECT_EQ(mv.new_subtask, to) << k;
    EXPECT_EQ(mv.first_key_group, first) << k;
    EXPECT_EQ(mv.last_key_group, last) << k;
    uint64_t bytes = 0;
    for (int32_t g = first; g <= last; ++g) bytes += TestBlockLength(g);
    EXPECT_EQ(mv.bytes, bytes) << k;
  };
  expect_move(0, 0, 0, 0, 2);
  expect_move(1, 0, 1, 3, 3);
  expect_move(2, 1, 1, 4, 5);
  expect_move(3, 1, 2, 6, 7);
  // Lengths 10 + 3g: [0-2] 39, [3-5] 19+22+25 = 66, [6-7] 28+31 = 59.
  EXPECT_EQ(plan.bytes_per_new_subtask, (std::vector<uint64_t>{39, 66, 59}));
  EXPECT_EQ(plan.key_groups_moved, 3) << "3 (0->1), 6 and 7 (1->2)";
}

TEST(PlanRescale, SameParallelismMovesNothing) {
  RescalePlan plan = PlanRescale(TestMetadata(128, 4), 4);
  EXPECT_EQ(plan.key_groups_moved, 0);
  ASSERT_EQ(plan.moves.size(), 4u);
  for (int32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.moves[static_cast<size_t>(i)].old_subtask, i);
    EXPECT_EQ(plan.moves[static_cast<size_t>(i)].new_subtask, i);
  }
}

// For many (M, P, P'): every key group is planned exactly once, to its Flink owner under P',
// from its owner under P; bytes per new subtask are the lengths of exactly its key groups; the
// assignment hands each new subtask exactly the old files that hold its key groups.
TEST(StateAssignment, EveryKeyGroupIsOwnedExactlyOnceAfterAnyRescale) {
  int combinations = 0;
  for (int32_t max_p : {1, 2, 3, 7, 8, 10, 128, 129, 300}) {
    for (int32_t p = 1; p <= std::min(max_p, 12); ++p) {
      CheckpointMetadata m = TestMetadata(max_p, p);
      for (int32_t np = 1; np <= std::min(max_p, 12); ++np) {
        ++combinations;
        SCOPED_TRACE("M=" + std::to_string(max_p) + " P=" + std::to_string(p) +
                     " P'=" + std::to_string(np));
        RescalePlan plan = PlanRescale(m, np);
        std::vector<int> owners(static_cast<size_t>(max_p), 0);
        std::vector<uint64_t> expected_bytes(static_cast<size_t>(np), 0);
        int32_t expected_moved = 0;
        for (int32_t g = 0; g < max_p; ++g) {
          int32_t new_owner = ComputeOperatorIndexForKeyGroup(max_p, np, KeyGroupId(g)).value();
          int32_t old_owner = ComputeOperatorIndexForKeyGroup(max_p, p, KeyGroupId(g)).value();
          expected_bytes[static_cast<size_t>(new_owner)] += TestBlockLength(g);
          if (new_owner != old_owner) ++expected_moved;
        }
        for (const KeyGroupMove& mv : plan.moves) {
          for (int32_t g = mv.first_key_group; g <= mv.last_key_group; ++g) {
            ++owners[static_cast<size_t>(g)];
            ASSERT_EQ(mv.new_subtask,
                      ComputeOperatorIndexForKeyGroup(max_p, np, KeyGroupId(g)).value());
            ASSERT_EQ(mv.old_subtask,
                      ComputeOperatorIndexForKeyGroup(max_p, p, KeyGroupId(g)).value());
          }
        }
        ASSERT_EQ(owners, std::vector<int>(static_cast<size_t>(max_p), 1));
        ASSERT_EQ(plan.bytes_per_new_subtask, expected_bytes);
        ASSERT_EQ(plan.key_groups_moved, expected_moved);

        auto assignments = AssignState(m, kDir, np);
        ASSERT_EQ(assignments.size(), static_cast<size_t>(np));
        auto new_ranges = CreateKeyGroupPartitions(max_p, np);
        for (int32_t i = 0; i < np; ++i) {
          std::set<std::string> expected_files;
          for (KeyGroupId g : new_ranges[static_cast<size_t>(i)].key_groups()) {
            expected_files.insert(
                kDir + "/subtask-" +
                std::to_string(ComputeOperatorIndexForKeyGroup(max_p, p, g).value()) + ".kgs");
          }
          auto paths = Paths(assignments[static_cast<size_t>(i)]);
          ASSERT_EQ(std::set<std::string>(paths.begin(), paths.end()), expected_files);
          ASSERT_EQ(paths.size(), expected_files.size()) << "no file twice";
        }
      }
    }
  }
  EXPECT_EQ(combinations, 1 + 4 + 9 + 49 + 64 + 100 + 144 + 144 + 144);
}

}  // namespace
}  // namespace keyflow
