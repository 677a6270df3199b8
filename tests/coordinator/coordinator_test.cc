#include "coordinator/coordinator.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "common/file_io.h"
#include "common/input/input_spec.h"
#include "tests/coordinator/coordinator_harness.h"

namespace keyflow {
namespace {

// Records what the coordinator sends, per peer.
using test::FakeOutbox;

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest()
      : clock_(Timestamp(1'764'442'799'000)), coord_(Options(dir_.path()), &outbox_, &clock_) {}
  static CoordinatorOptions Options(const std::string& checkpoint_root) {
    CoordinatorOptions o;
    o.job.checkpoint_root = checkpoint_root;
    o.heartbeat_interval_ms = 100;
    o.heartbeat_timeout_ms = 1000;
    o.job.deploy_timeout_ms = 5000;
    return o;
  }

  WorkerId RegisterWorkerAt(const std::string& identity, int32_t slot, int64_t now) {
    RegisterWorker r;
    r.hostname = "host-" + identity;
    r.pid = 100 + slot;
    r.data_host = "127.0.0.1";
    r.slot = slot;
    coord_.OnMessage(identity, r, now);
    auto regs = outbox_.To<Registered>(identity);
    EXPECT_FALSE(regs.empty());
    return regs.back().worker;
  }

  Reply LastReply(const std::string& identity) {
    auto replies = outbox_.To<Reply>(identity);
    EXPECT_FALSE(replies.empty());
    return replies.empty() ? Reply{} : replies.back();
  }

  void Submit(int32_t parallelism, int64_t now) {
    JobSpec spec;
    spec.job_name = "count-window";
    spec.input = "gen:events=10,keys=2,splits=1,seed=1";
    spec.parallelism = parallelism;
    coord_.OnMessage("cli", SubmitJob{spec}, now);
  }

  // Deploys the job on workers w0..w2 (identities "w0".."w2") and starts it.
  void DeployAndStart(const std::vector<WorkerId>& ids, int64_t now) {
    for (size_t i = 0; i < ids.size(); ++i) {
      std::string identity = "w" + std::to_string(i);
      auto deploys = outbox_.To<DeployTask>(identity);
      ASSERT_EQ(deploys.size(), 1u);
      TaskDeployed d;
      d.worker = ids[i];
      d.attempt = deploys[0].attempt;
      d.subtask = deploys[0].subtask;
      for (size_t s = 0; s < ids.size(); ++s) {
        d.input_endpoints.push_back("tcp://127.0.0.1:" + std::to_string(7000 + 10 * i + s));
      }
      coord_.OnMessage(identity, d, now);
    }
  }

  TempDir dir_{"coordinator-test"};
  ManualClock clock_;
  FakeOutbox outbox_;
  Coordinator coord_;
};

TEST_F(CoordinatorTest, RejectsABadGeneratorSpecOnSubmit) {
  RegisterWorkerAt("w0", 0, 0);
  JobSpec spec;
  spec.job_name = "count-window";
  spec.input = "gen:events=10,keys=0,splits=1";
  spec.parallelism = 1;
  coord_.OnMessage("cli", SubmitJob{spec}, 10);
  Reply r = LastReply("cli");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.message, "job rejected: " + InputSpec::Parse(spec.input).status().message());
  EXPECT_TRUE(outbox_.To<DeployTask>("w0").empty());
}

TEST_F(CoordinatorTest, RegistersWorkersInSlotsAndDeploysSubtasksByFlinkRanges) {
  std::vector<WorkerId> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(RegisterWorkerAt("w" + std::to_string(i), i, 0));
  Submit(3, 10);
  Reply r = LastReply("cli");
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.message, "job count-window-20251129-185959 submitted");
  for (int i = 0; i < 3; ++i) {
    auto d = outbox_.To<DeployTask>("w" + std::to_string(i));
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].subtask.value(), i);
    EXPECT_EQ(d[0].attempt.value(), 1);
    EXPECT_EQ(d[0].spec.max_parallelism, 128);
  }
  EXPECT_EQ(outbox_.To<DeployTask>("w0")[0].key_groups, KeyGroupRange::Of(0, 42));
  EXPECT_EQ(outbox_.To<DeployTask>("w1")[0].key_groups, KeyGroupRange::Of(43, 85));
  EXPECT_EQ(outbox_.To<DeployTask>("w2")[0].key_groups, KeyGroupRange::Of(86, 127));
}

TEST_F(CoordinatorTest, DeploysEveryWorkerWithThePublicKeysOfItsPeersBySubtask) {
  // Registered out of slot order: peer_public_keys[s] is the key of the worker of subtask s.
  for (int slot : {1, 0}) {
    RegisterWorker r;
    r.hostname = "h";
    r.pid = 100 + slot;
    r.slot = slot;
    r.public_key = std::string(40, static_cast<char>('a' + slot));
    coord_.OnMessage("w" + std::to_string(slot), r, 0);
  }
  Submit(2, 10);
  const std::vector<std::string> expected = {std::string(40, 'a'), std::string(40, 'b')};
  for (const char* w : {"w0", "w1"}) {
    auto d = outbox_.To<DeployTask>(w);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].peer_public_keys, expected) << w;
  }
}

TEST_F(CoordinatorTest, DeploysNoPeerKeysOnAnInsecureCluster) {
  RegisterWorkerAt("w0", 0, 0);
  Submit(1, 10);
  auto d = outbox_.To<DeployTask>("w0");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].peer_public_keys.empty());
}

TEST_F(CoordinatorTest, StartsOnlyWhenEverySubtaskReportedItsEndpoints) {
  std::vector<WorkerId> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(RegisterWorkerAt("w" + std::to_string(i), i, 0));
  Submit(2, 10);
  DeployAndStart(ids, 20);
  auto s0 = outbox_.To<StartTask>("w0");
  ASSERT_EQ(s0.size(), 1u);
  ASSERT_EQ(s0[0].input_endpoints.size(), 2u);
  EXPECT_EQ(s0[0].input_endpoints[1][0], "tcp://127.0.0.1:7010");  // keyed 1, source 0
  EXPECT_EQ(coord_.job()->state(), JobState::kRunning);
}

TEST_F(CoordinatorTest, FinishesWhenAllSubtasksFinish) {
  std::vector<WorkerId> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(RegisterWorkerAt("w" + std::to_string(i), i, 0));
  Submit(2, 10);
  DeployAndStart(ids, 20);
  for (int i = 0; i < 2; ++i) {
    TaskFinished f;
    f.worker = ids[static_cast<size_t>(i)];
    f.attempt = AttemptNumber(1);
    f.subtask = SubtaskIndex(i);
    f.metrics.records_in = 5;
    coord_.OnMessage("w" + std::to_string(i), f, 30);
    EXPECT_EQ(coord_.job()->state(), i == 0 ? JobState::kRunning : JobState::kFinished);
  }
  EXPECT_EQ(coord_.StatusJson(40)["job"]["records_in"], 10);
}

TEST_F(CoordinatorTest, RefusesASecondJobWhileOneRuns) {
  RegisterWorkerAt("w0", 0, 0);
  Submit(1, 10);
  Submit(1, 11);
  Reply r = LastReply("cli");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.message,
            "job count-window-20251129-185959 is still DEPLOYING: this is a session cluster that "
            "runs one job at a time; wait for it or stop it with `keyflow cancel`");
}

TEST_F(CoordinatorTest, RefusesParallelismAboveRegisteredWorkers) {
  RegisterWorkerAt("w0", 0, 0);
  Submit(2, 10);
  EXPECT_EQ(LastReply("cli").message,
            "job rejected: the job needs 2 workers (one per subtask) but only 1 are registered: "
            "start more workers or lower --parallelism");
  EXPECT_EQ(coord_.job(), nullptr);
}

TEST_F(CoordinatorTest, LostWorkerFailsTheJobNamingTheWorkerAndCancelsTheOthers) {
  std::vector<WorkerId> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(RegisterWorkerAt("w" + std::to_string(i), i, 0));
  Submit(2, 10);
  DeployAndStart(ids, 20);
  // w0 keeps sending heartbeats, w1 goes silent.
  for (int64_t t = 100; t <= 1000; t += 100) {
    coord_.OnMessage("w0", WorkerHeartbeat{ids[0], AttemptNumber(1), {}}, t);
    coord_.OnTick(t);
  }
  EXPECT_EQ(coord_.job()->state(), JobState::kRunning);  // 1000 ms silent: not yet (> timeout)
  coord_.OnMessage("w0", WorkerHeartbeat{ids[0], AttemptNumber(1), {}}, 1100);
  coord_.OnTick(1100);
  EXPECT_EQ(coord_.job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_.job()->failure_reason(),
            "worker 2 (slot 1, host host-w1, pid 101) was lost: no heartbeat for 1100 ms (timeout "
            "1000 ms) (restart strategy: none)");
  auto cancels = outbox_.To<CancelTask>("w0");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].attempt.value(), 1);
}

TEST_F(CoordinatorTest, RespawnedWorkerInTheSameSlotFailsTheJobAtOnce) {
  std::vector<WorkerId> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(RegisterWorkerAt("w" + std::to_string(i), i, 0));
  Submit(2, 10);
  DeployAndStart(ids, 20);
  RegisterWorkerAt("w1-new", 1, 300);  // the holder missed two heartbeats: taken over at once
  EXPECT_EQ(coord_.job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_.workers().size(), 2u);
}

TEST_F(CoordinatorTest, IgnoresMessagesFromStaleAttemptsAndStrangers) {
  std::vector<WorkerId> ids;
  ids.push_back(RegisterWorkerAt("w0", 0, 0));
  Submit(1, 10);
  TaskFinished stale{ids[0], AttemptNumber(7), SubtaskIndex(0), {}};
  coord_.OnMessage("w0", stale, 20);
  TaskFinished stranger{ids[0], AttemptNumber(1), SubtaskIndex(0), {}};
  coord_.OnMessage("not-a-worker", stranger, 20);
  EXPECT_EQ(coord_.job()->state(), JobState::kDeploying);
}

TEST_F(CoordinatorTest, DeploymentTimeoutFailsTheJob) {
  RegisterWorkerAt("w0", 0, 0);
  Submit(1, 10);
  coord_.OnMessage("w0", WorkerHeartbeat{WorkerId(1), AttemptNumber(1), {}}, 4000);
  coord_.OnTick(4000);
  EXPECT_EQ(coord_.job()->state(), JobState::kDeploying);
  coord_.OnMessage("w0", WorkerHeartbeat{WorkerId(1), AttemptNumber(1), {}}, 5020);
  coord_.OnTick(5020);
  EXPECT_EQ(coord_.job()->state(), JobState::kFailed);
  EXPECT_EQ(coord_.job()->failure_reason(),
            "deployment timed out after 5000 ms waiting for worker 1 (slot 0, host host-w0, pid "
            "100) (restart strategy: none)");
}

TEST_F(CoordinatorTest, CancelStopsTheJob) {
  RegisterWorkerAt("w0", 0, 0);
  Submit(1, 10);
  coord_.OnMessage("cli", CancelJob{}, 20);
  EXPECT_EQ(coord_.job()->state(), JobState::kCanceled);
  EXPECT_EQ(outbox_.To<CancelTask>("w0").size(), 1u);
  EXPECT_TRUE(LastReply("cli").ok);
}

TEST_F(CoordinatorTest, SendsHeartbeatsToWorkersEveryInterval) {
  RegisterWorkerAt("w0", 0, 0);
  coord_.OnTick(100);
  coord_.OnTick(150);
  coord_.OnTick(200);
  EXPECT_EQ(outbox_.To<CoordinatorHeartbeat>("w0").size(), 2u);
}

}  // namespace
}  // namespace keyflow
