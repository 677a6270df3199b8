#include "worker/task/latency_histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace keyflow {
namespace {

TEST(LatencyHistogram, EmptyHasNoQuantilesAndNoBuckets) {
  LatencyHistogram h;
  LatencySummary s = h.Summarize(Timestamp(1000));
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.sum_us, 0);
  EXPECT_TRUE(s.bucket_counts.empty());
  EXPECT_EQ(s.p50_us, -1);
  EXPECT_EQ(s.p99_us, -1);
  EXPECT_EQ(s.p999_us, -1);
}

TEST(LatencyHistogram, BucketEdgesAreInclusiveUpperBounds) {
  EXPECT_EQ(LatencyHistogram::BucketIndex(0), 0u);
  EXPECT_EQ(LatencyHistogram::BucketIndex(50), 0u);
  EXPECT_EQ(LatencyHistogram::BucketIndex(51), 1u);
  EXPECT_EQ(LatencyHistogram::BucketIndex(100), 1u);
  EXPECT_EQ(LatencyHistogram::BucketIndex(1'000), 4u);
  EXPECT_EQ(LatencyHistogram::BucketIndex(1'001), 5u);
  EXPECT_EQ(LatencyHistogram::BucketIndex(60'000'000), kLatencyBuckets - 2);
  EXPECT_EQ(LatencyHistogram::BucketIndex(60'000'001), kLatencyBuckets - 1);  // +Inf
}

TEST(LatencyHistogram, CountsSamplesInTheirBucketsWithCountAndSum) {
  LatencyHistogram h;
  for (int64_t us : {10, 50, 51, 2'500, 2'501, 99'000'000}) h.Record(us, Timestamp(0));
  h.Record(-30, Timestamp(0));  // clocks of two hosts disagree: recorded as 0
  LatencySummary s = h.Summarize(Timestamp(0));
  ASSERT_EQ(s.bucket_counts.size(), kLatencyBuckets);
  std::vector<uint64_t> expected(kLatencyBuckets, 0);
  expected[0] = 3;                    // 0, 10, 50
  expected[1] = 1;                    // 51
  expected[5] = 1;                    // 2'500
  expected[6] = 1;                    // 2'501
  expected[kLatencyBuckets - 1] = 1;  // above 60 s
  EXPECT_EQ(s.bucket_counts, expected);
  EXPECT_EQ(s.count, 7u);
  EXPECT_EQ(s.sum_us, 10 + 50 + 51 + 2'500 + 2'501 + 99'000'000);
}

TEST(LatencyHistogram, QuantilesAreNearestRanksOfTheWindow) {
  LatencyHistogram h;
  for (int64_t us : {4, 1, 3, 2}) h.Record(us, Timestamp(0));
  LatencySummary s = h.Summarize(Timestamp(0));
  EXPECT_EQ(s.p50_us, 2);  // ceil(0.5 * 4) = 2nd smallest
  EXPECT_EQ(s.p99_us, 4);
  EXPECT_EQ(s.p999_us, 4);

  LatencyHistogram big;
  for (int64_t i = 1000; i >= 1; --i) big.Record(i * 10, Timestamp(5));  // 10 .. 10'000
  s = big.Summarize(Timestamp(5));
  EXPECT_EQ(s.p50_us, 5'000);   // 500th smallest
  EXPECT_EQ(s.p99_us, 9'900);   // 990th
  EXPECT_EQ(s.p999_us, 9'990);  // 999th
}

TEST(LatencyHistogram, QuantilesForgetSamplesOlderThanTheWindowButBucketsKeepThem) {
  LatencyHistogram h(LatencyHistogramOptions{Duration::Seconds(10), 4096});
  h.Record(9'000, Timestamp(1'000));
  h.Record(1'000, Timestamp(5'000));
  h.Record(2'000, Timestamp(10'999));
  LatencySummary s = h.Summarize(Timestamp(10'999));
  EXPECT_EQ(s.p99_us, 9'000);  // 10'999 - 1'000 < 10 s: still in
  s = h.Summarize(Timestamp(11'000));
  EXPECT_EQ(s.p50_us, 1'000);  // the 9 ms sample left the window exactly at 10 s
  EXPECT_EQ(s.p99_us, 2'000);
  EXPECT_EQ(s.count, 3u);
  s = h.Summarize(Timestamp(21'000));
  EXPECT_EQ(s.p50_us, -1);  // nothing recent
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.sum_us, 12'000);
}

TEST(LatencyHistogram, TheRingKeepsOnlyTheNewestSamples) {
  LatencyHistogram h(LatencyHistogramOptions{Duration::Seconds(10), 3});
  for (int64_t us : {100, 200, 300, 400, 500}) h.Record(us, Timestamp(0));
  LatencySummary s = h.Summarize(Timestamp(0));
  EXPECT_EQ(s.p50_us, 400);  // window = {300, 400, 500}
  EXPECT_EQ(s.p99_us, 500);
  EXPECT_EQ(s.count, 5u);
}

TEST(LatencyHistogram, RecordAndSummarizeFromTwoThreads) {
  LatencyHistogram h(LatencyHistogramOptions{Duration::Seconds(10), 10'000});
  std::thread writer([&] {
    for (int i = 0; i < 10'000; ++i) h.Record(i % 100, Timestamp(0));
  });
  for (int i = 0; i < 1'000; ++i) (void)h.Summarize(Timestamp(0));
  writer.join();
  LatencySummary s = h.Summarize(Timestamp(0));
  EXPECT_EQ(s.count, 10'000u);
  EXPECT_EQ(s.p50_us, 49);
}

}  // namespace
}  // namespace keyflow
