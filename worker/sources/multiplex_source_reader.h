// MultiplexSourceReader: a SourceReader that reads several splits of one source interleaved on
// the task thread, each through its own SplitReader (Flink's SingleThreadMultiplexSourceReaderBase,
// without the fetcher thread: the split readers here never block).
//
// The first poll after splits were added creates the output of each of them before it emits
// anything, so every split holds back event time from the start, not only once it had a turn.
// PollNext gives each split a turn of up to kRecordsPerSplitTurn records, round robin, until
// kRecordsPerPoll records are emitted or every split had a turn. A split that ends is released
// (ReaderOutput::ReleaseOutputForSplit) and keeps its final position in the state, marked
// finished; a finished split added again (a restore) is kept as it is and never opened. When no
// split emitted anything because they are all throttled, PollNext returns kNothingAvailable with
// the earliest time one of them allows a record again. With every split ended and more to come (no
// NotifyNoMoreSplits yet), it waits for AddSplits (kNothingAvailable without a time).
//
// Threading: the source subtask's task thread.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "worker/sources/source_reader.h"

namespace keyflow {

class MultiplexSourceReader final : public SourceReader {
 public:
  static constexpr int kRecordsPerPoll = 1024;
  static constexpr int kRecordsPerSplitTurn = 128;

  explicit MultiplexSourceReader(SplitReaderFactory open_split);

  Status AddSplits(std::vector<SourceSplitState> splits) override;
  void NotifyNoMoreSplits() override { no_more_splits_ = true; }
  Result<PollResult> PollNext(ReaderOutput& output) override;
  std::vector<SourceSplitState> SnapshotState(std::optional<CheckpointId> checkpoint) override;

 private:
  struct Slot {
    SourceSplitState state;  // position and finished updated as the split is read
    std::unique_ptr<SplitReader> reader;
    SourceOutput* output = nullptr;  // created by the first poll after the split was added
    bool finished = false;
  };

  SplitReaderFactory open_split_;
  std::vector<Slot> slots_;
  size_t next_slot_ = 0;  // round-robin cursor
  size_t unfinished_ = 0;
  bool no_more_splits_ = false;
  bool outputs_pending_ = false;  // a split was added since the last poll
};

}  // namespace keyflow
