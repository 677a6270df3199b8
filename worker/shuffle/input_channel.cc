#include "worker/shuffle/input_channel.h"

#include <algorithm>
#include <utility>

namespace keyflow {

InputChannel::InputChannel(ZmqSocket socket, std::string endpoint, SubtaskIndex receiver,
                           SubtaskIndex sender, AttemptNumber attempt,
                           std::optional<KeyGroupRange> key_groups, LogRateLimiter* frame_errors)
    : socket_(std::move(socket)),
      endpoint_(std::move(endpoint)),
      receiver_(receiver),
      sender_(sender),
      attempt_(attempt),
      key_groups_(key_groups),
      frame_errors_(frame_errors) {
  description_ = "channel from source subtask " + std::to_string(sender.value()) +
                 " to keyed subtask " + std::to_string(receiver.value()) + " (" + endpoint_ + ")";
}

Result<bool> InputChannel::ReceiveNext(InputEvent* event) {
  for (int dropped = 0;;) {
    auto got = socket_.TryReceive(&message_);
    if (!got.ok()) return got.status().WithContext(description_);
    if (!*got) return false;
    std::string_view bytes(static_cast<const char*>(message_.data()), message_.size());
    auto decoded = DecodeFrame(bytes, description_);
    if (!decoded.ok()) {
      // Not a frame of a keyflow sender (or damaged on the way): the sequence check of the next
      // good frame catches a real sender's loss, so this one is only counted.
      ++metrics_.dropped_frames;
      KF_LOG_WARN_RATE_LIMITED(*frame_errors_, description_, "dropped a data frame: {}",
                               decoded.status().message());
      if (++dropped >= kMaxDropsPerReceive) return false;
      continue;
    }
    const FrameHeader& h = decoded->header;
    if (h.attempt < attempt_) {
      ++metrics_.stale_frames;  // a frame of an earlier deployment: ignore it
      continue;
    }
    if (h.attempt > attempt_) {
      return Reject(FailedPrecondition(
          description_ + ": frame from attempt " + std::to_string(h.attempt.value()) +
          " but this subtask runs attempt " + std::to_string(attempt_.value()) +
          ": this worker is behind the job's current deployment and must be redeployed"));
    }
    if (h.sender != sender_) {
      return Reject(Corruption(description_ + ": frame claims to come from source subtask " +
                               std::to_string(h.sender.value()) +
                               ": senders are connected to the wrong endpoints"));
    }
    if (finished_) {
      return Reject(Corruption(description_ + ": " + std::string(FrameKindName(h.kind)) +
                               " frame after END_OF_INPUT"));
    }
    if (h.sequence != next_sequence_) {
      if (h.sequence > next_sequence_) {
        return Reject(Unavailable(
            description_ + ": frames " + std::to_string(next_sequence_) + ".." +
            std::to_string(h.sequence - 1) +
            " were lost (the connection was interrupted); the job must restart from its last "
            "checkpoint"));
      }
      return Reject(Corruption(description_ + ": frame " + std::to_string(h.sequence) +
                               " arrived again after frame " + std::to_string(next_sequence_ - 1)));
    }
    event->channel = sender_;
    event->kind = h.kind;
    event->records = {};
    if (h.kind == FrameKind::kRecords) {
      Status s = DecodeRecordBatch(decoded->payload, description_, &records_);
      if (!s.ok()) return Reject(s);
      if (key_groups_.has_value()) {
        s = CheckKeyGroups();
        if (!s.ok()) return Reject(s);
      }
      event->records = records_;
      event->event = ChannelEvent::Of(FrameKind::kRecords);  // kind is all it carries
      metrics_.records += records_.size();
    } else {
      auto e = DecodeChannelEvent(*decoded, description_);
      if (!e.ok() && h.kind == FrameKind::kLatencyMarker) {
        // A marker only measures: a malformed one is dropped and counted like a damaged frame,
        // never fails the job (its sequence number is used up, so the next frame is in order).
        ++next_sequence_;
        ++metrics_.dropped_frames;
        KF_LOG_WARN_RATE_LIMITED(*frame_errors_, description_, "dropped a data frame: {}",
                                 e.status().message());
        if (++dropped >= kMaxDropsPerReceive) return false;
        continue;
      }
      if (!e.ok()) return Reject(e.status());
      event->event = *e;
      if (h.kind == FrameKind::kEndOfInput) finished_ = true;
    }
    ++next_sequence_;
    ++metrics_.frames;
    metrics_.bytes += bytes.size();
    return true;
  }
}

Status InputChannel::CheckKeyGroups() const {
  for (const RecordView& r : records_) {
    if (!key_groups_->contains(r.key_group)) {
      return Corruption(description_ + ": record of key group " +
                        std::to_string(r.key_group.value()) + " arrived at keyed subtask " +
                        std::to_string(receiver_.value()) + ", which owns " +
                        key_groups_->ToString() +
                        ": source and keyed subtasks disagree on the parallelism or the max "
                        "parallelism");
    }
  }
  return Status::Ok();
}

void InputChannel::Block(Timestamp now) {
  if (blocked_) return;
  blocked_ = true;
  blocked_since_ = now;
}

void InputChannel::Unblock(Timestamp now) {
  if (!blocked_) return;
  blocked_ = false;
  metrics_.blocked_millis += std::max<int64_t>(0, now.millis() - blocked_since_.millis());
}

InputChannelMetrics InputChannel::metrics(Timestamp now) const {
  InputChannelMetrics m = metrics_;
  if (blocked_) m.blocked_millis += std::max<int64_t>(0, now.millis() - blocked_since_.millis());
  return m;
}

}  // namespace keyflow
