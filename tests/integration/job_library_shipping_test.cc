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
#include "common/sha256.h"
#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"

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

TEST(JobLibraryShippingTest, ADeletedSubmittedLibraryRunsOnEveryWorkerAndSurvivesAWorkerKill) {
  TestDir dir;
  auto started = Cluster::Start(dir.Subdir("cluster"), ClusterOptions{.workers = 2});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Cluster& cluster = **started;

  const std::string bytes = ReadFileOrEmpty(kBuiltInLibrary);
  ASSERT_FALSE(bytes.empty()) << kBuiltInLibrary << " is missing: build keyflow-builtin-jobs";
  const std::string sha = Sha256Hex(bytes);
  const std::string submitted = dir.Subdir("submitted") + "/libuser-jobs.so";
  ASSERT_TRUE(WriteFileAtomically(submitted, bytes).ok());
  const std::string output = dir.path() + "/output";
  auto run = cluster.Cli({"run", "--job-library", submitted, "--job", "tumbling-count", "--param",
                          "size=" + std::to_string(kSizeMs) + "ms", "--input", kInput, "--output",
                          output, "--parallelism", "2", "--checkpoint-interval", "300ms"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->exit_code, 0) << run->err << cluster.LogExcerpts();
  ASSERT_TRUE(RemoveFile(submitted).ok());  // nothing on any host refers to this path any more
  const std::string job_id = run->out.substr(0, run->out.find('\n'));

  // Stored by hash beside the checkpoints, recorded in the job's spec.
  const std::string blob = cluster.CheckpointDir() + "/blobs/" + sha + ".so";
  EXPECT_EQ(ReadFileOrEmpty(blob), bytes);
  EXPECT_EQ(fs::status(fs::path(blob).parent_path()).permissions() & fs::perms::all,
            fs::perms::owner_all);

  auto running = cluster.WaitForStatus(
      [&](const nlohmann::json& s) {
        const nlohmann::json& job = s["job"];
        return Ended(job) || (job.value("state", "") == "RUNNING" &&
                              job["checkpoints"].value("latest_completed", int64_t{0}) >= 2);
      },
      Duration::Seconds(30), "two completed checkpoints");
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  ASSERT_EQ((*running)["job"].value("state", ""), "RUNNING") << running->dump();
  for (int slot : {0, 1}) {
    EXPECT_EQ(ReadFileOrEmpty(cluster.WorkerCacheDir(slot) + "/" + sha + ".so"), bytes)
        << "worker " << slot << " cached the library it fetched";
    const std::string log = ReadFileOrEmpty(cluster.WorkerLog(slot));
    EXPECT_THAT(log, HasSubstr("fetched (" + std::to_string(bytes.size()) + " bytes) and cached"));
    EXPECT_THAT(log, HasSubstr("job library loaded path=" + cluster.WorkerCacheDir(slot) + "/" +
                               sha + ".so sha256=" + sha));
  }
  auto records = CheckpointStorage(cluster.CheckpointDir()).ListJobRecords();
  ASSERT_TRUE(records.ok() && records->size() == 1u);
  EXPECT_EQ(records->front().spec.job_library.sha256, sha) << "the _job record keeps the ref";

  // Worker 1's cached copy is damaged (same size, other bytes) and the worker is SIGKILLed.
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x55;
  ASSERT_TRUE(WriteFileAtomically(cluster.WorkerCacheDir(1) + "/" + sha + ".so", damaged).ok());
  ASSERT_TRUE(cluster.KillWorker(1).ok());
  ASSERT_TRUE(cluster.StartWorker(1).ok());

  auto end = cluster.WaitForStatus([](const nlohmann::json& s) { return Ended(s["job"]); },
                                   Duration::Seconds(90), "the end of the job");
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  const nlohmann::json& job = (*end)["job"];
  ASSERT_EQ(job.value("state", ""), "FINISHED") << job.dump() << cluster.LogExcerpts();
  EXPECT_GE(job.value("attempt", 0), 2);

  EXPECT_THAT(ReadFileOrEmpty(cluster.WorkerLog(0)),
              HasSubstr("sha256=" + sha + " found in the cache"))
      << "the surviving worker's next attempt loads its cached copy";
  const std::string log1 = ReadFileOrEmpty(cluster.WorkerLog(1));
  EXPECT_THAT(log1, HasSubstr("did not match its SHA-256 and was removed; fetching it again"));
  EXPECT_EQ(ReadFileOrEmpty(cluster.WorkerCacheDir(1) + "/" + sha + ".so"), bytes)
      << "the damaged copy was replaced by a verified one";

  // Every checkpoint's metadata names the library by its hash.
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(cluster.CheckpointDir() + "/" + job_id)) {
    if (entry.path().filename().string().rfind("chk-", 0) != 0) continue;
    auto metadata = CheckpointStorage::ReadMetadata(entry.path().string());
    ASSERT_TRUE(metadata.ok()) << metadata.status().ToString();
    EXPECT_EQ(metadata->spec.job_library.sha256, sha);
    EXPECT_EQ(metadata->spec.job_library.file_name, "libuser-jobs.so");
    ++checked;
  }
  EXPECT_GT(checked, 0);

  auto input = GeneratedKeyedTimestamps(kInput);
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  auto out = ReadJobOutput(output);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<std::string> actual;
  for (const nlohmann::json& line : out->lines) {
    auto c = CanonicalTumblingCount(line);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    actual.push_back(*c);
  }
  std::sort(actual.begin(), actual.end());
  ExpectSameLines(actual, ReferenceTumblingCount(*input, kSizeMs), "tumbling-count output");
}

TEST(JobLibraryShippingTest, AnUnusableCacheDirIsAUsageErrorAtWorkerStart) {
  TestDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/file", "x").ok());
  auto r = RunCommand({KeyflowBinary("keyflow-worker"), "--cache-dir", dir.path() + "/file/cache",
                       "--coordinator", "tcp://127.0.0.1:1"},
                      Duration::Seconds(20));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("cannot use --cache-dir " + dir.path() + "/file/cache"));
}

}  // namespace
}  // namespace keyflow::test
