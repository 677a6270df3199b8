#include "worker/checkpointing/checkpoint_barrier_handler.h"

#include <algorithm>

namespace keyflow {

CheckpointBarrierHandler::CheckpointBarrierHandler(int32_t num_channels, Callbacks callbacks)
    : cb_(std::move(callbacks)),
      finished_(static_cast<size_t>(num_channels), false),
      received_(static_cast<size_t>(num_channels), false) {}

void CheckpointBarrierHandler::Start(CheckpointId id, int64_t now_us) {
  pending_ = id;
  pending_announced_ = announced_.count(id.value()) > 0;
  announced_.erase(announced_.begin(), announced_.upper_bound(id.value()));
  std::fill(received_.begin(), received_.end(), false);
  alignment_start_us_ = now_us;
}

void CheckpointBarrierHandler::AbortPending(const std::string& reason) {
  if (!aligning()) return;
  CheckpointId id = pending_;
  pending_ = CheckpointId(0);
  last_aborted_ = std::max(last_aborted_, id);
  std::fill(received_.begin(), received_.end(), false);
  cb_.unblock_all();
  cb_.abort(id, reason);
}

void CheckpointBarrierHandler::OnBarrier(SubtaskIndex channel, CheckpointId id, int64_t now_us) {
  now_us_ = now_us;
  if (id <= last_triggered_ || id <= last_aborted_) return;  // old, taken or aborted
  if (aligning() && id < pending_) return;
  if (aligning() && id > pending_) {
    AbortPending("subsumed by checkpoint " + std::to_string(id.value()));
  }
  if (!aligning()) Start(id, now_us);
  received_[static_cast<size_t>(channel.value())] = true;
  cb_.block_channel(channel);
  MaybeComplete();
}

void CheckpointBarrierHandler::OnCancelBarrier(SubtaskIndex, CheckpointId id) {
  if (aligning() && id == pending_) AbortPending("cancelled by an upstream subtask");
}

void CheckpointBarrierHandler::OnChannelFinished(SubtaskIndex channel, int64_t now_us) {
  now_us_ = now_us;
  finished_[static_cast<size_t>(channel.value())] = true;
  if (aligning()) {
    MaybeComplete();
    return;
  }
  // Every channel finished: announced checkpoints need no barriers any more.
  if (!announced_.empty()) Announce(CheckpointId(*announced_.rbegin()), now_us);
}

void CheckpointBarrierHandler::Announce(CheckpointId id, int64_t now_us) {
  now_us_ = now_us;
  if (id <= last_triggered_) return;
  if (aligning()) {
    if (id == pending_) {
      pending_announced_ = true;
      MaybeComplete();
    } else if (id > pending_) {
      announced_.insert(id.value());
    }
    return;
  }
  bool all_finished = true;
  for (bool f : finished_) all_finished &= f;
  if (all_finished) {
    Start(id, now_us);
    pending_announced_ = true;
    MaybeComplete();
  } else {
    announced_.insert(id.value());
  }
}

void CheckpointBarrierHandler::Abort(CheckpointId id, const std::string& reason) {
  announced_.erase(id.value());
  if (aligning() && id == pending_) AbortPending(reason);
  last_aborted_ = std::max(last_aborted_, id);
}

void CheckpointBarrierHandler::MaybeComplete() {
  if (!aligning() || !pending_announced_) return;
  for (size_t c = 0; c < received_.size(); ++c) {
    if (!received_[c] && !finished_[c]) return;
  }
  CheckpointId id = pending_;
  pending_ = CheckpointId(0);
  last_triggered_ = id;
  std::fill(received_.begin(), received_.end(), false);
  cb_.unblock_all();
  cb_.snapshot(id, now_us_ - alignment_start_us_);
}

}  // namespace keyflow
