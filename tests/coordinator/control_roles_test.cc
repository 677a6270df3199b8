// Roles, registration and heartbeats on the control plane (issue 13), driven message by message
// through the Coordinator with authenticated identities: a worker key cannot operate the
// cluster, an operator key cannot register as a worker, a stranger cannot evict a live worker
// or keep a stopped one alive with forged heartbeats, one worker key holds one slot, and a
// revoked key is dropped on reload.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/logging/logging.h"
#include "common/security/curve_keys.h"
#include "tests/coordinator/coordinator_harness.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

PeerIdentity Worker(const std::string& name) {
  return PeerIdentity{Role::kWorker, name};
}
PeerIdentity Operator(const std::string& name) {
  return PeerIdentity{Role::kOperator, name};
}

class ControlRolesTest : public CoordinatorHarness {
 protected:
  // A secure coordinator whose trusted keys are those of a real key directory: worker-0,
  // worker-1, worker-2 and the operator client "alice".
  void SetUp() override {
    keys_ = KeyDirectory{dir_.path() + "/keys"};
    std::filesystem::create_directories(keys_.RoleDir(Role::kWorker));
    std::filesystem::create_directories(keys_.RoleDir(Role::kOperator));
    for (const PeerIdentity& id :
         {Worker("worker-0"), Worker("worker-1"), Worker("worker-2"), Operator("alice")}) {
      AddKey(id);
    }
    auto store = TrustedKeyStore::Load(keys_);
    ASSERT_OK(store);
    CoordinatorOptions o = Options();
    o.security.enabled = true;
    o.security.keys = keys_;
    o.trusted_keys = std::move(store).value();
    coord_ = std::make_unique<Coordinator>(o, &outbox_, &clock_);
    peers_ = {{"w0", Worker("worker-0")}, {"w1", Worker("worker-1")}, {"cli", Operator("alice")}};
  }

  void AddKey(const PeerIdentity& id) {
    auto pair = GenerateCurveKeyPair();
    ASSERT_OK(pair);
    KeyFile pub{id, CurveKeyPair{pair->public_key, ""}};
    public_keys_[id.name] = pair->public_key;
    ASSERT_OK(WriteNewKeyFile(keys_.PublicKeyFile(id.role, id.name), pub, 0644));
  }

  // Two workers (keys worker-0, worker-1; pids 1000, 1001) run a 2-subtask job.
  void RunJob() {
    RunOnWorkers(Spec(2, 500));
    Advance(100);
  }

  nlohmann::json Security() { return coord_->StatusJson(now_)["coordinator"]["security"]; }

  KeyDirectory keys_;
};

TEST_F(ControlRolesTest, AWorkerKeyCannotCancelTheJob) {
  RunJob();
  Deliver("w0", CancelJob{});
  EXPECT_EQ(RefusingReply("w0"),
            "a worker key cannot cancel the job: use an operator client key (`keyflow keys "
            "add-client NAME`)");
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  Deliver("w1", RescaleRequest{1, false, 0});
  EXPECT_EQ(outbox_.Last<Reply>("w1")->message,
            "a worker key cannot rescale the job: use an operator client key (`keyflow keys "
            "add-client NAME`)");
  Deliver("w1", StatusRequest{});
  EXPECT_FALSE(outbox_.Last<Reply>("w1")->ok);
  EXPECT_EQ(coord_->refused_requests(), 3u);
  EXPECT_EQ(Security()["mode"], "curve");
  EXPECT_EQ(Security()["refused_requests"], 3);
  // The operator key may.
  Deliver("cli", CancelJob{});
  EXPECT_TRUE(outbox_.Last<Reply>("cli")->ok);
  EXPECT_EQ(coord_->job()->state(), JobState::kCanceled);
}

TEST_F(ControlRolesTest, AWorkerKeyCannotChangeTheLogLevel) {
  RunJob();
  const std::string before = LogLevel();
  Deliver("w0", SetLogLevelRequest{before == "trace" ? "debug" : "trace", true});
  EXPECT_EQ(outbox_.Last<Reply>("w0")->message,
            "a worker key cannot change the log level: use an operator client key (`keyflow keys "
            "add-client NAME`)");
  EXPECT_EQ(LogLevel(), before);
  EXPECT_TRUE(outbox_.To<SetLogLevel>("w1").empty());
  EXPECT_EQ(coord_->refused_requests(), 1u);
}

TEST_F(ControlRolesTest, AnOperatorKeyCannotRegisterAsAWorker) {
  RunJob();
  peers_["op"] = Operator("alice");
  Deliver("op", Registration(2, 4242));
  EXPECT_EQ(Refusal("op"),
            "the coordinator refused this worker: an operator client key cannot register as a "
            "worker: start the worker with a worker key (`keyflow keys add-worker NAME`, then "
            "--key-name NAME)");
  EXPECT_EQ(coord_->workers().size(), 2u);
  // Nor send a worker's messages: an ack naming worker 1 is dropped.
  Deliver("op", WorkerHeartbeat{ids_["w0"], coord_->job()->attempt(), {}});
  EXPECT_EQ(coord_->refused_requests(), 2u);
}

// The announced data-plane key is handed to the worker's peers, whose data planes admit it:
// a worker announcing a key other than the one it authenticated with is refused.
TEST_F(ControlRolesTest, AWorkerAnnouncingAnotherDataPlaneKeyIsRefused) {
  RegisterWorker r = Registration(0, 1000);
  r.public_key = public_keys_["worker-1"];
  Deliver("w0", r);
  EXPECT_EQ(Refusal("w0"),
            "the coordinator refused this worker: worker worker-0 announced a data-plane public "
            "key that is not its own trusted key (workers/worker-0.pub): restart it with its own "
            "key file (--key-name worker-0)");
  EXPECT_EQ(coord_->workers().size(), 0u);
  EXPECT_EQ(coord_->refused_requests(), 1u);
  // With its own key it registers.
  EXPECT_NE(Register("w0", 0), WorkerId(0));
  EXPECT_EQ(coord_->workers().size(), 1u);
}

TEST_F(ControlRolesTest, AConnectionWithoutAKeyIsRefusedOnASecureCoordinator) {
  Deliver("plain", StatusRequest{});
  EXPECT_EQ(outbox_.Last<Reply>("plain")->message,
            "the coordinator requires a CURVE key on every connection: run with --keys DIR");
}

TEST_F(ControlRolesTest, AnotherWorkerKeyNamingTheHoldersPidDoesNotEvictIt) {
  RunJob();
  peers_["rogue"] = Worker("worker-2");
  RegisterWorker r = Registration(1, 6666);
  r.previous_pid = 1001;  // the holder's pid and host, read from `keyflow status`
  Deliver("rogue", r);
  EXPECT_EQ(Refusal("rogue"),
            "the coordinator refused this worker: slot 1 is already held by worker 2 (slot 1, "
            "host h, pid 1001), which sent a heartbeat 0 ms ago: stop that worker first, or start "
            "this one with another --slot (or without --slot to get a free one)");
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  EXPECT_EQ(coord_->workers().BySlot()[1]->pid, 1001);
}

TEST_F(ControlRolesTest, AnExitReportNeedsTheWorkersOwnKeyToDropIt) {
  RunJob();
  const WorkerExitReport report{"h", 1001, 1, "died of SIGSEGV"};
  // An operator key may not report at all.
  Deliver("cli", report);
  ASSERT_TRUE(outbox_.Last<Reply>("cli").has_value());
  EXPECT_FALSE(outbox_.Last<Reply>("cli")->ok);
  EXPECT_EQ(outbox_.Last<Reply>("cli")->message,
            "an operator client key cannot report how a worker process ended: start the worker "
            "with a worker key (`keyflow keys add-worker NAME`, then --key-name NAME)");
  // Another worker's key is heard but evicts nobody.
  peers_["rogue"] = Worker("worker-2");
  Deliver("rogue", report);
  EXPECT_EQ(outbox_.Last<Reply>("rogue")->message,
            "noted how the worker process (host h, pid 1001) ended");
  EXPECT_EQ(coord_->workers().size(), 2u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  // Its own key (the supervisor's reporter runs with the worker's key): lost at once.
  peers_["reporter"] = Worker("worker-1");
  Deliver("reporter", report);
  EXPECT_TRUE(outbox_.Last<Reply>("reporter")->ok);
  EXPECT_EQ(coord_->workers().size(), 1u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(JobStatus()["last_failure"],
            "worker 2 (slot 1, host h, pid 1001) was lost: its process ended: died of SIGSEGV");
}

TEST_F(ControlRolesTest, OneWorkerKeyHoldsOneSlotButItsRespawnTakesOver) {
  RunJob();
  peers_["w0-again"] = Worker("worker-0");
  Deliver("w0-again", Registration(2, 7777));
  EXPECT_EQ(outbox_.Last<Registered>("w0-again")->refused,
            "the coordinator refused this worker: worker key worker-0 is already in use by worker "
            "1 (slot 0, host h, pid 1000), which sent a heartbeat 0 ms ago: each worker needs its "
            "own key (`keyflow keys add-worker NAME`); stop that worker first or start this one "
            "with another --key-name");
  EXPECT_EQ(coord_->workers().size(), 2u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  // Its supervisor respawns it (naming the old pid): same key, the slot is taken over.
  peers_["w0b"] = Worker("worker-0");
  RegisterWorker respawn = Registration(0, 2000);
  respawn.previous_pid = 1000;
  Deliver("w0b", respawn);
  EXPECT_TRUE(outbox_.Last<Registered>("w0b")->refused.empty());
  EXPECT_EQ(coord_->workers().BySlot()[0]->pid, 2000);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
}

TEST_F(ControlRolesTest, ARevokedWorkerKeyIsDroppedOnReloadAndCannotRegisterAgain) {
  RunJob();
  std::filesystem::remove(keys_.PublicKeyFile(Role::kWorker, "worker-1"));
  Deliver("cli", ReloadKeys{});
  auto reply = outbox_.Last<Reply>("cli");
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->ok) << reply->message;
  EXPECT_EQ(reply->message,
            "the coordinator reloaded its keys: 3 worker and client keys are trusted now");
  EXPECT_EQ(coord_->workers().size(), 1u);
  EXPECT_TRUE(outbox_.Last<RegisterAgain>("w1").has_value());
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  Deliver("w1", Registration(1, 1001));
  EXPECT_EQ(outbox_.Last<Registered>("w1")->refused,
            "the coordinator refused this worker: the coordinator revoked worker key worker-1: "
            "ask its operator to add it again (`keyflow keys add-worker worker-1`) and reload "
            "the keys");
  EXPECT_EQ(coord_->workers().size(), 1u);
}

// ZeroMQ cannot close one peer's connection on a bound ROUTER, so a revoked worker that ignores
// RegisterAgain keeps its connection (README "Security": what revocation does and does not
// do). Every message type it may send on it is refused, counted once, and changes nothing.
TEST_F(ControlRolesTest, EveryMessageOfARevokedWorkersOpenConnectionIsRefusedAndCounted) {
  RunJob();
  const WorkerId w1 = ids_["w1"];
  const AttemptNumber attempt = coord_->job()->attempt();
  std::filesystem::remove(keys_.PublicKeyFile(Role::kWorker, "worker-1"));
  Deliver("cli", ReloadKeys{});
  ASSERT_TRUE(outbox_.Last<Reply>("cli")->ok);
  ASSERT_EQ(coord_->workers().size(), 1u);
  const JobState state = coord_->job()->state();
  const AttemptNumber restarted = coord_->job()->attempt();
  const uint64_t before = coord_->refused_requests();
  const size_t sent_before = outbox_.To<Registered>("w1").size();
  const SubtaskIndex s1(1);
  const std::vector<ControlMessage> messages = {
      Registration(1, 1001),
      WorkerHeartbeat{w1, attempt, {}, {}},
      TaskDeployed{w1, attempt, s1, {"tcp://127.0.0.1:1", "tcp://127.0.0.1:2"}},
      TaskRunning{w1, attempt, s1, 0, 0},
      TaskInputEnded{w1, attempt, s1},
      TaskFinished{w1, attempt, s1, {}},
      TaskFailed{w1, attempt, s1, "forged"},
      AcknowledgeCheckpoint{w1, attempt, s1, CheckpointId(1)},
      DeclineCheckpoint{w1, attempt, s1, CheckpointId(1), "forged"},
      FetchJobLibrary{w1, attempt, "00"},
      WorkerExiting{w1, "forged"},
  };
  uint64_t n = 0;
  for (const ControlMessage& m : messages) {
    Deliver("w1", m);
    ++n;
    EXPECT_EQ(coord_->refused_requests(), before + n) << ControlMessageName(m);
    EXPECT_EQ(coord_->workers().size(), 1u) << ControlMessageName(m);
    EXPECT_EQ(coord_->job()->state(), state) << ControlMessageName(m);
    EXPECT_EQ(coord_->job()->attempt(), restarted) << ControlMessageName(m);
  }
  // Only the registration is answered (with the sentence); nothing else goes back to it.
  auto registered = outbox_.To<Registered>("w1");
  ASSERT_EQ(registered.size(), sent_before + 1);
  EXPECT_NE(registered.back().refused.find("the coordinator revoked worker key worker-1"),
            std::string::npos);
  EXPECT_EQ(Security()["refused_requests"], before + n);
}

TEST_F(ControlRolesTest, AReloadThatFailsKeepsTheOldKeys) {
  RunJob();
  ASSERT_OK(WriteFileAtomically(keys_.PublicKeyFile(Role::kWorker, "broken"), "junk\n"));
  std::filesystem::remove(keys_.PublicKeyFile(Role::kWorker, "worker-1"));
  auto reloaded = coord_->ReloadKeys(now_);
  ASSERT_FALSE(reloaded.ok());
  EXPECT_NE(reloaded.status().message().find("the previously loaded keys stay in use"),
            std::string::npos)
      << reloaded.status().message();
  EXPECT_EQ(coord_->workers().size(), 2u);  // worker-1 is still trusted
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
}

TEST_F(ControlRolesTest, AWorkerKeyCanDoWorkerThingsAndTheOperatorCanReadStatus) {
  RunJob();
  Deliver("cli", StatusRequest{});
  EXPECT_TRUE(outbox_.Last<Reply>("cli")->ok);
  EXPECT_EQ(coord_->refused_requests(), 0u);
}

// Whatever the security setting (this fixture: insecure).
class ControlBindingTest : public CoordinatorHarness {
 protected:
  void RunJob() {
    addresses_ = {{"w0", "10.0.0.1"}, {"w1", "10.0.0.2"}};
    RunOnWorkers(Spec(2, 500));
    Advance(100);
  }
};

TEST_F(ControlBindingTest, ForgedHeartbeatsDoNotKeepAStoppedWorkerAlive) {
  RunJob();
  Kill("w1");
  // Someone else keeps sending worker 2's heartbeats from another connection.
  for (int i = 0; i < 12; ++i) {
    Deliver("forger", WorkerHeartbeat{ids_["w1"], coord_->job()->attempt(), {}});
    Advance(100);
  }
  EXPECT_EQ(coord_->workers().size(), 1u);
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
  EXPECT_EQ(JobStatus()["last_failure"],
            "worker 2 (slot 1, host h, pid 1001) was lost: no heartbeat for 1100 ms (timeout "
            "1000 ms)");
  EXPECT_TRUE(outbox_.Last<RegisterAgain>("forger").has_value());
}

TEST_F(ControlBindingTest, AStrangerFromAnotherAddressNamingTheHoldersPidDoesNotEvictIt) {
  RunJob();
  addresses_["stranger"] = "10.0.0.66";
  RegisterWorker r = Registration(1, 6666);
  r.previous_pid = 1001;
  Deliver("stranger", r);
  EXPECT_FALSE(outbox_.Last<Registered>("stranger")->refused.empty());
  EXPECT_EQ(coord_->job()->state(), JobState::kRunning);
  // From the holder's own address (its supervisor's respawn): taken over.
  addresses_["respawn"] = "10.0.0.2";
  Deliver("respawn", r);
  EXPECT_TRUE(outbox_.Last<Registered>("respawn")->refused.empty());
  EXPECT_EQ(coord_->job()->state(), JobState::kRestarting);
}

TEST_F(ControlBindingTest, AnInsecureCoordinatorHasNoKeysToReload) {
  Deliver("cli", ReloadKeys{});
  EXPECT_EQ(outbox_.Last<Reply>("cli")->message,
            "this coordinator runs --insecure and has no keys to reload: restart it with --keys "
            "DIR");
  EXPECT_EQ(coord_->StatusJson(now_)["coordinator"]["security"]["mode"], "insecure");
}

}  // namespace
}  // namespace keyflow::test
