#include "checkpoint/state_assignment.h"

#include "checkpoint/checkpoint_storage.h"
#include "common/key_group_assignment.h"

namespace keyflow {
namespace {

void CheckPreconditions(const CheckpointMetadata& m, int32_t new_parallelism) {
  Status valid = m.Validate();
  KF_CHECK(valid.ok()) << valid.ToString();
  Status restorable = ValidateRestore(m, new_parallelism, 0);
  KF_CHECK(restorable.ok()) << restorable.ToString();
}

std::string AbsoluteIn(const std::string& dir, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  return dir + "/" + path;
}

}  // namespace

Status ValidateRestore(const CheckpointMetadata& m, int32_t new_parallelism,
                       int32_t requested_max_parallelism) {
  const int32_t max_p = m.max_parallelism();
  const std::string what = std::string(m.TypeName()) + " " + std::to_string(m.id.value());
  if (new_parallelism < 1) {
    return InvalidArgument("parallelism must be at least 1, got " +
                           std::to_string(new_parallelism));
  }
  if (requested_max_parallelism != 0 && requested_max_parallelism != max_p) {
    return InvalidArgument(
        "the checkpoint was taken with max parallelism " + std::to_string(max_p) +
        "; the number of key groups is fixed for the lifetime of a job and its checkpoints: "
        "restore with --max-parallelism " +
        std::to_string(max_p) + " (or leave it unset)");
  }
  if (new_parallelism > max_p) {
    return InvalidArgument("parallelism " + std::to_string(new_parallelism) +
                           " is larger than the max parallelism " + std::to_string(max_p) + " of " +
                           what +
                           " (each subtask needs at least one key group): choose a "
                           "parallelism between 1 and " +
                           std::to_string(max_p));
  }
  return Status::Ok();
}

std::vector<RestoreAssignment> AssignState(const CheckpointMetadata& m,
                                           const std::string& checkpoint_dir,
                                           int32_t new_parallelism) {
  CheckPreconditions(m, new_parallelism);
  const std::vector<KeyGroupRange> ranges =
      CreateKeyGroupPartitions(m.max_parallelism(), new_parallelism);
  std::vector<RestoreAssignment> out(static_cast<size_t>(new_parallelism));
  for (size_t i = 0; i < out.size(); ++i) {
    RestoreAssignment& a = out[i];
    a.checkpoint = m.id;
    a.checkpoint_dir = checkpoint_dir;
    a.sink_committables = m.sink_committables;
    a.sink_directory = m.spec.output_dir;
    auto add = [&](const SubtaskCheckpointState& s) {
      const KeyGroupsStateHandle& h = s.keyed_state;
      a.keyed_state.push_back(h);
      // A key-group-incremental handle has no path (its blocks are in shared files).
      if (!h.incremental()) a.keyed_state.back().path = AbsoluteIn(checkpoint_dir, h.path);
      // Private paths stay relative to checkpoint_dir (NativeRestoreSource).
      if (s.native_state) a.native_state.push_back(*s.native_state);
      if (!s.SharedFiles().empty())
        a.shared_dir = CheckpointStorage::SharedDirectoryOf(checkpoint_dir);
    };
    if (new_parallelism == m.parallelism()) {
      add(m.subtasks[i]);  // same ranges: exactly the old subtask's handle
      continue;
    }
    for (const SubtaskCheckpointState& s : m.subtasks) {
      if (!s.keyed_state.range.Intersection(ranges[i]).empty()) add(s);
    }
  }
  return out;
}

RescalePlan PlanRescale(const CheckpointMetadata& m, int32_t new_parallelism) {
  CheckPreconditions(m, new_parallelism);
  RescalePlan plan;
  plan.old_parallelism = m.parallelism();
  plan.new_parallelism = new_parallelism;
  plan.max_parallelism = m.max_parallelism();
  plan.bytes_per_new_subtask.assign(static_cast<size_t>(new_parallelism), 0);
  const std::vector<KeyGroupRange> ranges =
      CreateKeyGroupPartitions(m.max_parallelism(), new_parallelism);
  for (int32_t i = 0; i < new_parallelism; ++i) {
    const KeyGroupRange& mine = ranges[static_cast<size_t>(i)];
    for (const SubtaskCheckpointState& s : m.subtasks) {
      const KeyGroupsStateHandle& h = s.keyed_state;
      const KeyGroupRange overlap = h.range.Intersection(mine);
      if (overlap.empty()) continue;
      KeyGroupMove move{s.subtask.value(), i, overlap.start(), overlap.end(), 0};
      for (KeyGroupId g : overlap.key_groups()) {
        move.bytes += h.lengths[static_cast<size_t>(h.range.IndexOf(g))];
      }
      if (move.old_subtask != i) plan.key_groups_moved += overlap.size();
      plan.bytes_per_new_subtask[static_cast<size_t>(i)] += move.bytes;
      plan.moves.push_back(move);
    }
  }
  return plan;
}

}  // namespace keyflow
