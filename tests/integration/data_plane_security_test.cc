// Issue 13, "a process with no key cannot inject records into a worker's data port": on a secure
// cluster a plain-text client and a CURVE client with a valid-looking but unknown key connect to
// a worker's data port while a job runs and send well-formed data frames for it. The committed
// output equals the reference (a run without the attempt) exactly, and the worker counts the
// refusal in `keyflow status --json` (workers[].refused_data_connections): a CURVE client with
// an unknown key through the ZAP policy, a plain-text client through the channel socket's
// monitor (libzmq refuses it before ZAP), exactly once per connection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/key.h"
#include "common/key_group_assignment.h"
#include "common/security/curve_keys.h"
#include "common/transport/zmq_context.h"
#include "common/transport/zmq_socket.h"
#include "tests/integration/cluster.h"
#include "tests/integration/generated_input.h"
#include "tests/integration/job_data.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow::test {
namespace {

constexpr int kParallelism = 2;
constexpr int32_t kMaxParallelism = 128;
// Rate-limited so that the job is still running while the rogue clients try (~4 s).
const std::string kInput = "gen:events=40000,keys=400,splits=2,seed=13,rate=10000";

// The endpoint keyed subtask 0 (on worker slot 0, key worker-0) bound for source subtask 0.
Result<std::string> DataEndpoint(const nlohmann::json& status) {
  for (const nlohmann::json& s : status["job"]["subtasks"]) {
    if (s.value("subtask", -1) == 0 && s["input_endpoints"].size() == kParallelism) {
      return s["input_endpoints"][0].get<std::string>();
    }
  }
  return NotFound("no input endpoints of subtask 0 in " + status.dump());
}

// A well-formed RECORDS frame of attempt 1 from source subtask 0 with records of existing keys
// that keyed subtask 0 owns: if it were accepted, those keys' counts would change.
std::string InjectedFrame(uint64_t sequence) {
  RecordBatchBuilder builder;
  for (int k = 0, added = 0; added < 50; ++k) {
    Key key = Key::FromBytes("uid-" + std::to_string(k));
    KeyGroupId kg = AssignToKeyGroup(key, KeyType::kString, kMaxParallelism).value();
    if (ComputeOperatorIndexForKeyGroup(kMaxParallelism, kParallelism, kg) != SubtaskIndex(0)) {
      continue;
    }
    builder.Append(Record{key, kg, Timestamp(1'700'000'000'000), ""});
    ++added;
  }
  std::string bytes;
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), sequence, &bytes);
  return bytes;
}

// Worker slot 0's refused_data_connections in `status` (-1 if the worker is not listed).
int64_t RefusedDataConnections(const nlohmann::json& status) {
  for (const nlohmann::json& w : status["workers"]) {
    if (w.value("slot", -1) == 0) return w.value("refused_data_connections", int64_t{0});
  }
  return -1;
}

// A secure two-worker cluster running count-window on kInput in the background (`run --wait`):
// SetUp returns once the job processes records, with the status of that moment and the data
// endpoint the rogue clients connect to.
class DataPlaneSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = Cluster::Start(dir_.path(), ClusterOptions{.workers = kParallelism});
    ASSERT_OK(cluster);
    cluster_ = std::move(cluster).value();
    auto run = cluster_->StartCli(
        CountWindowRunArgs(kInput, Output(), kCount, kTimeoutMs,
                           {"--parallelism", std::to_string(kParallelism), "--wait"}),
        RunLog());
    ASSERT_OK(run);
    run_.emplace(std::move(run).value());
    auto running = cluster_->WaitForJobProcessingRecords();
    ASSERT_OK(running);
    running_ = *running;
    auto endpoint = DataEndpoint(running_);
    ASSERT_OK(endpoint);
    endpoint_ = *endpoint;
  }

  std::string Output() const { return dir_.path() + "/output"; }
  std::string RunLog() const { return dir_.path() + "/run.out"; }

  // The job ran to the end in its first attempt (`run --wait` exits 0); `status`: the final
  // status.
  void ExpectFinishedInTheFirstAttempt(nlohmann::json* status) {
    Cluster& c = *cluster_;
    auto code = run_->Wait(Duration::Seconds(60));
    ASSERT_OK(code) << code.status().ToString() << "\n" << c.LogExcerpts();
    EXPECT_EQ(*code, 0) << ReadFileOrEmpty(RunLog()) << c.LogExcerpts();
    auto st = c.StatusJson();
    ASSERT_OK(st);
    EXPECT_EQ((*st)["job"].value("state", ""), "FINISHED");
    EXPECT_EQ((*st)["job"].value("attempt", 0), 1) << "the attempt must not have failed";
    *status = *st;
  }
  // The committed output is exactly the reference: nothing the rogue clients sent reached it.
  void ExpectReferenceOutput() {
    auto actual = CanonicalCountWindowOutput(Output());
    ASSERT_OK(actual);
    EXPECT_TRUE(SameLines(*actual, ReferenceCountWindowRun(kInput, kCount, kTimeoutMs)));
  }

  static constexpr int64_t kCount = 7;
  static constexpr int64_t kTimeoutMs = 2000;
  TestDir dir_;
  std::unique_ptr<Cluster> cluster_;
  std::optional<ChildProcess> run_;  // `keyflow run --wait`
  nlohmann::json running_;           // the status once the job processed records
  std::string endpoint_;             // DataEndpoint(running_)
};

TEST_F(DataPlaneSecurityTest, RecordsFromAPlainOrUnknownKeyClientNeverReachTheJob) {
  Cluster& c = *cluster_;
  ASSERT_FALSE(c.KeysDir().empty()) << "the harness must start a secure cluster";

  auto ctx = ZmqContext::Create().value();
  // 1. No key at all: plain TCP, no ZMQ_IMMEDIATE (the frames wait for a handshake that never
  // succeeds).
  SocketOptions plain_options;
  auto plain = ZmqSocket::Create(*ctx, SocketType::kPush, plain_options).value();
  ASSERT_OK(plain.Connect(endpoint_));
  // 2. A valid-looking key the cluster does not know, pinning the worker's real public key.
  auto worker_key = ReadKeyFile(c.KeysDir() + "/workers/worker-0.pub", false);
  ASSERT_OK(worker_key);
  SocketOptions rogue_options;
  rogue_options.curve =
      CurveOptions::Client(GenerateCurveKeyPair().value(), worker_key->keys.public_key);
  auto rogue = ZmqSocket::Create(*ctx, SocketType::kPush, rogue_options).value();
  ASSERT_OK(rogue.Connect(endpoint_));
  for (uint64_t seq = 0; seq < 20; ++seq) {
    std::string frame = InjectedFrame(1'000 + seq);
    ASSERT_OK(plain.TrySend(frame));
    ASSERT_OK(rogue.TrySend(frame));
  }

  auto refused =
      c.WaitForStatus([](const nlohmann::json& st) { return RefusedDataConnections(st) > 0; },
                      Duration::Seconds(20), "worker 0 to count the refused data connection");
  ASSERT_OK(refused) << refused.status().ToString() << "\n" << c.LogExcerpts();
  EXPECT_THAT(ReadFileOrEmpty(c.WorkerLog(0)), ::testing::HasSubstr("data connection refused"));

  nlohmann::json st;
  ASSERT_NO_FATAL_FAILURE(ExpectFinishedInTheFirstAttempt(&st));
  ExpectReferenceOutput();
  rogue.Close();
  plain.Close();
}

// Three plain-text ZeroMQ clients (no reconnects: one connection each) connect to a worker's
// data port one after the other and queue a well-formed frame: the worker counts exactly one
// refused data connection per client, logs the refusal, and the job's output is exact.
TEST_F(DataPlaneSecurityTest, EachPlainTextDataConnectionIsCountedOnceAndLogged) {
  Cluster& c = *cluster_;
  ASSERT_EQ(RefusedDataConnections(running_), 0);

  auto ctx = ZmqContext::Create().value();
  for (int64_t n = 1; n <= 3; ++n) {
    zmq::socket_t plain(ctx->context(), ZMQ_PUSH);
    plain.set(zmq::sockopt::linger, 0);
    plain.set(zmq::sockopt::reconnect_ivl, -1);
    plain.connect(endpoint_);
    std::string frame = InjectedFrame(2'000 + static_cast<uint64_t>(n));
    // The frame is queued or refused locally (EAGAIN before the connection is up): either way
    // it never reaches the worker, whose CURVE handshake fails; what counts is the connection.
    (void)plain.send(zmq::buffer(frame), zmq::send_flags::dontwait);
    auto counted = c.WaitForStatus(
        [n](const nlohmann::json& st) { return RefusedDataConnections(st) >= n; },
        Duration::Seconds(20), "worker 0 to count refused data connection " + std::to_string(n));
    ASSERT_OK(counted) << counted.status().ToString() << "\n" << c.LogExcerpts();
    EXPECT_EQ(RefusedDataConnections(*counted), n);
  }
  EXPECT_THAT(ReadFileOrEmpty(c.WorkerLog(0)),
              ::testing::HasSubstr("data connection refused peer=unknown channel=data/0/0"));

  nlohmann::json st;
  ASSERT_NO_FATAL_FAILURE(ExpectFinishedInTheFirstAttempt(&st));
  EXPECT_EQ(RefusedDataConnections(st), 3);
  ExpectReferenceOutput();
}

}  // namespace
}  // namespace keyflow::test
