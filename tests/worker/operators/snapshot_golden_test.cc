// Golden-file test of the keyed snapshot format with real sections (keyed state + timers of a
// count-window operator): old snapshots must stay readable, and the writer must keep producing
// the same bytes for the same state. After an intentional format change (new format version),
// regenerate with: KEYFLOW_REGENERATE_GOLDEN=1 build/bin/worker_operators_tests
//   --gtest_filter='SnapshotGolden.*'   and commit the new file together with the reader change.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/file_io.h"
#include "common/job_library/job_library.h"
#include "tests/testutil/status_matchers.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow {
namespace {

// What the writer produces now (format version 3, key groups named in the index), what it wrote
// before incremental checkpoints (version 2, declared state types) and before the job SDK
// (version 1): all must restore to the same state.
const std::string kGoldenPath =
    std::string(KEYFLOW_SOURCE_DIR) + "/tests/worker/operators/testdata/count_window_v3.kgs";
const std::string kGoldenV2Path =
    std::string(KEYFLOW_SOURCE_DIR) + "/tests/worker/operators/testdata/count_window_v2.kgs";
const std::string kGoldenV1Path =
    std::string(KEYFLOW_SOURCE_DIR) + "/tests/worker/operators/testdata/count_window_v1.kgs";
const std::map<std::string, std::string> kParams = {
    {"count", "3"}, {"timeout", "10s"}, {"time", "event"}};

// The state the golden file holds: three keys with open windows (one string key longer than 15
// bytes, to cover heap keys), one closed window, watermark 4000.
std::unique_ptr<KeyedOperatorTestHarness> HarnessWithGoldenState() {
  auto fn = CreateBuiltInJobFunction("count-window", kParams);
  KF_CHECK(fn.ok());
  auto h = std::make_unique<KeyedOperatorTestHarness>(std::move(fn).value(),
                                                      KeyedOperatorTestHarness::Options{});
  KF_CHECK(h->Open().ok());
  for (auto [key, ts] :
       std::vector<std::pair<std::string, int64_t>>{{"uid-1", 1000},
                                                    {"uid-2", 1500},
                                                    {"uid-1", 2000},
                                                    {"a-rather-long-user-id-42", 2500},
                                                    {"uid-3", 3000},
                                                    {"uid-3", 3100},
                                                    {"uid-3", 3200}}) {
    KF_CHECK(h->ProcessElement(key, ts).ok());
  }
  h->ProcessWatermark(4000);
  h->ExtractOutput();  // uid-3 closed by count
  return h;
}

TEST(SnapshotGolden, WriterProducesTheGoldenBytes) {
  auto h = HarnessWithGoldenState();
  auto bytes = h->Snapshot();
  ASSERT_OK(bytes);
  if (std::getenv("KEYFLOW_REGENERATE_GOLDEN") != nullptr) {
    ASSERT_OK(WriteFileAtomically(kGoldenPath, *bytes));
  }
  auto golden = ReadFileToString(kGoldenPath);
  ASSERT_OK(golden);
  EXPECT_EQ(*bytes, *golden) << "the snapshot format changed: bump kKeyedSnapshotFormatVersion, "
                                "keep reading the older versions, and regenerate (see the file "
                                "comment)";
}

void ExpectGoldenFileRestoresToTheExactState(const std::string& path) {
  auto golden = ReadFileToString(path);
  ASSERT_OK(golden);
  auto fn = CreateBuiltInJobFunction("count-window", kParams);
  ASSERT_OK(fn);
  KeyedOperatorTestHarness::Options o;
  o.parallelism = 2;  // restore into the upper half only: a rescale from the golden file
  o.subtask = 1;
  KeyedOperatorTestHarness upper(std::move(fn).value(), o);
  ASSERT_OK(upper.Open());
  ASSERT_OK(upper.Restore({*golden}));
  fn = CreateBuiltInJobFunction("count-window", kParams);
  o.subtask = 0;
  KeyedOperatorTestHarness lower(std::move(fn).value(), o);
  ASSERT_OK(lower.Open());
  ASSERT_OK(lower.Restore({*golden}));
  EXPECT_EQ(
      lower.op().timer_service().NumEventTimers() + upper.op().timer_service().NumEventTimers(),
      3u);
  lower.EndInput();
  upper.EndInput();
  std::vector<std::string> out = lower.ExtractOutput();
  for (auto& l : upper.ExtractOutput()) out.push_back(l);
  std::sort(out.begin(), out.end());
  // Key groups (M=128): uid-1 -> 121 and uid-2 -> 93 (subtask 1), the long key's group decides.
  KeyGroupAssigner a(KeyType::kString, 128);
  auto owner = [&](const std::string& k) {
    return ComputeOperatorIndexForKeyGroup(128, 2, a.Assign(Key::FromBytes(k))).value();
  };
  std::vector<std::string> expected = {
      R"({"key":"a-rather-long-user-id-42","count":1,"start":2500,"time":12500,"cause":"timeout","subtask":)" +
          std::to_string(owner("a-rather-long-user-id-42")) + "}",
      R"({"key":"uid-1","count":2,"start":1000,"time":11000,"cause":"timeout","subtask":)" +
          std::to_string(owner("uid-1")) + "}",
      R"({"key":"uid-2","count":1,"start":1500,"time":11500,"cause":"timeout","subtask":)" +
          std::to_string(owner("uid-2")) + "}",
  };
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(out, expected);
}

TEST(SnapshotGolden, GoldenFileRestoresToTheExactState) {
  ExpectGoldenFileRestoresToTheExactState(kGoldenPath);
}

TEST(SnapshotGolden, VersionTwoGoldenFileStillRestoresToTheExactState) {
  ExpectGoldenFileRestoresToTheExactState(kGoldenV2Path);
}

TEST(SnapshotGolden, VersionOneGoldenFileStillRestoresToTheExactState) {
  ExpectGoldenFileRestoresToTheExactState(kGoldenV1Path);
}

}  // namespace
}  // namespace keyflow
