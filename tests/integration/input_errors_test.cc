// Input that goes away or changes under a running job (issue 9, Liveness 3 and 5), end to end:
// a deleted input directory fails the job at once with the path, whatever the restart budget,
// instead of restarting for it; `--on-input-change` takes warn | fail and nothing else; a file
// whose last line is still half-written when the job reads it (issue 28) loses no record to the
// malformed count: the line is left unread with a warning, or fails the job under `fail`.
//
// The deletion is made deterministic with a frozen worker: worker 1 is SIGSTOPped before the
// job is submitted, so every deployment times out on it (--deploy-timeout 1s) and the job keeps
// restarting until the test has deleted the input and let worker 1 go on (SIGCONT). The next
// deployment then reads the input spec after the deletion.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

bool IsTerminal(const nlohmann::json& job) {
  const std::string s = job.value("state", "");
  return s == "FINISHED" || s == "FAILED" || s == "CANCELED";
}

TEST(InputErrorsTest, DeletedInputDirectoryFailsTheJobAtOnceInsteadOfRestarting) {
  TestDir dir;
  ClusterOptions options;
  options.workers = 2;
  // Worker 1 stays registered while frozen (5 s heartbeat timeout), so deployments time out.
  options.coordinator_args = {"--heartbeat-interval", "100ms", "--heartbeat-timeout", "5s",
                              "--deploy-timeout",     "1s"};
  auto cluster = Cluster::Start(dir.Subdir("cluster"), options);
  ASSERT_OK(cluster);
  Cluster& c = **cluster;

  const std::string input = dir.Subdir("input");
  for (const char* name : {"a.jsonl", "b.jsonl"}) {
    std::ofstream out(input + "/" + name);
    for (int i = 0; i < 100; ++i) {
      out << "{\"uid\":\"k" << i % 7 << "\",\"ts\":" << 1'700'000'000'000 + i << "}\n";
    }
  }
  ASSERT_OK(c.worker(1)->Signal(SIGSTOP));
  auto submitted =
      c.Cli({"run", "--job", "tumbling-count", "--input", input, "--output", dir.path() + "/out",
             "--parallelism", "2", "--checkpoint-interval", "200ms", "--restart-strategy",
             "fixed-delay", "--restart-attempts", "1000", "--restart-delay", "100ms"});
  ASSERT_OK(submitted);
  ASSERT_EQ(submitted->exit_code, 0) << submitted->err;
  const std::string job_id = submitted->out.substr(0, submitted->out.find('\n'));

  // The first deployment timed out on the frozen worker: the job is being restarted.
  auto restarting = c.WaitForStatus(
      [](const nlohmann::json& s) {
        return s["job"].is_object() && s["job"].value("restarts", 0) >= 1;
      },
      Duration::Seconds(30), "a restart after the deploy timeout");
  ASSERT_OK(restarting);
  std::filesystem::remove_all(input);
  ASSERT_OK(c.worker(1)->Signal(SIGCONT));

  auto end = c.WaitForStatus(
      [&](const nlohmann::json& s) {
        return s["job"].is_object() && s["job"].value("job_id", "") == job_id &&
               IsTerminal(s["job"]);
      },
      Duration::Seconds(30), "the end of the job");
  ASSERT_OK(end) << end.status().ToString() << "\n" << c.LogExcerpts();
  const nlohmann::json& job = (*end)["job"];
  EXPECT_EQ(job.value("state", ""), "FAILED") << job.dump();
  const std::string failure = job.value("failure", "");
  EXPECT_THAT(failure, HasSubstr(input));
  EXPECT_THAT(failure, HasSubstr("does not exist"));
  EXPECT_THAT(failure, Not(HasSubstr("restart attempts exhausted")));
  // Far fewer restarts than the budget of 1000: the missing input is not retried.
  EXPECT_LT(job.value("restarts", 0), 20) << job.dump();
}

TEST(InputErrorsTest, AHalfWrittenLastLineIsReportedNotCountedAsMalformed) {
  // The file is still being written when the job starts: its last line has no newline yet.
  TestDir dir;
  auto cluster = Cluster::Start(dir.Subdir("cluster"), ClusterOptions{.workers = 1});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  const std::string input = dir.Subdir("input") + "/events.jsonl";
  const std::string half = R"({"uid":"late","ts":1700000000)";
  {
    std::ofstream out(input);
    for (int i = 0; i < 50; ++i) {
      out << "{\"uid\":\"k" << i % 5 << "\",\"ts\":" << 1'700'000'000'000 + i << "}\n";
    }
    out << half;
  }
  const std::string warning =
      "input file " + input + " ends in a half-written line (line 51 has no newline and is not " +
      "yet a complete JSON object): " + std::to_string(half.size()) + " bytes not read";
  auto run = RunJob(c,
                    {"--job", "count-window", "--param", "time=event", "--input", input, "--output",
                     dir.path() + "/out", "--parallelism", "1"},
                    Duration::Seconds(60));
  ASSERT_OK(run);
  EXPECT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err << c.LogExcerpts();
  EXPECT_EQ(run->job.value("state", ""), "FINISHED") << run->job.dump();
  EXPECT_EQ(run->job.value("bad_records", -1), 0) << run->job.dump();
  EXPECT_EQ(run->job.value("records_in", -1), 50) << run->job.dump();
  EXPECT_THAT(run->cli.out, HasSubstr("malformed records: 0 (skipped)"));
  auto output = ReadJobOutput(dir.path() + "/out");
  ASSERT_OK(output);
  EXPECT_EQ(
      CountsPerKey(output->lines),
      (std::map<std::string, int64_t>{{"k0", 10}, {"k1", 10}, {"k2", 10}, {"k3", 10}, {"k4", 10}}));
  EXPECT_THAT(ReadFileOrEmpty(c.WorkerLog(0)), HasSubstr(warning));

  // --on-input-change fail: the job fails at once, naming the file, the line and the bytes.
  auto failed = RunJob(c,
                       {"--job", "count-window", "--param", "time=event", "--input", input,
                        "--output", dir.path() + "/out-fail", "--parallelism", "1",
                        "--on-input-change", "fail", "--restart-strategy", "fixed-delay",
                        "--restart-attempts", "100", "--restart-delay", "100ms"},
                       Duration::Seconds(60));
  ASSERT_OK(failed);
  EXPECT_NE(failed->cli.exit_code, 0);
  EXPECT_EQ(failed->job.value("state", ""), "FAILED") << failed->job.dump();
  EXPECT_THAT(failed->job.value("failure", ""), HasSubstr(warning));
  EXPECT_THAT(failed->job.value("failure", ""), HasSubstr("(--on-input-change fail)"));
  EXPECT_EQ(failed->job.value("restarts", -1), 0) << "DataLoss is not retried";
  EXPECT_EQ(failed->job.value("bad_records", -1), 0);
}

TEST(InputErrorsTest, OnInputChangeTakesWarnOrFailOnly) {
  // No coordinator runs at this port: the flag is refused before the CLI tries to submit.
  auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input",
                       "gen:events=10,keys=2,splits=1,seed=1", "--coordinator", "tcp://127.0.0.1:1",
                       "--on-input-change", "sometimes"},
                      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("--on-input-change must be warn or fail, not 'sometimes'"));
}

TEST(InputErrorsTest, HelpDocumentsOnInputChangeAndItsDefault) {
  auto r = RunCommand({KeyflowBinary("keyflow"), "run", "--help"}, Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_THAT(r->out + r->err, HasSubstr("--on-input-change arg (=warn)"));
}

}  // namespace
}  // namespace keyflow::test
