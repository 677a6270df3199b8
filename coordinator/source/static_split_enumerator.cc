#include "coordinator/source/static_split_enumerator.h"

#include <string>
#include <utility>

#include "common/binary_io.h"

namespace keyflow {
namespace {

// The restored state of `split` (its position, and whether it was read to its end), checking
// that the checkpoint describes the same split.
Result<SourceSplitState> RestoredState(const SourceSplit& split, const RestoredSplits& restored) {
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
  return st;
}

}  // namespace

StaticSplitEnumerator::StaticSplitEnumerator(InputSpec input,
                                             std::optional<RestoredSplits> restored)
    : StaticSplitEnumerator(input, input.splits(), std::move(restored)) {}

StaticSplitEnumerator::StaticSplitEnumerator(InputSpec input, std::vector<SourceSplit> splits,
                                             std::optional<RestoredSplits> restored)
    : input_(std::move(input)), splits_(std::move(splits)), restored_(std::move(restored)) {}

nlohmann::json StaticSplitEnumerator::StatusJson() const {
  if (input_.kind() == InputSpec::Kind::kConnector) {
    return {{"kind", "connector"}, {"source", input_.connector_name()}, {"splits", splits_.size()}};
  }
  return {{"kind", input_.kind() == InputSpec::Kind::kGenerator ? "generator" : "files"},
          {"splits", splits_.size()}};
}

Status StaticSplitEnumerator::Start(SplitEnumeratorContext& context) {
  const int32_t p = context.parallelism();
  std::vector<std::vector<SourceSplitState>> assigned(static_cast<size_t>(p));
  for (const SourceSplit& split : splits_) {
    SourceSplitState state{split, SplitPosition(), false};
    if (restored_) {
      KF_ASSIGN_OR_RETURN(state, RestoredState(split, *restored_));
    }
    assigned[static_cast<size_t>(split.id().value() % p)].push_back(std::move(state));
  }
  for (int32_t i = 0; i < p; ++i) {
    context.AssignSplits(SubtaskIndex(i), std::move(assigned[static_cast<size_t>(i)]));
    context.SignalNoMoreSplits(SubtaskIndex(i));
  }
  return Status::Ok();
}

}  // namespace keyflow
