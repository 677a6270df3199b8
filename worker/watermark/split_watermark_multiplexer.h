// SplitWatermarkMultiplexer: per-split watermarks of one source subtask, combined by the
// minimum over the splits that have not ended (Flink's per-split watermarking in
// SourceOperator / WatermarkOutputMultiplexer).
//
// A source subtask reads all its splits interleaved; each split has its own bounded
// out-of-orderness clock (max timestamp of the split - bound - 1), so a split that lags behind
// in event time holds the subtask's watermark back instead of having its records turn late.
// A split without records yet holds it at kMinWatermark; an ended split no longer counts.
//
// Per-split idleness (set_split_idle_timeout; Flink's WatermarkStrategy.withIdleness applied per
// split, as its SourceOperator does): a split without records for longer than the timeout (the
// IdlenessTimer rule of WatermarksWithIdleness, evaluated at each periodic emission) no longer
// holds back the watermark, and holds it again from its next record on; when every split that
// has not ended is idle, the output is marked idle. So one partition without data does not stall
// event time.
//
// Plugs in as a WatermarkGenerator (periodic emission, optionally wrapped by
// WatermarksWithIdleness): records are reported per split with OnSplitEvent; OnEvent is a
// no-op. Threading: the source task thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "common/types.h"
#include "worker/watermark/watermark_generator.h"

namespace keyflow {

class SplitWatermarkMultiplexer final : public WatermarkGenerator {
 public:
  // Starts with `num_splits` splits, indexes 0..num_splits-1. Precondition: bound >= 0.
  SplitWatermarkMultiplexer(size_t num_splits, Duration bound);

  // A split added later (a source reader got a new split): its index. Until its first record
  // it holds the watermark at kMinWatermark, as every split does.
  size_t AddSplit();

  void OnSplitEvent(size_t split, Timestamp ts) {
    if (ts > max_timestamp_[split]) max_timestamp_[split] = ts;
    ++events_[split];
  }
  void SplitFinished(size_t split) { finished_[split] = true; }
  // A source that may get more splits (a monitored directory): while every split it has ended,
  // periodic emission marks the output idle, so a subtask waiting for its next split does not
  // hold back event time downstream.
  void set_idle_when_all_ended(bool idle) { idle_when_all_ended_ = idle; }
  // Per-split idleness (see the file comment). Preconditions: timeout > 0; `clock` outlives this.
  void set_split_idle_timeout(Duration timeout, const Clock* clock);
  // Whether `split` counted as idle at the last periodic emission.
  bool split_idle(size_t split) const { return idle_[split]; }

  void OnEvent(Timestamp, WatermarkOutput&) override {}
  // Emits min over unfinished, non-idle splits of (max timestamp - bound - 1), after MarkActive
  // when a split stopped being idle; when every unfinished split is idle, MarkIdle; when every
  // split ended, nothing (the end of input emits kMaxWatermark itself), or MarkIdle with
  // set_idle_when_all_ended.
  void OnPeriodicEmit(WatermarkOutput& output) override;

  // The combined watermark now, over the splits neither ended nor idle (kMinWatermark before
  // any record; kMaxWatermark if there is none).
  Timestamp CurrentWatermark() const;

 private:
  Duration bound_;
  std::vector<Timestamp> max_timestamp_;
  std::vector<bool> finished_;
  bool idle_when_all_ended_ = false;
  // Per-split idleness: records seen, records seen at the last check, since when the split had
  // none (kMinWatermark: not counting), and the verdict of the last check.
  Duration idle_timeout_ = Duration::Millis(0);  // 0: off
  const Clock* clock_ = nullptr;
  std::vector<uint64_t> events_;
  std::vector<uint64_t> checked_events_;
  std::vector<Timestamp> inactive_since_;
  std::vector<bool> idle_;
};

}  // namespace keyflow
