// A secure cluster end to end (issue 13): CURVE on the control plane with a key set, and what a
// process without the right key gets — an unauthenticated CLI cannot read status or cancel (and
// gets one sentence, not a timeout), a worker with an unknown key cannot register, a worker key
// cannot cancel, an operator key cannot register as a worker, a revoked worker key is dropped
// and refused after a reload (SIGHUP and `ReloadKeys`).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "common/security/curve_keys.h"
#include "common/transport/control_plane.h"
#include "tests/common/security/test_key_set.h"
#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

// One request from a hand-made DEALER with `key_file`'s key pair (any role): the coordinator's
// answer, or an error if none came.
Result<ControlMessage> AskWithKey(const std::string& endpoint, const KeyDirectory& keys,
                                  const std::string& key_file, const ControlMessage& msg) {
  KF_ASSIGN_OR_RETURN(KeyFile mine, ReadKeyFile(key_file, /*require_secret=*/true));
  KF_ASSIGN_OR_RETURN(KeyFile coordinator, ReadKeyFile(keys.CoordinatorPub(), false));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<ZmqContext> ctx, ZmqContext::Create(1));
  SocketOptions so = ControlPlaneSocketOptions();
  so.curve = CurveOptions::Client(mine.keys, coordinator.keys.public_key);
  ControlMessage answer;
  {
    KF_ASSIGN_OR_RETURN(ZmqSocket socket, ZmqSocket::Create(*ctx, SocketType::kDealer, so));
    KF_RETURN_IF_ERROR(socket.Connect(endpoint));
    KF_RETURN_IF_ERROR(
        socket.Send(EncodeControlMessage(msg), SendOptions{.timeout = Duration::Seconds(5)}));
    zmq::message_t reply;
    // Coordinator heartbeats may come first (a worker key that registered): skip them.
    while (true) {
      KF_RETURN_IF_ERROR(socket.Receive(&reply, Duration::Seconds(5)));
      KF_ASSIGN_OR_RETURN(
          answer, DecodeControlMessage(
                      std::string_view(static_cast<const char*>(reply.data()), reply.size()),
                      "the coordinator"));
      if (!std::holds_alternative<CoordinatorHeartbeat>(answer)) break;
    }
  }
  return answer;
}

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterOptions o;
    o.workers = 2;
    auto c = Cluster::Start(dir_.path(), o);  // secure: the harness's key set in DIR/keys
    ASSERT_OK(c);
    cluster_ = std::move(c).value();
    keys_dir_ = cluster_->KeysDir();
    ASSERT_FALSE(keys_dir_.empty());
    // Keys the cluster does not know (a rogue worker and client), with the right coordinator.pub.
    rogue_dir_ = dir_.path() + "/rogue-keys";
    ASSERT_OK(MakeTestKeySet(rogue_dir_, {"worker-0"}, {"mallory"}));
    std::filesystem::copy_file(KeyDirectory{keys_dir_}.CoordinatorPub(),
                               KeyDirectory{rogue_dir_}.CoordinatorPub(),
                               std::filesystem::copy_options::overwrite_existing);
  }

  // `keyflow ARGS --coordinator EP [extra]` without the cluster's keys.
  CommandResult CliWithout(std::vector<std::string> args, const std::vector<std::string>& extra) {
    // No KEYFLOW_KEYS either (the harness's CLI calls set it).
    std::vector<std::string> argv = {"env", "-u", "KEYFLOW_KEYS", KeyflowBinary("keyflow")};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--coordinator", cluster_->endpoint()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunCommand(argv, Duration::Seconds(15));
    EXPECT_OK(r);
    return r.ok() ? *r : CommandResult{};
  }

  nlohmann::json Security() {
    auto st = cluster_->StatusJson();
    EXPECT_OK(st);
    return st.ok() ? (*st)["coordinator"]["security"] : nlohmann::json();
  }

  TestDir dir_;
  std::string keys_dir_;
  std::string rogue_dir_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(SecurityTest, AClientWithoutTheRightKeyGetsOneSentenceAndNothingElse) {
  EXPECT_EQ(Security()["mode"], "curve");
  for (std::string cmd : {"status", "cancel"}) {
    CommandResult plain = CliWithout({cmd}, {});
    EXPECT_NE(plain.exit_code, 0) << cmd;
    EXPECT_EQ(plain.err, "keyflow: the coordinator at " + cluster_->endpoint() +
                             " requires a client key; run with --keys DIR\n")
        << cmd;
    EXPECT_EQ(plain.out, "");
  }
  CommandResult unknown = CliWithout({"status"}, {"--keys", rogue_dir_, "--key-name", "mallory"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_EQ(unknown.err, "keyflow: the coordinator at " + cluster_->endpoint() +
                             " refused client key mallory: ask its operator to add it (`keyflow "
                             "keys add-client mallory`)\n");
  nlohmann::json sec = Security();
  EXPECT_GE(sec["refused_connections"].get<int>(), 3) << sec.dump();
}

TEST_F(SecurityTest, AWorkerKeyCannotCancelAndAnOperatorKeyCannotRegister) {
  KeyDirectory keys{keys_dir_};
  auto cancel = AskWithKey(cluster_->endpoint(), keys,
                           keys.SecretKeyFile(Role::kWorker, "worker-1"), CancelJob{});
  ASSERT_OK(cancel);
  ASSERT_TRUE(std::holds_alternative<Reply>(*cancel));
  EXPECT_FALSE(std::get<Reply>(*cancel).ok);
  EXPECT_EQ(std::get<Reply>(*cancel).message,
            "a worker key cannot cancel the job: use an operator client key (`keyflow keys "
            "add-client NAME`)");
  RegisterWorker r;
  r.hostname = "rogue";
  r.pid = 1;
  r.slot = 0;
  auto reg =
      AskWithKey(cluster_->endpoint(), keys, keys.SecretKeyFile(Role::kOperator, "operator"), r);
  ASSERT_OK(reg);
  ASSERT_TRUE(std::holds_alternative<Registered>(*reg));
  EXPECT_EQ(std::get<Registered>(*reg).refused,
            "the coordinator refused this worker: an operator client key cannot register as a "
            "worker: start the worker with a worker key (`keyflow keys add-worker NAME`, then "
            "--key-name NAME)");
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["workers"].size(), 2u);
  EXPECT_EQ((*st)["coordinator"]["security"]["refused_requests"], 2);
}

TEST_F(SecurityTest, ARogueWorkerWithAnUnknownKeyCannotRegister) {
  // Same name (worker-0) as a real worker, but a key the coordinator does not know.
  auto rogue = ChildProcess::Start(
      {KeyflowBinary("keyflow-worker"), "--coordinator", cluster_->endpoint(), "--keys", rogue_dir_,
       "--key-name", "worker-0", "--data-host", "127.0.0.1", "--bind-host", "127.0.0.1"},
      dir_.path() + "/rogue-worker.log");
  ASSERT_OK(rogue);
  Status logged = WaitUntil(
      [&] {
        return ReadFileOrEmpty(dir_.path() + "/rogue-worker.log")
                   .find("refused worker key worker-0") != std::string::npos;
      },
      Duration::Seconds(15), "the rogue worker's log names the refusal");
  EXPECT_OK(logged) << logged.message() << "\n" << Tail(dir_.path() + "/rogue-worker.log");
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["workers"].size(), 2u);
  EXPECT_GE((*st)["coordinator"]["security"]["refused_connections"].get<int>(), 1);
  rogue->Kill();
}

TEST_F(SecurityTest, ARevokedWorkerKeyIsDroppedAndRefusedAfterReload) {
  // A third worker joins with key worker-2, then its key is removed and the coordinator reloads.
  std::string log = dir_.path() + "/worker-2-extra.log";
  std::vector<std::string> argv = {KeyflowBinary("keyflow-worker"),
                                   "--coordinator",
                                   cluster_->endpoint(),
                                   "--slot",
                                   "2",
                                   "--data-host",
                                   "127.0.0.1",
                                   "--bind-host",
                                   "127.0.0.1"};
  for (const std::string& a : cluster_->SecurityArgs("worker-2")) argv.push_back(a);
  // The new key (keyflow keys add-worker) is admitted after `keyflow keys reload`.
  auto cli = cluster_->Cli({"keys", "reload"});
  ASSERT_OK(cli);
  EXPECT_EQ(cli->exit_code, 0) << cli->err;
  EXPECT_EQ(cli->out,
            "the coordinator reloaded its keys: 4 worker and client keys are trusted now\n");
  auto third = ChildProcess::Start(argv, log);
  ASSERT_OK(third);
  ASSERT_OK(cluster_->WaitForWorkers(3, Duration::Seconds(15))) << cluster_->LogExcerpts();
  KeyDirectory keys{keys_dir_};
  std::filesystem::remove(keys.PublicKeyFile(Role::kWorker, "worker-2"));
  ASSERT_OK(cluster_->coordinator().Signal(SIGHUP));
  auto two =
      cluster_->WaitForStatus([](const nlohmann::json& s) { return s["workers"].size() == 2; },
                              Duration::Seconds(10), "the revoked worker is dropped");
  ASSERT_OK(two) << two.status().message() << cluster_->LogExcerpts();
  // It is refused when it registers again, and stops.
  auto exited = third->Wait(Duration::Seconds(15));
  ASSERT_OK(exited) << exited.status().message() << "\n" << Tail(log);
  EXPECT_NE(*exited, 0);
  EXPECT_NE(ReadFileOrEmpty(log).find("the coordinator revoked worker key worker-2"),
            std::string::npos)
      << Tail(log);
  // The operator's reload request: the same, answered with the count.
  auto reload = AskWithKey(cluster_->endpoint(), keys,
                           keys.SecretKeyFile(Role::kOperator, "operator"), ReloadKeys{});
  ASSERT_OK(reload);
  EXPECT_EQ(std::get<Reply>(*reload).message,
            "the coordinator reloaded its keys: 3 worker and client keys are trusted now");
  auto st = cluster_->StatusJson();
  ASSERT_OK(st);
  EXPECT_EQ((*st)["workers"].size(), 2u);
}

}  // namespace
}  // namespace keyflow::test
