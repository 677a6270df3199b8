// StateAssignment: which state each new subtask restores (Flink's StateAssignmentOperation). Pure
// planning over checkpoint metadata; reads no state files.
//
// Keyed state: new subtask i of P' owns the Flink range of i; it receives, from every old
// subtask whose range intersects its own, that subtask's whole snapshot handle (each new
// subtask reads only the key groups it owns, by the per-key-group offsets). With P' == P,
// subtask i gets exactly old subtask i's handle. Sink committables are union state: every
// subtask receives all of them (sink recovery is idempotent). Source splits are not assigned
// here: the coordinator's split enumerator hands them out (coordinator/source/).
//
// Used by the coordinator (restore, rescale, `keyflow rescale --plan`). Threading: pure
// functions.
#pragma once

#include <string>
#include <vector>

#include "checkpoint/checkpoint_metadata.h"
#include "common/protocol/control_messages.h"
#include "common/status.h"

namespace keyflow {

// Refuses a new parallelism below 1, a different max parallelism (requested_max_parallelism
// 0 = adopt the checkpoint's) or a new parallelism above the checkpoint's max parallelism, each
// with an InvalidArgument sentence that says what to do. The checkpoint is left untouched.
Status ValidateRestore(const CheckpointMetadata& m, int32_t new_parallelism,
                       int32_t requested_max_parallelism);

// One RestoreAssignment per new subtask (index order). `checkpoint_dir` is the absolute
// directory of the checkpoint (full handle paths in the assignment are made absolute; a
// key-group-incremental handle keeps its empty path). Native handles go into native_state in
// the order of their keyed_state entries (private paths stay relative to checkpoint_dir), and
// shared_dir is <checkpoint_dir>/../shared when any handle references a shared file.
// Preconditions: m.Validate().ok(), ValidateRestore(m, new_parallelism, 0).ok() (checked).
std::vector<RestoreAssignment> AssignState(const CheckpointMetadata& m,
                                           const std::string& checkpoint_dir,
                                           int32_t new_parallelism);

// For `keyflow rescale --plan`: per new subtask, which key groups come from which old subtask
// and how many bytes it will read.
struct KeyGroupMove {
  int32_t old_subtask = 0;
  int32_t new_subtask = 0;
  int32_t first_key_group = 0;  // inclusive range of key groups
  int32_t last_key_group = 0;
  uint64_t bytes = 0;  // sum of the key groups' block lengths in the old file
};
struct RescalePlan {
  int32_t old_parallelism = 0;
  int32_t new_parallelism = 0;
  int32_t max_parallelism = 0;
  // Every key group exactly once, ordered by new subtask, then key group. Includes key groups
  // that stay with the same subtask index (old_subtask == new_subtask).
  std::vector<KeyGroupMove> moves;
  std::vector<uint64_t> bytes_per_new_subtask;  // indexed by new subtask
  int32_t key_groups_moved = 0;                 // key groups whose owner index changes
};
// Preconditions as AssignState.
RescalePlan PlanRescale(const CheckpointMetadata& m, int32_t new_parallelism);

}  // namespace keyflow
