#include "worker/shuffle/record_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

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

// Encoded size of LongKeyRecord(id) with an empty payload: 1 + 8 + 1 + 8 + 1 (key group < 128).
constexpr size_t kLongRecordBytes = 19;
constexpr size_t kEmptyBatchBytes = kFrameHeaderSize + 4;

// Calls `fn` again while it reports backpressure (DeadlineExceeded), as a source loop would.
template <typename Fn>
Status RetryWhileBackpressured(Fn fn) {
  Status s;
  do {
    s = fn();
  } while (s.code() == StatusCode::kDeadlineExceeded);
  return s;
}

class RecordWriterTest : public testing::OneGateTest {};

TEST_F(RecordWriterTest, SealsABatchWhenItReachesTheSizeBound) {
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.batch_size_bytes = kEmptyBatchBytes + 10 * kLongRecordBytes;
  options.batch_timeout = Duration::Seconds(3600);
  RecordWriter& writer = MakeWriter(options);
  for (int i = 0; i < 9; ++i) ASSERT_OK(writer.Emit(LongKeyRecord(i), Timestamp(0)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 0u);
  ASSERT_OK(writer.Emit(LongKeyRecord(9), Timestamp(0)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 1u);
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).records, 10u);
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).bytes, kEmptyBatchBytes + 10 * kLongRecordBytes);

  auto event = gate_->Next(Duration::Seconds(5));
  ASSERT_TRUE(event.ok() && event->has_value());
  EXPECT_EQ((*event)->kind, FrameKind::kRecords);
  ASSERT_EQ((*event)->records.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ((*event)->records[i].ToRecord(), LongKeyRecord(i));
}

TEST_F(RecordWriterTest, SealsABatchWhenItsTimeBoundPasses) {
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.batch_timeout = Duration::Millis(5);
  RecordWriter& writer = MakeWriter(options);
  EXPECT_EQ(writer.NextFlushDeadline(), kMaxWatermark);
  ASSERT_OK(writer.Emit(LongKeyRecord(1), Timestamp(100)));
  ASSERT_OK(writer.Emit(LongKeyRecord(2), Timestamp(103)));  // deadline stays 105
  EXPECT_EQ(writer.NextFlushDeadline(), Timestamp(105));
  ASSERT_OK(writer.FlushIfDue(Timestamp(104)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 0u);
  ASSERT_OK(writer.FlushIfDue(Timestamp(105)));
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).frames, 1u);
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).records, 2u);
  EXPECT_EQ(writer.NextFlushDeadline(), kMaxWatermark);
  // The next batch starts its own time bound.
  ASSERT_OK(writer.Emit(LongKeyRecord(3), Timestamp(200)));
  EXPECT_EQ(writer.NextFlushDeadline(), Timestamp(205));
}

TEST_F(RecordWriterTest, EventsGoOutAfterThePendingRecordsInOrder) {
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  RecordWriter& writer = MakeWriter(options);
  for (int i = 0; i < 3; ++i) ASSERT_OK(writer.Emit(LongKeyRecord(i), Timestamp(0)));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::Watermark(Timestamp(10))));
  for (int i = 3; i < 5; ++i) ASSERT_OK(writer.Emit(LongKeyRecord(i), Timestamp(0)));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::Barrier(CheckpointId(1), Timestamp(7))));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::Idle()));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));
  ASSERT_OK(writer.Close());

  std::vector<OwnedEvent> events = DrainUntilEndOfInput(*gate_);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].kind, FrameKind::kRecords);
  EXPECT_EQ(events[0].records,
            (std::vector<Record>{LongKeyRecord(0), LongKeyRecord(1), LongKeyRecord(2)}));
  EXPECT_EQ(events[1].event, ChannelEvent::Watermark(Timestamp(10)));
  EXPECT_EQ(events[2].records, (std::vector<Record>{LongKeyRecord(3), LongKeyRecord(4)}));
  EXPECT_EQ(events[3].event, ChannelEvent::Barrier(CheckpointId(1), Timestamp(7)));
  EXPECT_EQ(events[4].event, ChannelEvent::Idle());
  EXPECT_EQ(events[5].event, ChannelEvent::EndOfInput());
  for (const OwnedEvent& e : events) EXPECT_EQ(e.channel, SubtaskIndex(0));
}

TEST_F(RecordWriterTest, SlowReceiverBlocksEmitWithBoundedMemoryAndLosesNothing) {
  // Small queues everywhere so that backpressure reaches Emit quickly.
  gate_.reset();
  InputGateOptions gate_options = GateOptions(SubtaskIndex(0), 1);
  gate_options.receive_high_water_mark = 2;
  gate_options.kernel_receive_buffer_bytes = 64 * 1024;
  gate_ = InputGate::Create(*ctx_, gate_options).value();
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.send_high_water_mark = 2;
  options.kernel_send_buffer_bytes = 64 * 1024;
  options.send_timeout = Duration::Millis(200);
  RecordWriter& writer = MakeWriter(options);

  const std::string payload(1000, 'p');
  constexpr int kTotal = 5000;  // ~5 MB: far more than all queues and buffers together
  int accepted = 0;
  Status blocked;
  int64_t blocked_for = 0;
  while (accepted < kTotal) {
    int64_t start = MonotonicMillis();
    blocked = writer.Emit(LongKeyRecord(accepted, Timestamp(accepted), payload), Timestamp(0));
    if (!blocked.ok()) {
      blocked_for = MonotonicMillis() - start;
      break;
    }
    ++accepted;
  }
  ASSERT_EQ(blocked.code(), StatusCode::kDeadlineExceeded) << blocked.ToString();
  EXPECT_NE(blocked.message().find("backpressure"), std::string::npos) << blocked.message();
  EXPECT_GE(blocked_for, 200);
  EXPECT_LT(blocked_for, 2000);
  EXPECT_TRUE(writer.backpressured());
  EXPECT_EQ(writer.NextFlushDeadline(), kMinWatermark);
  EXPECT_EQ(writer.metrics(SubtaskIndex(0)).send_timeouts, 1u);
  EXPECT_GE(writer.metrics(SubtaskIndex(0)).backpressured_millis, 200);
  // Bounded: what the writer accepted fits in the queues, the socket buffers and one batch.
  EXPECT_LT(accepted, 1500) << "the writer kept accepting records from a receiver that reads "
                               "nothing";

  // The receiver starts reading; the rejected record is retried and everything arrives.
  std::vector<OwnedEvent> events;
  std::thread receiver([&] { events = DrainUntilEndOfInput(*gate_); });
  Status s;
  for (int i = accepted; i < kTotal && s.ok(); ++i) {
    s = RetryWhileBackpressured(
        [&] { return writer.Emit(LongKeyRecord(i, Timestamp(i), payload), Timestamp(0)); });
  }
  if (s.ok()) {
    s = RetryWhileBackpressured([&] { return writer.BroadcastEvent(ChannelEvent::EndOfInput()); });
  }
  if (s.ok()) s = RetryWhileBackpressured([&] { return writer.Flush(); });
  if (s.ok()) s = writer.Close();
  receiver.join();
  ASSERT_OK(s);
  std::vector<Record> received = RecordsOf(events);
  ASSERT_EQ(received.size(), static_cast<size_t>(kTotal));
  for (int i = 0; i < kTotal; ++i) {
    ASSERT_EQ(received[i], LongKeyRecord(i, Timestamp(i), payload)) << i;
  }
}

TEST_F(RecordWriterTest, ReceiverThatWentAwayMakesTheSenderFailUnavailableWithinItsTimeout) {
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.send_timeout = Duration::Millis(300);
  options.batch_size_bytes = 1024;
  RecordWriter& writer = MakeWriter(options);
  gate_.reset();  // the keyed subtask dies: its sockets close

  const int64_t start = MonotonicMillis();
  Status s;
  int64_t failed_call_took = 0;
  for (int i = 0; i < 1000000 && s.ok(); ++i) {
    int64_t t = MonotonicMillis();
    s = writer.Emit(LongKeyRecord(i), Timestamp(0));
    failed_call_took = MonotonicMillis() - t;
    ASSERT_LT(MonotonicMillis() - start, 10000) << "sender hangs on a dead receiver";
  }
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("no connected receiver"), std::string::npos) << s.message();
  EXPECT_LT(failed_call_took, 300 + 1000);
  // Sticky: the writer is failed.
  EXPECT_EQ(writer.Emit(LongKeyRecord(0), Timestamp(0)), s);
  EXPECT_EQ(writer.BroadcastEvent(ChannelEvent::EndOfInput()), s);
}

TEST_F(RecordWriterTest, CancellationEndsAWaitLongBeforeTheSendTimeout) {
  gate_.reset();
  InputGateOptions gate_options = GateOptions(SubtaskIndex(0), 1);
  gate_options.receive_high_water_mark = 1;
  gate_ = InputGate::Create(*ctx_, gate_options).value();
  std::atomic<bool> cancelled{false};
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.send_high_water_mark = 1;
  options.send_timeout = Duration::Seconds(60);
  options.cancelled = &cancelled;
  RecordWriter& writer = MakeWriter(options);
  cancelled.store(true);  // e.g. the task is cancelled while the receiver reads nothing
  const std::string payload(1000, 'p');
  const int64_t start = MonotonicMillis();
  Status s;
  for (int i = 0; i < 1000000 && s.ok(); ++i) {
    s = writer.Emit(LongKeyRecord(i, Timestamp(0), payload), Timestamp(0));
  }
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_LT(MonotonicMillis() - start, 5000);
}

TEST_F(RecordWriterTest, AwaitConnectionsNamesTheMissingReceiver) {
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  const std::string endpoint = testing::UnusedTcpEndpoint();
  options.receiver_endpoints = {endpoint};
  auto writer = RecordWriter::Create(*ctx_, options).value();
  Status s = writer->AwaitConnections(Duration::Millis(100));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("channel from source subtask 0 to keyed subtask 0 (" + endpoint + ")"),
            std::string::npos)
      << s.message();
}

TEST_F(RecordWriterTest, RejectsInvalidOptions) {
  RecordWriterOptions options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.max_parallelism = 0;
  EXPECT_EQ(RecordWriter::Create(*ctx_, options).status().code(), StatusCode::kInvalidArgument);
  options = WriterOptions(SubtaskIndex(0), {});
  EXPECT_EQ(RecordWriter::Create(*ctx_, options).status().code(), StatusCode::kInvalidArgument);
  options = WriterOptions(SubtaskIndex(0), {gate_.get()});
  options.batch_size_bytes = 10;
  EXPECT_EQ(RecordWriter::Create(*ctx_, options).status().code(), StatusCode::kInvalidArgument);
  options.batch_size_bytes = kMaxBatchSizeBytes + 1;
  Status too_big = RecordWriter::Create(*ctx_, options).status();
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_big.message(),
            "batch size 1048577 bytes is above the data plane's limit of "
            "1048576 bytes: choose a smaller one");
}

// Receivers refuse frames above kMaxDataFrameBytes (ZMQ_MAXMSGSIZE), so the writer refuses a
// record that would make one, with the limit in the message, and stays usable.
TEST_F(RecordWriterTest, RefusesARecordAboveTheDataPlaneLimitAndStaysUsable) {
  RecordWriter& writer = MakeWriter(WriterOptions(SubtaskIndex(0), {gate_.get()}));
  Record huge = LongKeyRecord(1, Timestamp(0), std::string(kMaxRecordBytes - 7, 'x'));  // +8 key
  Status s = writer.Emit(huge, Timestamp(0));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message(), "a record of key group " + std::to_string(huge.key_group.value()) +
                             " has 67108865 bytes of key, payload and fields, above the data "
                             "plane's limit of 67108864 bytes per record: split such input "
                             "records");
  huge.payload.pop_back();  // exactly at the limit: goes through
  ASSERT_OK(writer.Emit(huge, Timestamp(0)));
  ASSERT_OK(writer.BroadcastEvent(ChannelEvent::EndOfInput()));
  ASSERT_OK(writer.Flush());
  auto events = DrainUntilEndOfInput(*gate_);
  ASSERT_EQ(RecordsOf(events).size(), 1u);
  EXPECT_EQ(RecordsOf(events)[0].payload.size(), kMaxRecordBytes - 8);
}

}  // namespace
}  // namespace keyflow
