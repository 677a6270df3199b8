// Regression tests for what fuzzing DecodeControlMessage found (tests/fuzz/
// control_message_fuzzer.cc): length fields that made cereal allocate tens of GiB, bytes that
// are not a bool, an unknown key type, trailing bytes. Each input is a real encoded message with
// one field patched (found by a marker value), so the tests survive new message types.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/protocol/control_messages.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

// Offset of the first occurrence of `marker` in `bytes` (which must contain it).
size_t Find(const std::string& bytes, std::string_view marker) {
  size_t at = bytes.find(marker);
  EXPECT_NE(at, std::string::npos) << "marker not in the encoding";
  return at;
}

void PutU64(std::string* bytes, size_t offset, uint64_t v) {
  ASSERT_LE(offset + 8, bytes->size());
  std::memcpy(bytes->data() + offset, &v, 8);
}

std::string U64Bytes(uint64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), 8);
}

Status DecodeStatus(const std::string& bytes) {
  return DecodeControlMessage(bytes, "peer 10.0.0.9").status();
}

// `bytes` of a message claiming to be of protocol version `version`.
std::string WithVersion(std::string bytes, uint32_t version) {
  std::memcpy(bytes.data(), &version, sizeof(version));
  return bytes;
}

// Refused as Corruption when cut short anywhere after the version, not half-read.
void ExpectEveryTruncationIsCorruption(const std::string& bytes) {
  for (size_t n = 4; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeStatus(bytes.substr(0, n)).code(), StatusCode::kCorruption) << n;
  }
}

TEST(ControlMessagesRegressionTest, RejectsAStringLengthBeyondTheMessageBeforeAllocating) {
  // Fuzzer input crash-aa5bcaea: NotifyCheckpointAborted whose reason claims 0x700000001 bytes;
  // cereal's archive resized the string to 28 GiB before reading it.
  std::string bytes =
      EncodeControlMessage(NotifyCheckpointAborted{AttemptNumber(2), CheckpointId(5), "timeout"});
  PutU64(&bytes, Find(bytes, "timeout") - 8, 0x700000001);
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("malformed control message from peer 10.0.0.9"));
  EXPECT_THAT(s.message(),
              HasSubstr("a length field claims 30064771073 elements but only 7 bytes are left"));
}

TEST(ControlMessagesRegressionTest, RejectsAVectorOfNumbersLongerThanTheMessage) {
  AcknowledgeCheckpoint ack;
  ack.keyed_state.path = "subtask-0.kgs";
  ack.keyed_state.offsets = {0x0123456789abcdefULL};
  std::string bytes = EncodeControlMessage(ack);
  PutU64(&bytes, Find(bytes, U64Bytes(0x0123456789abcdefULL)) - 8, uint64_t{1} << 40);
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("a length field claims 1099511627776 elements"));
}

TEST(ControlMessagesRegressionTest, RejectsAVectorOfStringsLongerThanTheMessage) {
  // vector<string>::resize(2^32) would have asked for 128 GiB of empty strings.
  std::string bytes = EncodeControlMessage(
      TaskDeployed{WorkerId(1), AttemptNumber(1), SubtaskIndex(0), {"tcp://marker:1"}});
  PutU64(&bytes, Find(bytes, "tcp://marker:1") - 16, uint64_t{1} << 32);
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("a length field claims 4294967296 elements"));
}

TEST(ControlMessagesRegressionTest, RejectsABoolThatIsNeitherZeroNorOne) {
  // cereal's binary archive copies the byte into the bool: undefined behaviour for 2..255.
  std::string bytes = EncodeControlMessage(CheckpointRequest{true, "/marker"});
  const size_t savepoint = Find(bytes, "/marker") - 8 - 1;
  ASSERT_EQ(bytes[savepoint], 1);
  bytes[savepoint] = 2;
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("a bool holds 2, not 0 or 1"));
}

TEST(ControlMessagesRegressionTest, RejectsAnUnknownCheckpointType) {
  std::string bytes = EncodeControlMessage(TriggerCheckpoint{
      AttemptNumber(1), CheckpointId(3), 1234, CheckpointType::kFinal, "/marker"});
  const size_t type = Find(bytes, "/marker") - 8 - 1;
  ASSERT_EQ(bytes[type], static_cast<char>(CheckpointType::kFinal));
  bytes[type] = 3;
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("the checkpoint trigger has an unknown checkpoint type 3"));
}

TEST(ControlMessagesRegressionTest, RoundTripsEveryCheckpointType) {
  for (CheckpointType t :
       {CheckpointType::kCheckpoint, CheckpointType::kSavepoint, CheckpointType::kFinal}) {
    auto decoded = DecodeControlMessage(
        EncodeControlMessage(TriggerCheckpoint{AttemptNumber(2), CheckpointId(9), 5, t, "/d"}),
        "peer");
    ASSERT_OK(decoded);
    EXPECT_EQ(std::get<TriggerCheckpoint>(*decoded).type, t) << CheckpointTypeName(t);
  }
}

TEST(ControlMessagesRegressionTest, RejectsAJobSpecWithAnUnknownKeyType) {
  JobSpec spec;
  spec.job_name = "count-window";
  spec.ts_field = "ts-marker";
  spec.key_type = KeyType::kLong;
  std::string bytes = EncodeControlMessage(SubmitJob{spec});
  const size_t key_type = Find(bytes, "ts-marker") + std::string_view("ts-marker").size();
  ASSERT_EQ(bytes[key_type], static_cast<char>(KeyType::kLong));
  bytes[key_type] = 7;
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("the job spec has an unknown key type 7"));
}

TEST(ControlMessagesRegressionTest, RejectsTrailingBytes) {
  std::string bytes = EncodeControlMessage(CoordinatorHeartbeat{AttemptNumber(4)});
  ASSERT_OK(DecodeControlMessage(bytes, "peer"));
  bytes += "xy";
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr("2 bytes after the CoordinatorHeartbeat message"));
}

TEST(ControlMessagesRegressionTest, RejectsAMessageAboveTheSizeLimit) {
  std::string bytes = EncodeControlMessage(Reply{true, "ok", ""});
  bytes.resize(kMaxControlMessageBytes + 1, 'x');
  Status s = DecodeStatus(bytes);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  // 272 MiB: a 256 MiB job library plus 16 MiB for the rest of the message.
  EXPECT_THAT(s.message(), HasSubstr("has 285212673 bytes, more than the limit of 285212672"));
}

TEST(ControlMessagesRegressionTest, RoundTripsEmptyAndFilledContainers) {
  // Empty vectors have a null data(): reading their zero bytes must not memcpy from/to null
  // (found by UBSan while fuzzing the bounded archive).
  AcknowledgeCheckpoint empty;
  AcknowledgeCheckpoint full;
  full.worker = WorkerId(7);
  full.checkpoint = CheckpointId(9);
  full.keyed_state.path = "subtask-1.kgs";
  full.keyed_state.range = KeyGroupRange::Of(64, 65);
  full.keyed_state.offsets = {16, 40};
  full.keyed_state.lengths = {24, 30};
  full.keyed_state.keys = {1, 2};
  full.keyed_state.timers = {0, 5};
  full.split_positions = {{"split-0", "120"}, {"split-1", ""}};
  full.sink_committables = {"c1", ""};
  for (const AcknowledgeCheckpoint& ack : {empty, full}) {
    const std::string bytes = EncodeControlMessage(ack);
    Result<ControlMessage> decoded = DecodeControlMessage(bytes, "peer");
    ASSERT_OK(decoded);
    ASSERT_TRUE(std::holds_alternative<AcknowledgeCheckpoint>(*decoded));
    const auto& got = std::get<AcknowledgeCheckpoint>(*decoded);
    EXPECT_EQ(got.worker, ack.worker);
    EXPECT_EQ(got.keyed_state.range, ack.keyed_state.range);
    EXPECT_EQ(got.keyed_state.offsets, ack.keyed_state.offsets);
    EXPECT_EQ(got.keyed_state.timers, ack.keyed_state.timers);
    EXPECT_EQ(got.split_positions, ack.split_positions);
    EXPECT_EQ(got.sink_committables, ack.sink_committables);
    EXPECT_EQ(EncodeControlMessage(*decoded), bytes);
  }
}

TEST(ControlMessagesRegressionTest, RoundTripsADeploymentWithARestoreAssignment) {
  DeployTask deploy;
  deploy.attempt = AttemptNumber(3);
  deploy.job_id = "count-window-1";
  deploy.spec.job_name = "count-window";
  deploy.spec.params = {{"count", "500"}};
  deploy.spec.fail_on_bad_record = true;
  deploy.spec.key_type = KeyType::kInt;
  deploy.subtask = SubtaskIndex(1);
  deploy.key_groups = KeyGroupRange::Of(64, 127);
  RestoreAssignment restore;
  restore.checkpoint = CheckpointId(2);
  restore.checkpoint_dir = "/ckpt/chk-2";
  restore.keyed_state.resize(2);
  restore.keyed_state[1].offsets = {1, 2, 3};
  deploy.restore = restore;
  deploy.cluster_id = "1764442799000-00000000deadbeef";
  deploy.source_splits = {"split-a", std::string("\0b", 2)};
  deploy.no_more_splits = false;
  const std::string bytes = EncodeControlMessage(deploy);
  Result<ControlMessage> decoded = DecodeControlMessage(bytes, "peer");
  ASSERT_OK(decoded);
  const auto& got = std::get<DeployTask>(*decoded);
  EXPECT_EQ(got.spec.params, deploy.spec.params);
  EXPECT_TRUE(got.spec.fail_on_bad_record);
  EXPECT_EQ(got.spec.key_type, KeyType::kInt);
  ASSERT_TRUE(got.restore.has_value());
  EXPECT_EQ(got.restore->keyed_state.size(), 2u);
  EXPECT_EQ(got.restore->keyed_state[1].offsets, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(got.cluster_id, "1764442799000-00000000deadbeef");
  EXPECT_EQ(got.source_splits, deploy.source_splits);
  EXPECT_FALSE(got.no_more_splits);
  EXPECT_EQ(EncodeControlMessage(*decoded), bytes);
}

TEST(ControlMessagesRegressionTest, RoundTripsTheDataPlaneKeysOfVersion5) {
  RegisterWorker reg;
  reg.hostname = "h";
  reg.public_key = std::string(40, 'a');
  DeployTask deploy;
  deploy.peer_public_keys = {std::string(40, 'b'), std::string(40, 'c')};
  WorkerHeartbeat hb;
  hb.metrics.refused_data_connections = 17;
  auto reg_back = DecodeControlMessage(EncodeControlMessage(reg), "peer");
  ASSERT_OK(reg_back);
  EXPECT_EQ(std::get<RegisterWorker>(*reg_back).public_key, reg.public_key);
  auto deploy_back = DecodeControlMessage(EncodeControlMessage(deploy), "peer");
  ASSERT_OK(deploy_back);
  EXPECT_EQ(std::get<DeployTask>(*deploy_back).peer_public_keys, deploy.peer_public_keys);
  auto hb_back = DecodeControlMessage(EncodeControlMessage(hb), "peer");
  ASSERT_OK(hb_back);
  EXPECT_EQ(std::get<WorkerHeartbeat>(*hb_back).metrics.refused_data_connections, 17);
}

TEST(ControlMessagesRegressionTest, RoundTripsTheWorkerExitReportOfVersion10) {
  const WorkerExitReport report{"host-a", 4242, 3,
                                "out of memory: the kernel's OOM killer ended it (memory limit "
                                "64 MiB of cgroup /kf, peak 63.9 MiB)"};
  const std::string bytes = EncodeControlMessage(report);
  auto back = DecodeControlMessage(bytes, "peer");
  ASSERT_OK(back);
  EXPECT_EQ(ControlMessageName(*back), "WorkerExitReport");
  const auto& got = std::get<WorkerExitReport>(*back);
  EXPECT_EQ(got.hostname, "host-a");
  EXPECT_EQ(got.pid, 4242);
  EXPECT_EQ(got.slot, 3);
  EXPECT_EQ(got.how, report.how);
  EXPECT_EQ(EncodeControlMessage(*back), bytes);
  // A version 9 peer does not know the message: it is told to upgrade.
  EXPECT_EQ(DecodeStatus(WithVersion(bytes, 9)).code(), StatusCode::kFailedPrecondition);
  // Truncated anywhere, it is refused, not half-read.
  ExpectEveryTruncationIsCorruption(bytes);
}

TEST(ControlMessagesRegressionTest, RoundTripsAddSplitsOfVersion12AndRefusesItTruncated) {
  const AddSplits add{AttemptNumber(3), SubtaskIndex(1), {"split-a", std::string(3, '\0')}};
  const std::string bytes = EncodeControlMessage(add);
  auto back = DecodeControlMessage(bytes, "peer");
  ASSERT_OK(back);
  EXPECT_EQ(ControlMessageName(*back), "AddSplits");
  const auto& got = std::get<AddSplits>(*back);
  EXPECT_EQ(got.attempt, AttemptNumber(3));
  EXPECT_EQ(got.subtask, SubtaskIndex(1));
  EXPECT_EQ(got.splits, add.splits);
  EXPECT_EQ(EncodeControlMessage(*back), bytes);
  EXPECT_EQ(DecodeStatus(WithVersion(bytes, 11)).code(), StatusCode::kFailedPrecondition);
  ExpectEveryTruncationIsCorruption(bytes);
}

TEST(ControlMessagesRegressionTest, RefusesAVersion4PeerNamingBothVersions) {
  // A v4 worker does not send its public key: it must be told to upgrade, not half-understood.
  Status s = DecodeStatus(WithVersion(EncodeControlMessage(RegisterWorker{}), 4));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("speaks control protocol version 4, this process speaks "
                                     "version " +
                                     std::to_string(kControlProtocolVersion) +
                                     ": run the same keyflow version on all hosts"));
}

}  // namespace
}  // namespace keyflow
