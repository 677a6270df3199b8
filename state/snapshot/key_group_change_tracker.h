// KeyGroupChangeTracker: which key groups of a subtask changed since a checkpoint, for
// key-group-incremental checkpoints of the heap backend (state/README.md "Incremental
// checkpoints"), and the copy-on-write hook of the snapshot being written.
//
// It stays installed as the KeyGroupWriteGuard of the backend and the timer service for the
// whole life of the task. Time is cut into intervals at each checkpoint's synchronous part
// (StartInterval): the interval that starts at checkpoint n's sync point holds the key groups
// changed after n's state was captured. The first write of a key group in an interval takes
// the slow path (marks it changed and lets the snapshot being written capture it first, see
// AsyncKeyedSnapshot); later writes in the same interval cost one atomic load. So the key
// groups a checkpoint must write when its base is checkpoint b are the union of the intervals
// that started at b's sync point or later (ChangedSince(b)).
//
// Threading: task thread only (BeforeWrite, StartInterval, ...).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "common/types.h"
#include "state/key_group_write_guard.h"

namespace keyflow {

class KeyGroupChangeTracker final : public KeyGroupWriteGuard {
 public:
  explicit KeyGroupChangeTracker(int32_t num_key_groups);

  // Checkpoint `id`'s synchronous part: ends the current interval and starts the one of the
  // changes after `id`. Precondition: ids ascend.
  void StartInterval(CheckpointId id);
  // `snapshot` (null: none) sees the first write of each key group of the current interval
  // before it happens (its BeforeWrite): set it right after StartInterval, to the snapshot of
  // that checkpoint; clear it when the snapshot is written (or failed).
  void SetSnapshot(KeyGroupWriteGuard* snapshot) { snapshot_ = snapshot; }
  // Per key group (index into the range): changed since `base`'s synchronous part. Every key
  // group if no interval started at `base` is known (never started, or dropped).
  std::vector<bool> ChangedSince(CheckpointId base) const;
  // `base` completed and is the base of the next checkpoints: intervals before it are no longer
  // needed.
  void DropBefore(CheckpointId base);

  // Intervals kept (tests; bounded by the checkpoints since the last completed one).
  size_t intervals() const { return closed_.size() + 1; }

 private:
  void SerializeBeforeWrite(int32_t index) override;

  struct Interval {
    CheckpointId start{0};  // 0: from the start of the task
    std::vector<bool> changed;
  };
  int32_t num_key_groups_;
  std::deque<Interval> closed_;  // ascending start
  Interval current_;
  KeyGroupWriteGuard* snapshot_ = nullptr;
};

}  // namespace keyflow
