// Test helpers of the split enumerator tests: a context that records what an enumerator
// assigns, and a split state's encoding as a checkpoint holds it.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/binary_io.h"
#include "coordinator/source/split_enumerator.h"

namespace keyflow {

// How gtest prints a split state: "kafka split 1 (a-1) at offset 5, line 1 [finished]".
inline void PrintTo(const SourceSplitState& st, std::ostream* os) {
  *os << st.split.ToString() << " at " << st.position.ToString()
      << (st.finished ? " [finished]" : "");
}

}  // namespace keyflow

namespace keyflow::test {

inline std::string Encode(const SourceSplitState& st) {
  std::string bytes;
  BinaryWriter w(&bytes);
  st.EncodeTo(&w);
  return bytes;
}

// Records every assignment as (reader, decoded split), in order.
class RecordingContext final : public SplitEnumeratorContext {
 public:
  explicit RecordingContext(int32_t p) : p_(p) {}
  int32_t parallelism() const override { return p_; }
  void AssignSplits(SubtaskIndex subtask, std::vector<SourceSplitState> splits) override {
    for (SourceSplitState& st : splits) assigned.emplace_back(subtask.value(), std::move(st));
  }
  void SignalNoMoreSplits(SubtaskIndex subtask) override { ended.push_back(subtask.value()); }

  std::vector<std::pair<int32_t, SourceSplitState>> assigned;
  std::vector<int32_t> ended;

 private:
  int32_t p_;
};

}  // namespace keyflow::test
