// StaticSplitEnumerator: the enumerator of a source whose splits are all known when an attempt
// starts — the files of --input FILE|DIR (listed at every deployment), the generator's splits
// and a job library source's (--input connector:..., listed at submit). Split i goes to reader i %
// P, from its restored position or its start; then every reader hears that no more splits come. A
// split the checkpoint marks finished stays finished (it is not opened again). The assignment is a
// pure function of the split list and the parallelism, so every attempt (and every rescale)
// distributes the same splits the same way.
//
// A restored checkpoint must describe the same splits: a split without a position in it, or a
// position of another split under the same id (the directory's files changed), is a
// FailedPrecondition naming the split ("restore with the same --input").
#pragma once

#include <optional>
#include <vector>

#include "common/input/input_spec.h"
#include "coordinator/source/split_enumerator.h"

namespace keyflow {

class StaticSplitEnumerator final : public SplitEnumerator {
 public:
  // The splits of `input`. `restored`: nullopt when starting from scratch.
  StaticSplitEnumerator(InputSpec input, std::optional<RestoredSplits> restored);
  // `splits` given (a connector's, from JobSpec::connector_splits).
  StaticSplitEnumerator(InputSpec input, std::vector<SourceSplit> splits,
                        std::optional<RestoredSplits> restored);

  Status Start(SplitEnumeratorContext& context) override;
  // {"kind": "files" | "generator", "splits": N}; {"kind": "connector", "source": NAME, ...}
  nlohmann::json StatusJson() const override;

 private:
  InputSpec input_;
  std::vector<SourceSplit> splits_;
  std::optional<RestoredSplits> restored_;
};

}  // namespace keyflow
