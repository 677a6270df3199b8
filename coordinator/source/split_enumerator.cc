#include "coordinator/source/split_enumerator.h"

#include <utility>

#include "common/binary_io.h"
#include "common/check.h"

namespace keyflow {

DeploymentSplitAssignment::DeploymentSplitAssignment(int32_t parallelism)
    : readers_(static_cast<size_t>(parallelism)) {}

const DeploymentSplitAssignment::Reader& DeploymentSplitAssignment::At(SubtaskIndex subtask) const {
  KF_CHECK(subtask.value() >= 0 && subtask.value() < parallelism())
      << "split assignment to subtask " << subtask.value() << " of " << parallelism();
  return readers_[static_cast<size_t>(subtask.value())];
}

DeploymentSplitAssignment::Reader& DeploymentSplitAssignment::At(SubtaskIndex subtask) {
  return const_cast<Reader&>(std::as_const(*this).At(subtask));
}

void DeploymentSplitAssignment::AssignSplits(SubtaskIndex subtask,
                                             std::vector<SourceSplitState> splits) {
  Reader& reader = At(subtask);
  for (const SourceSplitState& split : splits) {
    std::string bytes;
    BinaryWriter w(&bytes);
    split.EncodeTo(&w);
    reader.splits.push_back(std::move(bytes));
  }
}

void DeploymentSplitAssignment::SignalNoMoreSplits(SubtaskIndex subtask) {
  At(subtask).no_more_splits = true;
}

const std::vector<std::string>& DeploymentSplitAssignment::splits(SubtaskIndex subtask) const {
  return At(subtask).splits;
}

bool DeploymentSplitAssignment::no_more_splits(SubtaskIndex subtask) const {
  return At(subtask).no_more_splits;
}

}  // namespace keyflow
