// SourceReader: the part of a source that runs in a source subtask (FLIP-27's SourceReader).
//
// A source subtask owns one SourceReader. The reader is handed its splits with their positions
// (AddSplits; NotifyNoMoreSplits once no more will come) and the task's mailbox loop polls it:
//
//   PollNext(output)   emits a bounded batch of records, each through the SourceOutput of the
//                      split it came from, and says whether more is available right away,
//                      nothing is available (poll again at `retry_at`, or once the reader called
//                      its context's wake_up), or every split ended and no more will come.
//   SnapshotState(c)   every split the reader holds (finished ones included) with the position
//                      of the next record: the reader's state for checkpoint c, taken between
//                      two PollNext calls, so it covers exactly the records emitted before it.
//   NotifyCheckpointComplete(c)  checkpoint c is complete (e.g. commit offsets for monitoring).
//
// Per-split outputs (ReaderOutput::CreateOutputForSplit) let the task keep event time per
// split: a split that lags behind holds back the subtask's watermark; a released split (ended)
// no longer does.
//
// PollNext never blocks on input: a reader that waits for data returns kNothingAvailable and
// calls wake_up (from any thread) when data arrives, or names the time to come back. Collect
// may block while the downstream is backpressured; that is the task's business.
//
// SplitReader is the one-split building block used by MultiplexSourceReader (several splits of
// one source read interleaved on the task thread): the file and generator sources are built
// that way (builtin_source.h).
//
// Threading: every method on the source subtask's task thread, except wake_up.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/input/source_split.h"
#include "common/metrics.h"
#include "common/record.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/runtime/mailbox_processor.h"

namespace keyflow {

// Where the records of one split go.
class SourceOutput {
 public:
  virtual ~SourceOutput() = default;
  // Emits `record` (its timestamp is the event time). An error fails the task.
  virtual Status Collect(const Record& record) = 0;
};

// Where a reader's records go: one SourceOutput per split.
class ReaderOutput {
 public:
  virtual ~ReaderOutput() = default;
  // The output of `split`, created on first use; the same object for the split's lifetime.
  virtual SourceOutput& CreateOutputForSplit(SplitId split) = 0;
  // `split` ended: it no longer holds back event time. Its output must not be used again.
  virtual void ReleaseOutputForSplit(SplitId split) = 0;
};

// What a reader gets from its task.
struct SourceReaderContext {
  SubtaskIndex subtask{0};
  int32_t parallelism = 1;
  const Clock* clock = nullptr;  // never null
  // Any thread: data became available after PollNext returned kNothingAvailable without a time.
  std::function<void()> wake_up;
  Counter* bad_records = nullptr;  // never null: malformed records skipped
};

struct PollResult {
  InputStatus status = InputStatus::kMoreAvailable;
  // kNothingAvailable: the clock time to poll again; kMaxWatermark: when wake_up is called.
  Timestamp retry_at = kMaxWatermark;

  static PollResult More() { return {InputStatus::kMoreAvailable, kMaxWatermark}; }
  static PollResult End() { return {InputStatus::kEndOfInput, kMaxWatermark}; }
  static PollResult NothingUntil(Timestamp at) { return {InputStatus::kNothingAvailable, at}; }
};

class SourceReader {
 public:
  virtual ~SourceReader() = default;

  // New splits to read, each from its position. An error (a split that cannot be opened) fails
  // the task.
  virtual Status AddSplits(std::vector<SourceSplitState> splits) = 0;
  // No split will be added any more: once the current ones end, PollNext returns kEndOfInput.
  virtual void NotifyNoMoreSplits() = 0;

  // See the file comment. An error fails the task.
  virtual Result<PollResult> PollNext(ReaderOutput& output) = 0;

  // Every split added so far with the position of its next record. `checkpoint` is the
  // checkpoint being taken, nullopt for the final state at the end of input.
  virtual std::vector<SourceSplitState> SnapshotState(std::optional<CheckpointId> checkpoint) = 0;
  virtual void NotifyCheckpointComplete(CheckpointId /*checkpoint*/) {}
};

// Reads one split, synchronously and without blocking.
class SplitReader {
 public:
  virtual ~SplitReader() = default;
  // kRecord: *out holds the next record and position() is after it; kEndOfSplit: the split is
  // exhausted (the position stays at its end); kThrottled: nothing before
  // next_available_time(). An error leaves the position before the failing record.
  virtual Result<SplitReadResult> Next(Record* out) = 0;
  virtual SplitPosition position() const = 0;
  virtual Timestamp next_available_time() const { return kMaxWatermark; }
};

// Opens the reader of one split at its position. `splits_open` is how many splits the reader
// reads at once with this one (to share a read-buffer budget).
using SplitReaderFactory = std::function<Result<std::unique_ptr<SplitReader>>(
    const SourceSplitState& split, size_t splits_open)>;

}  // namespace keyflow
