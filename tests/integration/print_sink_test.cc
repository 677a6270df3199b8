// A job without --output prints its results (Flink's print()): a real coordinator and two
// workers run count-window at parallelism 2, and the exact result lines, with the
// "<subtask+1>> " prefix of the subtask that owns each key, are found once in the worker logs.
#include <gtest/gtest.h>

#include <fstream>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

// How often `line` occurs as a whole line in `text`.
int CountLines(const std::string& text, const std::string& line) {
  int n = 0;
  size_t pos = 0;
  while ((pos = text.find(line + "\n", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') ++n;
    pos += line.size();
  }
  return n;
}

TEST(PrintSinkIntegration, AJobWithoutOutputPrintsItsResultsIntoTheWorkerLogs) {
  TestDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string input = dir.Subdir("input") + "/events.jsonl";
  {
    std::ofstream f(input);
    f << R"({"uid":"alice","ts":1000})"
      << "\n"
      << R"({"uid":"bob","ts":1500})"
      << "\n"
      << R"({"uid":"alice","ts":2000})"
      << "\n"
      << R"({"uid":"carol","ts":2500})"
      << "\n"
      << R"({"uid":"carol","ts":2600})"
      << "\n";
  }
  ClusterOptions options;
  options.workers = 2;
  auto cluster = Cluster::Start(dir.Subdir("cluster"), options);
  ASSERT_OK(cluster);
  Cluster& c = **cluster;

  auto run = RunJob(c,
                    {"--job", "count-window", "--param", "count=2", "--param", "timeout=10s",
                     "--param", "time=event", "--input", input, "--parallelism", "2"},
                    Duration::Seconds(60));
  ASSERT_OK(run);
  ASSERT_EQ(run->cli.exit_code, 0) << run->cli.out << run->cli.err << c.LogExcerpts();
  ASSERT_EQ(run->job.value("state", ""), "FINISHED") << run->job.dump();
  EXPECT_EQ(run->job.value("records_out", int64_t{-1}), 3) << run->job.dump();
  EXPECT_NE(run->cli.out.find("printed by the workers"), std::string::npos) << run->cli.out;

  const int32_t max_parallelism = run->job.value("max_parallelism", 0);
  ASSERT_GT(max_parallelism, 0);
  auto owner = [&](const std::string& key) {
    KeyGroupId g = AssignToKeyGroup(Key::FromBytes(key), KeyType::kString, max_parallelism).value();
    return ComputeOperatorIndexForKeyGroup(max_parallelism, 2, g).value();
  };
  auto expected = [&](const std::string& key, const std::string& rest) {
    int s = owner(key);
    return std::to_string(s + 1) + "> {\"key\":\"" + key + "\"," + rest +
           ",\"subtask\":" + std::to_string(s) + "}";
  };
  const std::vector<std::string> lines = {
      expected("alice", R"("count":2,"start":1000,"time":2000,"cause":"count")"),
      expected("carol", R"("count":2,"start":2500,"time":2600,"cause":"count")"),
      expected("bob", R"("count":1,"start":1500,"time":11500,"cause":"timeout")"),
  };
  std::string logs = ReadFileOrEmpty(c.WorkerLog(0)) + ReadFileOrEmpty(c.WorkerLog(1));
  for (const std::string& line : lines) {
    EXPECT_EQ(CountLines(logs, line), 1) << line << "\n" << c.LogExcerpts(40);
  }
}

}  // namespace
}  // namespace keyflow::test
