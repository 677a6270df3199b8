// StatusWatermarkValve: combines the watermarks and watermark statuses of a
// subtask's input channels into the subtask's own watermark and status (Flink's
// StatusWatermarkValve).
//
// A keyed subtask has one input channel per upstream source subtask; channel i
// carries the output of upstream subtask i. The input gate feeds every
// WATERMARK / WATERMARK_STATUS event here, in per-channel order; the valve
// emits to a WatermarkDataOutput (the operator input, which advances event-time
// timers and forwards downstream).
//
// Semantics (exactly Flink's):
//   State per channel: watermark (initially kMinWatermark), status (ACTIVE),
//   aligned (true). Valve: last output watermark (kMinWatermark), last output
//   status (ACTIVE). The output watermark is the minimum over the aligned
//   channels; idle channels are never aligned. InputWatermark(w, c):
//     ignored if the valve or channel c is idle, or if w <= c's watermark
//     (watermarks are strictly increasing per channel; equal or decreasing
//     input is dropped). Otherwise c's watermark becomes w; an unaligned c
//     becomes aligned once w >= the last output watermark. Then, if some
//     channel is aligned and the minimum aligned watermark is > the last output
//     watermark, that minimum is emitted.
//   InputWatermarkStatus(IDLE, c) on an ACTIVE channel: c becomes idle and
//   unaligned. If all
//     channels are now idle: when c's watermark == the last output watermark,
//     the maximum watermark over all channels is emitted (if greater) — nobody
//     will advance event time any more, so everything seen is flushed — then
//     IDLE is emitted. Otherwise, if c's watermark
//     == the last output watermark, a new minimum over the remaining aligned
//     channels is emitted if it is greater.
//   InputWatermarkStatus(ACTIVE, c) on an IDLE channel: c becomes active, and
//   aligned only if
//     its watermark >= the last output watermark (else it must catch up by
//     receiving watermarks before it counts again). If the valve was idle, it
//     becomes ACTIVE and emits ACTIVE.
//   Repeated identical statuses produce no output. No watermark is emitted
//   while every active channel is unaligned. The output watermark never
//   decreases. End of input on a channel: the channel delivers kMaxWatermark
//   (the source emits it last), so it never holds back the minimum again; when
//   all channels ended, kMaxWatermark is emitted and every event-time timer
//   fires. A source that is idle when it ends first sends ACTIVE
//   (WatermarkToDataOutput does that), since an idle channel's watermarks are
//   ignored.
//
// Cost: the aligned channels sit in an indexed binary min-heap, so a watermark
// costs O(log channels); a status change costs O(log channels), plus
// O(channels) when all channels become idle (the max flush). No allocation
// after construction.
//
// Threading: not thread-safe; used only on the task thread of its subtask.
#pragma once

#include <cstdint>
#include <vector>

#include "common/types.h"
#include "worker/watermark/watermark_data_output.h"
#include "worker/watermark/watermark_status.h"

namespace keyflow {

class StatusWatermarkValve {
 public:
  // Precondition: num_channels >= 1.
  explicit StatusWatermarkValve(int32_t num_channels);

  // Feeds a watermark that arrived on `channel`; may emit a watermark to
  // `output`. Precondition: 0 <= channel < num_channels().
  void InputWatermark(Timestamp watermark, SubtaskIndex channel, WatermarkDataOutput& output);
  // Feeds a status that arrived on `channel`; may emit a watermark and/or a
  // status. Precondition: 0 <= channel < num_channels().
  void InputWatermarkStatus(WatermarkStatus status, SubtaskIndex channel,
                            WatermarkDataOutput& output);

  int32_t num_channels() const { return static_cast<int32_t>(channels_.size()); }
  Timestamp last_output_watermark() const { return last_output_watermark_; }
  WatermarkStatus last_output_status() const { return last_output_status_; }
  // Per-channel state, for status reporting and tests. Precondition: channel in
  // range.
  Timestamp channel_watermark(SubtaskIndex channel) const { return At(channel).watermark; }
  WatermarkStatus channel_status(SubtaskIndex channel) const { return At(channel).status; }
  bool channel_aligned(SubtaskIndex channel) const { return At(channel).heap_pos >= 0; }

 private:
  struct Channel {
    Timestamp watermark = kMinWatermark;
    WatermarkStatus status = WatermarkStatus::kActive;
    int32_t heap_pos = -1;  // index in heap_ while aligned, -1 while unaligned
  };

  const Channel& At(SubtaskIndex channel) const;
  int32_t CheckedIndex(SubtaskIndex channel) const;

  void MarkAligned(int32_t c);
  void MarkUnaligned(int32_t c);
  void EmitNewMinIfAdvanced(WatermarkDataOutput& output);
  void EmitMaxOfAllChannelsIfAdvanced(WatermarkDataOutput& output);

  // Indexed min-heap over the aligned channels, keyed by watermark.
  bool Less(int32_t heap_a, int32_t heap_b) const {
    return channels_[heap_[heap_a]].watermark < channels_[heap_[heap_b]].watermark;
  }
  void Swap(int32_t heap_a, int32_t heap_b);
  void SiftUp(int32_t pos);
  void SiftDown(int32_t pos);

  std::vector<Channel> channels_;
  std::vector<int32_t> heap_;  // channel indexes; heap_[0] has the minimum watermark
  int32_t num_active_channels_;
  Timestamp last_output_watermark_ = kMinWatermark;
  WatermarkStatus last_output_status_ = WatermarkStatus::kActive;
};

}  // namespace keyflow
