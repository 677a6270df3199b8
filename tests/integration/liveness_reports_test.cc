// Process-level liveness reports (issue 9): a second worker for a taken slot is refused and
// exits; a SIGKILLed worker under the supervisor is reported as killed by signal 9; a
// coordinator SIGKILLed while a rescale waits is restarted and the waiting CLI learns within
// seconds that the rescale was aborted. Issue 28: a worker crashing in user code under a
// supervisor whose restart delay is longer than `keyflow run --wait` waits is still named in the
// summary (the supervisor reports the exit at once); a worker the kernel's OOM killer ends under
// a cgroup memory limit is reported "out of memory" with the limit. Waits poll status or the
// process with deadlines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include "common/file_io.h"
#include "tests/integration/cluster.h"
#include "tests/integration/memory_cgroup.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

// keyflow-worker for `slot` of cluster `c` on loopback, with the cluster's keys.
std::vector<std::string> WorkerCommand(const Cluster& c, int slot) {
  std::vector<std::string> argv = {KeyflowBinary("keyflow-worker"),
                                   "--coordinator",
                                   c.endpoint(),
                                   "--slot",
                                   std::to_string(slot),
                                   "--data-host",
                                   "127.0.0.1",
                                   "--bind-host",
                                   "127.0.0.1"};
  for (const std::string& arg : c.SecurityArgs("worker-" + std::to_string(slot))) {
    argv.push_back(arg);
  }
  return argv;
}

using ::testing::HasSubstr;

constexpr Duration kWait = Duration::Seconds(30);
// Runs for about a minute: long enough for every test to act while it runs.
constexpr char kSlowInput[] = "gen:events=2000000,keys=1000,splits=3,seed=5,rate=30000";

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

pid_t PidFromFile(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

// A worker for `slot` of `c` under scripts/lib/worker-supervisor.sh with `supervisor_args`
// (e.g. {"--restart-delay", "8"}); its log (and the supervisor's lines) in DIR/worker-SLOT.log.
// With `cgroup_procs`, the supervisor first moves itself into that cgroup (its cgroup.procs
// file), so every worker it starts runs there. The supervised worker is not the test's child:
// the destructor SIGKILLs the supervisor, then the worker by its pid file.
class SupervisedWorker {
 public:
  SupervisedWorker(const Cluster& c, int slot, const std::string& dir,
                   const std::vector<std::string>& supervisor_args,
                   const std::string& cgroup_procs = "")
      : pid_file_(dir + "/worker-" + std::to_string(slot) + ".pid"),
        log_(dir + "/worker-" + std::to_string(slot) + ".log") {
    std::vector<std::string> argv;
    if (!cgroup_procs.empty()) {
      argv = {"sh", "-c", "echo $$ > \"$0\" && shift && exec \"$@\"", cgroup_procs, "sh"};
    }
    argv.insert(argv.end(),
                {"bash", std::string(KEYFLOW_SOURCE_DIR) + "/scripts/lib/worker-supervisor.sh"});
    argv.insert(argv.end(), supervisor_args.begin(), supervisor_args.end());
    argv.insert(argv.end(), {"--pid-file", pid_file_, "--log", log_, "--"});
    for (const std::string& arg : WorkerCommand(c, slot)) argv.push_back(arg);
    argv.insert(argv.end(), {"--cache-dir", dir + "/worker-" + std::to_string(slot) + "-cache"});
    auto started = ChildProcess::Start(argv, dir + "/supervisor-" + std::to_string(slot) + ".log");
    EXPECT_OK(started);
    if (started.ok()) supervisor_.emplace(std::move(started).value());
  }
  ~SupervisedWorker() {
    if (supervisor_) supervisor_->Kill();
    if (pid_t pid = PidFromFile(pid_file_); pid > 0) ::kill(pid, SIGKILL);
  }
  bool started() const { return supervisor_.has_value(); }
  pid_t worker_pid() const { return PidFromFile(pid_file_); }
  const std::string& log() const { return log_; }

 private:
  std::string pid_file_;
  std::string log_;
  std::optional<ChildProcess> supervisor_;
};

TEST(LivenessReportsTest, SecondWorkerForATakenSlotIsRefusedAndExitsWhileTheFirstKeepsIt) {
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 2});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  pid_t holder = c.worker(1)->pid();
  // Worker ids follow the order of registration, which is not the order of the slots.
  auto before = c.StatusJson();
  ASSERT_OK(before);
  ASSERT_EQ((*before)["workers"].size(), 2u);
  ASSERT_EQ((*before)["workers"][1]["pid"], holder);
  const int holder_id = (*before)["workers"][1]["worker"].get<int>();
  std::vector<std::string> argv = WorkerCommand(c, 1);
  auto dup = ChildProcess::Start(argv, dir.path() + "/duplicate.log");
  ASSERT_OK(dup);
  auto rc = dup->Wait(Duration::Seconds(15));
  ASSERT_OK(rc) << "the refused worker must give up\n" << c.LogExcerpts();
  EXPECT_EQ(*rc, 1);
  std::string log = ReadFileOrEmpty(dir.path() + "/duplicate.log");
  EXPECT_THAT(log, HasSubstr("the coordinator refused this worker: slot 1 is already held by "
                             "worker " +
                             std::to_string(holder_id) + " (slot 1, host "));
  EXPECT_THAT(log, HasSubstr("stop that worker first, or start this one with another --slot"));
  auto st = c.StatusJson();
  ASSERT_OK(st);
  ASSERT_EQ((*st)["workers"].size(), 2u);
  EXPECT_EQ((*st)["workers"][1]["pid"], holder);
  EXPECT_EQ((*st)["workers"][1]["worker"], holder_id) << "the holder was never replaced";
  EXPECT_EQ(CountOf(ReadFileOrEmpty(c.CoordinatorLog()), "worker registered"), 2)
      << "no flapping registrations";
}

TEST(LivenessReportsTest, SigkilledWorkerUnderTheSupervisorIsReportedKilledBySignal9) {
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 1});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  const std::string pid_file = dir.path() + "/worker-1.pid";
  std::vector<std::string> argv = {
      "bash",       std::string(KEYFLOW_SOURCE_DIR) + "/scripts/lib/worker-supervisor.sh",
      "--pid-file", pid_file,
      "--log",      dir.path() + "/worker-1.log",
      "--"};
  for (const std::string& arg : WorkerCommand(c, 1)) argv.push_back(arg);
  auto supervisor = ChildProcess::Start(argv, dir.path() + "/supervisor.log");
  ASSERT_OK(supervisor);
  struct Guard {  // the supervised worker is not our child: kill it by its pid file
    std::string pid_file;
    ChildProcess* supervisor;
    ~Guard() {
      supervisor->Kill();
      ::kill(PidFromFile(pid_file), SIGKILL);
    }
  } guard{pid_file, &*supervisor};
  ASSERT_OK(c.WaitForWorkers(2, kWait)) << c.LogExcerpts();
  auto run = c.Cli({"run", "--job", "count-window", "--input", kSlowInput, "--parallelism", "2",
                    "--checkpoint-interval", "300ms"});
  ASSERT_TRUE(run.ok() && run->exit_code == 0) << (run.ok() ? run->err : run.status().ToString());
  ASSERT_TRUE(c.WaitForStatus(
                   [](const nlohmann::json& s) { return s["job"].value("state", "") == "RUNNING"; },
                   kWait, "the job to run")
                  .ok());
  pid_t first = PidFromFile(pid_file);
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  auto st = c.WaitForStatus(
      [&](const nlohmann::json& s) {
        return s["job"]
                   .value("last_failure", std::string())
                   .find(
                       "its process ended: killed by "
                       "signal 9 (SIGKILL") != std::string::npos;
      },
      kWait, "last_failure to say how the worker ended");
  ASSERT_OK(st) << st.status().ToString() << "\n" << c.LogExcerpts();
  EXPECT_THAT((*st)["job"].value("last_failure", std::string()),
              HasSubstr("pid " + std::to_string(first) + ") was lost"));
  EXPECT_THAT((*st)["job"].value("last_failure", std::string()),
              HasSubstr("also what the kernel's OOM killer sends; check dmesg"));
  EXPECT_THAT(ReadFileOrEmpty(c.CoordinatorLog()),
              HasSubstr("pid " + std::to_string(first) + ") ended: killed by signal 9 (SIGKILL"));
}

TEST(LivenessReportsTest, CoordinatorKilledDuringARescaleTellsTheWaitingCliWithinSeconds) {
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 2});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  auto run = c.Cli({"run", "--job", "count-window", "--input", kSlowInput, "--parallelism", "2",
                    "--checkpoint-interval", "300ms"});
  ASSERT_TRUE(run.ok() && run->exit_code == 0) << (run.ok() ? run->err : run.status().ToString());
  ASSERT_TRUE(c.WaitForStatus(
                   [](const nlohmann::json& s) { return s["job"].value("state", "") == "RUNNING"; },
                   kWait, "the job to run")
                  .ok());
  // Only 2 workers: the rescale to 3 waits for a third one while the coordinator dies.
  auto cli = c.StartCli({"rescale", "3", "--wait-for-workers", "5min"}, dir.path() + "/rescale");
  ASSERT_OK(cli);
  ASSERT_TRUE(
      c.WaitForStatus(
           [](const nlohmann::json& s) { return s["job"].contains("commands_in_progress"); }, kWait,
           "the rescale to be accepted")
          .ok());
  ASSERT_OK(c.KillCoordinator());
  ASSERT_OK(c.RestartCoordinator()) << c.LogExcerpts();
  int64_t restarted_ms = MonotonicMillis();
  auto rc = cli->Wait(Duration::Seconds(15));
  ASSERT_OK(rc) << "the CLI still waits\n" << c.LogExcerpts();
  int64_t told_after_ms = MonotonicMillis() - restarted_ms;
  EXPECT_EQ(*rc, 1);
  EXPECT_LT(told_after_ms, 5000);
  EXPECT_THAT(ReadFileOrEmpty(dir.path() + "/rescale.err"),
              HasSubstr("the coordinator restarted while the rescale to 3 was in progress; the "
                        "rescale to 3 was aborted by a coordinator restart — the job runs at "
                        "parallelism 2; run `keyflow rescale 3` again"));
  auto status = c.Cli({"status"});
  ASSERT_OK(status);
  EXPECT_THAT(status->out, HasSubstr("last command: rescale to 3 — aborted by a coordinator "
                                     "restart"));
  std::cerr << "[ keyflow ] the CLI learned of the restart " << told_after_ms
            << " ms after the coordinator was back\n";
}

#ifdef KEYFLOW_FAULTY_JOBS_LIBRARY
TEST(LivenessReportsTest, CrashUnderASupervisorThatRestartsLaterThanWaitWaitsIsInTheSummary) {
  // The supervisor restarts the crashed worker after 8 s; `keyflow run --wait` waits 4 s after
  // the job FAILED for how the process ended. The supervisor's immediate report must make it.
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 0});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  SupervisedWorker worker(c, 0, dir.path(), {"--restart-delay", "8"});
  ASSERT_TRUE(worker.started());
  ASSERT_OK(c.WaitForWorkers(1, kWait)) << ReadFileOrEmpty(worker.log());
  const pid_t crashed = worker.worker_pid();
  const std::string input = dir.path() + "/events.jsonl";
  {
    std::ofstream f(input);
    for (int i = 0; i < 40; ++i) f << "{\"uid\":\"u" << i % 8 << "\",\"ts\":" << 1000 + i << "}\n";
  }
  const std::string cli_log = dir.path() + "/run-wait.out";
  auto cli = c.StartCli(
      {"run", "--job-library", KEYFLOW_FAULTY_JOBS_LIBRARY, "--job", "crashes-after-n", "--param",
       "n=2", "--input", input, "--parallelism", "1", "--restart-strategy", "none", "--wait"},
      cli_log);
  ASSERT_OK(cli);
  auto code = cli->Wait(Duration::Seconds(60));
  ASSERT_OK(code) << code.status().ToString() << c.LogExcerpts();
  const std::string summary = ReadFileOrEmpty(cli_log);
  EXPECT_EQ(*code, 1) << summary << ReadFileOrEmpty(cli_log + ".err");
  // The report usually declares the worker lost ("was lost: its process ended: ..."); on a
  // loaded machine the heartbeat timeout may come first ("was lost: no heartbeat ...; its
  // process ended: ..."). Either way the summary names the crash.
  EXPECT_THAT(summary, HasSubstr("pid " + std::to_string(crashed) + ") was lost: "));
  EXPECT_THAT(summary, HasSubstr("its process ended: died of SIGSEGV while running "
                                 "ProcessElement of job 'crashes-after-n' (libfaulty-jobs.so)"))
      << ReadFileOrEmpty(cli_log + ".err") << "\n"
      << ReadFileOrEmpty(worker.log());
  EXPECT_EQ(CountOf(summary, "its process ended"), 1) << summary;
  // It came from the report, not from the restarted worker: that one is still to come.
  EXPECT_EQ(worker.worker_pid(), crashed) << ReadFileOrEmpty(worker.log());
  EXPECT_THAT(ReadFileOrEmpty(worker.log()), HasSubstr("restarting in 8s"));
}
#endif  // KEYFLOW_FAULTY_JOBS_LIBRARY

TEST(LivenessReportsTest, WorkerEndedByTheOomKillerIsReportedOutOfMemoryWithTheLimit) {
  const std::string name = "kftest-" + std::to_string(::getpid()) + "-oom";
  constexpr int64_t kLimit = int64_t{96} << 20;
  auto cgroup = MemoryCgroup::Create(name, kLimit);
  if (!cgroup.ok()) GTEST_SKIP() << cgroup.status().message();
  TestDir dir;
  auto cluster = Cluster::Start(dir.path(), ClusterOptions{.workers = 0});
  ASSERT_OK(cluster);
  Cluster& c = **cluster;
  // A long restart delay: one OOM kill, not a loop of them, while the test looks.
  SupervisedWorker worker(c, 0, dir.path(), {"--restart-delay", "60"}, (*cgroup)->procs_file());
  ASSERT_TRUE(worker.started());
  ASSERT_OK(c.WaitForWorkers(1, kWait)) << ReadFileOrEmpty(worker.log());
  const pid_t victim = worker.worker_pid();
  // One key per event, each with its window state and timer on the heap: far beyond 96 MiB.
  const std::string cli_log = dir.path() + "/run-wait.out";
  auto cli = c.StartCli({"run", "--job", "count-window", "--param", "time=event", "--input",
                         "gen:events=20000000,keys=20000000,splits=1,seed=7", "--parallelism", "1",
                         "--restart-strategy", "none", "--wait"},
                        cli_log);
  ASSERT_OK(cli);
  // cgroup v1 always knows the peak (memory.max_usage_in_bytes), v2 since Linux 5.19.
  const std::string phrase =
      "its process ended: out of memory: the kernel's OOM killer ended it "
      "(memory limit 96 MiB of cgroup " +
      (*cgroup)->name() + ((*cgroup)->version() == 1 ? ", peak " : "");
  auto st = c.WaitForStatus(
      [](const nlohmann::json& s) {
        return s["job"].is_object() && s["job"].value("state", "") == "FAILED";
      },
      Duration::Seconds(45), "the job to fail");
  ASSERT_OK(st) << st.status().ToString() << ReadFileOrEmpty(worker.log());
  const std::string failure = (*st)["job"].value("failure", std::string());
  EXPECT_THAT(failure, HasSubstr("pid " + std::to_string(victim) + ") was lost: "));
  EXPECT_THAT(failure, HasSubstr(phrase)) << ReadFileOrEmpty(worker.log());
  EXPECT_THAT((*st)["job"].value("last_failure", std::string()), HasSubstr(phrase));
  auto text = c.Cli({"status"});
  ASSERT_OK(text);
  EXPECT_THAT(text->out, HasSubstr(phrase));
  auto port = c.RestPort();
  ASSERT_OK(port);
  httplib::Client rest("127.0.0.1", *port);
  rest.set_connection_timeout(5, 0);
  rest.set_read_timeout(10, 0);
  std::string rest_failure;
  Status rest_seen = WaitUntil(
      [&] {
        auto r = rest.Get("/api/v1/job", {{"Authorization", "Bearer " + c.ViewerToken()}});
        if (!r || r->status != 200) return false;
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        rest_failure = j.is_object() ? j.value("failure", std::string()) : std::string();
        return rest_failure.find(phrase) != std::string::npos;
      },
      Duration::Seconds(10), "GET /api/v1/job to name the OOM kill");
  EXPECT_OK(rest_seen) << rest_seen.message() << "; last failure: " << rest_failure;
  auto code = cli->Wait(Duration::Seconds(20));
  ASSERT_OK(code);
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(ReadFileOrEmpty(cli_log), HasSubstr(phrase)) << ReadFileOrEmpty(cli_log + ".err");
  EXPECT_THAT(ReadFileOrEmpty(worker.log()),
              HasSubstr("exited with status 137 (out of memory: the kernel's OOM killer ended it "
                        "(memory limit 96 MiB of cgroup " +
                        (*cgroup)->name()));
}

TEST(LivenessReportsTest, BadPreviousPidIsAUsageError) {
  auto r =
      RunCommand({KeyflowBinary("keyflow-worker"), "--previous-pid", "-5"}, Duration::Seconds(10));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--previous-pid must be a process id (> 0), not -5"));
}

TEST(LivenessReportsTest, ReportExitNeedsAPidAndSaysWhenTheCoordinatorDoesNotTakeIt) {
  auto usage = RunCommand({KeyflowBinary("keyflow-worker"), "--report-exit", "exit code 3"},
                          Duration::Seconds(10));
  ASSERT_OK(usage);
  EXPECT_EQ(usage->exit_code, 2);
  EXPECT_THAT(usage->err, HasSubstr("--report-exit needs how the process ended (a phrase) and "
                                    "--previous-pid, its pid"));
  // Nobody listens on port 1: the report gives up after its timeout, exit 1, one sentence.
  auto unreachable =
      RunCommand({KeyflowBinary("keyflow-worker"), "--report-exit", "exit code 3", "--previous-pid",
                  "42", "--coordinator", "tcp://127.0.0.1:1", "--insecure"},
                 Duration::Seconds(20));
  ASSERT_OK(unreachable);
  EXPECT_EQ(unreachable->exit_code, 1);
  EXPECT_THAT(unreachable->err,
              HasSubstr("keyflow-worker --report-exit: the coordinator at tcp://127.0.0.1:1 did "
                        "not take the exit report within 3000 ms (the restarted worker reports "
                        "the exit when it registers)"));
}

}  // namespace
}  // namespace keyflow::test
