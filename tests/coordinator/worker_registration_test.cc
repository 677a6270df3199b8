// Worker registration for a slot that is taken (a second live worker is refused, a respawned
// one takes over at once) and how a lost worker's process ended (supervisor reports — at once
// with WorkerExitReport and again when the restarted worker registers —, a worker that says why
// it exits), driven message by message through the Coordinator.
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

constexpr char kSigkill[] =
    "killed by signal 9 (SIGKILL — also what the kernel's OOM killer sends; check dmesg and the "
    "worker log)";

class WorkerRegistrationTest : public CoordinatorHarness {
 protected:
  // Two workers (pids 1000, 1001) run a 2-subtask job.
  void RunJob() {
    RunOnWorkers(Spec(2, 500));
    Advance(100);
  }
  RegisterWorker Respawned(int32_t slot, int64_t previous_pid) {
    RegisterWorker r = Registration(slot, 2000 + slot);
    r.previous_pid = previous_pid;
    r.previous_exit = kSigkill;
    return r;
  }
};

TEST_F(WorkerRegistrationTest, SecondWorkerForASlotHeldByALiveOneIsRefused) {
  RunJob();
  Register("dup", Registration(1, 4242));
  EXPECT_EQ(Refusal("dup"),
            "the coordinator refused this worker: slot 1 is already held by worker 2 (slot 1, "
            "host h, pid 1001), which sent a heartbeat 0 ms ago: stop that worker first, or start "
            "this one with another --slot (or without --slot to get a free one)");
  EXPECT_EQ(coord_->workers().size(), 2u);
  EXPECT_EQ(coord_->workers().BySlot()[1]->pid, 1001);
  Advance(1000);  // the refused one retries: still refused, the job is untouched
  Register("dup", Registration(1, 4242));
  EXPECT_FALSE(outbox_.Last<Registered>("dup")->refused.empty());
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(coord_->job()->attempt().value(), 1);
  EXPECT_TRUE(outbox_.To<CancelTask>("w1").empty());
}

TEST_F(WorkerRegistrationTest, RespawnNamingTheHoldersPidTakesTheSlotOverAtOnce) {
  RunJob();
  Register("w1b", Respawned(1, 1001));  // its heartbeat is still fresh: the pid decides
  EXPECT_TRUE(outbox_.Last<Registered>("w1b")->refused.empty());
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(
      JobStatus()["last_failure"],
      std::string("worker 2 (slot 1, host h, pid 1001) was lost: its process ended: ") + kSigkill);
}

TEST_F(WorkerRegistrationTest, NamingAnotherPidDoesNotTakeALiveSlot) {
  RunJob();
  Register("w1b", Respawned(1, 999));
  EXPECT_FALSE(outbox_.Last<Registered>("w1b")->refused.empty());
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
}

TEST_F(WorkerRegistrationTest, HolderThatMissedTwoHeartbeatsIsReplacedAtOnce) {
  RunJob();
  Kill("w1");
  Advance(300);  // 300 ms silent > 2 heartbeat intervals, < the 1000 ms timeout
  Register("w1b", Registration(1, 2001));
  EXPECT_TRUE(outbox_.Last<Registered>("w1b")->refused.empty());
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(JobStatus()["last_failure"],
            "worker 2 (slot 1, host h, pid 1001) was lost: a new worker registered for its slot 1 "
            "and it sent no heartbeat for 300 ms");
}

TEST_F(WorkerRegistrationTest, ExitReportedAfterAHeartbeatTimeoutIsAddedToThatFailure) {
  RunJob();
  Kill("w1");
  Advance(1200);
  ASSERT_EQ(coord_->job()->state(), JobState::kRestarting);
  const std::string timeout_reason =
      "worker 2 (slot 1, host h, pid 1001) was lost: no heartbeat for 1100 ms (timeout 1000 ms)";
  EXPECT_EQ(JobStatus()["last_failure"], timeout_reason);
  Register("w1b", Respawned(1, 1001));
  EXPECT_EQ(JobStatus()["last_failure"],
            timeout_reason + "; its process ended: " + std::string(kSigkill));
  Register("w1b", Respawned(1, 1001));  // a repeated registration does not repeat it
  EXPECT_EQ(JobStatus()["last_failure"],
            timeout_reason + "; its process ended: " + std::string(kSigkill));
}

TEST_F(WorkerRegistrationTest, ExitOfAWorkerTheJobDidNotUseChangesNoFailure) {
  RunJob();
  Register("w2b", Respawned(2, 3000));
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(JobStatus()["last_failure"], "");
}

TEST_F(WorkerRegistrationTest, WorkerThatSaysWhyItExitsIsLostAtOnceWithItsReason) {
  RunJob();
  coord_->OnMessage("w0", WorkerExiting{ids_["w0"], "polling the sockets failed: EINTR"}, now_);
  EXPECT_EQ(coord_->workers().size(), 1u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(JobStatus()["last_failure"],
            "worker 1 (slot 0, host h, pid 1000) was lost: its process is exiting: polling the "
            "sockets failed: EINTR");
}

// A supervisor's WorkerExitReport (issue 28): sent as soon as the worker process ended, not
// after the supervisor's restart delay; the restarted worker's previous_exit then adds nothing.
constexpr char kCrash[] =
    "died of SIGSEGV while running ProcessElement of job 'crashes-after-n' (libfaulty-jobs.so)";

WorkerExitReport ExitReport(int64_t pid, int32_t slot, const std::string& how = kCrash) {
  return WorkerExitReport{"h", pid, slot, how};
}

TEST_F(WorkerRegistrationTest, ExitReportOfARegisteredWorkerLosesItAtOnceWithHowItEnded) {
  RunJob();
  Deliver("reporter", ExitReport(1001, 1));  // its heartbeat is still fresh: the report decides
  auto reply = outbox_.Last<Reply>("reporter");
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->ok);
  EXPECT_EQ(
      reply->message,
      std::string("worker 2 (slot 1, host h, pid 1001) is lost: its process ended: ") + kCrash);
  EXPECT_EQ(coord_->workers().size(), 1u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  const std::string reason =
      std::string("worker 2 (slot 1, host h, pid 1001) was lost: its process ended: ") + kCrash;
  EXPECT_EQ(JobStatus()["last_failure"], reason);
  // The restarted worker reports the same exit when it registers: noted once.
  RegisterWorker respawned = Respawned(1, 1001);
  respawned.previous_exit = kCrash;
  Register("w1b", respawned);
  EXPECT_TRUE(outbox_.Last<Registered>("w1b")->refused.empty());
  EXPECT_EQ(JobStatus()["last_failure"], reason);
}

TEST_F(WorkerRegistrationTest, ExitReportAfterAHeartbeatTimeoutIsAttachedOnceToTheJobsFailure) {
  JobSpec spec = Spec(2, 500);
  spec.restart_strategy = "none";
  RunOnWorkers(spec);
  Advance(100);
  Kill("w1");
  Advance(1200);
  ASSERT_EQ(coord_->job()->state(), JobState::kFailed);
  const std::string timeout_reason =
      "worker 2 (slot 1, host h, pid 1001) was lost: no heartbeat for 1100 ms (timeout 1000 ms)";
  EXPECT_EQ(JobStatus()["failure"], timeout_reason + " (restart strategy: none)");
  Deliver("reporter", ExitReport(1001, 1));
  ASSERT_TRUE(outbox_.Last<Reply>("reporter").has_value());
  EXPECT_TRUE(outbox_.Last<Reply>("reporter")->ok);
  EXPECT_EQ(outbox_.Last<Reply>("reporter")->message,
            "noted how the worker process (host h, pid 1001) ended");
  const std::string note = std::string("; its process ended: ") + kCrash;
  EXPECT_EQ(JobStatus()["failure"], timeout_reason + " (restart strategy: none)" + note);
  EXPECT_EQ(JobStatus()["last_failure"], timeout_reason + note);
  // The same report again, then the restarted worker's registration: nothing is repeated.
  Deliver("reporter", ExitReport(1001, 1));
  RegisterWorker respawned = Respawned(1, 1001);
  respawned.previous_exit = kCrash;
  Register("w1b", respawned);
  EXPECT_EQ(JobStatus()["failure"], timeout_reason + " (restart strategy: none)" + note);
  EXPECT_EQ(JobStatus()["last_failure"], timeout_reason + note);
}

TEST_F(WorkerRegistrationTest, ExitReportFromAnotherAddressDoesNotDropALiveWorker) {
  addresses_ = {{"w0", "10.0.0.1"}, {"w1", "10.0.0.2"}, {"reporter", "10.0.0.9"}};
  RunJob();
  Deliver("reporter", ExitReport(1001, 1));
  EXPECT_EQ(outbox_.Last<Reply>("reporter")->message,
            "noted how the worker process (host h, pid 1001) ended");
  EXPECT_EQ(coord_->workers().size(), 2u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(JobStatus()["last_failure"], "");
}

TEST_F(WorkerRegistrationTest, ExitReportWithoutAPidOrAPhraseIsRefusedWithASentence) {
  RunJob();
  for (const WorkerExitReport& bad : {ExitReport(0, 1), ExitReport(1001, 1, "")}) {
    Deliver("reporter", bad);
    EXPECT_EQ(RefusingReply("reporter"),
              "a worker exit report needs the pid of the process that ended (--previous-pid) and "
              "how it ended (--report-exit)");
  }
  EXPECT_EQ(coord_->workers().size(), 2u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
}

}  // namespace
}  // namespace keyflow::test
