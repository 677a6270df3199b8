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
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

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
  KF_ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv, timeout));
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
  KF_RETURN_IF_ERROR(Step({"cmake", "--install", KEYFLOW_BINARY_DIR, "--prefix", kPrefix},
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
  KF_RETURN_IF_ERROR(Step(configure, Duration::Seconds(300)));
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
  EXPECT_TRUE(fs::is_regular_file(kPrefix + "/lib/libkeyflow_base.a"));
  EXPECT_TRUE(fs::is_regular_file(kPrefix + "/lib/libkeyflow_testing.a"));
  EXPECT_TRUE(fs::is_regular_file(kPrefix + "/include/keyflow/testing.h"));
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

// An installed keyflow starts a secure cluster without the checkout: bin/keyflow-start-cluster
// (the installed start-cluster.sh) finds PREFIX/bin, RUN_DIR/cluster.env is all the CLI needs
// (keys and the coordinator's endpoint, though it took port 0), and keyflow-stop-cluster stops it.
TEST_F(SdkTest, AnInstalledKeyflowStartsASecureClusterThatTheCliReachesThroughClusterEnv) {
  TestDir dir;
  const std::string run_dir = dir.path() + "/run";
  auto started = RunCommand({"env", "-u", "KEYFLOW_KEYS", "-u", "KEYFLOW_COORDINATOR",
                             kPrefix + "/bin/keyflow-start-cluster", "--workers", "1", "--port",
                             "0", "--rest-port", "-1", "--run-dir", run_dir},
                            Duration::Seconds(60));
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  EXPECT_THAT(started->err, HasSubstr("stop with: keyflow-stop-cluster --run-dir " + run_dir));
  EXPECT_TRUE(fs::is_regular_file(run_dir + "/keys/coordinator.key")) << "secure by default";
  auto run = RunCommand({"env", "-u", "KEYFLOW_KEYS", "-u", "KEYFLOW_COORDINATOR", "bash", "-c",
                         "source \"$1\" && exec \"$2\" run --job count-window --input "
                         "gen:events=100000,keys=1000,splits=1 --wait",
                         "bash", run_dir + "/cluster.env", kPrefix + "/bin/keyflow"},
                        Duration::Seconds(120));
  ASSERT_OK(run);
  EXPECT_EQ(run->exit_code, 0) << run->out << run->err;
  EXPECT_THAT(run->out + run->err, HasSubstr("results emitted:   1000"));
  auto stopped = RunCommand({kPrefix + "/bin/keyflow-stop-cluster", "--run-dir", run_dir},
                            Duration::Seconds(60));
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->exit_code, 0) << stopped->err;
  EXPECT_THAT(stopped->err, HasSubstr("stopped"));
}

// scripts/install.sh checks its arguments before it installs or builds anything.
TEST(InstallScriptTest, RefusesAMissingOrSecondPrefix) {
  const std::string script = std::string(KEYFLOW_SOURCE_DIR) + "/scripts/install.sh";
  auto r = RunCommand({script}, Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_THAT(r->err, HasSubstr("give the installation prefix, e.g. scripts/install.sh "
                                "/opt/keyflow (try --help)"));
  r = RunCommand({script, "--no-deps", "/tmp/a", "/tmp/b"}, Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_THAT(r->err, HasSubstr("one PREFIX only, got '/tmp/a' and '/tmp/b'"));
}

// scripts/install.sh and scripts/demo.sh build the `installables` target: everything
// `cmake --install` copies, and no test or benchmark.
TEST(InstallScriptTest, TheInstallablesTargetBuildsWhatIsInstalledAndNoTest) {
  const std::string build = KEYFLOW_BINARY_DIR;
  if (!fs::exists(build + "/build.ninja")) GTEST_SKIP() << "not a Ninja build: " << build;
  auto r =
      RunCommand({"ninja", "-C", build, "-t", "inputs", "installables"}, Duration::Seconds(60));
  ASSERT_OK(r);
  ASSERT_EQ(r->exit_code, 0) << r->err;
  // `ninja -t inputs` lists what the target is built from: each installed program's and
  // library's objects.
  for (const char* installed : {"coordinator/CMakeFiles/keyflow.dir/cli/keyflow_main.cc.o\n",
                                "coordinator/CMakeFiles/keyflow-coordinator.dir/"
                                "coordinator_main.cc.o\n",
                                "worker/CMakeFiles/keyflow-worker.dir/worker_main.cc.o\n",
                                "lib/keyflow/jobs/libkeyflow-builtin-jobs.so\n",
                                "worker/jobs/examples/CMakeFiles/sessions.dir/sessions.cc.o\n",
                                "worker/api/libkeyflow_sdk.a\n"}) {
    EXPECT_THAT(r->out, HasSubstr(installed));
  }
  std::istringstream lines(r->out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_THAT(line, ::testing::Not(::testing::EndsWith("_tests"))) << "a test binary";
    EXPECT_EQ(line.find("tests/"), std::string::npos) << line;
    EXPECT_EQ(line.find("benchmark"), std::string::npos) << line;
  }
}

// keyflow_add_job refuses, at link time, a library that forgot KEYFLOW_JOB_LIBRARY: without it
// no worker could load the library, and the mistake would surface only at `keyflow run`.
TEST_F(SdkTest, AJobLibraryWithoutKeyflowJobLibraryFailsToLink) {
  TestDir dir;
  const std::string src = dir.Subdir("project");
  {
    std::ofstream cmake(src + "/CMakeLists.txt");
    cmake << "cmake_minimum_required(VERSION 3.25)\nproject(forgot CXX)\n"
             "find_package(keyflow REQUIRED)\nkeyflow_add_job(forgot forgot.cc)\n";
    std::ofstream cc(src + "/forgot.cc");
    cc << "#include <keyflow/keyflow.h>\n"
          "std::vector<keyflow::JobDefinition> Jobs() { return {}; }\n";
  }
  ASSERT_OK(Step({"cmake", "-S", src, "-B", dir.path() + "/build", "-G", "Ninja",
                  "-DCMAKE_PREFIX_PATH=" + kPrefix},
                 Duration::Seconds(300)));
  auto r = RunCommand({"cmake", "--build", dir.path() + "/build"}, Duration::Seconds(300));
  ASSERT_OK(r);
  EXPECT_NE(r->exit_code, 0) << r->out << r->err;
  EXPECT_THAT(r->out + r->err, HasSubstr("required symbol `keyflow_job_library' not defined"));
  EXPECT_FALSE(fs::exists(dir.path() + "/build/libforgot.so"));
}

// The project's unit tests of its function link the installed test harness (keyflow::testing)
// and pass: a user tests a job without a cluster (tests/sdk/window_stats_test.cc).
TEST_F(SdkTest, TheInstalledTestHarnessRunsTheProjectsUnitTests) {
  auto r = RunCommand({kJobBuild + "/window-stats-test"}, Duration::Seconds(60));
  ASSERT_OK(r.status());
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_THAT(r->out, HasSubstr("[  PASSED  ] 3 tests."));
  EXPECT_THAT(r->out, HasSubstr("WindowStatsTest.StateAndTimersSurviveASnapshotIntoTwoSubtasks"));
}

// `keyflow jobs --job-library L` describes the out-of-tree job: name, parameters, defaults.
TEST_F(SdkTest, JobsListsTheOutOfTreeLibrary) {
  auto r = RunCommand({KeyflowBinary("keyflow"), "jobs", "--job-library", kJobLibrary},
                      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_THAT(r->out, HasSubstr("window-stats"));
  EXPECT_THAT(r->out, HasSubstr("per key and event-time tumbling window"));
  EXPECT_THAT(r->out, HasSubstr("pause-every"));
  EXPECT_THAT(r->out, HasSubstr("1s"));
  EXPECT_THAT(r->out, HasSubstr("\nsource lines  (--input connector:lines[:ARGS])\n  the *.jsonl "
                                "files of a directory, a split each\n"));
  EXPECT_THAT(r->out, HasSubstr("\nsink files  (--output connector:files[:ARGS])\n  a JSON Lines "
                                "file per subtask and checkpoint in a directory\n"));
}

// ---- input and references ------------------------------------------------------------------

constexpr int kFiles = 4;
constexpr int kKeysPerFile = 50;
constexpr int64_t kStartMs = 1'700'000'000'000;
// Per file, timestamps only grow (no record is late): 7 ms apart, and 2 s more every 1000
// records, so that every key has a pause of more than 1 s every 1000 records of its file.
constexpr int64_t kStepMs = 7;
constexpr int64_t kPauseMs = 2'000;

struct InputRecord {
  int64_t ts = 0;
  std::optional<int64_t> amount;  // nullopt: null or missing
  bool amount_null = false;
  bool amount_missing = false;
  std::string tag;  // "" when the record has no meta
};
// Per key, its records in input order (a key lives in one file).
using Input = std::map<std::string, std::vector<InputRecord>>;

// Writes kFiles JSON Lines files of `records_per_file` records into `dir` (one split each): key
// "user-<n>" lives in file n % kFiles only. Every
// 7th record has "amount":null, every 11th none; every 5th has no "meta"; "note" pads each
// record with ~60 bytes, escapes included.
Result<Input> WriteInput(const std::string& dir, int records_per_file) {
  Input input;
  for (int f = 0; f < kFiles; ++f) {
    std::string path = dir + "/part-" + std::to_string(f) + ".jsonl";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return IoError("cannot create " + path);
    for (int i = 0; i < records_per_file; ++i) {
      const std::string key = "user-" + std::to_string(f + kFiles * (i % kKeysPerFile));
      InputRecord r;
      r.ts = kStartMs + f * 3 + i * kStepMs + (i / 1000) * kPauseMs;
      std::string line = "{\"uid\":\"" + key + "\",\"ts\":" + std::to_string(r.ts);
      if (i % 7 == 0) {
        r.amount_null = true;
        line += ",\"amount\":null";
      } else if (i % 11 == 0) {
        r.amount_missing = true;
      } else {
        r.amount = (i * 37) % 1000 - 100;
        line += ",\"amount\":" + std::to_string(*r.amount);
      }
      if (i % 5 != 0) {
        r.tag = "t" + std::to_string(i % 13);
        line += ",\"meta\":{\"tag\":\"" + r.tag + "\",\"n\":[1,2,3]}";
      }
      line += ",\"note\":\"padding \\\"quoted\\\" \\\\ \\u00e9 0123456789abcdef0123456789\"}\n";
      out << line;
      input[key].push_back(std::move(r));
    }
    if (!out.flush()) return IoError("cannot write " + path);
  }
  return input;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "|") + p;
  return s;
}
std::string Str(int64_t v) {
  return std::to_string(v);
}

// window-stats (tests/sdk/window_stats.cc): "key|window_start|count|sum|nulls|missing|tag".
std::vector<std::string> ReferenceWindowStats(const Input& input, int64_t size_ms) {
  std::vector<std::string> lines;
  for (const auto& [key, records] : input) {
    std::map<int64_t, std::array<int64_t, 4>> stats;  // count, sum, nulls, missing
    std::map<int64_t, std::string> tags;
    for (const InputRecord& r : records) {
      int64_t start = r.ts - r.ts % size_ms;
      auto& w = stats[start];
      if (!tags.count(start)) tags[start] = r.tag.empty() ? "null" : r.tag;
      w[0] += 1;
      w[1] += r.amount.value_or(0);
      w[2] += r.amount_null ? 1 : 0;
      w[3] += r.amount_missing ? 1 : 0;
    }
    for (const auto& [start, w] : stats) {
      lines.push_back(
          Join({key, Str(start), Str(w[0]), Str(w[1]), Str(w[2]), Str(w[3]), tags[start]}));
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// sessions (worker/jobs/examples/sessions.cc), field "amount": "key|start|end|events|sum|max".
std::vector<std::string> ReferenceSessions(const Input& input, int64_t gap_ms) {
  std::vector<std::string> lines;
  for (const auto& [key, records] : input) {
    bool open = false;
    int64_t start = 0, end = 0, events = 0;
    std::vector<int64_t> values;
    auto close = [&] {
      std::string sum = "null", max = "null";
      if (!values.empty()) {
        int64_t total = 0;
        for (int64_t v : values) total += v;
        sum = Str(total);
        max = Str(*std::max_element(values.begin(), values.end()));
      }
      lines.push_back(Join({key, Str(start), Str(end), Str(events), sum, max}));
      open = false;
    };
    for (const InputRecord& r : records) {
      if (open && r.ts >= end) close();
      if (!open) {
        open = true;
        start = r.ts, end = 0, events = 0;
        values.clear();
      }
      start = std::min(start, r.ts);
      end = std::max(end, r.ts + gap_ms);
      ++events;
      if (r.amount) values.push_back(*r.amount);
    }
    if (open) close();
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// running-sum (worker/jobs/examples/running_sum.cc), field "amount": "key|time|sum".
std::vector<std::string> ReferenceRunningSum(const Input& input, int64_t interval_ms) {
  std::vector<std::string> lines;
  for (const auto& [key, records] : input) {
    std::map<int64_t, int64_t> per_interval;
    for (const InputRecord& r : records) {
      per_interval[r.ts - r.ts % interval_ms] += r.amount.value_or(0);
    }
    int64_t total = 0;
    for (const auto& [start, sum] : per_interval) {
      total += sum;
      lines.push_back(Join({key, Str(start + interval_ms), Str(total)}));
    }
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// An output value as the canonical text of the references: integers, strings, null.
std::string CanonicalValue(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// The committed output of `dir`, each line as its `fields` joined with '|', sorted.
Result<std::vector<std::string>> CanonicalOutput(const std::string& dir,
                                                 const std::vector<std::string>& fields) {
  KF_ASSIGN_OR_RETURN(JobOutput out, ReadJobOutput(dir));
  std::vector<std::string> lines;
  for (const nlohmann::json& line : out.lines) {
    std::vector<std::string> parts;
    for (const std::string& f : fields) {
      if (!line.contains(f))
        return InvalidArgument("output line without \"" + f + "\": " + line.dump());
      parts.push_back(CanonicalValue(line[f]));
    }
    lines.push_back(Join(parts));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The library built against the installed SDK runs on a 3-worker cluster with checkpoints;
// worker 1 is SIGKILLed after a checkpoint; the job restarts from the latest one and its
// committed output is exactly the reference (nothing lost, nothing duplicated). The input is
// the directory of JSON Lines files, read by the built-in file source or (`connector`) by the
// library's own source connector "lines" (tests/sdk/window_stats.cc), whose positions are its
// own byte offsets.
void ExpectExactOutputThroughAWorkerKill(bool connector) {
  TestDir dir;
  auto input = WriteInput(dir.Subdir("input"), 40'000);
  ASSERT_OK(input);
  const std::vector<std::string> reference = ReferenceWindowStats(*input, 1'000);
  ASSERT_GT(reference.size(), 30'000u);

  auto cluster = Cluster::Start(dir.Subdir("cluster"), ClusterOptions{});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  const std::string output = dir.path() + "/output";
  // The first attempt is slow (1 ms every 2 records: ~25 s per subtask) until the file `fast`
  // exists, which the test creates after the kill: the kill lands after a checkpoint and long
  // before the end whatever the machine's speed, and the restored attempt runs at full speed.
  const std::string fast = dir.path() + "/fast";
  auto cli = c.StartCli({"run",
                         "--job-library",
                         kJobLibrary,
                         "--job",
                         "window-stats",
                         "--param",
                         "size=1s",
                         "--param",
                         "pause-every=2",
                         "--param",
                         "pause-until=" + fast,
                         "--input",
                         (connector ? "connector:lines:" : "") + dir.path() + "/input",
                         "--output",
                         (connector ? "connector:files:" : "") + output,
                         "--parallelism",
                         "3",
                         "--checkpoint-interval",
                         "300ms",
                         "--wait"},
                        dir.path() + "/run.log");
  ASSERT_OK(cli);

  auto running = c.WaitForStatus(
      [](const nlohmann::json& s) {
        const nlohmann::json& job = s["job"];
        return job.is_object() &&
               ((job.value("state", "") == "RUNNING" &&
                 job["checkpoints"].value("latest_completed", int64_t{0}) >= 1) ||
                job.value("state", "") == "FINISHED" || job.value("state", "") == "FAILED");
      },
      Duration::Seconds(60), "a completed checkpoint");
  ASSERT_OK(running) << running.status().ToString() << "\n" << c.LogExcerpts();
  ASSERT_EQ((*running)["job"].value("state", ""), "RUNNING") << "the job ended before the kill\n"
                                                             << running->dump();

  auto killed = c.KillWorker(1);
  ASSERT_OK(killed);
  std::ofstream(fast).put('\n');
  ASSERT_OK(c.StartWorker(1)) << c.LogExcerpts();

  auto exit_code = cli->Wait(Duration::Seconds(300));
  ASSERT_OK(exit_code) << exit_code.status().ToString() << "\n" << c.LogExcerpts();
  EXPECT_EQ(*exit_code, 0) << ReadFileOrEmpty(dir.path() + "/run.log")
                           << ReadFileOrEmpty(dir.path() + "/run.log.err") << c.LogExcerpts();
  auto status = c.StatusJson();
  ASSERT_OK(status);
  const nlohmann::json& job = (*status)["job"];
  EXPECT_EQ(job.value("state", ""), "FINISHED") << job.dump();
  EXPECT_GE(job.value("restarts", 0), 1) << job.dump();
  EXPECT_GT(job.value("restored_from", int64_t{0}), 0) << job.dump();
  EXPECT_EQ(job.value("late_records", int64_t{-1}), 0) << job.dump();

  if (connector) {
    EXPECT_EQ(job["source"].value("kind", ""), "connector") << job.dump();
    EXPECT_EQ(job["source"].value("source", ""), "lines") << job.dump();
    EXPECT_EQ(job["source"].value("splits", 0), kFiles) << job.dump();
  }

  auto actual = CanonicalOutput(
      output, {"key", "window_start", "count", "sum", "nulls", "missing", "first_tag"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, reference));
}

TEST_F(SdkTest, OutOfTreeJobSurvivesAWorkerKillWithExactOutput) {
  ExpectExactOutputThroughAWorkerKill(/*connector=*/false);
}

// The example source and sink connectors, built out of tree against the installed SDK, give the
// same exact output through the kill: the source's splits were listed by `keyflow run`, its
// positions went into the checkpoints and the restored readers resumed there; the sink's staged
// files were committed only for completed checkpoints, and the restored checkpoint's again
// (idempotently).
TEST_F(SdkTest, OutOfTreeConnectorsReadAndWriteExactlyOnceThroughAWorkerKill) {
  ExpectExactOutputThroughAWorkerKill(/*connector=*/true);
}

// A connector's bad input is refused at submit, with the source's own sentence (exit 2); a
// source the library does not have is named with the ones it has.
TEST_F(SdkTest, AConnectorInputIsCheckedAtSubmit) {
  TestDir dir;
  auto run = [&](const std::string& input) {
    auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--job-library", kJobLibrary, "--job",
                         "window-stats", "--input", input, "--coordinator", "tcp://127.0.0.1:1"},
                        Duration::Seconds(30));
    EXPECT_OK(r);
    return r.ok() ? *r : CommandResult{};
  };
  CommandResult empty = run("connector:lines:" + dir.path());
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_THAT(empty.err, HasSubstr("source 'lines' of libwindow-stats.so: no *.jsonl file in '" +
                                   dir.path() + "'"));
  CommandResult unknown = run("connector:nope:x");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_THAT(unknown.err,
              HasSubstr("job library libwindow-stats.so has no source 'nope'; its sources are: "
                        "lines"));
  CommandResult bad = run("connector:Bad");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("give connector:NAME[:ARGS]"));
  // The sink's own check, and a sink the library does not have.
  std::ofstream(dir.path() + "/in.jsonl") << "{\"uid\":\"a\",\"ts\":1}\n";
  auto run_out = [&](const std::string& output) {
    auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--job-library", kJobLibrary, "--job",
                         "window-stats", "--input", dir.path() + "/in.jsonl", "--output", output,
                         "--coordinator", "tcp://127.0.0.1:1"},
                        Duration::Seconds(30));
    EXPECT_OK(r);
    return r.ok() ? *r : CommandResult{};
  };
  CommandResult no_dir = run_out("connector:files");
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.err;
  EXPECT_THAT(no_dir.err, HasSubstr("--output connector:files: sink 'files' of "
                                    "libwindow-stats.so: give a directory: connector:files:DIR"));
  CommandResult no_sink = run_out("connector:nope:x");
  EXPECT_EQ(no_sink.exit_code, 2) << no_sink.err;
  EXPECT_THAT(no_sink.err,
              HasSubstr("job library libwindow-stats.so has no sink 'nope'; its sinks are: files"));
}

// ---- the examples (worker/jobs/examples), built in-tree with the same keyflow_add_job --------

std::string ExampleLibrary(const std::string& name) {
  return std::string(KEYFLOW_BINARY_DIR) + "/lib/keyflow/examples/lib" + name + ".so";
}

TEST(ExampleLibrariesTest, JobsDescribesEachExample) {
  const std::map<std::string, std::vector<std::string>> params = {
      {"count-or-timeout", {"count", "500", "timeout", "12h"}},
      {"sessions", {"gap", "30min", "field", "amount"}},
      {"running-sum", {"field", "amount", "interval", "1min"}},
      {"spend-by-tier",
       {"interval", "1min", "keyed by the graph's KeyBy",
        "    task 0 [source source-in -> filter with-amount -> map tier] parallelism of the job\n"
        "    task 1 [keyed-process window-sum -> sink sink-out] parallelism of the job\n"
        "      tier =hash(tier)=> window-sum\n"}}};
  for (const auto& [job, expected] : params) {
    auto r = RunCommand({KeyflowBinary("keyflow"), "jobs", "--job-library", ExampleLibrary(job)},
                        Duration::Seconds(30));
    ASSERT_OK(r);
    EXPECT_EQ(r->exit_code, 0) << job << ": " << r->err;
    EXPECT_THAT(r->out, HasSubstr(job));
    for (const std::string& text : expected) EXPECT_THAT(r->out, HasSubstr(text)) << job;
  }
}

class ExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto input = WriteInput(dir_.Subdir("input"), 10'000);
    ASSERT_OK(input);
    input_ = std::move(*input);
    ClusterOptions options;
    options.workers = 2;
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), options);
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  // Runs example `job` with `params` on the input to the end; returns the output directory.
  std::string Run(const std::string& job, const std::vector<std::string>& params) {
    std::string output = dir_.path() + "/output-" + job;
    std::vector<std::string> args = {"--job-library", ExampleLibrary(job),
                                     "--job",         job,
                                     "--input",       dir_.path() + "/input",
                                     "--output",      output,
                                     "--parallelism", "2"};
    for (const std::string& p : params) args.insert(args.end(), {"--param", p});
    auto run = RunJob(*cluster_, args, Duration::Seconds(120));
    EXPECT_OK(run);
    if (run.ok()) {
      EXPECT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err << cluster_->LogExcerpts();
      EXPECT_EQ(run->job.value("state", ""), "FINISHED") << run->job.dump();
      EXPECT_EQ(run->job.value("late_records", int64_t{-1}), 0) << run->job.dump();
    }
    return output;
  }

  TestDir dir_;
  Input input_;
  std::unique_ptr<Cluster> cluster_;
};

// Event time: a session per run of a key's records less than `gap` apart, exactly.
TEST_F(ExamplesTest, SessionsEmitsOneRecordPerSession) {
  const std::vector<std::string> reference = ReferenceSessions(input_, 1'000);
  ASSERT_EQ(reference.size(), 200u * 10u) << "every key pauses ten times";
  std::string output = Run("sessions", {"gap=1s"});
  auto actual = CanonicalOutput(output, {"key", "start", "end", "events", "sum", "max"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, reference));
}

// Event time: per key and 5 s interval with records, the sum of every record before its end.
TEST_F(ExamplesTest, RunningSumEmitsTheSumAtEveryIntervalEnd) {
  std::string output = Run("running-sum", {"interval=5s"});
  auto actual = CanonicalOutput(output, {"key", "time", "sum"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, ReferenceRunningSum(input_, 5'000)));
}

// Out-of-order input within the watermark bound: a key has records of two intervals before the
// first is emitted (running-sum's "other" state, not only its open interval); the result is
// still exact.
TEST_F(ExamplesTest, RunningSumIsExactWithOutOfOrderRecordsWithinTheBound) {
  Input input;
  std::string lines;
  // Per key: timestamps that go back and forth across the 5 s interval ends, by up to 1.5 s.
  const int64_t pattern[] = {4'000,  5'200, 4'900,  6'000,  4'999,  9'800,  10'300, 9'900,
                             10'000, 8'600, 15'100, 14'950, 20'000, 19'000, 21'000};
  for (int k = 0; k < 6; ++k) {
    const std::string key = "ooo-" + std::to_string(k);
    int n = 0;
    for (int64_t ts : pattern) {
      InputRecord r;
      r.ts = kStartMs + ts + k;
      r.amount = (n++ % 4) + k;
      input[key].push_back(r);
      lines +=
          "{\"uid\":\"" + key + "\",\"ts\":" + Str(r.ts) + ",\"amount\":" + Str(*r.amount) + "}\n";
    }
  }
  std::string in_dir = dir_.Subdir("ooo-input");
  std::ofstream(in_dir + "/part-0.jsonl", std::ios::binary) << lines;
  std::string output = dir_.path() + "/output-ooo";
  auto run = RunJob(*cluster_,
                    {"--job-library", ExampleLibrary("running-sum"), "--job", "running-sum",
                     "--param", "interval=5s", "--input", in_dir, "--output", output,
                     "--parallelism", "2", "--watermark-bound", "2s"},
                    Duration::Seconds(120));
  ASSERT_OK(run);
  EXPECT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err;
  EXPECT_EQ(run->job.value("late_records", int64_t{-1}), 0) << run->job.dump();
  auto actual = CanonicalOutput(output, {"key", "time", "sum"});
  ASSERT_OK(actual);
  EXPECT_TRUE(SameLines(*actual, ReferenceRunningSum(input, 5'000)));
}

// Processing time (nondeterministic timing, deterministic totals): with a 12 h timeout every
// window closes by count (exactly `count` records) or at the end of input (the rest), and every
// record is counted once.
TEST_F(ExamplesTest, CountOrTimeoutClosesWindowsByCountAndAtTheEnd) {
  std::string output = Run("count-or-timeout", {"count=30", "timeout=12h"});
  auto out = ReadJobOutput(output);
  ASSERT_OK(out);
  std::map<std::string, int64_t> counted, ends;
  for (const nlohmann::json& line : out->lines) {
    const std::string key = line.value("uid", "");
    const std::string cause = line.value("cause", "");
    const int64_t count = line.value("count", int64_t{0});
    counted[key] += count;
    if (cause == "count") {
      EXPECT_EQ(count, 30) << line.dump();
    } else {
      EXPECT_EQ(cause, "end-of-input") << line.dump();
      EXPECT_EQ(++ends[key], 1) << "one open window per key at the end: " << line.dump();
    }
  }
  std::map<std::string, int64_t> expected;
  for (const auto& [key, records] : input_) expected[key] = static_cast<int64_t>(records.size());
  EXPECT_EQ(counted, expected);
  EXPECT_EQ(ends.size(), expected.size()) << "200 records per key: 6 windows of 30, one of 20";
}

}  // namespace
}  // namespace keyflow::test
