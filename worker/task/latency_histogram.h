// LatencyHistogram: the latency samples of one keyed subtask (issue 12; worker/README.md,
// "Latency"), summarised as a protocol LatencySummary for heartbeats and `keyflow status`.
//
// Two views of the same samples:
//  * fixed buckets (kLatencyBucketBoundsUs, one more for +Inf), a count and a sum, cumulative
//    since the histogram was created (one per deployment attempt) — Prometheus semantics;
//  * exact p50 / p99 / p99.9 over the samples of the recent `window` (default 10 s), kept in a
//    ring of at most `max_samples` (default 4096) samples with their times. Memory is bounded
//    either way; with more than max_samples samples per window the quantiles cover the newest
//    max_samples only (a subtask with 64 upstream channels and 200 ms markers makes 3200 in 10 s).
//
// Quantile q over n window samples is the nearest rank: the ceil(q * n)-th smallest (q = 0.5 of
// {1, 2, 3, 4} is 2; q = 0.99 of 1000 samples is the 990th smallest). A sample is in the window
// at `now` while now - its time < window. Negative latencies (clocks of two hosts that
// disagree) are recorded as 0.
//
// Threading: Record on the task thread, Summarize on the worker's control thread; both take a
// mutex (a few samples per second per channel: uncontended). Time is passed in, never read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/duration.h"
#include "common/mutex.h"
#include "common/protocol/control_messages.h"
#include "common/types.h"

namespace keyflow {

struct LatencyHistogramOptions {
  Duration window = Duration::Seconds(10);
  size_t max_samples = 4096;  // > 0
};

class LatencyHistogram {
 public:
  explicit LatencyHistogram(LatencyHistogramOptions options = {});

  // One sample: `latency_us` observed at `now`.
  void Record(int64_t latency_us, Timestamp now);
  // Buckets, count and sum since creation; quantiles over the window ending at `now` (-1 each
  // when the window holds no sample; bucket_counts empty before the first sample).
  LatencySummary Summarize(Timestamp now) const;

  // Index of the bucket counting `latency_us`: the first bound >= it, kLatencyBuckets - 1 (+Inf)
  // above the last bound.
  static size_t BucketIndex(int64_t latency_us);

 private:
  struct Sample {
    int64_t latency_us = 0;
    int64_t at_ms = 0;
  };

  const LatencyHistogramOptions options_;
  mutable Mutex mu_;
  std::array<uint64_t, kLatencyBuckets> buckets_ ABSL_GUARDED_BY(mu_){};
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sum_us_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Sample> ring_ ABSL_GUARDED_BY(mu_);  // grows to max_samples, then wraps
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;           // where the next sample goes once full
};

}  // namespace keyflow
