// The continuous directory source (--input monitor:DIR) on a real two-worker cluster: files
// moved into the directory while the job runs are read once each — across a worker SIGKILL
// (the restored attempt gets the checkpoint's splits back and rediscovers the rest) and a
// rescale and a stop with a savepoint restored by a new job — and the committed output is
// exactly the reference of the files moved in so far. A file removed once it was read does not
// stop a restore.
//
// The job is count-window with a timeout no input reaches, so a window closes only by count and
// the expected output of a set of files is known without an end of input (a monitored
// directory never ends). Every key lives in one file (WriteJsonLinesInput), and files are moved
// in in event-time order, so no record is late.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/count_window_fixture.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;

constexpr int kFiles = 7;
constexpr int64_t kNeverMs = 1'000'000'000;  // no window closes by timeout

class MonitorSourceTest : public CountWindowClusterTest {
 protected:
  void SetUp() override {
    CountWindowClusterTest::SetUp();
    staging_ = dir_.Subdir("staging");
    monitored_ = dir_.Subdir("monitored");
    output_ = dir_.path() + "/out";
    JsonLinesInputOptions o;
    o.files = kFiles;
    o.records_per_file = 4'000;
    o.cold_keys_per_file = 150;
    auto input = WriteJsonLinesInput(staging_, o);
    ASSERT_OK(input);
    input_ = *std::move(input);
  }

  // Moves file `f` of the input into the monitored directory (a rename: it appears whole).
  void MoveIn(int f) {
    const fs::path from = input_.files[static_cast<size_t>(f)];
    fs::rename(from, fs::path(monitored_) / from.filename());
    moved_.insert(f);
  }

  // The reference output of the files moved in so far: the windows closed by count.
  std::vector<std::string> Expected() const {
    KeyedTimestamps in;
    for (const auto& [key, ts] : input_.records) {
      const int n = std::stoi(key.substr(key.find('-') + 1));
      if (moved_.count(n % kFiles) != 0) in[key] = ts;
    }
    return ClosedByCount(ReferenceCountWindow(in, kCount, kNeverMs));
  }

  // Waits until the committed output is exactly Expected() (checkpoints commit it).
  void WaitForExpectedOutput(const std::string& what) {
    WaitForCountWindowOutput(output_, Expected(), what);
  }

  std::string staging_, monitored_, output_;
  JsonLinesInput input_;
  std::set<int> moved_;
};

TEST_F(MonitorSourceTest, FilesMovedInAreReadOnceAcrossAWorkerKillARescaleAndAStop) {
  for (int f = 0; f < 2; ++f) MoveIn(f);
  ASSERT_OK(SubmitJob(*cluster_,
                      CountWindowRunArgs("monitor:" + monitored_ + ",interval=200ms", output_,
                                         kCount, kNeverMs,
                                         {"--parallelism", "2", "--checkpoint-interval", "300ms"}))
                .status());
  WaitForExpectedOutput("the files there at the start");
  // Once a checkpoint after that output holds file 0 as read to its end, file 0 may go: the
  // restores below never open it again.
  const int64_t seen =
      WaitForJob([](const nlohmann::json&) { return true; }, "status")["checkpoints"].value(
          "latest_completed", int64_t{0});
  WaitForJob(
      [&](const nlohmann::json& j) {
        return j["checkpoints"].value("latest_completed", int64_t{0}) > seen;
      },
      "a checkpoint after the first output");
  fs::remove(fs::path(monitored_) / fs::path(input_.files[0]).filename());

  // New files while the job runs, then a worker dies: nothing read twice, nothing skipped.
  MoveIn(2);
  MoveIn(3);
  nlohmann::json job;
  KillAndRestartWorker(1, &job);
  ASSERT_FALSE(HasFailure());
  MoveIn(4);
  WaitForExpectedOutput("after the worker kill");
  const std::map<std::string, std::string> committed = CommittedFiles(output_);

  // A rescale to 1 moves every split, finished ones included, to the one reader.
  CommandResult rescaled = MustRun({"rescale", "1", "--timeout", "60s"});
  EXPECT_THAT(rescaled.out, ::testing::HasSubstr("runs at parallelism 1"));
  MoveIn(5);
  WaitForExpectedOutput("after the rescale");

  // Stopped with a savepoint, a new job resumes from it: the file that arrived in between is
  // read, nothing else again.
  const std::string savepoint = StopWithSavepoint();
  ASSERT_FALSE(savepoint.empty());
  MoveIn(6);
  ASSERT_OK(SubmitJob(*cluster_, CountWindowRunArgs("monitor:" + monitored_ + ",interval=200ms",
                                                    output_, kCount, kNeverMs,
                                                    {"--parallelism", "2", "--checkpoint-interval",
                                                     "300ms", "--from-savepoint", savepoint}))
                .status());
  WaitForExpectedOutput("after the restore from the stop's savepoint");
  ExpectCommittedFilesKept(committed, output_);
  nlohmann::json status = WaitForJob(
      [](const nlohmann::json& j) { return j.value("state", "") == "RUNNING"; }, "running");
  EXPECT_EQ(status.value("parallelism", 0), 2);
  EXPECT_EQ(status.value("late_records", -1), 0) << status.dump();
  MustRun({"cancel"});
}

}  // namespace
}  // namespace keyflow::test
