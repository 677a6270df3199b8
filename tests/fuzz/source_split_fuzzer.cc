// Fuzz target: checkpointed source split state (common/input/source_split.h,
// SourceSplitState::DecodeFrom): the split positions a restoring source reads from checkpoint
// metadata (each entry of CheckpointMetadata::split_positions / RestoreAssignment).
//
// Input: mode byte (unused), then a sequence of encoded SourceSplitStates, decoded one after the
// other until the bytes end or one fails.
// Properties: never crashes; errors are Corruption; each decoded state re-encodes to bytes that
// decode to an equal state and encode identically.
#include <cstdint>
#include <string>

#include "common/input/source_split.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  fuzz::CheckEachDecodedValueRoundTrips<SourceSplitState>(in.bytes, "split state",
                                                          [](const SourceSplitState& state) {
                                                            (void)state.split.ToString();
                                                            (void)state.position.ToString();
                                                          });
  return 0;
}
