#include "worker/watermark/status_watermark_valve.h"

#include <utility>

#include "common/check.h"

namespace keyflow {

StatusWatermarkValve::StatusWatermarkValve(int32_t num_channels)
    : num_active_channels_(num_channels) {
  KF_CHECK_GE(num_channels, 1) << "a StatusWatermarkValve needs at least one input channel";
  channels_.resize(static_cast<size_t>(num_channels));
  heap_.reserve(static_cast<size_t>(num_channels));
  // All channels start aligned at kMinWatermark: any order is a valid heap.
  for (int32_t c = 0; c < num_channels; ++c) {
    channels_[c].heap_pos = c;
    heap_.push_back(c);
  }
}

int32_t StatusWatermarkValve::CheckedIndex(SubtaskIndex channel) const {
  KF_CHECK(channel.value() >= 0 && channel.value() < num_channels())
      << "input channel " << channel << " out of range [0, " << num_channels() << ")";
  return channel.value();
}

const StatusWatermarkValve::Channel& StatusWatermarkValve::At(SubtaskIndex channel) const {
  return channels_[CheckedIndex(channel)];
}

void StatusWatermarkValve::InputWatermark(Timestamp watermark, SubtaskIndex channel,
                                          WatermarkDataOutput& output) {
  const int32_t c = CheckedIndex(channel);
  Channel& ch = channels_[c];
  if (last_output_status_ == WatermarkStatus::kIdle || ch.status == WatermarkStatus::kIdle) {
    return;
  }
  if (watermark <= ch.watermark) return;  // strictly increasing per channel
  ch.watermark = watermark;
  if (ch.heap_pos >= 0) {
    SiftDown(ch.heap_pos);  // the key only grew
  } else if (watermark >= last_output_watermark_) {
    MarkAligned(c);
  }
  EmitNewMinIfAdvanced(output);
}

void StatusWatermarkValve::InputWatermarkStatus(WatermarkStatus status, SubtaskIndex channel,
                                                WatermarkDataOutput& output) {
  const int32_t c = CheckedIndex(channel);
  Channel& ch = channels_[c];
  if (status == WatermarkStatus::kIdle && ch.status == WatermarkStatus::kActive) {
    ch.status = WatermarkStatus::kIdle;
    --num_active_channels_;
    MarkUnaligned(c);
    if (num_active_channels_ == 0) {
      // Nobody advances event time any more: flush the highest watermark seen.
      // Only needed when this channel held the output back; otherwise the
      // minimum already moved past it.
      if (ch.watermark == last_output_watermark_) EmitMaxOfAllChannelsIfAdvanced(output);
      last_output_status_ = WatermarkStatus::kIdle;
      output.EmitWatermarkStatus(WatermarkStatus::kIdle);
    } else if (ch.watermark == last_output_watermark_) {
      // This channel may have been the minimum: the remaining aligned ones may
      // allow more.
      EmitNewMinIfAdvanced(output);
    }
  } else if (status == WatermarkStatus::kActive && ch.status == WatermarkStatus::kIdle) {
    ch.status = WatermarkStatus::kActive;
    ++num_active_channels_;
    if (ch.watermark >= last_output_watermark_) MarkAligned(c);
    if (last_output_status_ == WatermarkStatus::kIdle) {
      last_output_status_ = WatermarkStatus::kActive;
      output.EmitWatermarkStatus(WatermarkStatus::kActive);
    }
  }
}

void StatusWatermarkValve::EmitNewMinIfAdvanced(WatermarkDataOutput& output) {
  if (heap_.empty()) return;  // every active channel is unaligned: nothing to say
  const Timestamp min = channels_[heap_[0]].watermark;
  if (min > last_output_watermark_) {
    last_output_watermark_ = min;
    output.EmitWatermark(min);
  }
}

void StatusWatermarkValve::EmitMaxOfAllChannelsIfAdvanced(WatermarkDataOutput& output) {
  Timestamp max = kMinWatermark;
  for (const Channel& ch : channels_) {
    if (ch.watermark > max) max = ch.watermark;
  }
  if (max > last_output_watermark_) {
    last_output_watermark_ = max;
    output.EmitWatermark(max);
  }
}

void StatusWatermarkValve::MarkAligned(int32_t c) {
  if (channels_[c].heap_pos >= 0) return;
  const int32_t pos = static_cast<int32_t>(heap_.size());
  heap_.push_back(c);
  channels_[c].heap_pos = pos;
  SiftUp(pos);
}

void StatusWatermarkValve::MarkUnaligned(int32_t c) {
  const int32_t pos = channels_[c].heap_pos;
  if (pos < 0) return;
  const int32_t last = static_cast<int32_t>(heap_.size()) - 1;
  if (pos != last) Swap(pos, last);
  heap_.pop_back();
  channels_[c].heap_pos = -1;
  if (pos != last) {
    // The channel moved into `pos` can be smaller than its new parent or larger
    // than a child.
    const int32_t moved = heap_[pos];
    SiftUp(pos);
    SiftDown(channels_[moved].heap_pos);
  }
}

void StatusWatermarkValve::Swap(int32_t a, int32_t b) {
  std::swap(heap_[a], heap_[b]);
  channels_[heap_[a]].heap_pos = a;
  channels_[heap_[b]].heap_pos = b;
}

void StatusWatermarkValve::SiftUp(int32_t pos) {
  while (pos > 0) {
    const int32_t parent = (pos - 1) / 2;
    if (!Less(pos, parent)) return;
    Swap(pos, parent);
    pos = parent;
  }
}

void StatusWatermarkValve::SiftDown(int32_t pos) {
  const int32_t n = static_cast<int32_t>(heap_.size());
  while (true) {
    const int32_t left = 2 * pos + 1;
    if (left >= n) return;
    int32_t smallest = left;
    if (left + 1 < n && Less(left + 1, left)) smallest = left + 1;
    if (!Less(smallest, pos)) return;
    Swap(pos, smallest);
    pos = smallest;
  }
}

}  // namespace keyflow
