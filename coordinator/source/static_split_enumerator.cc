#include "coordinator/source/static_split_enumerator.h"

#include <string>
#include <utility>

#include "common/binary_io.h"

namespace keyflow {
namespace {

// The restored position of `split`, checking that the checkpoint describes the same split.
Result<SplitPosition> RestoredPosition(const SourceSplit& split, const RestoredSplits& restored) {
  auto it = restored.find(std::to_string(split.id().value()));
  if (it == restored.end()) {
    return FailedPrecondition("the checkpoint has no position for " + split.ToString() +
                              ": the --input changed since the checkpoint was taken");
  }
  BinaryReader r(it->second);
  KF_ASSIGN_OR_RETURN(SourceSplitState st, SourceSplitState::DecodeFrom(&r));
  if (!(st.split == split)) {
    return FailedPrecondition("split " + std::to_string(split.id().value()) +
                              " of the checkpoint is " + st.split.ToString() +
                              " but --input now gives " + split.ToString() +
                              ": restore with the same --input");
  }
  return st.position;
}

}  // namespace

StaticSplitEnumerator::StaticSplitEnumerator(InputSpec input,
                                             std::optional<RestoredSplits> restored)
    : input_(std::move(input)), restored_(std::move(restored)) {}

nlohmann::json StaticSplitEnumerator::StatusJson() const {
  return {{"kind", input_.kind() == InputSpec::Kind::kGenerator ? "generator" : "files"},
          {"splits", input_.splits().size()}};
}

Status StaticSplitEnumerator::Start(SplitEnumeratorContext& context) {
  const int32_t p = context.parallelism();
  std::vector<std::vector<SourceSplitState>> assigned(static_cast<size_t>(p));
  for (const SourceSplit& split : input_.splits()) {
    SplitPosition position;
    if (restored_) {
      KF_ASSIGN_OR_RETURN(position, RestoredPosition(split, *restored_));
    }
    assigned[static_cast<size_t>(split.id().value() % p)].push_back({split, position});
  }
  for (int32_t i = 0; i < p; ++i) {
    context.AssignSplits(SubtaskIndex(i), std::move(assigned[static_cast<size_t>(i)]));
    context.SignalNoMoreSplits(SubtaskIndex(i));
  }
  return Status::Ok();
}

}  // namespace keyflow
