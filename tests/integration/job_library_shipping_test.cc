// Job libraries reach every worker (issue 10, requirement 5), end to end with real processes:
// `keyflow run --job-library L` from a temp path that is deleted right after the submission;
// the coordinator stores L by content hash beside the checkpoints; both workers fetch it into
// their caches and load it from there; a worker is SIGKILLed mid-run (its cached copy damaged
// meanwhile) and the restarted attempt finds L again — the intact cache on one worker, a re-fetch
// replacing the damaged copy on the other — and the job finishes with exactly the reference output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint_storage.h"
#include "common/file_io.h"
#include "common/security/sha256.h"
#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// About 6 s of input at 4000 events/s: time to kill a worker after a few checkpoints.
constexpr char kInput[] = "gen:events=24000,keys=300,splits=2,seed=5,rate=4000";
constexpr int64_t kSizeMs = 2000;

// The library the test submits as the user's: a copy of the built-in job library (built with
// keyflow_add_job like any user's), under another name and path.
const std::string kBuiltInLibrary =
    std::string(KEYFLOW_BINARY_DIR) + "/lib/keyflow/jobs/libkeyflow-builtin-jobs.so";

bool Ended(const nlohmann::json& job) {
  std::string s = job.value("state", "");
  return s == "FINISHED" || s == "FAILED" || s == "CANCELED";
}

class JobLibraryShippingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = Cluster::Start(dir_.Subdir("cluster"), ClusterOptions{.workers = 2});
    ASSERT_OK(started);
    cluster_ = std::move(started).value();
    bytes_ = ReadFileOrEmpty(kBuiltInLibrary);
    ASSERT_FALSE(bytes_.empty()) << kBuiltInLibrary << " is missing: build keyflow-builtin-jobs";
    sha_ = Sha256Hex(bytes_);
  }

  // Submits tumbling-count from a copy of the library at a temp path, deletes that copy, and
  // waits for two completed checkpoints; returns the job id.
  std::string SubmitAndDeleteTheLibrary() {
    const std::string submitted = dir_.Subdir("submitted") + "/libuser-jobs.so";
    EXPECT_OK(WriteFileAtomically(submitted, bytes_));
    auto run =
        cluster_->Cli({"run", "--job-library", submitted, "--job", "tumbling-count", "--param",
                       "size=" + std::to_string(kSizeMs) + "ms", "--input", kInput, "--output",
                       Output(), "--parallelism", "2", "--checkpoint-interval", "300ms"});
    EXPECT_OK(run);
    if (!run.ok()) return "";
    EXPECT_EQ(run->exit_code, 0) << run->err << cluster_->LogExcerpts();
    EXPECT_OK(RemoveFile(submitted));  // nothing on any host refers to this path any more
    auto running = cluster_->WaitForStatus(
        [&](const nlohmann::json& s) {
          const nlohmann::json& job = s["job"];
          return Ended(job) || (job.value("state", "") == "RUNNING" &&
                                job["checkpoints"].value("latest_completed", int64_t{0}) >= 2);
        },
        Duration::Seconds(30), "two completed checkpoints");
    EXPECT_OK(running);
    if (running.ok()) {
      EXPECT_EQ((*running)["job"].value("state", ""), "RUNNING") << running->dump();
    }
    return run->out.substr(0, run->out.find('\n'));
  }

  // Waits for the end: FINISHED after a restart, with exactly the reference output.
  void ExpectFinishedWithTheReferenceOutput() {
    auto end = cluster_->WaitForStatus([](const nlohmann::json& s) { return Ended(s["job"]); },
                                       Duration::Seconds(90), "the end of the job");
    ASSERT_OK(end);
    const nlohmann::json& job = (*end)["job"];
    ASSERT_EQ(job.value("state", ""), "FINISHED") << job.dump() << cluster_->LogExcerpts();
    EXPECT_GE(job.value("attempt", 0), 2);
    auto input = GeneratedKeyedTimestamps(kInput);
    ASSERT_OK(input);
    auto out = ReadJobOutput(Output());
    ASSERT_OK(out);
    std::vector<std::string> actual;
    for (const nlohmann::json& line : out->lines) {
      auto c = CanonicalTumblingCount(line);
      ASSERT_OK(c);
      actual.push_back(*c);
    }
    std::sort(actual.begin(), actual.end());
    ExpectSameLines(actual, ReferenceTumblingCount(*input, kSizeMs), "tumbling-count output");
  }

  std::string Output() const { return dir_.path() + "/output"; }
  std::string Cached(int slot) const { return cluster_->WorkerCacheDir(slot) + "/" + sha_ + ".so"; }
  std::string Fetched() const {
    return "fetched (" + std::to_string(bytes_.size()) + " bytes) and cached";
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
  std::string bytes_;
  std::string sha_;
};

TEST_F(JobLibraryShippingTest, ADeletedSubmittedLibraryRunsOnEveryWorkerAndSurvivesAWorkerKill) {
  const std::string job_id = SubmitAndDeleteTheLibrary();
  ASSERT_FALSE(job_id.empty());
  // Stored by hash beside the checkpoints, recorded in the job's spec.
  const std::string blob = cluster_->CheckpointDir() + "/blobs/" + sha_ + ".so";
  EXPECT_EQ(ReadFileOrEmpty(blob), bytes_);
  EXPECT_EQ(fs::status(fs::path(blob).parent_path()).permissions() & fs::perms::all,
            fs::perms::owner_all);
  for (int slot : {0, 1}) {
    EXPECT_EQ(ReadFileOrEmpty(Cached(slot)), bytes_)
        << "worker " << slot << " cached the library it fetched";
    const std::string log = ReadFileOrEmpty(cluster_->WorkerLog(slot));
    EXPECT_THAT(log, HasSubstr(Fetched()));
    EXPECT_THAT(log, HasSubstr("job library loaded path=" + Cached(slot) + " sha256=" + sha_));
  }
  auto records = CheckpointStorage(cluster_->CheckpointDir()).ListJobRecords();
  ASSERT_TRUE(records.ok() && records->size() == 1u);
  EXPECT_EQ(records->front().spec.job_library.sha256, sha_) << "the _job record keeps the ref";

  // Worker 1's cached copy is damaged (same size, other bytes) and the worker is SIGKILLed.
  std::string damaged = bytes_;
  damaged[damaged.size() / 2] ^= 0x55;
  ASSERT_OK(WriteFileAtomically(Cached(1), damaged));
  ASSERT_OK(cluster_->KillWorker(1));
  ASSERT_OK(cluster_->StartWorker(1));
  ASSERT_NO_FATAL_FAILURE(ExpectFinishedWithTheReferenceOutput());

  EXPECT_THAT(ReadFileOrEmpty(cluster_->WorkerLog(0)),
              HasSubstr("sha256=" + sha_ + " found in the cache"))
      << "the surviving worker's next attempt loads its cached copy";
  EXPECT_THAT(ReadFileOrEmpty(cluster_->WorkerLog(1)),
              HasSubstr("did not match its SHA-256 and was removed; fetching it again"));
  EXPECT_EQ(ReadFileOrEmpty(Cached(1)), bytes_) << "the damaged copy was replaced";

  // Every checkpoint's metadata names the library by its hash.
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(cluster_->CheckpointDir() + "/" + job_id)) {
    if (entry.path().filename().string().rfind("chk-", 0) != 0) continue;
    auto metadata = CheckpointStorage::ReadMetadata(entry.path().string());
    ASSERT_OK(metadata);
    EXPECT_EQ(metadata->spec.job_library.sha256, sha_);
    EXPECT_EQ(metadata->spec.job_library.file_name, "libuser-jobs.so");
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// A restarted coordinator finds the library in its blob store: a worker that lost its cache
// fetches it from the new coordinator process.
TEST_F(JobLibraryShippingTest, ARestartedCoordinatorServesTheLibraryFromItsBlobStore) {
  ASSERT_FALSE(SubmitAndDeleteTheLibrary().empty());
  ASSERT_OK(cluster_->KillCoordinator());
  ASSERT_OK(cluster_->KillWorker(1));
  ASSERT_OK(RemoveAll(cluster_->WorkerCacheDir(1)));
  ASSERT_OK(cluster_->RestartCoordinator());
  ASSERT_OK(cluster_->StartWorker(1));
  ASSERT_NO_FATAL_FAILURE(ExpectFinishedWithTheReferenceOutput());

  const std::string log1 = ReadFileOrEmpty(cluster_->WorkerLog(1));
  EXPECT_NE(log1.find(Fetched()), log1.rfind(Fetched())) << "fetched again after the restart";
  EXPECT_EQ(ReadFileOrEmpty(Cached(1)), bytes_);
  const std::string coordinator_log = ReadFileOrEmpty(cluster_->CoordinatorLog());
  EXPECT_THAT(coordinator_log.substr(coordinator_log.rfind("resuming it")),
              HasSubstr("sending job library libuser-jobs.so sha256=" + sha_))
      << "the new coordinator process read it from " << cluster_->CheckpointDir() << "/blobs";
}

TEST(WorkerCacheDirFlagTest, AnUnusableCacheDirIsAUsageErrorAtWorkerStart) {
  TestDir dir;
  ASSERT_OK(WriteFileAtomically(dir.path() + "/file", "x"));
  auto r = RunCommand({KeyflowBinary("keyflow-worker"), "--cache-dir", dir.path() + "/file/cache",
                       "--coordinator", "tcp://127.0.0.1:1"},
                      Duration::Seconds(20));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("cannot use --cache-dir " + dir.path() + "/file/cache"));
}

}  // namespace
}  // namespace keyflow::test
