// The process-level errors of the three binaries, against the real executables: --version,
// a port flag out of range (which ZeroMQ would silently wrap around), a bad --input refused
// before anything is submitted. Each exits 2 with one sentence and starts nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

CommandResult RunBinary(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, Duration::Seconds(20));
  EXPECT_OK(r);
  return r.ok() ? *r : CommandResult{};
}

TEST(ProcessErrorsTest, EveryBinaryPrintsItsVersionAndGitRevision) {
  for (const std::string name : {"keyflow", "keyflow-coordinator", "keyflow-worker"}) {
    CommandResult r = RunBinary({KeyflowBinary(name), "--version"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_TRUE(std::regex_match(
        r.out, std::regex(name + " 0\\.1\\.0 \\(git ([0-9a-f]+(-dirty)?|unknown)\\)\n")))
        << r.out;
  }
}

TEST(ProcessErrorsTest, CoordinatorRefusesAPortOutOfRange) {
  CommandResult r =
      RunBinary({KeyflowBinary("keyflow-coordinator"), "--port", "70000", "--insecure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "keyflow: --port 70000 is not a TCP port: give a number from 0 to 65535 (0: any free "
            "port)\n");
  r = RunBinary(
      {KeyflowBinary("keyflow-coordinator"), "--bind", "tcp://127.0.0.1:65536", "--insecure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--bind tcp://127.0.0.1:65536 has no valid TCP port"));
  r = RunBinary({KeyflowBinary("keyflow-coordinator"), "--port", "0", "--heartbeat-interval", "0",
                 "--insecure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "keyflow: --heartbeat-interval 0 is out of range: give a duration from 1ms to 365d\n");
}

// Secure by default: neither binary starts without --keys or an explicit --insecure.
TEST(ProcessErrorsTest, CoordinatorAndWorkerRefuseToStartWithoutKeysOrInsecure) {
  const std::string sentence =
      "keyflow: no keys: pass --keys DIR (create DIR with `keyflow keys init DIR`; "
      "scripts/start-cluster.sh does it on first use) or, to run without authentication, "
      "--insecure\n";
  CommandResult r =
      RunBinary({"env", "-u", "KEYFLOW_KEYS", KeyflowBinary("keyflow-coordinator"), "--port", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, sentence);
  r = RunBinary({"env", "-u", "KEYFLOW_KEYS", KeyflowBinary("keyflow-worker"), "--coordinator",
                 "tcp://127.0.0.1:1", "--slot", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, sentence);
  TestDir dir;
  r = RunBinary({KeyflowBinary("keyflow-worker"), "--coordinator", "tcp://127.0.0.1:1", "--keys",
                 dir.path(), "--insecure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--keys and --insecure exclude each other"));
}

// The control port binds --host (default 127.0.0.1), not every interface; a host that does
// not resolve is a usage error, for the coordinator's --host and the worker's --data-host.
TEST(ProcessErrorsTest, CoordinatorBindsLoopbackByDefaultAndRefusesAnUnknownHost) {
  TestDir dir;
  auto coordinator =
      ChildProcess::Start({KeyflowBinary("keyflow-coordinator"), "--port", "0", "--insecure",
                           "--rest-port", "0", "--checkpoint-dir", dir.path() + "/checkpoints"},
                          dir.path() + "/coordinator.log");
  ASSERT_OK(coordinator);
  Status s = WaitUntil(
      [&] {
        return ReadFileOrEmpty(dir.path() + "/coordinator.log").find("listening on") !=
               std::string::npos;
      },
      Duration::Seconds(15), "the \"listening on\" line");
  ASSERT_OK(s);
  const std::string log = ReadFileOrEmpty(dir.path() + "/coordinator.log");
  EXPECT_THAT(log, HasSubstr("keyflow-coordinator: listening on tcp://127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("keyflow-coordinator runs with --insecure: connections are neither "
                             "encrypted nor authenticated"));
  coordinator->Kill();

  CommandResult r = RunBinary({KeyflowBinary("keyflow-coordinator"), "--host",
                               "no-such-host.invalid", "--port", "0", "--insecure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "keyflow: --host 'no-such-host.invalid' is not an address of this host: give an IP "
            "address or a host name that resolves (or choose the interface to bind "
            "explicitly)\n");
  r = RunBinary({KeyflowBinary("keyflow-worker"), "--coordinator", "tcp://127.0.0.1:1",
                 "--data-host", "no-such-host.invalid", "--insecure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--data-host 'no-such-host.invalid' is not an address of this "
                               "host"));
}

TEST(ProcessErrorsTest, WorkerRefusesACoordinatorPortOutOfRange) {
  CommandResult r =
      RunBinary({KeyflowBinary("keyflow-worker"), "--coordinator", "tcp://127.0.0.1:70000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "keyflow: --coordinator tcp://127.0.0.1:70000 has no valid TCP port: write "
            "tcp://HOST:PORT with PORT from 1 to 65535\n");
}

TEST(ProcessErrorsTest, CliRefusesACoordinatorPortOutOfRange) {
  CommandResult r =
      RunBinary({KeyflowBinary("keyflow"), "status", "--coordinator", "tcp://h:70000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "keyflow: --coordinator tcp://h:70000 has no valid TCP port: write tcp://HOST:PORT "
            "with PORT from 1 to 65535\n");
  r = RunBinary({KeyflowBinary("keyflow"), "checkpoint", "--timeout", "0", "--coordinator",
                 "tcp://127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--timeout 0 is out of range"));
}

// Nothing listens on port 1: a run that got as far as submitting would fail with exit 1.
TEST(ProcessErrorsTest, RunRefusesABadInputBeforeSubmitting) {
  TestDir dir;
  auto run = [&](const std::string& input) {
    return RunBinary({KeyflowBinary("keyflow"), "run", "--job", "count-window", "--input", input,
                      "--coordinator", "tcp://127.0.0.1:1"});
  };
  CommandResult r = run("gen:events=10,keys=0,splits=1");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("keys"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run(dir.path() + "/missing.jsonl");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "keyflow: input '" + dir.path() +
                       "/missing.jsonl' does not exist; give a JSON Lines file, a directory of "
                       "them, or gen:events=N,keys=K,splits=S\n");
  r = run(dir.Subdir("empty"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("contains no input files"));
}

TEST(ProcessErrorsTest, PeerHostNameIsEscapedInTheCoordinatorLog) {
  TestDir dir;
  ClusterOptions options;
  options.workers = 0;
  auto cluster = Cluster::Start(dir.path(), options);
  ASSERT_OK(cluster);
  const std::string host = "evil\n2026-12-01T00:00:00.000Z info coordinator forged \x1b[31mred";
  std::vector<std::string> argv = {KeyflowBinary("keyflow-worker"),
                                   "--coordinator",
                                   (*cluster)->endpoint(),
                                   "--slot",
                                   "0",
                                   "--hostname",
                                   host};
  for (const std::string& arg : (*cluster)->SecurityArgs("worker-0")) argv.push_back(arg);
  auto worker = ChildProcess::Start(argv, dir.path() + "/worker.log");
  ASSERT_OK(worker);
  ASSERT_OK((*cluster)->WaitForWorkers(1, Duration::Seconds(20))) << (*cluster)->LogExcerpts();
  std::string log = ReadFileOrEmpty((*cluster)->CoordinatorLog());
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_EQ(log.find("\ncoordinator forged"), std::string::npos);
  EXPECT_EQ(log.find("\n2026-12-01T00:00:00.000Z"), std::string::npos) << log;
  EXPECT_THAT(log, HasSubstr("host=evil\\n2026-12-01T00:00:00.000Z info coordinator forged "
                             "\\x1b[31mred"));
}

// Every script answers --help with its usage and exit 0, doing nothing else (run in an empty
// directory that must stay empty; install-deps.sh used to install instead), and refuses an
// unknown option.
TEST(ProcessErrorsTest, EveryScriptHasAHelpWithoutSideEffects) {
  int scripts = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(KEYFLOW_SOURCE_DIR) + "/scripts")) {
    if (e.path().extension() != ".sh") continue;
    ++scripts;
    const std::string script = e.path().string();
    TestDir cwd;
    CommandResult r = RunBinary(
        {"/bin/sh", "-c", "cd '" + cwd.path() + "' && exec " + script + " --help </dev/null"});
    EXPECT_EQ(r.exit_code, 0) << script << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr(e.path().filename().string())) << script;
    EXPECT_TRUE(std::filesystem::is_empty(cwd.path())) << script << " wrote files";
    r = RunBinary({script, "--no-such-option"});
    EXPECT_NE(r.exit_code, 0) << script;
    EXPECT_THAT(r.err, HasSubstr("unknown")) << script;
  }
  EXPECT_GE(scripts, 14);
}

}  // namespace
}  // namespace keyflow::test
