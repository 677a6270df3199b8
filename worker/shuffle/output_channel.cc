#include "worker/shuffle/output_channel.h"

#include <algorithm>
#include <utility>

#include "common/clock.h"

namespace keyflow {

OutputChannel::OutputChannel(ZmqSocket socket, SubtaskIndex sender, SubtaskIndex receiver,
                             AttemptNumber attempt, const OutputChannelOptions& options)
    : socket_(std::move(socket)),
      sender_(sender),
      receiver_(receiver),
      attempt_(attempt),
      options_(options) {
  description_ = "channel from source subtask " + std::to_string(sender.value()) +
                 " to keyed subtask " + std::to_string(receiver.value()) + " (" +
                 socket_.endpoint() + ")";
}

Status OutputChannel::Append(const Record& record, Timestamp now) {
  KF_DCHECK(queued_ == 0);
  if (builder_.empty() && !pending_marker_) batch_started_ = now;
  builder_.Append(record);
  if (builder_.frame_size() >= options_.batch_size_bytes) {
    SealBatch();
    return TryPush();
  }
  return Status::Ok();
}

OutputChannel::QueuedFrame& OutputChannel::EnqueueSlot() {
  KF_CHECK_LT(queued_, queue_.size()) << description_ << ": send queue overflow";
  QueuedFrame& slot = queue_[(head_ + queued_) % queue_.size()];
  ++queued_;
  return slot;
}

bool OutputChannel::AddLatencyMarker(int64_t marked_time_us, Timestamp now) {
  if (pending_marker_) return false;
  if (builder_.empty()) batch_started_ = now;
  pending_marker_ = true;
  pending_marker_us_ = marked_time_us;
  return true;
}

void OutputChannel::SealBatch() {
  if (!builder_.empty()) {
    QueuedFrame& slot = EnqueueSlot();
    slot.records = builder_.num_records();
    builder_.FinishInto(sender_, attempt_, next_sequence_++, &slot.bytes);
  }
  if (pending_marker_) {
    pending_marker_ = false;
    QueuedFrame& slot = EnqueueSlot();
    slot.records = 0;
    EncodeEventFrame(sender_, attempt_, next_sequence_++,
                     ChannelEvent::LatencyMarker(pending_marker_us_), &slot.bytes);
  }
}

void OutputChannel::QueueEvent(const ChannelEvent& event) {
  KF_CHECK_EQ(queued_, 0u) << description_ << ": push queued frames before queueing an event";
  SealBatch();
  QueuedFrame& slot = EnqueueSlot();
  slot.records = 0;
  EncodeEventFrame(sender_, attempt_, next_sequence_++, event, &slot.bytes);
}

bool OutputChannel::BatchDue(Timestamp now) const {
  return (!builder_.empty() || pending_marker_) && now >= batch_deadline();
}

Timestamp OutputChannel::batch_deadline() const {
  if (builder_.empty() && !pending_marker_) return kMaxWatermark;
  return batch_started_ + options_.batch_timeout;
}

Status OutputChannel::SendFront(bool wait, int64_t deadline_ms, bool* sent) {
  QueuedFrame& front = queue_[head_];
  auto tried = socket_.TrySend(front.bytes);
  if (!tried.ok()) return tried.status().WithContext(description_);
  *sent = *tried;
  if (!*sent && wait) {
    int64_t start = MonotonicMillis();
    SendOptions send = options_.send;
    send.timeout = Duration::Millis(std::max<int64_t>(0, deadline_ms - start));
    Status s = socket_.Send(front.bytes, send);
    metrics_.backpressured_millis += MonotonicMillis() - start;
    if (!s.ok()) {
      if (s.code() == StatusCode::kDeadlineExceeded || s.code() == StatusCode::kUnavailable) {
        ++metrics_.send_timeouts;
      }
      return s.WithContext(description_);
    }
    *sent = true;
  }
  if (*sent) {
    ++metrics_.frames;
    metrics_.bytes += front.bytes.size();
    metrics_.records += front.records;
    front.bytes.clear();  // keeps the capacity for the next frame
    head_ = (head_ + 1) % queue_.size();
    --queued_;
  }
  return Status::Ok();
}

Status OutputChannel::TryPush() {
  while (queued_ > 0) {
    bool sent = false;
    KF_RETURN_IF_ERROR(SendFront(/*wait=*/false, 0, &sent));
    if (!sent) break;
  }
  return Status::Ok();
}

Status OutputChannel::Push(int64_t deadline_ms) {
  while (queued_ > 0) {
    bool sent = false;
    KF_RETURN_IF_ERROR(SendFront(/*wait=*/true, deadline_ms, &sent));
  }
  return Status::Ok();
}

void OutputChannel::Close(Duration linger) {
  if (!socket_.is_open()) return;
  socket_.SetLinger(linger).IgnoreError();  // best effort: closing with linger 0 is also safe
  socket_.Close();
}

}  // namespace keyflow
