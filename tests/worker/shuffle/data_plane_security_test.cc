// CURVE on the data plane: an input channel that is a CURVE server admits, through the worker's
// DataPlaneAuthorizer, only the key of the worker running its source subtask. Frames from an
// unknown key or from a plain-text client never reach the gate.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/security/curve_keys.h"
#include "common/transport/zap_authenticator.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/shuffle/shuffle_test_util.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/data_plane_authorizer.h"

namespace keyflow {
namespace {

using testing::DrainUntilEndOfInput;
using testing::GateOptions;
using testing::LongKeyRecord;
using testing::RecordsOf;
using testing::WriterOptions;

ZapRequest Request(std::string domain, std::string key) {
  return ZapRequest{std::move(domain), "10.0.0.9", "CURVE", std::move(key)};
}

TEST(DataZapDomainTest, NamesReceiverAndSenderAndParsesBack) {
  EXPECT_EQ(DataZapDomain(SubtaskIndex(3), SubtaskIndex(1)), "data/3/1");
  auto parsed = ParseDataZapDomain("data/3/1");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, SubtaskIndex(3));
  EXPECT_EQ(parsed->second, SubtaskIndex(1));
  for (const char* bad : {"control", "data/", "data/1", "data/1/", "data/-1/0", "data/1/x",
                          "data/1/2/3", "data/01 /2"}) {
    EXPECT_FALSE(ParseDataZapDomain(bad).has_value()) << bad;
  }
}

class DataPlaneAuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) keys_.push_back(GenerateCurveKeyPair().value().public_key);
    ASSERT_OK(authorizer_.SetDeployment(SubtaskIndex(1), keys_));
  }
  std::vector<std::string> keys_;
  DataPlaneAuthorizer authorizer_;
};

TEST_F(DataPlaneAuthorizerTest, AdmitsOnEachChannelOnlyTheKeyOfItsSender) {
  for (int s = 0; s < 3; ++s) {
    ZapDecision d = authorizer_.Decide(
        Request(DataZapDomain(SubtaskIndex(1), SubtaskIndex(s)), keys_[static_cast<size_t>(s)]));
    EXPECT_TRUE(d.admitted) << s;
    EXPECT_EQ(d.user_id, "worker:source-" + std::to_string(s));
  }
  EXPECT_EQ(authorizer_.refused(), 0);
  // Sender 0's key on sender 2's channel: a worker cannot impersonate another source subtask.
  ZapDecision swapped = authorizer_.Decide(Request("data/1/2", keys_[0]));
  EXPECT_FALSE(swapped.admitted);
  EXPECT_EQ(swapped.reason, "the key is not that of the worker running source subtask 2");
  EXPECT_FALSE(
      authorizer_.Decide(Request("data/1/0", GenerateCurveKeyPair()->public_key)).admitted);
  EXPECT_EQ(authorizer_.Decide(Request("data/0/0", keys_[0])).reason,
            "no such channel in the current deployment");
  EXPECT_FALSE(authorizer_.Decide(Request("data/1/3", keys_[0])).admitted);
  EXPECT_EQ(authorizer_.Decide(Request("control", keys_[0])).reason, "not a data channel");
  EXPECT_EQ(authorizer_.refused(), 5);
}

TEST_F(DataPlaneAuthorizerTest, ClearAndANewDeploymentDropThePreviousKeys) {
  authorizer_.Clear();
  EXPECT_FALSE(authorizer_.Decide(Request("data/1/0", keys_[0])).admitted);
  std::vector<std::string> next = {GenerateCurveKeyPair()->public_key};
  ASSERT_OK(authorizer_.SetDeployment(SubtaskIndex(0), next));
  EXPECT_FALSE(authorizer_.Decide(Request("data/0/0", keys_[0])).admitted);
  EXPECT_TRUE(authorizer_.Decide(Request("data/0/0", next[0])).admitted);
}

TEST_F(DataPlaneAuthorizerTest, RefusesADeploymentWithoutUsableKeys) {
  Status none = authorizer_.SetDeployment(SubtaskIndex(0), {});
  EXPECT_EQ(none.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("run the coordinator with --keys too"), std::string::npos)
      << none.message();
  Status bad = authorizer_.SetDeployment(SubtaskIndex(0), {keys_[0], "short"});
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("worker running subtask 1 is unusable"), std::string::npos)
      << bad.message();
  // A failed deployment admits nobody, not the previous one's keys.
  EXPECT_FALSE(authorizer_.Decide(Request("data/1/0", keys_[0])).admitted);
}

// A secure input gate of keyed subtask 0 with one channel (from source subtask 0), on a context
// whose ZAP handler is a DataPlaneAuthorizer admitting `sender_` on that channel.
class SecureChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = ZmqContext::Create().value();
    receiver_ = GenerateCurveKeyPair().value();
    sender_ = GenerateCurveKeyPair().value();
    ASSERT_OK(authorizer_.SetDeployment(SubtaskIndex(0), {sender_.public_key}));
    zap_ = ZapAuthenticator::Start(*ctx_, authorizer_.Policy()).value();
    InputGateOptions go = GateOptions(SubtaskIndex(0), 1);
    go.curve_keys = receiver_;
    go.authorizer = &authorizer_;
    gate_ = InputGate::Create(*ctx_, go).value();
  }
  void TearDown() override {
    gate_.reset();
    zap_.reset();
  }

  RecordWriterOptions Writer(const CurveKeyPair& keys) {
    RecordWriterOptions o = WriterOptions(SubtaskIndex(0), {gate_.get()});
    o.curve_keys = keys;
    o.receiver_public_keys = {receiver_.public_key};
    o.send_timeout = Duration::Millis(500);
    return o;
  }

  // Sends records ids [from, to) and END_OF_INPUT from an admitted writer.
  void SendAdmitted(int64_t from, int64_t to) {
    auto writer = RecordWriter::Create(*ctx_, Writer(sender_)).value();
    ASSERT_OK(writer->AwaitConnections(Duration::Seconds(5)));
    for (int64_t id = from; id < to; ++id) {
      ASSERT_OK(writer->Emit(LongKeyRecord(id), Timestamp(0)));
    }
    ASSERT_OK(writer->BroadcastEvent(ChannelEvent::EndOfInput()));
    ASSERT_OK(writer->Close());
  }

  std::vector<int64_t> ReceivedIds() {
    std::vector<int64_t> ids;
    for (const Record& r : RecordsOf(DrainUntilEndOfInput(*gate_))) {
      ids.push_back(r.key.AsInt64());
    }
    return ids;
  }

  // Waits up to 5 s for the authorizer to have refused `n` handshakes.
  bool AwaitRefused(int64_t n) {
    const int64_t deadline = MonotonicMillis() + 5000;
    while (authorizer_.refused() < n && MonotonicMillis() < deadline) {
      auto ready = gate_->WaitForInput(Duration::Millis(10));  // bounded wait, consumes nothing
      EXPECT_OK(ready);
    }
    return authorizer_.refused() >= n;
  }

  std::unique_ptr<ZmqContext> ctx_;
  CurveKeyPair receiver_;
  CurveKeyPair sender_;
  DataPlaneAuthorizer authorizer_;
  std::unique_ptr<ZapAuthenticator> zap_;
  std::unique_ptr<InputGate> gate_;
};

std::vector<int64_t> Ids(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t id = from; id < to; ++id) out.push_back(id);
  return out;
}

TEST_F(SecureChannelTest, DeliversFramesFromTheAdmittedKey) {
  SendAdmitted(0, 100);
  EXPECT_EQ(ReceivedIds(), Ids(0, 100));
  EXPECT_EQ(authorizer_.refused(), 0);
  EXPECT_EQ(zap_->counts("data/0/0").admitted, 1u);
}

TEST_F(SecureChannelTest, AGateWithoutAZapHandlerCannotBeSecured) {
  auto other = ZmqContext::Create().value();
  InputGateOptions go = GateOptions(SubtaskIndex(0), 1);
  go.curve_keys = receiver_;
  auto gate = InputGate::Create(*other, go);
  EXPECT_EQ(gate.status().code(), StatusCode::kFailedPrecondition) << gate.status().ToString();
}

TEST_F(SecureChannelTest, DeliversNothingFromAnUnknownKey) {
  CurveKeyPair stranger = GenerateCurveKeyPair().value();
  auto rogue = RecordWriter::Create(*ctx_, Writer(stranger)).value();
  for (int64_t id = 1000; id < 1010; ++id) {
    ASSERT_OK(rogue->Emit(LongKeyRecord(id), Timestamp(0)));
  }
  ASSERT_TRUE(AwaitRefused(1));
  // Its handshake was refused, so it never had a connection to hand frames to.
  EXPECT_EQ(rogue->Flush().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(gate_->PollNext().value().has_value());
  // The channel still serves its real sender, and only it.
  SendAdmitted(0, 50);
  EXPECT_EQ(ReceivedIds(), Ids(0, 50));
  EXPECT_GE(zap_->counts("data/0/0").refused, 1u);
}

// A plain-text PUSH without ZMQ_IMMEDIATE queues a well-formed END_OF_INPUT and would deliver
// it the moment a handshake succeeded; against a CURVE server no handshake ever does.
TEST_F(SecureChannelTest, DeliversNothingFromAPlainTextClient) {
  zmq::socket_t plain(ctx_->context(), ZMQ_PUSH);
  plain.set(zmq::sockopt::linger, 0);
  ASSERT_EQ(zmq_socket_monitor(plain.handle(), "inproc://plain-monitor",
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                   ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED),
            0);
  zmq::socket_t monitor(ctx_->context(), ZMQ_PAIR);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect("inproc://plain-monitor");
  plain.connect(gate_->endpoint(SubtaskIndex(0)));
  std::string frame;
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::EndOfInput(), &frame);
  ASSERT_TRUE(plain.send(zmq::buffer(frame), zmq::send_flags::dontwait).has_value());

  // The first connection event of the plain client: a failed handshake or a disconnect.
  monitor.set(zmq::sockopt::rcvtimeo, 5000);
  zmq::message_t event;
  ASSERT_TRUE(monitor.recv(event).has_value()) << "no connection event within 5 s";
  uint16_t id = 0;
  std::memcpy(&id, event.data(), sizeof(id));
  EXPECT_NE(id, ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  zmq::message_t address;
  (void)monitor.recv(address);
  zmq_socket_monitor(plain.handle(), nullptr, 0);

  EXPECT_FALSE(gate_->PollNext().value().has_value());
  EXPECT_FALSE(gate_->AllFinished());
  SendAdmitted(0, 20);
  EXPECT_EQ(ReceivedIds(), Ids(0, 20));
}

// libzmq refuses a plain-text client before the ZAP policy sees it; the gate reads the failed
// handshake off the channel's monitor and counts it in the authorizer: exactly once per
// connection (these clients do not reconnect), whichever frames they queued.
TEST_F(SecureChannelTest, CountsEachPlainTextConnectionOnceAsRefused) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::EndOfInput(), &frame);
  for (int64_t n = 1; n <= 3; ++n) {
    zmq::socket_t plain(ctx_->context(), ZMQ_PUSH);
    plain.set(zmq::sockopt::linger, 0);
    plain.set(zmq::sockopt::reconnect_ivl, -1);  // one connection per client
    plain.connect(gate_->endpoint(SubtaskIndex(0)));
    ASSERT_TRUE(plain.send(zmq::buffer(frame), zmq::send_flags::dontwait).has_value());
    ASSERT_TRUE(AwaitRefused(n)) << "refused " << authorizer_.refused() << ", expected " << n;
  }
  // Nothing else arrives later: no reconnects, no double count with the policy's refusals.
  for (int i = 0; i < 20; ++i) ASSERT_OK(gate_->WaitForInput(Duration::Millis(10)));
  EXPECT_EQ(authorizer_.refused(), 3);
  EXPECT_EQ(gate_->refused_handshakes(), 3u);
  EXPECT_EQ(zap_->counts("data/0/0").refused, 0u) << "the ZAP policy never saw them";
  EXPECT_FALSE(gate_->PollNext().value().has_value());
  SendAdmitted(0, 20);
  EXPECT_EQ(ReceivedIds(), Ids(0, 20));
  EXPECT_EQ(authorizer_.refused(), 3);
}

// A CURVE client with an unknown key is refused by the policy (counted there) and its failed
// handshake (`auth`) is not counted a second time by the gate.
TEST_F(SecureChannelTest, AnUnknownKeyIsCountedOnceNotAlsoAsAFailedHandshake) {
  CurveKeyPair stranger = GenerateCurveKeyPair().value();
  zmq::socket_t rogue(ctx_->context(), ZMQ_PUSH);
  rogue.set(zmq::sockopt::linger, 0);
  rogue.set(zmq::sockopt::reconnect_ivl, -1);
  rogue.set(zmq::sockopt::curve_serverkey, receiver_.public_key);
  rogue.set(zmq::sockopt::curve_publickey, stranger.public_key);
  rogue.set(zmq::sockopt::curve_secretkey, stranger.secret_key);
  rogue.connect(gate_->endpoint(SubtaskIndex(0)));
  ASSERT_TRUE(AwaitRefused(1));
  for (int i = 0; i < 20; ++i) ASSERT_OK(gate_->WaitForInput(Duration::Millis(10)));
  EXPECT_EQ(authorizer_.refused(), 1);
  EXPECT_EQ(gate_->refused_handshakes(), 0u);
}

}  // namespace
}  // namespace keyflow
