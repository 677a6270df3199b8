#include "worker/jobs/tumbling_count_function.h"

#include <gtest/gtest.h>

#include "common/job_library/job_library.h"
#include "tests/testutil/status_matchers.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow {
namespace {

using Lines = std::vector<std::string>;

std::unique_ptr<KeyedOperatorTestHarness> Harness(const std::string& size) {
  auto fn = CreateBuiltInJobFunction("tumbling-count", {{"size", size}});
  KF_CHECK(fn.ok());
  auto h = std::make_unique<KeyedOperatorTestHarness>(std::move(fn).value(),
                                                      KeyedOperatorTestHarness::Options{});
  KF_CHECK(h->Open().ok());
  return h;
}

TEST(TumblingCount, CountsPerKeyAndWindowAndFiresAtWindowEndMinusOne) {
  auto h = Harness("10s");
  for (int64_t ts : {0, 3000, 9999}) ASSERT_OK(h->ProcessElement("a", ts));
  ASSERT_OK(h->ProcessElement("a", 10000));
  ASSERT_OK(h->ProcessElement("b", 5000));
  h->ProcessWatermark(9998);
  EXPECT_EQ(h->ExtractOutput(), Lines{});
  h->ProcessWatermark(9999);
  // Equal timer timestamps fire in key-group order: "b" (22) before "a" (81).
  EXPECT_EQ(h->ExtractOutput(),
            (Lines{R"({"key":"b","window_start":0,"window_end":10000,"count":1,"subtask":0})",
                   R"({"key":"a","window_start":0,"window_end":10000,"count":3,"subtask":0})"}));
  h->EndInput();
  EXPECT_EQ(h->ExtractOutput(),
            Lines{R"({"key":"a","window_start":10000,"window_end":20000,"count":1,"subtask":0})"});
  EXPECT_EQ(h->op().backend().NumEntries(), 0u);
}

TEST(TumblingCount, RecordsOfAFiredWindowAreLateCountedAndDropped) {
  auto h = Harness("10s");
  ASSERT_OK(h->ProcessElement("a", 1000));
  h->ProcessWatermark(9999);
  EXPECT_EQ(h->ExtractOutput().size(), 1u);
  ASSERT_OK(h->ProcessElement("a", 9999));  // window [0, 10000) already fired
  ASSERT_OK(h->ProcessElement("a", 2));
  EXPECT_EQ(h->op().late_records(), 2);
  h->EndInput();
  EXPECT_EQ(h->ExtractOutput(), Lines{});
}

TEST(TumblingCount, NegativeTimestampsUseFloorDivision) {
  auto h = Harness("10s");
  ASSERT_OK(h->ProcessElement("a", -1));
  ASSERT_OK(h->ProcessElement("a", -10000));
  h->EndInput();
  EXPECT_EQ(h->ExtractOutput(),
            Lines{R"({"key":"a","window_start":-10000,"window_end":0,"count":2,"subtask":0})"});
}

}  // namespace
}  // namespace keyflow
