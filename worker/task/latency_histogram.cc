#include "worker/task/latency_histogram.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace keyflow {
namespace {

// The ceil(q * n)-th smallest of `sorted` (nearest rank); q in (0, 1], n > 0.
int64_t NearestRank(const std::vector<int64_t>& sorted, double q) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(q * n - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace

LatencyHistogram::LatencyHistogram(LatencyHistogramOptions options) : options_(options) {
  KF_CHECK_GT(options_.max_samples, 0u);
}

size_t LatencyHistogram::BucketIndex(int64_t latency_us) {
  const auto* end = std::end(kLatencyBucketBoundsUs);
  const auto* it = std::lower_bound(std::begin(kLatencyBucketBoundsUs), end, latency_us);
  return static_cast<size_t>(it - std::begin(kLatencyBucketBoundsUs));
}

void LatencyHistogram::Record(int64_t latency_us, Timestamp now) {
  latency_us = std::max<int64_t>(0, latency_us);
  MutexLock lock(&mu_);
  ++buckets_[BucketIndex(latency_us)];
  ++count_;
  sum_us_ += latency_us;
  Sample sample{latency_us, now.millis()};
  if (ring_.size() < options_.max_samples) {
    ring_.push_back(sample);
  } else {
    ring_[next_] = sample;
    next_ = (next_ + 1) % ring_.size();
  }
}

LatencySummary LatencyHistogram::Summarize(Timestamp now) const {
  LatencySummary out;
  std::vector<int64_t> window;
  {
    MutexLock lock(&mu_);
    out.count = count_;
    out.sum_us = sum_us_;
    if (count_ > 0) out.bucket_counts.assign(buckets_.begin(), buckets_.end());
    window.reserve(ring_.size());
    for (const Sample& s : ring_) {
      if (now.millis() - s.at_ms < options_.window.millis()) window.push_back(s.latency_us);
    }
  }
  if (window.empty()) return out;
  std::sort(window.begin(), window.end());
  out.p50_us = NearestRank(window, 0.5);
  out.p99_us = NearestRank(window, 0.99);
  out.p999_us = NearestRank(window, 0.999);
  return out;
}

}  // namespace keyflow
