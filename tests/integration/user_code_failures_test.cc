// Failures of user code end to end (issue 10, requirement 7; worker/README.md "Failures of user
// code"): a job library with faulty functions (testdata/faulty_jobs.cc) runs on a real
// coordinator and two workers; a function whose Open fails, one that throws, and one that
// crashes the worker process each fail the job with the job, library, call and error in
// `keyflow status` and the `--wait` summary, and the next job runs. Also the supervisor's side
// of a crash: the crash line in the log becomes the restarted worker's --previous-exit.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

std::string Script(const std::string& name) {
  return std::string(KEYFLOW_SOURCE_DIR) + "/scripts/" + name;
}

TEST(WorkerSupervisor, ACrashLineInTheLogBecomesThePreviousExitOfTheRestartedWorker) {
  TestDir dir;
  ASSERT_FALSE(dir.path().empty());
  // A stand-in worker: the first run writes a crash line as the crash handler does and dies of
  // SIGSEGV; the supervisor's exit report (the same command with --report-exit) records its
  // arguments and exits; the restarted one records its arguments and waits.
  const std::string fake = dir.path() + "/fake-worker.sh";
  const std::string args = dir.path() + "/args";
  const std::string report = dir.path() + "/report";
  {
    std::ofstream f(fake);
    f << "#!/usr/bin/env bash\n"
      << "if [ \"${1-}\" = --report-exit ]; then\n"
      << "  printf '%s\\n' \"$@\" > " << report << ".tmp && mv " << report << ".tmp " << report
      << "\n"
      << "  exit 0\n"
      << "fi\n"
      << "if [ $# -eq 0 ]; then\n"
      << "  echo \"keyflow-worker pid $$ crashed: SIGSEGV while running ProcessElement of job "
         "'crashy' (libcrashy.so)\" >&2\n"
      << "  kill -SEGV $$\n"
      << "fi\n"
      << "printf '%s\\n' \"$@\" > " << args << ".tmp && mv " << args << ".tmp " << args << "\n"
      << "exec sleep 60\n";
  }
  ASSERT_EQ(::chmod(fake.c_str(), 0755), 0);
  const std::string pid_file = dir.path() + "/worker.pid";
  auto supervisor = ChildProcess::Start({Script("lib/worker-supervisor.sh"), "--pid-file", pid_file,
                                         "--log", dir.path() + "/worker.log", "--", fake},
                                        dir.path() + "/supervisor.log");
  ASSERT_OK(supervisor);
  Status s = WaitUntil([&] { return !ReadFileOrEmpty(args).empty(); }, Duration::Seconds(20),
                       "the restarted stand-in worker");
  const std::string got = ReadFileOrEmpty(args);
  const std::string reported = ReadFileOrEmpty(report);
  const std::string pid = ReadFileOrEmpty(pid_file);
  supervisor->Signal(SIGTERM).IgnoreError();
  (void)supervisor->Wait(Duration::Seconds(10));
  if (!pid.empty()) ::kill(std::stoi(pid), SIGKILL);
  ASSERT_OK(s) << s.message() << "\n" << ReadFileOrEmpty(dir.path() + "/worker.log");
  EXPECT_EQ(got.substr(0, got.rfind("--previous-pid")),
            "--previous-exit\ndied of SIGSEGV while running ProcessElement of job 'crashy' "
            "(libcrashy.so)\n");
  // Reported at once too, for the same process.
  EXPECT_EQ(reported.substr(0, reported.rfind("--previous-pid")),
            "--report-exit\ndied of SIGSEGV while running ProcessElement of job 'crashy' "
            "(libcrashy.so)\n");
  EXPECT_EQ(reported.substr(reported.rfind("--previous-pid")),
            got.substr(got.rfind("--previous-pid")));
}

TEST(WorkerSupervisor, TakesAnInitialRestartDelayInWholeSecondsOnly) {
  auto help = RunCommand({Script("lib/worker-supervisor.sh"), "--help"}, Duration::Seconds(10));
  ASSERT_OK(help);
  EXPECT_EQ(help->exit_code, 0);
  EXPECT_NE(help->out.find("--restart-delay SECONDS  wait before the first restart"),
            std::string::npos)
      << help->out;
  auto bad = RunCommand({Script("lib/worker-supervisor.sh"), "--restart-delay", "1.5", "--pid-file",
                         "/nonexistent/pid", "--log", "/nonexistent/log", "--", "true"},
                        Duration::Seconds(10));
  ASSERT_OK(bad);
  EXPECT_EQ(bad->exit_code, 2);
  EXPECT_EQ(bad->err,
            "worker-supervisor: --restart-delay must be whole seconds (0 or more), not '1.5'\n");
}

#ifdef KEYFLOW_FAULTY_JOBS_LIBRARY

constexpr Duration kJobTimeout = Duration::Seconds(60);

class UserCodeFailuresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    input_ = dir_.Subdir("input") + "/events.jsonl";
    {
      std::ofstream f(input_);
      for (int i = 0; i < 40; ++i) {
        f << "{\"uid\":\"u" << i % 8 << "\",\"ts\":" << 1000 + i << "}\n";
      }
    }
    ClusterOptions options;
    options.workers = 2;
    auto cluster = Cluster::Start(dir_.Subdir("cluster"), options);
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
  }

  std::vector<std::string> Faulty(const std::string& job, std::vector<std::string> more,
                                  int parallelism = 2) {
    std::vector<std::string> args = {
        "--job-library", KEYFLOW_FAULTY_JOBS_LIBRARY, "--job", job, "--input", input_,
        "--parallelism", std::to_string(parallelism)};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // The cluster stays usable: a good job runs to the end after the faulty one.
  void ExpectTheNextJobFinishes() {
    auto run = RunJob(*cluster_,
                      {"--job", "count-window", "--input", input_, "--parallelism", "2", "--output",
                       dir_.path() + "/good-output"},
                      kJobTimeout);
    ASSERT_OK(run);
    EXPECT_EQ(run->job.value("state", ""), "FINISHED")
        << run->job.dump() << cluster_->LogExcerpts();
    EXPECT_EQ(run->job.value("records_processed", int64_t{-1}), 40);
  }

  TestDir dir_;
  std::string input_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(UserCodeFailuresTest, OpenFailingFailsTheJobWithTheFunctionsErrorInStatusAndSummary) {
  auto run = RunJob(
      *cluster_,
      Faulty("open-fails", {"--param", "message=no table t.csv", "--restart-strategy", "none"}),
      kJobTimeout);
  ASSERT_OK(run);
  ASSERT_TRUE(run->job.is_object()) << run->cli.out << run->cli.err;
  const std::string expected =
      "failed: function of job 'open-fails' (libfaulty-jobs.so) failed in Open: no table t.csv";
  EXPECT_NE(run->cli.exit_code, 0);
  EXPECT_EQ(run->job.value("state", ""), "FAILED") << run->job.dump();
  EXPECT_NE(run->job.value("failure", std::string()).find(expected), std::string::npos)
      << run->job.dump();
  EXPECT_NE((run->cli.out + run->cli.err).find(expected), std::string::npos)
      << run->cli.out << run->cli.err;
  auto text = cluster_->Cli({"status"});
  ASSERT_OK(text);
  EXPECT_NE(text->out.find(expected), std::string::npos) << text->out;
  ExpectTheNextJobFinishes();
}

TEST_F(UserCodeFailuresTest, AThrowingFunctionRestartsPerItsStrategyThenFailsWithTheException) {
  auto run =
      RunJob(*cluster_,
             Faulty("throws-after-n", {"--param", "n=2", "--restart-strategy", "fixed-delay",
                                       "--restart-attempts", "1", "--restart-delay", "100ms"}),
             kJobTimeout);
  ASSERT_OK(run);
  ASSERT_TRUE(run->job.is_object()) << run->cli.out << run->cli.err;
  EXPECT_EQ(run->job.value("state", ""), "FAILED") << run->job.dump();
  EXPECT_EQ(run->job.value("attempt", 0), 2) << "one restart, then failed: " << run->job.dump();
  const std::string expected =
      "failed: function of job 'throws-after-n' (libfaulty-jobs.so) threw std::runtime_error in "
      "ProcessElement: record 2 is poisoned";
  EXPECT_NE(run->job.value("failure", std::string()).find(expected), std::string::npos)
      << run->job.dump();
  EXPECT_NE((run->cli.out + run->cli.err).find(expected), std::string::npos)
      << run->cli.out << run->cli.err;
  ExpectTheNextJobFinishes();
}

// The job's counters include what each failed attempt did up to its failure, not only what
// heartbeats reported before it: every attempt processes records 1 and 2 and fails on the 3rd,
// within milliseconds (far less than a heartbeat interval).
TEST_F(UserCodeFailuresTest, CountersOfFailedAttemptsCountTheRecordsBeforeEachFailure) {
  auto run = RunJob(*cluster_,
                    Faulty("throws-after-n",
                           {"--param", "n=3", "--restart-strategy", "fixed-delay",
                            "--restart-attempts", "2", "--restart-delay", "100ms"},
                           /*parallelism=*/1),
                    kJobTimeout);
  ASSERT_OK(run);
  ASSERT_TRUE(run->job.is_object()) << run->cli.out << run->cli.err;
  EXPECT_EQ(run->job.value("state", ""), "FAILED") << run->job.dump();
  EXPECT_EQ(run->job.value("attempt", 0), 3) << run->job.dump();
  EXPECT_EQ(run->job.value("records_processed", int64_t{-1}), 6) << run->job.dump();
  EXPECT_EQ(run->job["current_attempt"].value("records_processed", int64_t{-1}), 2)
      << run->job.dump();
  // Each attempt read at least the three records it was given (the source reads ahead).
  EXPECT_GE(run->job.value("records_in", int64_t{-1}), 9) << run->job.dump();
  EXPECT_LE(run->job.value("records_in", int64_t{-1}), 3 * 40) << run->job.dump();
  auto text = cluster_->Cli({"status"});
  ASSERT_OK(text);
  EXPECT_NE(text->out.find("  processed 6  out 0  "), std::string::npos) << text->out;
}

TEST_F(UserCodeFailuresTest, ACrashingFunctionNamesTheSignalAndTheCallOnceTheWorkerIsBack) {
  std::vector<std::string> args = {"run"};
  for (std::string& a : Faulty("crashes-after-n", {"--param", "n=2", "--restart-strategy", "none"},
                               /*parallelism=*/1)) {
    args.push_back(std::move(a));
  }
  args.push_back("--wait");
  const std::string cli_log = dir_.path() + "/run-wait.out";
  auto cli = cluster_->StartCli(args, cli_log);
  ASSERT_OK(cli);
  // The worker running the keyed subtask dies of SIGSEGV at its second record. Restart it as
  // the supervisor does (cluster.h reads the crash line from the log, as worker-supervisor.sh).
  int crashed = -1;
  Status died = WaitUntil(
      [&] {
        for (int slot = 0; slot < 2; ++slot) {
          if (!cluster_->worker(slot)->Running()) crashed = slot;
        }
        return crashed >= 0;
      },
      Duration::Seconds(30), "a worker to crash");
  ASSERT_OK(died) << died.message() << cluster_->LogExcerpts();
  auto code = cluster_->worker(crashed)->Wait(Duration::Seconds(5));
  ASSERT_OK(code);
  EXPECT_EQ(*code, 128 + SIGSEGV);
  EXPECT_NE(ReadFileOrEmpty(cluster_->WorkerLog(crashed))
                .find("crashed: SIGSEGV while running ProcessElement of job 'crashes-after-n' "
                      "(libfaulty-jobs.so)"),
            std::string::npos)
      << ReadFileOrEmpty(cluster_->WorkerLog(crashed));
  ASSERT_OK(cluster_->StartWorker(crashed));
  const std::string expected =
      "its process ended: died of SIGSEGV while running ProcessElement of job 'crashes-after-n' "
      "(libfaulty-jobs.so)";
  auto st = cluster_->WaitForStatus(
      [&](const nlohmann::json& j) {
        return j["job"].value("state", "") == "FAILED" &&
               j["job"].value("failure", std::string()).find(expected) != std::string::npos;
      },
      Duration::Seconds(30), "the job FAILED naming the crash");
  ASSERT_OK(st) << st.status().ToString() << cluster_->LogExcerpts();
  // The --wait summary names the crash too (it waits for the restarted worker's report).
  auto cli_code = cli->Wait(Duration::Seconds(20));
  ASSERT_OK(cli_code);
  EXPECT_EQ(*cli_code, 1);
  EXPECT_NE(ReadFileOrEmpty(cli_log).find(expected), std::string::npos)
      << ReadFileOrEmpty(cli_log) << ReadFileOrEmpty(cli_log + ".err");
  ASSERT_OK(cluster_->WaitForWorkers(2, Duration::Seconds(20)));
  ExpectTheNextJobFinishes();
}

#endif  // KEYFLOW_FAULTY_JOBS_LIBRARY

}  // namespace
}  // namespace keyflow::test
