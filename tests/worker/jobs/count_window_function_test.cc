#include "worker/jobs/count_window_function.h"

#include <gtest/gtest.h>

#include "common/job_library/job_library.h"
#include "tests/testutil/status_matchers.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow {
namespace {

using Lines = std::vector<std::string>;

std::unique_ptr<KeyedOperatorTestHarness> Harness(std::map<std::string, std::string> params,
                                                  KeyType key_type = KeyType::kString) {
  auto fn = CreateBuiltInJobFunction("count-window", params);
  KF_CHECK(fn.ok()) << fn.status().ToString();
  KeyedOperatorTestHarness::Options o;
  o.key_type = key_type;
  auto h = std::make_unique<KeyedOperatorTestHarness>(std::move(fn).value(), o);
  KF_CHECK(h->Open().ok());
  return h;
}

// The output line of the window of string key `key` that its timeout closed at `time`.
std::string Timeout(const std::string& key, int count, int64_t start, int64_t time) {
  return R"({"key":")" + key + R"(","count":)" + std::to_string(count) + R"(,"start":)" +
         std::to_string(start) + R"(,"time":)" + std::to_string(time) +
         R"(,"cause":"timeout","subtask":0})";
}

TEST(CountWindowEventTime, EmitsWhenCountIsReachedWithTheLastRecordsTimestamp) {
  auto h = Harness({{"count", "3"}, {"timeout", "10s"}, {"time", "event"}});
  ASSERT_OK(h->ProcessElement("uid-1", 1000));
  ASSERT_OK(h->ProcessElement("uid-1", 2500));
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  ASSERT_OK(h->ProcessElement("uid-1", 2000));
  EXPECT_EQ(
      h->ExtractOutput(),
      Lines{R"({"key":"uid-1","count":3,"start":1000,"time":2000,"cause":"count","subtask":0})"});
  // The timer at D = 11000 was deleted: a watermark past it emits nothing.
  h->ProcessWatermark(20000);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  EXPECT_EQ(h->op().timer_service().NumEventTimers(), 0u);
}

TEST(CountWindowEventTime, TimerAtDeadlineEmitsTimeoutWhenTheWatermarkPassesIt) {
  auto h = Harness({{"count", "3"}, {"timeout", "10s"}, {"time", "event"}});
  ASSERT_OK(h->ProcessElement("uid-1", 1000));
  ASSERT_OK(h->ProcessElement("uid-2", 5000));
  h->ProcessWatermark(10999);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  h->ProcessWatermark(11000);
  EXPECT_EQ(h->ExtractOutput(), Lines{Timeout("uid-1", 1, 1000, 11000)});
  h->EndInput();  // final watermark fires uid-2's timer at 15000
  EXPECT_EQ(h->ExtractOutput(), Lines{Timeout("uid-2", 1, 5000, 15000)});
}

TEST(CountWindowEventTime, RecordAtOrAfterDeadlineClosesTheWindowFirstThenOpensANewOne) {
  auto h = Harness({{"count", "3"}, {"timeout", "10s"}, {"time", "event"}});
  ASSERT_OK(h->ProcessElement("uid-1", 1000));
  ASSERT_OK(h->ProcessElement("uid-1", 4000));
  ASSERT_OK(h->ProcessElement("uid-1", 11000));  // == D: closes, then opens at 11000
  EXPECT_EQ(h->ExtractOutput(), Lines{Timeout("uid-1", 2, 1000, 11000)});
  // The old timer is gone; the new window's timer is at 21000.
  h->ProcessWatermark(20999);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  h->ProcessWatermark(21000);
  EXPECT_EQ(h->ExtractOutput(), Lines{Timeout("uid-1", 1, 11000, 21000)});
}

TEST(CountWindowEventTime, OutputDoesNotDependOnWhenWatermarksArrive) {
  // Same per-key record order; once with frequent watermarks, once with only the final one.
  std::vector<std::pair<std::string, int64_t>> records;
  for (int i = 0; i < 400; ++i) {
    records.emplace_back("k" + std::to_string(i % 7), 1000 + 700 * i + (i * 37) % 300);
  }
  auto run = [&](bool watermarks) {
    auto h = Harness({{"count", "4"}, {"timeout", "3s"}, {"time", "event"}});
    int64_t max_ts = 0;
    for (const auto& [k, ts] : records) {
      EXPECT_OK(h->ProcessElement(k, ts));
      max_ts = std::max(max_ts, ts);
      if (watermarks) h->ProcessWatermark(max_ts - 300 - 1);  // bound 300 > disorder
    }
    h->EndInput();
    Lines out = h->ExtractOutput();
    std::sort(out.begin(), out.end());
    return out;
  };
  Lines a = run(true), b = run(false);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);
  EXPECT_GT(a.size(), 100u);
}

TEST(CountWindowProcessingTime, TwelveHourTimeoutFiresWhenTheManualClockGetsThere) {
  auto h = Harness({{"count", "500"}});  // defaults: timeout 12h, processing time
  h->SetProcessingTime(1000);
  ASSERT_OK(h->ProcessElement("uid-7", 5));
  ASSERT_OK(h->ProcessElement("uid-7", 6));
  EXPECT_EQ(h->processing_time().NumScheduled(), 1u);
  EXPECT_EQ(h->processing_time().NextScheduledTime(), Timestamp(1000 + 43'200'000));
  h->SetProcessingTime(1000 + 43'200'000 - 1);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  h->SetProcessingTime(1000 + 43'200'000);
  EXPECT_EQ(h->ExtractOutput(), Lines{Timeout("uid-7", 2, 1000, 43201000)});
}

TEST(CountWindowProcessingTime, CountClosesTheWindowAndItsTimerNoLongerFires) {
  auto h = Harness({{"count", "2"}, {"timeout", "1h"}});
  h->SetProcessingTime(100);
  ASSERT_OK(h->ProcessElement("a", 0));
  h->SetProcessingTime(250);
  ASSERT_OK(h->ProcessElement("a", 0));
  EXPECT_EQ(h->ExtractOutput(),
            Lines{R"({"key":"a","count":2,"start":100,"time":250,"cause":"count","subtask":0})"});
  h->SetProcessingTime(100 + 3'600'000);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
}

TEST(CountWindowProcessingTime, EndOfInputEmitsOpenWindowsAndTimersDoNotFireAfterwards) {
  auto h = Harness({{"count", "10"}, {"timeout", "1h"}});
  h->SetProcessingTime(500);
  ASSERT_OK(h->ProcessElement("b", 0));
  ASSERT_OK(h->ProcessElement("a", 0));
  ASSERT_OK(h->ProcessElement("a", 0));
  h->SetProcessingTime(900);
  h->EndInput();
  // Key groups ascending: "b" is in key group 22, "a" in 81.
  EXPECT_EQ(
      h->ExtractOutput(),
      (Lines{
          R"({"key":"b","count":1,"start":500,"time":900,"cause":"end-of-input","subtask":0})",
          R"({"key":"a","count":2,"start":500,"time":900,"cause":"end-of-input","subtask":0})"}));
  h->SetProcessingTime(500 + 3'600'000);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  EXPECT_EQ(h->op().backend().NumEntries(), 0u);
}

TEST(CountWindow, IntKeysAreJsonNumbersAndOutOfRangeKeysAreRefused) {
  auto fn = CreateBuiltInJobFunction("count-window", {{"count", "1"}, {"time", "event"}});
  ASSERT_OK(fn);
  KeyedOperatorTestHarness::Options o;
  o.key_type = KeyType::kInt;
  o.parallelism = 2;
  o.subtask = 1;  // key groups [64, 127]
  KeyedOperatorTestHarness h(std::move(fn).value(), o);
  ASSERT_OK(h.Open());
  ASSERT_OK(h.ProcessElement("0", 7));  // key group 94
  EXPECT_EQ(h.ExtractOutput(),
            Lines{R"({"key":0,"count":1,"start":7,"time":7,"cause":"count","subtask":1})"});
  Status s = h.ProcessElement("4", 7);  // key group 7: another subtask's
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(),
            "Key group 7 is not in KeyGroupRange{start=64, end=127}. Unless you're directly using "
            "low level state access APIs, this is most likely caused by non-deterministic shuffle "
            "key (hashCode and equals implementation).");
  EXPECT_EQ(h.op().backend().NumEntries(), 0u);
}

TEST(BuiltInJobs, RejectsUnknownJobsAndParameters) {
  EXPECT_EQ(CreateBuiltInJobFunction("nope", {}).status().message(),
            "job library libkeyflow-builtin-jobs.so has no job 'nope'; its jobs are: "
            "count-window, tumbling-count (keyflow jobs lists them with their parameters)");
  EXPECT_EQ(CreateBuiltInJobFunction("count-window", {{"cnt", "5"}}).status().message(),
            "job count-window has no parameter 'cnt'; its parameters are: count, timeout, time");
  EXPECT_EQ(CreateBuiltInJobFunction("count-window", {{"count", "0"}}).status().message(),
            "parameter count=0 must be a positive whole number");
  EXPECT_EQ(CreateBuiltInJobFunction("count-window", {{"time", "wall"}}).status().message(),
            "parameter time=wall must be one of: processing, event");
}

}  // namespace
}  // namespace keyflow
