// Unit tests of window-stats's function with the installed test harness (<keyflow/testing.h>,
// keyflow::testing): no cluster, no sleeps — records in, watermarks and processing time moved by
// hand, the output compared exactly. This is how a user tests a job (README.md, "Unit-test a
// function").
#include <gtest/gtest.h>

#include <keyflow/keyflow.h>
#include <keyflow/testing.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

// The library's own entry point (window_stats.cc, KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS): the test
// takes the job exactly as the library declares it.
extern "C" const keyflow::JobLibraryManifest* keyflow_job_library();

namespace {

using keyflow::KeyedFunctionTestHarness;

const keyflow::JobDefinition& WindowStatsJob() {
  for (const keyflow::JobDefinition& job : keyflow_job_library()->jobs) {
    if (job.name == "window-stats") return job;
  }
  std::abort();
}

std::unique_ptr<KeyedFunctionTestHarness> Harness(
    const std::map<std::string, std::string>& params = {{"size", "10s"}},
    KeyedFunctionTestHarness::Options options = {}) {
  auto harness = KeyedFunctionTestHarness::ForJob(WindowStatsJob(), params, std::move(options));
  EXPECT_TRUE(harness.ok()) << harness.status().ToString();
  EXPECT_TRUE((*harness)->Open().ok());
  return std::move(*harness);
}

TEST(WindowStatsTest, AWindowIsEmittedWhenTheWatermarkPassesItsEnd) {
  auto h = Harness();
  ASSERT_TRUE(h->ProcessJson(R"({"uid":"u1","ts":1000,"amount":5,"meta":{"tag":"a"}})").ok());
  ASSERT_TRUE(h->ProcessJson(R"({"uid":"u1","ts":9999,"amount":null})").ok());
  ASSERT_TRUE(h->ProcessJson(R"({"uid":"u1","ts":10000,"amount":7})").ok());  // next window
  ASSERT_TRUE(h->ProcessJson(R"({"uid":"u2","ts":2000})").ok());
  h->ProcessWatermark(9998);
  EXPECT_TRUE(h->ExtractOutput().empty());  // the windows end at 9999
  h->ProcessWatermark(9999);
  std::vector<keyflow::OutputRecord> out = h->ExtractOutputRecords();
  ASSERT_EQ(out.size(), 2u);
  // Timers of one time fire in key-group order, not in the order of the keys: sort the lines.
  std::vector<std::string> lines = {out[0].line, out[1].line};
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(
      lines,
      (std::vector<std::string>{
          R"({"key":"u1","window_start":0,"count":2,"sum":5,"nulls":1,"missing":0,"first_tag":"a"})",
          R"({"key":"u2","window_start":0,"count":1,"sum":0,"nulls":0,"missing":1,"first_tag":null})"}));
  EXPECT_EQ(out[0].timestamp, keyflow::Timestamp(9999));  // an event-time timer's output time
  h->EndInput();                                          // the final watermark: u1's window 1
  EXPECT_EQ(
      h->ExtractOutput(),
      std::vector<std::string>{
          R"({"key":"u1","window_start":10000,"count":1,"sum":7,"nulls":0,"missing":0,"first_tag":null})"});
  EXPECT_TRUE(h->failure().ok());
}

TEST(WindowStatsTest, StateAndTimersSurviveASnapshotIntoTwoSubtasks) {
  auto before = Harness();
  ASSERT_TRUE(before->ProcessJson(R"({"uid":"u1","ts":1000,"amount":5})").ok());
  ASSERT_TRUE(before->ProcessJson(R"({"uid":"u2","ts":1000,"amount":6})").ok());
  keyflow::Result<std::string> snapshot = before->Snapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  // Restored at parallelism 2 (a rescale): each key lives on exactly one of the subtasks.
  std::vector<std::string> lines;
  for (int32_t subtask = 0; subtask < 2; ++subtask) {
    auto after = Harness({{"size", "10s"}}, {.parallelism = 2, .subtask = subtask});
    ASSERT_TRUE(after->Restore({*snapshot}).ok());
    after->ProcessWatermark(9999);
    for (std::string& line : after->ExtractOutput()) lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(
      lines,
      (std::vector<std::string>{
          R"({"key":"u1","window_start":0,"count":1,"sum":5,"nulls":0,"missing":0,"first_tag":null})",
          R"({"key":"u2","window_start":0,"count":1,"sum":6,"nulls":0,"missing":0,"first_tag":null})"}));
}

TEST(WindowStatsTest, BadInputAndBadParametersAreRefusedWithASentence) {
  auto wrong = KeyedFunctionTestHarness::ForJob(WindowStatsJob(), {{"size", "ten seconds"}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("size"), std::string::npos) << wrong.status().ToString();
  auto h = Harness();
  keyflow::Status no_key = h->ProcessJson(R"({"ts":1000})");
  EXPECT_FALSE(no_key.ok());
  EXPECT_NE(no_key.message().find("uid"), std::string::npos) << no_key.ToString();
  EXPECT_FALSE(h->ProcessJson("not json").ok());
  EXPECT_TRUE(h->failure().ok());  // refused input is not a failure of the function
}

}  // namespace
