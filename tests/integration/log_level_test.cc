// Logging end to end, against the real binaries: `keyflow log-level debug` makes a running
// worker write debug lines within seconds and `keyflow log-level info` stops them; the level
// shows in status; an unknown level is refused with the sentence and changes nothing; bad
// logging flags of each binary exit 2 with a sentence; --log-format json writes JSON lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

int64_t LatestCheckpoint(const nlohmann::json& st) {
  const nlohmann::json& job = st["job"];
  if (!job.is_object() || !job["checkpoints"].is_object()) return 0;
  return job["checkpoints"].value("latest_completed", int64_t{0});
}

// The part of a log after `offset`.
std::string LogAfter(const std::string& path, size_t offset) {
  std::string log = ReadFileOrEmpty(path);
  return log.size() > offset ? log.substr(offset) : std::string();
}

TEST(LogLevelTest, RunTimeLevelReachesTheWorkersAndGoesBack) {
  TestDir dir;
  ClusterOptions o;
  o.workers = 2;
  auto cluster = Cluster::Start(dir.path(), o);
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  // A job that runs for a minute and checkpoints every 200 ms: each checkpoint is a few control
  // messages to every worker, which a worker logs at debug ("control message type=...").
  auto run = c.StartCli({"run", "--job", "count-window", "--input",
                         "gen:events=1200000,keys=100,splits=2,seed=1,rate=20000", "--parallelism",
                         "2", "--checkpoint-interval", "200ms"},
                        dir.path() + "/run.out");
  ASSERT_OK(run);
  auto first = c.WaitForStatus([](const nlohmann::json& st) { return LatestCheckpoint(st) >= 1; },
                               Duration::Seconds(30), "a first checkpoint");
  ASSERT_OK(first) << first.status().ToString() << c.LogExcerpts();
  EXPECT_EQ((*first)["coordinator"]["log_level"], "info");
  const std::string worker_log = c.WorkerLog(0);
  EXPECT_EQ(ReadFileOrEmpty(worker_log).find(" debug worker-0 "), std::string::npos);

  size_t offset = ReadFileOrEmpty(worker_log).size();
  auto debug = c.Cli({"log-level", "debug"});
  ASSERT_OK(debug);
  EXPECT_EQ(debug->exit_code, 0) << debug->err;
  EXPECT_EQ(debug->out, "log level is now debug on the coordinator and 2 workers\n");
  Status shown = WaitUntil(
      [&] { return LogAfter(worker_log, offset).find(" debug worker-0 ") != std::string::npos; },
      Duration::Seconds(10), "a debug line in worker-0's log");
  ASSERT_OK(shown) << shown.ToString() << "\n" << Tail(worker_log);
  EXPECT_THAT(LogAfter(worker_log, offset),
              HasSubstr(" info worker-0 log level changed from info to debug (set by the "
                        "coordinator)"));
  auto st = c.StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["coordinator"]["log_level"], "debug");
  EXPECT_THAT(ReadFileOrEmpty(c.CoordinatorLog()),
              HasSubstr("log level changed from info to debug (set by operator:operator)"));

  auto info = c.Cli({"log-level", "info"});
  ASSERT_OK(info);
  EXPECT_EQ(info->out, "log level is now info on the coordinator and 2 workers\n");
  const std::string changed = " info worker-0 log level changed from debug to info";
  Status back =
      WaitUntil([&] { return LogAfter(worker_log, offset).find(changed) != std::string::npos; },
                Duration::Seconds(10), "worker-0's level to change back");
  ASSERT_OK(back) << back.ToString() << "\n" << Tail(worker_log);
  // Two more checkpoints (control messages to every worker), none logged at debug.
  std::string log = ReadFileOrEmpty(worker_log);
  const size_t after_change = log.find('\n', log.find(changed, offset)) + 1;
  auto now = c.StatusJson();
  ASSERT_OK(now);
  const int64_t at = LatestCheckpoint(*now);
  auto later =
      c.WaitForStatus([at](const nlohmann::json& s) { return LatestCheckpoint(s) >= at + 2; },
                      Duration::Seconds(30), "two more checkpoints");
  ASSERT_OK(later);
  EXPECT_EQ(LogAfter(worker_log, after_change).find(" debug "), std::string::npos)
      << LogAfter(worker_log, after_change);
  EXPECT_EQ((*later)["coordinator"]["log_level"], "info");

  // An unknown level: the sentence, exit 2, nothing changes.
  auto bad = c.Cli({"log-level", "loud"});
  ASSERT_OK(bad);
  EXPECT_EQ(bad->exit_code, 2);
  EXPECT_EQ(bad->err,
            "keyflow: unknown log level 'loud': use one of: trace, debug, info, warn, "
            "error\n");
  auto unchanged = c.StatusJson();
  ASSERT_OK(unchanged);
  EXPECT_EQ((*unchanged)["coordinator"]["log_level"], "info");

  // --coordinator-only, and the level without an argument.
  auto only = c.Cli({"log-level", "warn", "--coordinator-only"});
  ASSERT_OK(only);
  EXPECT_EQ(only->out, "log level is now warn on the coordinator only\n");
  auto current = c.Cli({"log-level"});
  ASSERT_OK(current);
  EXPECT_EQ(current->out, "the coordinator logs at warn\n");
  c.Cli({"cancel"}).status().IgnoreError();
}

CommandResult RunBinary(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, Duration::Seconds(20));
  EXPECT_OK(r);
  return r.ok() ? *r : CommandResult{};
}

TEST(LogLevelTest, BadLoggingFlagsOfEveryBinaryExitTwoWithASentence) {
  TestDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--log-level", "loud"},
       "keyflow: --log-level: unknown log level 'loud': use one of: trace, debug, info, warn, "
       "error\n"},
      {{"--log-format", "xml"},
       "keyflow: --log-format: unknown log format 'xml': use text (one key=value line per "
       "event) or json (one JSON object per line)\n"},
      {{"--log-max-size", "10MB"},
       "keyflow: --log-max-size '10MB' has an unknown unit: give bytes or a whole number with "
       "KiB, MiB or GiB (e.g. 64MiB)\n"},
      {{"--log-max-files", "0"},
       "keyflow: --log-max-files 0 is out of range: give a number of rotated files from 1 to "
       "1000\n"},
  };
  const std::vector<std::vector<std::string>> binaries = {
      {KeyflowBinary("keyflow-coordinator"), "--port", "0", "--insecure", "--checkpoint-dir",
       dir.path() + "/checkpoints"},
      {KeyflowBinary("keyflow-worker"), "--coordinator", "tcp://127.0.0.1:1", "--insecure",
       "--cache-dir", dir.path() + "/cache"},
  };
  for (const auto& binary : binaries) {
    for (const auto& [flags, sentence] : cases) {
      std::vector<std::string> argv = binary;
      argv.insert(argv.end(), flags.begin(), flags.end());
      CommandResult r = RunBinary(argv);
      EXPECT_EQ(r.exit_code, 2) << binary[0] << " " << flags[0];
      EXPECT_EQ(r.err, sentence) << binary[0];
    }
    std::vector<std::string> argv = binary;
    argv.insert(argv.end(), {"--log-file", "/dev/null/x.log"});
    CommandResult r = RunBinary(argv);
    EXPECT_EQ(r.exit_code, 2) << binary[0];
    EXPECT_THAT(r.err, HasSubstr("keyflow: cannot open log file /dev/null/x.log ("));
    EXPECT_THAT(r.err, HasSubstr("): give --log-file a file in a directory this user can write\n"));
    CommandResult help = RunBinary({binary[0], "--help"});
    for (const char* flag :
         {"--log-file", "--log-level", "--log-format", "--log-max-size", "--log-max-files"}) {
      EXPECT_THAT(help.out, HasSubstr(flag)) << binary[0];
    }
  }
  // The CLI: before or after the command.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--log-level", "loud", "status"},
        std::vector<std::string>{"status", "--log-level=loud"}}) {
    std::vector<std::string> argv = {KeyflowBinary("keyflow")};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = RunBinary(argv);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, cases[0].second);
  }
  CommandResult r = RunBinary({KeyflowBinary("keyflow"), "status", "--log-format", "xml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, cases[1].second);
  r = RunBinary({KeyflowBinary("keyflow"), "ranges", "--log-level"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "keyflow: --log-level needs a value (e.g. --log-level debug)\n");
  CommandResult help = RunBinary({KeyflowBinary("keyflow"), "--help"});
  EXPECT_THAT(help.out, HasSubstr("--log-level L"));
  EXPECT_THAT(help.out, HasSubstr("log-level"));
}

TEST(LogLevelTest, JsonFormatWritesOneJsonObjectPerLine) {
  TestDir dir;
  const std::string log = dir.path() + "/coordinator.json.log";
  auto coordinator = ChildProcess::Start(
      {KeyflowBinary("keyflow-coordinator"), "--port", "0", "--insecure", "--checkpoint-dir",
       dir.path() + "/checkpoints", "--log-format", "json", "--log-file", log},
      dir.path() + "/coordinator.out");
  ASSERT_OK(coordinator);
  // The insecure warning is the first line; SIGTERM adds the shutdown lines.
  ASSERT_TRUE(WaitUntil([&] { return !ReadFileOrEmpty(log).empty(); }, Duration::Seconds(10),
                        "the first log line")
                  .ok());
  ASSERT_OK(coordinator->Signal(SIGTERM));
  auto code = coordinator->Wait(Duration::Seconds(10));
  ASSERT_OK(code);
  std::istringstream lines(ReadFileOrEmpty(log));
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    EXPECT_EQ(j["process"], "coordinator") << line;
    EXPECT_TRUE(j["msg"].is_string()) << line;
    EXPECT_TRUE(j["level"].is_string()) << line;
  }
  EXPECT_GE(n, 1);
  EXPECT_THAT(ReadFileOrEmpty(log), HasSubstr("\"level\":\"warn\",\"process\":\"coordinator\""));
}

// scripts/start-cluster.sh passes --log-level and --log-format to every process it starts.
TEST(LogLevelTest, StartClusterPassesTheLogFlagsToEveryProcess) {
  TestDir dir;
  CommandResult r =
      RunBinary({std::string(KEYFLOW_SOURCE_DIR) + "/scripts/start-cluster.sh", "--dry-run",
                 "--workers", "2", "--insecure", "--run-dir", dir.path() + "/run", "--build-dir",
                 KEYFLOW_BINARY_DIR, "--log-level", "debug", "--log-format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out + r.err);
  int commands = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("/bin/keyflow-") == std::string::npos) continue;
    ++commands;
    EXPECT_THAT(line, HasSubstr(" --log-level debug --log-format json")) << line;
  }
  EXPECT_EQ(commands, 3);  // the coordinator and two workers
}

}  // namespace
}  // namespace keyflow::test
