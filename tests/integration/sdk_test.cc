// The job SDK from a user's side (issue 10, requirement 8): the SDK of the build under test is
// installed into a prefix with `cmake --install`, the out-of-tree job project tests/sdk/ (its
// own CMakeLists.txt: find_package(keyflow) + keyflow_add_job) is configured and built against
// that prefix by a separate CMake run, and the library it produces is submitted to a real
// 3-worker cluster with `keyflow run --job-library ... --checkpoint-interval ... --wait`; a
// worker is SIGKILLed mid-run and the committed output must equal a reference computed here,
// from the same input files, without any keyflow code.
//
// The prefix and the project's build directory live under <build>/sdk-test/ and are reused by
// every test of this file (ctest runs each TEST as its own process): `cmake --install` copies
// only changed files and the project's build is then a no-op, so the install + build costs once
// per change of the SDK. A lock file serialises concurrent test processes on it.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kSdkDir = std::string(KEYFLOW_BINARY_DIR) + "/sdk-test";
const std::string kPrefix = kSdkDir + "/prefix";
const std::string kJobBuild = kSdkDir + "/window-stats";
const std::string kJobLibrary = kJobBuild + "/libwindow-stats.so";

// Runs a command of the SDK set-up; the error carries its output.
Status Step(const std::vector<std::string>& argv, Duration timeout) {
  ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv, timeout));
  if (r.exit_code == 0) return Status::Ok();
  std::string cmd;
  for (const std::string& a : argv) cmd += a + " ";
  return FailedPrecondition(cmd + "exited with " + std::to_string(r.exit_code) + ":\n" + r.out +
                            r.err);
}

// Installs the SDK into kPrefix and builds tests/sdk against it (once per change, see above).
Status InstallSdkAndBuildJob() {
  std::error_code ec;
  fs::create_directories(kSdkDir, ec);
  int lock = ::open((kSdkDir + "/.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return IoError("cannot lock " + kSdkDir);
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  RETURN_IF_ERROR(Step({"cmake", "--install", KEYFLOW_BINARY_DIR, "--prefix", kPrefix},
                       Duration::Seconds(300)));
  std::vector<std::string> configure = {"cmake",
                                        "-S",
                                        std::string(KEYFLOW_SOURCE_DIR) + "/tests/sdk",
                                        "-B",
                                        kJobBuild,
                                        "-G",
                                        "Ninja",
                                        "-DCMAKE_BUILD_TYPE=Release",
                                        "-DCMAKE_PREFIX_PATH=" + kPrefix};
  if (::access("/usr/bin/ccache", X_OK) == 0) {
    configure.push_back("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache");
  }
  RETURN_IF_ERROR(Step(configure, Duration::Seconds(300)));
  return Step({"cmake", "--build", kJobBuild}, Duration::Seconds(600));
}

class SdkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { built_ = new Status(InstallSdkAndBuildJob()); }
  static void TearDownTestSuite() {
    delete built_;
    built_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(built_->ok()) << built_->ToString(); }

  static Status* built_;
};
Status* SdkTest::built_ = nullptr;

// Only what a job needs is installed, with a CMake package.
TEST_F(SdkTest, InstallsHeadersLibraryAndCMakePackage) {
  EXPECT_TRUE(fs::is_regular_file(kPrefix + "/include/keyflow/keyflow.h"));
  EXPECT_TRUE(fs::is_regular_file(kPrefix + "/lib/cmake/keyflow/keyflowConfig.cmake"));
  EXPECT_TRUE(fs::is_regular_file(kPrefix + "/lib/libkeyflow_sdk.a"));
  for (const char* binary : {"keyflow", "keyflow-coordinator", "keyflow-worker"}) {
    EXPECT_TRUE(fs::is_regular_file(kPrefix + "/bin/" + binary)) << binary;
  }
  // The state backends, the runtime and the transport are not part of the SDK.
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(kPrefix + "/include")) {
    std::string path = e.path().string();
    EXPECT_EQ(path.find("/heap/"), std::string::npos) << path;
    EXPECT_EQ(path.find("/transport"), std::string::npos) << path;
    EXPECT_EQ(path.find("/coordinator/"), std::string::npos) << path;
  }
  EXPECT_TRUE(fs::is_regular_file(kJobLibrary));
}

// `keyflow jobs --job-library L` describes the out-of-tree job: name, parameters, defaults.
TEST_F(SdkTest, JobsListsTheOutOfTreeLibrary) {
  auto r = RunCommand({KeyflowBinary("keyflow"), "jobs", "--job-library", kJobLibrary},
                      Duration::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_THAT(r->out, HasSubstr("window-stats"));
  EXPECT_THAT(r->out, HasSubstr("per key and event-time tumbling window"));
  EXPECT_THAT(r->out, HasSubstr("pause-every"));
  EXPECT_THAT(r->out, HasSubstr("1s"));
}

// ---- input and reference --------------------------------------------------------------------

constexpr int kFiles = 4;
constexpr int kKeysPerFile = 50;
constexpr int kRecordsPerFile = 10'000;
constexpr int64_t kStartMs = 1'700'000'000'000;
constexpr int64_t kStepMs = 7;  // per file, timestamps only grow: no record is late
constexpr int64_t kWindowMs = 1'000;

struct WindowStats {
  int64_t count = 0, sum = 0, nulls = 0, missing = 0;
  std::string first_tag;  // "null" for none
};
using Reference = std::map<std::pair<std::string, int64_t>, WindowStats>;

std::string Canonical(const std::string& key, int64_t start, const WindowStats& w) {
  return key + "|" + std::to_string(start) + "|" + std::to_string(w.count) + "|" +
         std::to_string(w.sum) + "|" + std::to_string(w.nulls) + "|" +
         std::to_string(w.missing) + "|" + w.first_tag;
}

// Writes kFiles JSON Lines files: key "user-<n>" lives in file n % kFiles only. Every 7th
// record has "amount":null, every 11th none; every 5th has no "meta"; "note" pads each record
// with ~60 bytes, escapes included. Returns the canonical reference lines, sorted.
Result<std::vector<std::string>> WriteInput(const std::string& dir) {
  Reference reference;
  for (int f = 0; f < kFiles; ++f) {
    std::string path = dir + "/part-" + std::to_string(f) + ".jsonl";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return IoError("cannot create " + path);
    for (int i = 0; i < kRecordsPerFile; ++i) {
      const std::string key = "user-" + std::to_string(f + kFiles * (i % kKeysPerFile));
      const int64_t ts = kStartMs + f * 3 + i * kStepMs;
      const int64_t amount = (i * 37) % 1000 - 100;
      const std::string tag = "t" + std::to_string(i % 13);
      std::string line = "{\"uid\":\"" + key + "\",\"ts\":" + std::to_string(ts);
      if (i % 7 == 0) {
        line += ",\"amount\":null";
      } else if (i % 11 != 0) {
        line += ",\"amount\":" + std::to_string(amount);
      }
      if (i % 5 != 0) line += ",\"meta\":{\"tag\":\"" + tag + "\",\"n\":[1,2,3]}";
      line += ",\"note\":\"padding \\\"quoted\\\" \\\\ \\u00e9 0123456789abcdef0123456789\"}\n";
      out << line;

      const int64_t start = ts - ts % kWindowMs;
      auto [it, first] = reference.try_emplace({key, start});
      WindowStats& w = it->second;
      if (first) w.first_tag = i % 5 != 0 ? tag : "null";
      ++w.count;
      if (i % 7 == 0) {
        ++w.nulls;
      } else if (i % 11 == 0) {
        ++w.missing;
      } else {
        w.sum += amount;
      }
    }
    if (!out.flush()) return IoError("cannot write " + path);
  }
  std::vector<std::string> lines;
  for (const auto& [kw, w] : reference) lines.push_back(Canonical(kw.first, kw.second, w));
  std::sort(lines.begin(), lines.end());
  return lines;
}

Result<std::string> CanonicalOutputLine(const nlohmann::json& j) {
  for (const char* name : {"window_start", "count", "sum", "nulls", "missing"}) {
    if (!j.contains(name) || !j[name].is_number_integer()) {
      return InvalidArgument(std::string("output line without integer \"") + name +
                             "\": " + j.dump());
    }
  }
  if (!j.contains("key") || !j["key"].is_string() || !j.contains("first_tag")) {
    return InvalidArgument("output line without key or first_tag: " + j.dump());
  }
  WindowStats w{j["count"].get<int64_t>(), j["sum"].get<int64_t>(), j["nulls"].get<int64_t>(),
                j["missing"].get<int64_t>(),
                j["first_tag"].is_null() ? "null" : j["first_tag"].get<std::string>()};
  return Canonical(j["key"].get<std::string>(), j["window_start"].get<int64_t>(), w);
}

// The library built against the installed SDK runs on a 3-worker cluster with checkpoints;
// worker 1 is SIGKILLed after two checkpoints; the job restarts from the latest one and its
// committed output is exactly the reference (nothing lost, nothing duplicated).
TEST_F(SdkTest, OutOfTreeJobSurvivesAWorkerKillWithExactOutput) {
  TestDir dir;
  auto reference = WriteInput(dir.Subdir("input"));
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  ASSERT_GT(reference->size(), 1000u);

  auto cluster = Cluster::Start(dir.Subdir("cluster"), ClusterOptions{});
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  Cluster& c = **cluster;
  const std::string output = dir.path() + "/output";
  // pause-every=4: about 3 s of processing per subtask, so the kill lands mid-run.
  auto cli = c.StartCli({"run", "--job-library", kJobLibrary, "--job", "window-stats", "--param",
                         "size=1s", "--param", "pause-every=4", "--input", dir.path() + "/input",
                         "--output", output, "--parallelism", "3", "--checkpoint-interval",
                         "300ms", "--wait"},
                        dir.path() + "/run.log");
  ASSERT_TRUE(cli.ok()) << cli.status().ToString();

  auto running = c.WaitForStatus(
      [](const nlohmann::json& s) {
        const nlohmann::json& job = s["job"];
        return job.is_object() &&
               ((job.value("state", "") == "RUNNING" &&
                 job["checkpoints"].value("latest_completed", int64_t{0}) >= 2) ||
                job.value("state", "") == "FINISHED" || job.value("state", "") == "FAILED");
      },
      Duration::Seconds(60), "two completed checkpoints");
  ASSERT_TRUE(running.ok()) << running.status().ToString() << "\n" << c.LogExcerpts();
  ASSERT_EQ((*running)["job"].value("state", ""), "RUNNING")
      << "the job ended before the kill: raise pause-every's work\n"
      << running->dump();

  auto killed = c.KillWorker(1);
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  ASSERT_TRUE(c.StartWorker(1).ok()) << c.LogExcerpts();

  auto exit_code = cli->Wait(Duration::Seconds(120));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status().ToString() << "\n" << c.LogExcerpts();
  EXPECT_EQ(*exit_code, 0) << ReadFileOrEmpty(dir.path() + "/run.log")
                           << ReadFileOrEmpty(dir.path() + "/run.log.err") << c.LogExcerpts();
  auto status = c.StatusJson();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  const nlohmann::json& job = (*status)["job"];
  EXPECT_EQ(job.value("state", ""), "FINISHED") << job.dump();
  EXPECT_GE(job.value("restarts", 0), 1) << job.dump();
  EXPECT_GT(job.value("restored_from", int64_t{0}), 0) << job.dump();
  EXPECT_EQ(job.value("late_records", int64_t{-1}), 0) << job.dump();

  auto out = ReadJobOutput(output);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<std::string> actual;
  for (const nlohmann::json& line : out->lines) {
    auto canonical = CanonicalOutputLine(line);
    ASSERT_TRUE(canonical.ok()) << canonical.status().ToString();
    actual.push_back(*canonical);
  }
  std::sort(actual.begin(), actual.end());
  EXPECT_TRUE(SameLines(actual, *reference));
}

}  // namespace
}  // namespace keyflow::test
