// CheckpointBarrierHandler: exactly-once barrier alignment of one keyed subtask (Flink's
// SingleCheckpointBarrierHandler with the aligned controller).
//
// * Barrier n on channel c: that channel is blocked (its later data waits in the channel's
//   bounded queue) until barrier n has arrived on every channel that has not finished.
// * A channel that finished (END_OF_INPUT) counts as aligned for every checkpoint.
// * A barrier with a higher id than the pending one aborts the pending checkpoint (subsumed)
//   and starts aligning the new one; barriers of older, already triggered or aborted ids are
//   ignored.
// * A cancel barrier for the pending id aborts it.
// * The snapshot of checkpoint n needs the control message that announced it (it names the
//   checkpoint directory): Announce(n) may come before or after the barriers. When every
//   channel finished, the announcement alone triggers the snapshot (checkpoints after the end of
//   input, e.g. the final checkpoint).
// When aligned and announced: all channels are unblocked and Snapshot(n) is called — before any
// record after the barriers is processed.
//
// Threading: task thread only. Time is passed in (for the alignment duration).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/types.h"

namespace keyflow {

class CheckpointBarrierHandler {
 public:
  struct Callbacks {
    std::function<void(SubtaskIndex)> block_channel;
    std::function<void()> unblock_all;
    // Aligned and announced: take the snapshot of `id` now. `alignment_us` is how long the
    // first blocked channel waited.
    std::function<void(CheckpointId id, int64_t alignment_us)> snapshot;
    std::function<void(CheckpointId id, const std::string& reason)> abort;
  };

  CheckpointBarrierHandler(int32_t num_channels, Callbacks callbacks);

  void OnBarrier(SubtaskIndex channel, CheckpointId id, int64_t now_us);
  void OnCancelBarrier(SubtaskIndex channel, CheckpointId id);
  void OnChannelFinished(SubtaskIndex channel, int64_t now_us);
  // The coordinator triggered checkpoint `id` (the worker's control thread forwarded it).
  void Announce(CheckpointId id, int64_t now_us);
  // The coordinator aborted checkpoint `id`.
  void Abort(CheckpointId id, const std::string& reason);

  CheckpointId pending() const { return pending_; }
  bool aligning() const { return pending_.value() != 0; }
  CheckpointId last_triggered() const { return last_triggered_; }

 private:
  void Start(CheckpointId id, int64_t now_us);
  void AbortPending(const std::string& reason);
  void MaybeComplete();

  Callbacks cb_;
  std::vector<bool> finished_;
  std::vector<bool> received_;  // barrier of pending_ arrived on this channel
  CheckpointId pending_{0};     // 0: nothing aligning
  bool pending_announced_ = false;
  std::set<int64_t> announced_;  // announced ids > last_triggered_ without barriers yet
  CheckpointId last_triggered_{0};
  CheckpointId last_aborted_{0};  // barriers up to here are stale
  int64_t alignment_start_us_ = 0;
  int64_t now_us_ = 0;
};

}  // namespace keyflow
