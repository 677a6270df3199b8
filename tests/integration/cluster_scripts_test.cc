// scripts/start-cluster.sh and scripts/stop-cluster.sh against the real binaries: pid files and
// registration, refusal of a second cluster in the same run dir, a clear error for a port in
// use, --respawn, and idempotent stopping. The processes the scripts start are not children of
// the test; a guard runs stop-cluster.sh (and SIGKILLs what the pid files name) whatever happens.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Script(const std::string& name) {
  return std::string(KEYFLOW_SOURCE_DIR) + "/scripts/" + name;
}

// Running, and not a zombie waiting for init to reap it.
bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// The process's command line, arguments separated by spaces.
std::string CommandLineOf(pid_t pid) {
  std::string cmdline = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline;
}

pid_t PidFromFile(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

// Stops whatever a run dir's pid files name when the test ends, even after a failed assertion.
class RunDirGuard {
 public:
  explicit RunDirGuard(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  ~RunDirGuard() {
    RunCommand({Script("stop-cluster.sh"), "--run-dir", run_dir_, "--timeout", "5"},
               Duration::Seconds(30))
        .status()
        .IgnoreError();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(run_dir_, ec)) {
      if (e.path().extension() == ".pid") ::kill(PidFromFile(e.path().string()), SIGKILL);
    }
  }

 private:
  std::string run_dir_;
};

class ClusterScriptsTest : public ::testing::Test {
 protected:
  Result<CommandResult> StartCluster(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        Script("start-cluster.sh"), "--run-dir", run_dir_, "--build-dir",
        KEYFLOW_BINARY_DIR,         "--timeout", "30"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, Duration::Seconds(60));
  }
  Result<CommandResult> StopCluster() {
    return RunCommand({Script("stop-cluster.sh"), "--run-dir", run_dir_}, Duration::Seconds(60));
  }
  Result<CommandResult> StatusOf(const std::string& endpoint) {
    // As a user would after start-cluster.sh: export KEYFLOW_KEYS=RUN_DIR/keys.
    return RunCommand({"env", "KEYFLOW_KEYS=" + run_dir_ + "/keys", KeyflowBinary("keyflow"),
                       "status", "--json", "--coordinator", endpoint},
                      Duration::Seconds(15));
  }
  std::string PidFile(const std::string& name) const { return run_dir_ + "/" + name + ".pid"; }

  std::vector<std::string> Files(const std::string& dir) const {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      files.push_back(e.path().string().substr(dir.size() + 1));
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  TestDir dir_;
  std::string run_dir_ = dir_.path() + "/run";
  RunDirGuard guard_{run_dir_};
};

TEST_F(ClusterScriptsTest, StartRegistersEveryWorkerRefusesASecondClusterAndStopIsIdempotent) {
  auto started = StartCluster({"--workers", "2", "--port", "0"});
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  std::string endpoint = started->out.substr(0, started->out.find('\n'));
  EXPECT_THAT(endpoint, ::testing::StartsWith("tcp://127.0.0.1:"));
  EXPECT_EQ(ReadFileOrEmpty(run_dir_ + "/coordinator.endpoint"), endpoint + "\n");
  EXPECT_THAT(started->err, HasSubstr("2 worker(s) registered"));

  pid_t coordinator = PidFromFile(PidFile("coordinator"));
  pid_t w0 = PidFromFile(PidFile("worker-0"));
  pid_t w1 = PidFromFile(PidFile("worker-1"));
  for (pid_t p : {coordinator, w0, w1}) EXPECT_TRUE(ProcessAlive(p)) << p;
  auto st = StatusOf(endpoint);
  ASSERT_OK(st);
  nlohmann::json status = nlohmann::json::parse(st->out);
  std::map<int, int64_t> pid_by_slot;
  for (const auto& w : status["workers"]) pid_by_slot[w.value("slot", -1)] = w.value("pid", 0);
  EXPECT_EQ(pid_by_slot, (std::map<int, int64_t>{{0, w0}, {1, w1}}));
  EXPECT_TRUE(std::filesystem::exists(run_dir_ + "/worker-1.log"));

  auto second = StartCluster({"--workers", "1", "--port", "0"});
  ASSERT_OK(second);
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_THAT(second->err, HasSubstr("a cluster is already running from " + run_dir_));
  EXPECT_THAT(second->err, HasSubstr("scripts/stop-cluster.sh --run-dir " + run_dir_));
  EXPECT_TRUE(ProcessAlive(coordinator)) << "the refused start must not touch the running cluster";

  auto stopped = StopCluster();
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->exit_code, 0) << stopped->err;
  for (pid_t p : {coordinator, w0, w1}) EXPECT_FALSE(ProcessAlive(p)) << p;
  for (const char* name : {"coordinator", "worker-0", "worker-1"}) {
    EXPECT_FALSE(std::filesystem::exists(PidFile(name))) << name;
  }
  EXPECT_TRUE(std::filesystem::exists(run_dir_ + "/coordinator.log")) << "logs are kept";

  auto again = StopCluster();
  ASSERT_OK(again);
  EXPECT_EQ(again->exit_code, 0);
  EXPECT_THAT(again->err, HasSubstr("no cluster running from " + run_dir_));
}

TEST_F(ClusterScriptsTest, EachProcessWritesItsOwnRotatingLogAndItsOutputBesideIt) {
  auto started = StartCluster({"--workers", "1", "--port", "0", "--rest-port", "-1",
                               "--log-max-size", "2KiB", "--log-max-files", "2"});
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  std::string endpoint = started->out.substr(0, started->out.find('\n'));
  // The process's own lines go to its log file; what it prints to stdout/stderr to .out.
  EXPECT_THAT(ReadFileOrEmpty(run_dir_ + "/coordinator.out"),
              HasSubstr("keyflow-coordinator: listening on " + endpoint.substr(0, 6)));
  EXPECT_THAT(ReadFileOrEmpty(run_dir_ + "/coordinator.log"),
              HasSubstr("coordinator listening endpoint=tcp://"));
  EXPECT_THAT(ReadFileOrEmpty(run_dir_ + "/coordinator.log"),
              Not(HasSubstr("keyflow-coordinator: listening on")));
  // Each level change is a line in every process's log (~150 bytes): 40 of them rotate
  // 2 KiB files, and at most --log-max-files rotated files are kept.
  for (int i = 0; i < 40; ++i) {
    auto r = RunCommand({"env", "KEYFLOW_KEYS=" + run_dir_ + "/keys", KeyflowBinary("keyflow"),
                         "log-level", i % 2 == 0 ? "debug" : "info", "--coordinator", endpoint},
                        Duration::Seconds(15));
    ASSERT_OK(r);
    ASSERT_EQ(r->exit_code, 0) << r->err;
  }
  for (const char* name : {"coordinator", "worker-0"}) {
    const std::string base = run_dir_ + "/" + name;
    Status rotated = WaitUntil(
        [&] {
          return std::filesystem::exists(base + ".1.log") &&
                 std::filesystem::exists(base + ".2.log");
        },
        Duration::Seconds(20), std::string(name) + "'s log to rotate twice", Duration::Millis(50));
    EXPECT_OK(rotated) << rotated.message() << "\n" << Tail(base + ".log");
    EXPECT_FALSE(std::filesystem::exists(base + ".3.log")) << name;
    EXPECT_LE(std::filesystem::file_size(base + ".log"), 2048u) << name;
    EXPECT_LE(std::filesystem::file_size(base + ".1.log"), 2048u) << name;
    EXPECT_THAT(ReadFileOrEmpty(base + ".1.log"), HasSubstr("log level changed from ")) << name;
  }
}

TEST_F(ClusterScriptsTest, PortInUseFailsWithTheCoordinatorsErrorAndLeavesNothingRunning) {
  auto other = Cluster::Start(dir_.Subdir("other"), ClusterOptions{.workers = 0});
  ASSERT_OK(other);
  std::string port = (*other)->endpoint().substr((*other)->endpoint().rfind(':') + 1);

  auto started = StartCluster({"--workers", "1", "--port", port, "--rest-port", "0"});
  ASSERT_OK(started);
  EXPECT_EQ(started->exit_code, 1);
  EXPECT_THAT(started->err, HasSubstr("the coordinator exited (status 1) instead of starting"));
  EXPECT_THAT(started->err, HasSubstr("address tcp://127.0.0.1:" + port + " is already in use"));
  EXPECT_FALSE(std::filesystem::exists(PidFile("coordinator")));
  EXPECT_FALSE(std::filesystem::exists(PidFile("worker-0")));
}

TEST_F(ClusterScriptsTest, RespawnRestartsAKilledWorkerUnderItsSlot) {
  auto started = StartCluster({"--workers", "1", "--port", "0", "--respawn"});
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  std::string endpoint = started->out.substr(0, started->out.find('\n'));
  pid_t supervisor = PidFromFile(PidFile("worker-0.supervisor"));
  pid_t first = PidFromFile(PidFile("worker-0"));
  ASSERT_TRUE(ProcessAlive(supervisor));
  ASSERT_TRUE(ProcessAlive(first));

  ASSERT_EQ(::kill(first, SIGKILL), 0);
  pid_t second = 0;
  Status s = WaitUntil(
      [&] {
        second = PidFromFile(PidFile("worker-0"));
        if (second == first || !ProcessAlive(second)) return false;
        auto st = StatusOf(endpoint);
        if (!st.ok() || st->exit_code != 0) return false;
        nlohmann::json j = nlohmann::json::parse(st->out, nullptr, false);
        for (const auto& w : j["workers"]) {
          if (w.value("slot", -1) == 0 && w.value("pid", 0) == second) return true;
        }
        return false;
      },
      Duration::Seconds(20), "the respawned worker to register under slot 0",
      Duration::Millis(100));
  ASSERT_OK(s) << s.message() << "\n" << Tail(run_dir_ + "/worker-0.out");
  // The supervisor writes beside the worker's stdout+stderr, not into the log the worker rotates.
  EXPECT_THAT(ReadFileOrEmpty(run_dir_ + "/worker-0.out"),
              HasSubstr("supervisor: worker pid=" + std::to_string(first) +
                        " exited with status 137 (killed by signal 9 (SIGKILL"));

  auto stopped = StopCluster();
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->exit_code, 0) << stopped->err;
  EXPECT_FALSE(ProcessAlive(supervisor));
  EXPECT_FALSE(ProcessAlive(second)) << "stopping the supervisor first: no respawn on stop";
  EXPECT_FALSE(std::filesystem::exists(PidFile("worker-0.supervisor")));
}

// Secure by default: the first start creates RUN_DIR/keys (private modes), every process gets
// --keys, the CLI is told where the keys are; a later start with more workers adds their keys
// and keeps the others.
TEST_F(ClusterScriptsTest, StartCreatesAKeySetOnFirstUseAndAddsWorkerKeysLater) {
  auto started = StartCluster({"--workers", "1", "--port", "0"});
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  const std::string keys = run_dir_ + "/keys";
  EXPECT_EQ(Mode(keys), 0700u);
  EXPECT_EQ(Mode(keys + "/coordinator.key"), 0600u);
  EXPECT_EQ(Mode(keys + "/workers/worker-0.key"), 0600u);
  EXPECT_EQ(Mode(keys + "/clients/operator.key"), 0600u);
  EXPECT_FALSE(std::filesystem::exists(keys + "/workers/worker-1.key"));
  const std::string rest_url = ReadFileOrEmpty(run_dir_ + "/rest.url");
  ASSERT_THAT(rest_url, ::testing::StartsWith("https://127.0.0.1:"));
  std::string endpoint = ReadFileOrEmpty(run_dir_ + "/coordinator.endpoint");
  endpoint = endpoint.substr(0, endpoint.find('\n'));
  ASSERT_THAT(endpoint, ::testing::StartsWith("tcp://127.0.0.1:"));
  EXPECT_EQ(ReadFileOrEmpty(run_dir_ + "/cluster.env"),
            "export KEYFLOW_KEYS=" + keys + "\nexport KEYFLOW_COORDINATOR=" + endpoint +
                "\nexport KEYFLOW_REST_URL=" + rest_url + "export KEYFLOW_REST_CACERT=" + keys +
                "/rest/tls.crt KEYFLOW_REST_TOKEN_FILE=" + keys + "/viewers/viewer.token\n");
  // Sourcing cluster.env is all the CLI needs, though the coordinator took port 0.
  auto status =
      RunCommand({"env", "-u", "KEYFLOW_KEYS", "bash", "-c", "source \"$1\" && exec \"$2\" status",
                  "bash", run_dir_ + "/cluster.env", KeyflowBinary("keyflow")},
                 Duration::Seconds(30));
  ASSERT_OK(status);
  EXPECT_EQ(status->exit_code, 0) << status->err;
  EXPECT_THAT(status->out, HasSubstr("workers: 1"));
  EXPECT_EQ(Mode(keys + "/viewers"), 0700u);
  EXPECT_EQ(Mode(keys + "/viewers/viewer.token"), 0600u);
  EXPECT_THAT(started->err, HasSubstr("export KEYFLOW_KEYS=" + keys));
  EXPECT_THAT(CommandLineOf(PidFromFile(PidFile("coordinator"))),
              HasSubstr("--host 127.0.0.1 --port 0 --checkpoint-dir " + run_dir_ +
                        "/checkpoints --keys " + keys));
  EXPECT_THAT(CommandLineOf(PidFromFile(PidFile("worker-0"))),
              HasSubstr("--keys " + keys + " --key-name worker-0"));
  const std::string coordinator_key = ReadFileOrEmpty(keys + "/coordinator.key");
  ASSERT_EQ(StopCluster()->exit_code, 0);

  auto again = StartCluster({"--workers", "3", "--port", "0"});
  ASSERT_OK(again);
  ASSERT_EQ(again->exit_code, 0) << again->err;
  EXPECT_THAT(again->err, HasSubstr("adding the key of worker-1 to " + keys));
  EXPECT_THAT(again->err, HasSubstr("adding the key of worker-2 to " + keys));
  EXPECT_EQ(ReadFileOrEmpty(keys + "/coordinator.key"), coordinator_key) << "never re-created";
  EXPECT_EQ(Mode(keys + "/workers/worker-2.key"), 0600u);
  EXPECT_THAT(again->err, HasSubstr("3 worker(s) registered"));
}

TEST_F(ClusterScriptsTest, InsecureIsExplicitAndWarnsAtEveryStart) {
  auto started = StartCluster({"--workers", "1", "--port", "0", "--insecure"});
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  EXPECT_THAT(started->err, HasSubstr("WARNING: --insecure: no encryption and no authentication"));
  EXPECT_FALSE(std::filesystem::exists(run_dir_ + "/keys"));
  const std::string rest_url = ReadFileOrEmpty(run_dir_ + "/rest.url");
  ASSERT_THAT(rest_url, ::testing::StartsWith("http://127.0.0.1:"));
  EXPECT_EQ(ReadFileOrEmpty(run_dir_ + "/cluster.env"),
            "unset KEYFLOW_KEYS KEYFLOW_REST_CACERT KEYFLOW_REST_TOKEN_FILE  # an --insecure "
            "cluster\nexport KEYFLOW_COORDINATOR=" +
                ReadFileOrEmpty(run_dir_ + "/coordinator.endpoint") +
                "export KEYFLOW_REST_URL=" + rest_url);
  EXPECT_FALSE(std::filesystem::exists(run_dir_ + "/keys/viewers")) << "no tokens";
  Status s = WaitUntil(
      [&] {
        return ReadFileOrEmpty(run_dir_ + "/worker-0.log").find("runs with --insecure") !=
               std::string::npos;
      },
      Duration::Seconds(10), "the worker's warning");
  EXPECT_OK(s) << Tail(run_dir_ + "/worker-0.log");
  EXPECT_THAT(ReadFileOrEmpty(run_dir_ + "/coordinator.log"),
              HasSubstr("keyflow-coordinator runs with --insecure"));

  auto both = StartCluster({"--workers", "1", "--insecure", "--keys", dir_.path() + "/k"});
  ASSERT_OK(both);
  EXPECT_EQ(both->exit_code, 1);
  EXPECT_THAT(both->err, HasSubstr("--keys and --insecure exclude each other"));
}

// --hosts: worker i's host gets only its own secret key and the coordinator's public key, over
// ssh (a fake ssh that runs the command here: the test's "hosts" share this file system), in a
// 0700 directory of its own, and the workers register with them.
TEST_F(ClusterScriptsTest, HostsGetOnlyTheirOwnWorkerKeyOverSsh) {
  const std::string bin = dir_.Subdir("fake-bin");
  {
    std::ofstream ssh(bin + "/ssh");
    ssh << "#!/usr/bin/env bash\n"
           "# fake ssh [-n] [-o OPT]... HOST CMD: runs CMD here, logs HOST\n"
           "while [ $# -gt 0 ]; do case \"$1\" in -n) shift ;; -o) shift 2 ;; *) break ;; esac; "
           "done\n"
           "echo \"$1\" >>"
        << dir_.path()
        << "/ssh-hosts.log\n"
           "shift\n"
           "exec bash -c \"$*\"\n";
  }
  std::filesystem::permissions(bin + "/ssh", std::filesystem::perms::owner_all);
  const std::string hosts = dir_.path() + "/hosts";
  std::ofstream(hosts) << "host-a\nhost-b  # the second host\n";
  std::vector<std::string> argv = {"env",
                                   "PATH=" + bin + ":" + std::string(std::getenv("PATH")),
                                   Script("start-cluster.sh"),
                                   "--run-dir",
                                   run_dir_,
                                   "--build-dir",
                                   KEYFLOW_BINARY_DIR,
                                   "--timeout",
                                   "30",
                                   "--hosts",
                                   hosts,
                                   "--port",
                                   "0",
                                   "--coordinator-host",
                                   "127.0.0.1",
                                   "--data-host",
                                   "127.0.0.1"};
  auto started = RunCommand(argv, Duration::Seconds(60));
  ASSERT_OK(started);
  ASSERT_EQ(started->exit_code, 0) << started->err;
  EXPECT_THAT(started->err, HasSubstr("2 worker(s) registered"));
  EXPECT_THAT(ReadFileOrEmpty(dir_.path() + "/ssh-hosts.log"), HasSubstr("host-b"));
  for (int i : {0, 1}) {
    const std::string mine = run_dir_ + "/worker-" + std::to_string(i) + "-keys";
    EXPECT_EQ(Files(mine),
              (std::vector<std::string>{"coordinator.pub", "workers",
                                        "workers/worker-" + std::to_string(i) + ".key"}));
    EXPECT_EQ(Mode(mine), 0700u);
    EXPECT_EQ(Mode(mine + "/workers"), 0700u);
    EXPECT_EQ(Mode(mine + "/coordinator.pub"), 0644u);
    EXPECT_EQ(Mode(mine + "/workers/worker-" + std::to_string(i) + ".key"), 0600u);
    EXPECT_EQ(ReadFileOrEmpty(mine + "/workers/worker-" + std::to_string(i) + ".key"),
              ReadFileOrEmpty(run_dir_ + "/keys/workers/worker-" + std::to_string(i) + ".key"));
    EXPECT_EQ(ReadFileOrEmpty(mine + "/coordinator.pub"),
              ReadFileOrEmpty(run_dir_ + "/keys/coordinator.pub"));
    EXPECT_THAT(CommandLineOf(PidFromFile(PidFile("worker-" + std::to_string(i)))),
                HasSubstr("--keys " + mine + " --key-name worker-" + std::to_string(i)));
  }
  auto stopped = RunCommand({"env", "PATH=" + bin + ":" + std::string(std::getenv("PATH")),
                             Script("stop-cluster.sh"), "--run-dir", run_dir_},
                            Duration::Seconds(60));
  ASSERT_OK(stopped);
  EXPECT_EQ(stopped->exit_code, 0) << stopped->err;
}

}  // namespace
}  // namespace keyflow::test
