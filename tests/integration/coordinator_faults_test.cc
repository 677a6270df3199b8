// A coordinator that stalls or dies at the worst moments, with real processes: stopped
// (SIGSTOP) for longer than the heartbeat timeout while a job runs — the workers give up on it,
// cancel their subtasks and register again — and killed at each step of a rescale. Every run must
// end FINISHED with exactly the output of a failure-free run (job_data.h computes it from the
// generator's events, independently of the runtime).
//
// Every wait polls `keyflow status --json` or a log with a deadline; nothing sleeps to
// synchronise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kCount = 20, kTimeoutMs = 2'000;
// About 6 s of input at 4000 events/s.
constexpr char kInput[] = "gen:events=24000,keys=600,splits=3,seed=11,skew=1,rate=4000";
constexpr Duration kJobTimeout = Duration::Seconds(90);

class CoordinatorFaultsTest : public ::testing::Test {
 protected:
  // `workers` workers; the coordinator with a 1 s heartbeat timeout and `env` (NAME=VALUE) in
  // its environment.
  void StartCluster(int workers, std::vector<std::string> env = {}) {
    ClusterOptions o;
    o.workers = workers;
    if (!env.empty()) {
      o.coordinator_prefix = {"env"};
      o.coordinator_prefix.insert(o.coordinator_prefix.end(), env.begin(), env.end());
    }
    auto c = Cluster::Start(dir_.Subdir("cluster"), o);
    ASSERT_OK(c);
    cluster_ = std::move(c).value();
  }

  std::vector<std::string> RunArgs(int parallelism) const {
    return CountWindowRunArgs(
        kInput, Output(), kCount, kTimeoutMs,
        {"--parallelism", std::to_string(parallelism), "--checkpoint-interval", "300ms"});
  }
  std::string Output() const { return dir_.path() + "/output"; }

  Result<nlohmann::json> WaitForJob(const std::function<bool(const nlohmann::json&)>& pred,
                                    Duration timeout, const std::string& what) {
    KF_ASSIGN_OR_RETURN(nlohmann::json st, cluster_->WaitForStatus(
                                               [&](const nlohmann::json& s) {
                                                 return s["job"].is_object() &&
                                                        (pred(s["job"]) || Ended(s["job"]));
                                               },
                                               timeout, what));
    if (!pred(st["job"])) {
      return FailedPrecondition("the job ended while waiting for " + what + ": " +
                                st["job"].dump() + "\n" + cluster_->LogExcerpts());
    }
    return st["job"];
  }
  static bool Ended(const nlohmann::json& job) {
    const std::string s = job.value("state", "");
    return s == "FINISHED" || s == "FAILED" || s == "CANCELED";
  }
  Result<nlohmann::json> WaitForCheckpoints(int64_t n) {
    return WaitForJob(
        [n](const nlohmann::json& j) {
          return j.value("state", "") == "RUNNING" &&
                 j["checkpoints"].value("latest_completed", int64_t{0}) >= n;
        },
        Duration::Seconds(30), std::to_string(n) + " completed checkpoints");
  }
  // The job FINISHED with exactly the output of a failure-free run; returns its status.
  nlohmann::json ExpectExactEnd() {
    auto end = WaitForJob(Ended, kJobTimeout, "the end of the job");
    EXPECT_OK(end);
    if (!end.ok()) return {};
    EXPECT_EQ(end->value("state", ""), "FINISHED") << end->dump() << cluster_->LogExcerpts();
    ExpectCountWindowOutput(Output(), ReferenceCountWindowRun(kInput, kCount, kTimeoutMs),
                            "output vs a failure-free run");
    return *end;
  }

  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
};

// Stopped for longer than the 1 s heartbeat timeout, the coordinator comes back to workers that
// cancelled their subtasks and registered again from the same connections. It must fail the
// attempt over at once; before, it kept the attempt, every checkpoint was declined ("no subtask
// of this attempt runs on this worker") and the job FAILED with 0 restarts.
TEST_F(CoordinatorFaultsTest, ACoordinatorStoppedForLongerThanTheHeartbeatTimeoutRestartsTheJob) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  auto job_id = SubmitJob(*cluster_, RunArgs(3));
  ASSERT_OK(job_id);
  ASSERT_OK(WaitForCheckpoints(2));

  const pid_t coordinator = cluster_->coordinator().pid();
  ASSERT_EQ(::kill(coordinator, SIGSTOP), 0);
  // Until every worker gave up on it (at least the heartbeat timeout: about 1.5 s in all).
  Status gave_up = WaitUntil(
      [&] {
        for (int slot = 0; slot < 3; ++slot) {
          if (ReadFileOrEmpty(cluster_->WorkerLog(slot)).find("coordinator silent for") ==
              std::string::npos) {
            return false;
          }
        }
        return true;
      },
      Duration::Seconds(20), "every worker giving up on the stopped coordinator");
  ASSERT_EQ(::kill(coordinator, SIGCONT), 0);
  ASSERT_OK(gave_up);

  nlohmann::json end = ExpectExactEnd();
  EXPECT_GE(end.value("restarts", 0), 1) << end.dump();
  EXPECT_EQ(end.value("job_id", ""), *job_id);
}

// `keyflow rescale 3` of a heap job (through a savepoint) with the coordinator killed at each
// step (KEYFLOW_CRASH_AT, coordinator/README.md "Crash points"), then started again on the same
// checkpoint directory. Before the fix, a kill after the new attempt was deployed restored the
// checkpoint taken before the rescale, the sink refused to emit again what the new attempt had
// committed, and the job restarted forever.
class RescaleCrashTest : public CoordinatorFaultsTest,
                         public ::testing::WithParamInterface<const char*> {};

TEST_P(RescaleCrashTest, CoordinatorKilledAtThisStepOfARescaleResumesExactly) {
  const std::string step = GetParam();
  ASSERT_NO_FATAL_FAILURE(StartCluster(3, {"KEYFLOW_CRASH_AT=" + step}));
  auto job_id = SubmitJob(*cluster_, RunArgs(2));
  ASSERT_OK(job_id);
  ASSERT_OK(WaitForCheckpoints(2));

  auto rescale = cluster_->StartCli({"rescale", "3", "--via", "savepoint", "--timeout", "30s"},
                                    dir_.path() + "/rescale.out");
  ASSERT_OK(rescale);
  Status died = WaitUntil([&] { return !cluster_->coordinator().Running(); }, Duration::Seconds(30),
                          "the coordinator to die at " + step);
  ASSERT_OK(died) << cluster_->LogExcerpts();
  EXPECT_THAT(ReadFileOrEmpty(cluster_->CoordinatorLog()),
              HasSubstr("crash point " + step + " reached"));
  ASSERT_OK(cluster_->RestartCoordinator());

  // The waiting CLI learns that the coordinator restarted and exits.
  auto cli = rescale->Wait(Duration::Seconds(30));
  EXPECT_OK(cli);
  nlohmann::json end = ExpectExactEnd();
  EXPECT_EQ(end.value("job_id", ""), *job_id) << "the same job resumes";
  EXPECT_LE(end.value("restarts", 0), 3) << "no restart loop: " << end.dump();
  const std::string log = ReadFileOrEmpty(cluster_->CoordinatorLog());
  const std::string savepoint = cluster_->CheckpointDir() + "/" + *job_id + "/savepoint-";
  if (step == "rescale-snapshot-completed") {
    // Not recorded yet: the resumed job restored the checkpoint before the rescale.
    EXPECT_THAT(log, ::testing::Not(HasSubstr("restore=" + savepoint)));
  } else {
    EXPECT_THAT(log, HasSubstr("restore=" + savepoint));
  }
}

INSTANTIATE_TEST_SUITE_P(EachStep, RescaleCrashTest,
                         ::testing::Values("rescale-snapshot-completed",
                                           "rescale-savepoint-recorded", "rescale-deployed"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name;
                           for (const char* c = info.param; *c != '\0'; ++c) {
                             if (*c != '-') name += *c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace keyflow::test
