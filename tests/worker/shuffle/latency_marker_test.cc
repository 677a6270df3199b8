// Latency markers through the shuffle (worker/README.md, "Latency"): a marker rides the pending
// batch of its channel — it leaves behind it, at the batch's size or time bound, never earlier —
// so the keyed side reaches it only after the records written before it. Malformed markers are
// dropped and counted, never fail the channel.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/transport/zmq_socket.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/shuffle/shuffle_test_util.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/record_writer.h"

namespace keyflow {
namespace {

using testing::DrainUntilEndOfInput;
using testing::LongKeyRecord;
using testing::OwnedEvent;
using testing::WriterOptions;

constexpr int64_t kMarkedUs = 1'700'000'000'123'456;

class LatencyMarkerTest : public testing::OneGateTest {
 protected:
  RecordWriter& MakeWriter(Duration batch_timeout = Duration::Millis(5)) {
    RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
    options.batch_timeout = batch_timeout;
    return OneGateTest::MakeWriter(std::move(options));
  }

  // How many records the gate delivered before each marker, and the markers' times.
  struct Seen {
    std::vector<size_t> records_before_marker;
    std::vector<int64_t> marked_us;
    size_t records = 0;
  };
  Seen DrainAndCount() {
    Seen seen;
    for (const OwnedEvent& e : DrainUntilEndOfInput(*gate_)) {
      seen.records += e.records.size();
      if (e.kind == FrameKind::kLatencyMarker) {
        seen.records_before_marker.push_back(seen.records);
        seen.marked_us.push_back(e.event.marked_time_us);
      }
    }
    return seen;
  }
};

TEST_F(LatencyMarkerTest, MarkerAfterNRecordsArrivesAfterExactlyThoseRecords) {
  RecordWriter& writer = MakeWriter();
  for (int i = 0; i < 7; ++i) ASSERT_OK(writer.Emit(LongKeyRecord(i), Timestamp(100)));
  ASSERT_OK(writer.AddLatencyMarker(kMarkedUs, Timestamp(101)));
  // The batch of 7 is due at 105 (its first record + 5 ms); the marker leaves right behind it.
  ASSERT_OK(writer.FlushIfDue(Timestamp(105)));
  for (int i = 7; i < 10; ++i) ASSERT_OK(writer.Emit(LongKeyRecord(i), Timestamp(106)));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));
  ASSERT_OK(writer.Flush());

  Seen seen = DrainAndCount();
  EXPECT_EQ(seen.records, 10u);
  EXPECT_EQ(seen.records_before_marker, std::vector<size_t>{7});
  EXPECT_EQ(seen.marked_us, std::vector<int64_t>{kMarkedUs});
}

TEST_F(LatencyMarkerTest, MarkerWaitsForItsBatchsTimeBoundLikeARecord) {
  RecordWriter& writer = MakeWriter();
  ASSERT_OK(writer.Emit(LongKeyRecord(1), Timestamp(100)));
  ASSERT_OK(writer.AddLatencyMarker(kMarkedUs, Timestamp(103)));
  // Records appended after the marker but in the same batch go before it: the marker then also
  // covers their processing (an overestimate, never an underestimate).
  ASSERT_OK(writer.Emit(LongKeyRecord(2), Timestamp(104)));
  EXPECT_EQ(writer.NextFlushDeadline(), Timestamp(105));  // the batch's bound, not the marker's
  ASSERT_OK(writer.FlushIfDue(Timestamp(104)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 0u);  // not sent early
  ASSERT_OK(writer.FlushIfDue(Timestamp(105)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 2u);  // the batch, then the marker
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).records, 2u);
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));

  Seen seen = DrainAndCount();
  EXPECT_EQ(seen.records_before_marker, std::vector<size_t>{2});
}

TEST_F(LatencyMarkerTest, MarkerOnAnEmptyChannelStartsTheTimeBound) {
  RecordWriter& writer = MakeWriter();
  EXPECT_EQ(writer.NextFlushDeadline(), kMaxWatermark);
  ASSERT_OK(writer.AddLatencyMarker(kMarkedUs, Timestamp(200)));
  EXPECT_EQ(writer.NextFlushDeadline(), Timestamp(205));
  // A record arriving meanwhile joins the same bound and goes before the marker.
  ASSERT_OK(writer.Emit(LongKeyRecord(3), Timestamp(202)));
  EXPECT_EQ(writer.NextFlushDeadline(), Timestamp(205));
  ASSERT_OK(writer.FlushIfDue(Timestamp(204)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 0u);
  ASSERT_OK(writer.FlushIfDue(Timestamp(205)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 2u);
  EXPECT_EQ(writer.NextFlushDeadline(), kMaxWatermark);
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));
  EXPECT_EQ(DrainAndCount().records_before_marker, std::vector<size_t>{1});
}

TEST_F(LatencyMarkerTest, ASecondMarkerWhileOneWaitsIsSkipped) {
  RecordWriter& writer = MakeWriter();
  ASSERT_OK(writer.AddLatencyMarker(kMarkedUs, Timestamp(10)));
  ASSERT_OK(writer.AddLatencyMarker(kMarkedUs + 1000, Timestamp(11)));
  ASSERT_OK(writer.FlushIfDue(Timestamp(15)));
  ASSERT_OK(writer.AddLatencyMarker(kMarkedUs + 2000, Timestamp(16)));
  // An event seals the pending batch and the waiting marker before it.
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));
  Seen seen = DrainAndCount();
  EXPECT_EQ(seen.marked_us, (std::vector<int64_t>{kMarkedUs, kMarkedUs + 2000}));
}

TEST_F(LatencyMarkerTest, MalformedMarkerIsDroppedAndCountedAndTheChannelGoesOn) {
  // A sender with a marker payload of the wrong size (past a good checksum) and a negative
  // time: both are dropped and counted; the frames around them arrive in order.
  SocketOptions options;
  ZmqSocket push = ZmqSocket::Create(*ctx_, SocketType::kPush, options).value();
  ASSERT_OK(push.Connect(gate_->endpoint(SubtaskIndex(0))));
  std::string frame;
  uint64_t seq = 0;
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), seq++, ChannelEvent::Watermark(Timestamp(5)),
                   &frame);
  ASSERT_OK(push.Send(frame, SendOptions{}));
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), 0, ChannelEvent::LatencyMarker(7), &frame);
  frame.resize(kFrameHeaderSize + 4);  // a 4-byte payload instead of 8
  SealFrame(FrameHeader{FrameKind::kLatencyMarker, SubtaskIndex(0), AttemptNumber(1), seq++},
            &frame);
  ASSERT_OK(push.Send(frame, SendOptions{}));
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), seq++, ChannelEvent::LatencyMarker(-1),
                   &frame);
  ASSERT_OK(push.Send(frame, SendOptions{}));
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), seq++, ChannelEvent::LatencyMarker(kMarkedUs),
                   &frame);
  ASSERT_OK(push.Send(frame, SendOptions{}));
  EncodeEventFrame(SubtaskIndex(0), AttemptNumber(1), seq++, ChannelEvent::EndOfInput(), &frame);
  ASSERT_OK(push.Send(frame, SendOptions{}));

  std::vector<OwnedEvent> events = DrainUntilEndOfInput(*gate_);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, FrameKind::kWatermark);
  EXPECT_EQ(events[1].kind, FrameKind::kLatencyMarker);
  EXPECT_EQ(events[1].event.marked_time_us, kMarkedUs);
  EXPECT_EQ(events[2].kind, FrameKind::kEndOfInput);
  EXPECT_EQ(gate_->dropped_frames(), 2u);
  EXPECT_EQ(gate_->metrics(SubtaskIndex(0)).decode_errors, 0u);
}

}  // namespace
}  // namespace keyflow
