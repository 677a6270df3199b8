#include "worker/shuffle/input_gate.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/transport/endpoint.h"
#include "common/transport/zmq_socket.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/shuffle/shuffle_test_util.h"

namespace keyflow {
namespace {

using testing::DrainUntilEndOfInput;
using testing::GateOptions;
using testing::LongKeyRecord;
using testing::OwnedEvent;
using testing::RecordsOf;
using testing::WriterOptions;

class InputGateTest : public ::testing::Test {
 protected:
  void SetUp() override { ctx_ = ZmqContext::Create().value(); }
  void TearDown() override {
    raw_.clear();
    writers_.clear();
    gate_.reset();
  }

  InputGate& MakeGate(InputGateOptions options) {
    gate_ = InputGate::Create(*ctx_, options).value();
    return *gate_;
  }
  RecordWriter& MakeWriter(RecordWriterOptions options) {
    writers_.push_back(RecordWriter::Create(*ctx_, std::move(options)).value());
    EXPECT_OK(writers_.back()->AwaitConnections(Duration::Seconds(5)));
    return *writers_.back();
  }
  // A bare PUSH socket connected to channel `channel`, for hand-made frames.
  ZmqSocket& RawSender(SubtaskIndex channel) {
    raw_.push_back(ZmqSocket::Create(*ctx_, SocketType::kPush).value());
    EXPECT_OK(raw_.back().Connect(gate_->endpoint(channel)));
    return raw_.back();
  }
  // Waits for the next event; fails the test on error or silence.
  std::optional<InputEvent> NextEvent() {
    auto next = gate_->Next(Duration::Seconds(5));
    EXPECT_OK(next);
    return next.ok() ? *next : std::nullopt;
  }
  // Waits for the next poll outcome that is not "nothing yet": an event or an error.
  Status NextError() {
    auto next = gate_->Next(Duration::Seconds(5));
    if (next.ok()) return Internal(next->has_value() ? "got an event" : "timed out");
    return next.status();
  }

  std::unique_ptr<ZmqContext> ctx_;
  std::unique_ptr<InputGate> gate_;
  std::vector<std::unique_ptr<RecordWriter>> writers_;
  std::vector<ZmqSocket> raw_;
};

std::string EventFrame(SubtaskIndex sender, AttemptNumber attempt, uint64_t sequence,
                       const ChannelEvent& e) {
  std::string frame;
  EncodeEventFrame(sender, attempt, sequence, e, &frame);
  return frame;
}

Status SendEventFrame(ZmqSocket& socket, SubtaskIndex sender, AttemptNumber attempt,
                      uint64_t sequence, const ChannelEvent& e) {
  return socket.Send(EventFrame(sender, attempt, sequence, e), SendOptions{});
}

TEST_F(InputGateTest, ChannelsBindTheBindHostAndAdvertiseTheAdvertisedHost) {
  InputGateOptions options = GateOptions(SubtaskIndex(1), 3);
  options.bind_host = "0.0.0.0";
  options.advertised_host = "10.0.0.2";
  InputGate& gate = MakeGate(options);
  ASSERT_EQ(gate.num_channels(), 3);
  std::vector<uint16_t> ports;
  for (const std::string& endpoint : gate.endpoints()) {
    TcpEndpoint e = ParseTcpEndpoint(endpoint).value();
    EXPECT_EQ(e.host, "10.0.0.2");
    EXPECT_GT(e.port, 0);
    ports.push_back(e.port);
  }
  EXPECT_NE(ports[0], ports[1]);
  EXPECT_NE(ports[1], ports[2]);
  EXPECT_EQ(gate.endpoint(SubtaskIndex(2)), gate.endpoints()[2]);
}

TEST_F(InputGateTest, BlockedChannelStopsDeliveryFromThatChannelOnly) {
  ManualClock clock;
  InputGateOptions options = GateOptions(SubtaskIndex(0), 2);
  options.clock = &clock;
  InputGate& gate = MakeGate(options);
  RecordWriter& w0 = MakeWriter(WriterOptions(SubtaskIndex(0), {&gate}));
  RecordWriter& w1 = MakeWriter(WriterOptions(SubtaskIndex(1), {&gate}));

  // Channel 0 delivers its barrier; alignment blocks it.
  ASSERT_OK(w0.BroadcastEvent(ChannelEvent::Barrier(CheckpointId(1), Timestamp(0))));
  auto barrier = NextEvent();
  ASSERT_TRUE(barrier.has_value());
  EXPECT_EQ(barrier->channel, SubtaskIndex(0));
  clock.Set(Timestamp(1000));
  gate.BlockChannel(SubtaskIndex(0));
  EXPECT_TRUE(gate.IsBlocked(SubtaskIndex(0)));
  EXPECT_FALSE(gate.IsBlocked(SubtaskIndex(1)));

  // Post-barrier records on channel 0 must wait; channel 1 keeps flowing.
  ASSERT_OK(w0.Emit(LongKeyRecord(100), Timestamp(0)));
  ASSERT_OK(w0.BroadcastEvent(ChannelEvent::EndOfInput()));
  ASSERT_OK(w0.Flush());
  ASSERT_OK(w1.Emit(LongKeyRecord(200), Timestamp(0)));
  ASSERT_OK(w1.BroadcastEvent(ChannelEvent::Barrier(CheckpointId(1), Timestamp(0))));
  ASSERT_OK(w1.BroadcastEvent(ChannelEvent::EndOfInput()));
  std::vector<OwnedEvent> seen;
  for (int i = 0; i < 3; ++i) {
    auto e = NextEvent();
    ASSERT_TRUE(e.has_value());
    seen.push_back(testing::Own(*e));
  }
  for (const OwnedEvent& e : seen) EXPECT_EQ(e.channel, SubtaskIndex(1));
  EXPECT_EQ(seen[0].records, std::vector<Record>{LongKeyRecord(200)});
  EXPECT_EQ(seen[1].event.kind, FrameKind::kBarrier);
  EXPECT_EQ(seen[2].event.kind, FrameKind::kEndOfInput);
  // Nothing from the blocked channel, however long we wait for it.
  auto none = gate.Next(Duration::Millis(200));
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(gate.WaitForInput(Duration::Millis(50)).value().input);

  clock.Set(Timestamp(1250));
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).blocked_millis, 250);
  clock.Set(Timestamp(1300));
  gate.UnblockAll();
  clock.Set(Timestamp(5000));
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).blocked_millis, 300);
  EXPECT_EQ(gate.metrics(SubtaskIndex(1)).blocked_millis, 0);

  std::vector<OwnedEvent> rest = DrainUntilEndOfInput(gate);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].channel, SubtaskIndex(0));
  EXPECT_EQ(rest[0].records, std::vector<Record>{LongKeyRecord(100)});
  EXPECT_EQ(rest[1].event.kind, FrameKind::kEndOfInput);
  EXPECT_TRUE(gate.AllFinished());
}

TEST_F(InputGateTest, FramesOfAnOlderAttemptAreDroppedAndCounted) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1, AttemptNumber(2)));
  ZmqSocket& old_sender = RawSender(SubtaskIndex(0));
  for (uint64_t seq = 0; seq < 3; ++seq) {
    ASSERT_OK(SendEventFrame(old_sender, SubtaskIndex(0), AttemptNumber(1), seq,
                             ChannelEvent::Watermark(Timestamp(seq))));
  }
  // The current attempt starts its own sequence at 0.
  RecordWriter& writer = MakeWriter(WriterOptions(SubtaskIndex(0), {&gate}, AttemptNumber(2)));
  ASSERT_OK(writer.Emit(LongKeyRecord(1), Timestamp(0)));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));
  ASSERT_OK(writer.Close());
  // The stale frames come on their own connection, interleaved with the current ones in any
  // order; none of them may be delivered or disturb the current attempt's sequence.
  std::vector<OwnedEvent> events = DrainUntilEndOfInput(gate);
  EXPECT_EQ(RecordsOf(events), std::vector<Record>{LongKeyRecord(1)});
  for (const OwnedEvent& e : events) EXPECT_NE(e.kind, FrameKind::kWatermark);
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).decode_errors, 0u);
}

TEST_F(InputGateTest, StaleFramesAreCountedBeforeTheCurrentAttemptsFrames) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1, AttemptNumber(2)));
  ZmqSocket& sender = RawSender(SubtaskIndex(0));
  // One connection, so frames arrive in the order sent.
  ASSERT_OK(SendEventFrame(sender, SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::Idle()));
  ASSERT_OK(SendEventFrame(sender, SubtaskIndex(0), AttemptNumber(1), 1, ChannelEvent::Active()));
  ASSERT_OK(SendEventFrame(sender, SubtaskIndex(0), AttemptNumber(2), 0,
                           ChannelEvent::Watermark(Timestamp(5))));
  auto e = NextEvent();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->event, ChannelEvent::Watermark(Timestamp(5)));
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).stale_frames, 2u);
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).frames, 1u);
}

TEST_F(InputGateTest, FrameOfANewerAttemptMeansThisSubtaskIsBehind) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1, AttemptNumber(2)));
  ASSERT_OK(SendEventFrame(RawSender(SubtaskIndex(0)), SubtaskIndex(0), AttemptNumber(3), 0,
                           ChannelEvent::Idle()));
  Status s = NextError();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("frame from attempt 3 but this subtask runs attempt 2"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).decode_errors, 1u);
}

TEST_F(InputGateTest, SequenceGapIsReportedAsLostFrames) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1));
  ZmqSocket& sender = RawSender(SubtaskIndex(0));
  ASSERT_OK(SendEventFrame(sender, SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::Idle()));
  ASSERT_OK(SendEventFrame(sender, SubtaskIndex(0), AttemptNumber(1), 3, ChannelEvent::Active()));
  ASSERT_TRUE(NextEvent().has_value());
  Status s = NextError();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.message(), "channel from source subtask 0 to keyed subtask 0 (" +
                             gate.endpoint(SubtaskIndex(0)) +
                             "): frames 1..2 were lost (the connection was interrupted); the job "
                             "must restart from its last checkpoint");
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).decode_errors, 1u);
}

TEST_F(InputGateTest, FrameFromTheWrongSenderIsRejected) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 2));
  ASSERT_OK(SendEventFrame(RawSender(SubtaskIndex(0)), SubtaskIndex(1), AttemptNumber(1), 0,
                           ChannelEvent::Idle()));
  Status s = NextError();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("frame claims to come from source subtask 1"), std::string::npos)
      << s.message();
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).decode_errors, 1u);
  EXPECT_EQ(gate.metrics(SubtaskIndex(1)).decode_errors, 0u);
}

// Bytes that are not a keyflow frame — another program writing to the port, a frame damaged on
// the way — are dropped and counted; the job is not touched.
TEST_F(InputGateTest, GarbageAndDamagedFramesAreDroppedAndCountedWithoutFailing) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(4), 1));
  ZmqSocket& sender = RawSender(SubtaskIndex(0));
  std::string good = EventFrame(SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::Idle());
  std::string bad_checksum = good;
  bad_checksum[kFrameChecksumOffset] ^= 0x01;
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  std::string other_version = good;
  other_version[4] = 99;
  std::string bad_length = good + "extra";
  for (const std::string& junk : {std::string("hello"), std::string(1024, '\xa5'), bad_checksum,
                                  bad_magic, other_version, bad_length, std::string()}) {
    ASSERT_OK(sender.Send(junk, SendOptions{}));
  }
  ASSERT_OK(sender.Send(good, SendOptions{}));
  auto e = NextEvent();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->event, ChannelEvent::Idle());
  InputChannelMetrics m = gate.metrics(SubtaskIndex(0));
  EXPECT_EQ(m.dropped_frames, 7u);
  EXPECT_EQ(m.decode_errors, 0u);
  EXPECT_EQ(m.frames, 1u);
}

// A real sender's frame that arrives damaged is dropped like junk, but the sequence number of
// the next good frame shows the gap: the attempt fails as for a lost frame.
TEST_F(InputGateTest, ADamagedFrameOfTheSenderFailsAtTheNextGoodFrameAsLost) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1));
  std::string damaged =
      EventFrame(SubtaskIndex(0), AttemptNumber(1), 1, ChannelEvent::Watermark(Timestamp(7)));
  damaged[kFrameHeaderSize + 2] ^= 0x40;  // a payload bit
  ZmqSocket& sender = RawSender(SubtaskIndex(0));
  for (const std::string& frame :
       {EventFrame(SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::Idle()), damaged,
        EventFrame(SubtaskIndex(0), AttemptNumber(1), 2, ChannelEvent::Active())}) {
    ASSERT_OK(sender.Send(frame, SendOptions{}));
  }
  ASSERT_TRUE(NextEvent().has_value());
  Status s = NextError();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.message(), "channel from source subtask 0 to keyed subtask 0 (" +
                             gate.endpoint(SubtaskIndex(0)) +
                             "): frames 1..1 were lost (the connection was interrupted); the job "
                             "must restart from its last checkpoint");
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).dropped_frames, 1u);
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).decode_errors, 1u);
}

// Many junk frames in a row: each poll gives up after a bounded number of drops, so the task
// thread gets back to its mailbox; the good frame behind them still arrives.
TEST_F(InputGateTest, AJunkFloodIsDrainedInBoundedStepsAndTheGoodFrameStillArrives) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1));
  ZmqSocket& sender = RawSender(SubtaskIndex(0));
  const int junk = 3 * InputChannel::kMaxDropsPerReceive + 5;
  for (int i = 0; i < junk; ++i) ASSERT_OK(sender.Send("junk", SendOptions{}));
  ASSERT_OK(SendEventFrame(sender, SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::Idle()));
  auto e = NextEvent();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->event, ChannelEvent::Idle());
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).dropped_frames, static_cast<uint64_t>(junk));
}

// A frame above max_frame_bytes never reaches the gate: ZeroMQ drops the connection that sent
// it. A well-behaved connection is served as before.
TEST_F(InputGateTest, AFrameAboveTheSizeLimitIsRefusedByZeroMqAndOthersAreServed) {
  InputGateOptions options = GateOptions(SubtaskIndex(0), 1);
  options.max_frame_bytes = 1024;
  InputGate& gate = MakeGate(options);
  ZmqSocket& big = RawSender(SubtaskIndex(0));
  std::string oversized(kFrameHeaderSize + 2000, '\0');
  SealFrame(FrameHeader{FrameKind::kEndOfInput, SubtaskIndex(0), AttemptNumber(1), 0}, &oversized);
  ASSERT_OK(big.Send(oversized, SendOptions{}));
  ZmqSocket& good = RawSender(SubtaskIndex(0));
  ASSERT_OK(SendEventFrame(good, SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::Idle()));
  auto e = NextEvent();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->event, ChannelEvent::Idle());
  auto nothing = gate.Next(Duration::Millis(200));
  ASSERT_OK(nothing);
  EXPECT_FALSE(nothing->has_value()) << "the oversized frame must not be delivered";
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).dropped_frames, 0u);
  EXPECT_EQ(gate.metrics(SubtaskIndex(0)).frames, 1u);
}

TEST_F(InputGateTest, RecordOfAForeignKeyGroupIsRejected) {
  InputGateOptions options = GateOptions(SubtaskIndex(0), 1);
  options.key_groups = KeyGroupRange::Of(0, 63);
  InputGate& gate = MakeGate(options);
  // A writer that believes there is a single keyed subtask sends key group 100 here.
  RecordWriter& writer = MakeWriter(WriterOptions(SubtaskIndex(0), {&gate}));
  ASSERT_TRUE(
      writer.Emit(Record{Key::FromBytes("k"), KeyGroupId(100), Timestamp(0), ""}, Timestamp(0))
          .ok());
  ASSERT_OK(writer.Flush());
  Status s = NextError();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("record of key group 100 arrived at keyed subtask 0, which owns "
                             "KeyGroupRange{start=0, end=63}"),
            std::string::npos)
      << s.message();
}

TEST_F(InputGateTest, WaitForInputWakesForTheExtraFdInputOrTimeout) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 1));
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(fd, 0);

  int64_t start = MonotonicMillis();
  InputAvailability idle = gate.WaitForInput(Duration::Millis(50), fd).value();
  EXPECT_FALSE(idle.input);
  EXPECT_FALSE(idle.extra_fd);
  EXPECT_GE(MonotonicMillis() - start, 50);

  uint64_t one = 1;
  ASSERT_EQ(write(fd, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  start = MonotonicMillis();
  InputAvailability mail = gate.WaitForInput(Duration::Seconds(10), fd).value();
  EXPECT_TRUE(mail.extra_fd);
  EXPECT_FALSE(mail.input);
  EXPECT_LT(MonotonicMillis() - start, 5000);
  uint64_t drained;
  ASSERT_EQ(read(fd, &drained, sizeof(drained)), static_cast<ssize_t>(sizeof(drained)));

  ASSERT_OK(SendEventFrame(RawSender(SubtaskIndex(0)), SubtaskIndex(0), AttemptNumber(1), 0,
                           ChannelEvent::Idle()));
  InputAvailability input = gate.WaitForInput(Duration::Seconds(10), fd).value();
  EXPECT_TRUE(input.input);
  EXPECT_FALSE(input.extra_fd);
  auto e = gate.PollNext().value();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->event, ChannelEvent::Idle());
  close(fd);
}

TEST_F(InputGateTest, PollNextReturnsNothingWhenNoFrameIsPending) {
  InputGate& gate = MakeGate(GateOptions(SubtaskIndex(0), 2));
  auto e = gate.PollNext();
  ASSERT_OK(e);
  EXPECT_FALSE(e->has_value());
  EXPECT_FALSE(gate.AllFinished());
}

}  // namespace
}  // namespace keyflow
