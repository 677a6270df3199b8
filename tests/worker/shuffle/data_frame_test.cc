#include "worker/shuffle/data_frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/hashing.h"
#include "tests/testutil/status_matchers.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow {
namespace {

constexpr std::string_view kChannel = "channel from source subtask 3 to keyed subtask 0";

std::vector<ChannelEvent> AllEvents() {
  return {ChannelEvent::Watermark(Timestamp(123)),
          ChannelEvent::Watermark(kMinWatermark),
          ChannelEvent::Watermark(kMaxWatermark),
          ChannelEvent::Idle(),
          ChannelEvent::Active(),
          ChannelEvent::Barrier(CheckpointId(7), Timestamp(1700000000000)),
          ChannelEvent::CancelBarrier(CheckpointId(9)),
          ChannelEvent::EndOfInput(),
          ChannelEvent::LatencyMarker(1'700'000'000'123'456)};
}

std::vector<Record> SampleRecords() {
  return {
      Record{Key::FromBytes("user-0000001"), KeyGroupId(0), Timestamp(1), ""},
      Record{Key::FromBytes(std::string(40, 'k')), KeyGroupId(32767), kMaxWatermark,
             std::string(1000, 'p')},
      Record{Key::FromBytes(""), KeyGroupId(127), kMinWatermark, "{\"uid\":\"x\"}"},
      Record{Key::FromInt64(-5), KeyGroupId(64), Timestamp(-42), std::string("\0\1\2", 3)},
  };
}

std::string RecordsFrame(const std::vector<Record>& records, uint64_t sequence = 0) {
  RecordBatchBuilder builder;
  for (const Record& r : records) builder.Append(r);
  std::string frame;
  builder.FinishInto(SubtaskIndex(3), AttemptNumber(5), sequence, &frame);
  return frame;
}

// Recomputes the checksum, so a test can reach the checks behind it.
void Reseal(std::string* frame) {
  uint64_t c = Checksum64(std::string_view(*frame).substr(kFrameChecksummedFrom));
  std::memcpy(frame->data() + kFrameChecksumOffset, &c, sizeof(c));
}

// Full decode of a frame, as InputChannel does it: OK only if every part is valid.
Status DecodeAll(std::string_view frame) {
  auto decoded = DecodeFrame(frame, kChannel);
  if (!decoded.ok()) return decoded.status();
  if (decoded->header.kind == FrameKind::kRecords) {
    std::vector<RecordView> views;
    return DecodeRecordBatch(decoded->payload, kChannel, &views);
  }
  return DecodeChannelEvent(*decoded, kChannel).status();
}

TEST(DataFrame, EveryEventKindRoundTrips) {
  for (const ChannelEvent& e : AllEvents()) {
    std::string frame;
    EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 42, e, &frame);
    auto decoded = DecodeFrame(frame, kChannel);
    ASSERT_OK(decoded);
    EXPECT_EQ(decoded->header.kind, e.kind);
    EXPECT_EQ(decoded->header.sender, SubtaskIndex(3));
    EXPECT_EQ(decoded->header.attempt, AttemptNumber(5));
    EXPECT_EQ(decoded->header.sequence, 42u);
    auto event = DecodeChannelEvent(*decoded, kChannel);
    ASSERT_OK(event);
    EXPECT_EQ(*event, e) << FrameKindName(e.kind);
  }
}

TEST(DataFrame, RecordBatchRoundTrips) {
  const std::vector<Record> records = SampleRecords();
  std::string frame = RecordsFrame(records, 17);
  auto decoded = DecodeFrame(frame, kChannel);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->header.kind, FrameKind::kRecords);
  EXPECT_EQ(decoded->header.sequence, 17u);
  std::vector<RecordView> views;
  ASSERT_OK(DecodeRecordBatch(decoded->payload, kChannel, &views));
  ASSERT_EQ(views.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(views[i].ToRecord(), records[i]) << i;
}

TEST(DataFrame, HeaderBytesFollowTheDocumentedLayout) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(2), AttemptNumber(0x0102030405060708), 0x1122334455667788,
                   ChannelEvent::Watermark(Timestamp(1000)), &frame);
  ASSERT_EQ(frame.size(), kFrameHeaderSize + 8);
  const std::string expected_without_checksum = std::string("KFDP") +         // magic
                                                std::string("\x03\x00", 2) +  // version 3
                                                std::string("\x00\x00", 2);   // reserved
  EXPECT_EQ(frame.substr(0, 8), expected_without_checksum);
  const std::string rest = std::string("\x02\x00\x00\x00", 4) +  // kind WATERMARK + pad
                           std::string("\x02\x00\x00\x00", 4) +  // sender 2
                           std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8) +  // attempt
                           std::string("\x88\x77\x66\x55\x44\x33\x22\x11", 8) +  // sequence
                           std::string("\x08\x00\x00\x00", 4) +                  // payload length 8
                           std::string("\xE8\x03\x00\x00\x00\x00\x00\x00", 8);   // 1000
  EXPECT_EQ(frame.substr(16), rest);
  uint64_t checksum;
  std::memcpy(&checksum, frame.data() + 8, 8);
  EXPECT_EQ(checksum, Checksum64(rest));
}

TEST(DataFrame, EveryFlippedByteIsRejected) {
  std::vector<std::string> frames = {RecordsFrame(SampleRecords())};
  for (const ChannelEvent& e : AllEvents()) {
    frames.emplace_back();
    EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1, e, &frames.back());
  }
  for (const std::string& original : frames) {
    ASSERT_OK(DecodeAll(original));
    for (size_t i = 0; i < original.size(); ++i) {
      for (uint8_t mask : {0x01, 0x80, 0xFF}) {
        std::string damaged = original;
        damaged[i] = static_cast<char>(damaged[i] ^ mask);
        Status s = DecodeAll(damaged);
        EXPECT_EQ(s.code(), StatusCode::kCorruption) << "byte " << i << " mask " << int{mask};
      }
    }
  }
}

TEST(DataFrame, EveryTruncationAndExtensionIsRejected) {
  std::string barrier;
  EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1,
                   ChannelEvent::Barrier(CheckpointId(4), Timestamp(5)), &barrier);
  for (const std::string& original : {RecordsFrame(SampleRecords()), barrier}) {
    for (size_t n = 0; n < original.size(); ++n) {
      Status s = DecodeAll(std::string_view(original).substr(0, n));
      EXPECT_EQ(s.code(), StatusCode::kCorruption) << "length " << n;
      EXPECT_EQ(s.message().rfind(std::string(kChannel) + ": ", 0), 0u) << s.message();
    }
    EXPECT_EQ(DecodeAll(original + "x").code(), StatusCode::kCorruption);
  }
}

TEST(DataFrame, TruncatedHeaderMessageSaysHowShort) {
  Status s = DecodeFrame("KFDP", kChannel).status();
  EXPECT_EQ(s.message(), std::string(kChannel) +
                             ": frame is truncated: 4 bytes, shorter than the 44-byte header");
}

TEST(DataFrame, OtherVersionIsRejectedWithUpgradeAdvice) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1, ChannelEvent::EndOfInput(), &frame);
  frame[4] = 4;
  Status s = DecodeFrame(frame, kChannel).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), std::string(kChannel) +
                             ": peer speaks data-plane version 4, this worker speaks 3: run the "
                             "same keyflow version on all hosts");
}

TEST(DataFrame, BadMagicNamesTheChannel) {
  std::string frame(kFrameHeaderSize, '\0');
  std::memcpy(frame.data(), "GET /", 5);
  Status s = DecodeFrame(frame, kChannel).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), std::string(kChannel) +
                             ": bad magic: not a keyflow data-plane frame (is another program "
                             "sending to this port?)");
}

TEST(DataFrame, HugePayloadLengthIsRejectedBeforeTheChecksum) {
  std::string frame = RecordsFrame(SampleRecords());
  const size_t actual = frame.size() - kFrameHeaderSize;
  uint32_t huge = 0xFFFFFFFFu;
  std::memcpy(frame.data() + 40, &huge, 4);
  Reseal(&frame);
  Status s = DecodeFrame(frame, kChannel).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), std::string(kChannel) +
                             ": payload length field says 4294967295 bytes but the frame carries " +
                             std::to_string(actual) + " (truncated frame)");
}

TEST(DataFrame, HugeRecordCountIsRejectedWithoutReservingMemory) {
  std::string payload(4, '\0');
  uint32_t count = 0xFFFFFFFFu;
  std::memcpy(payload.data(), &count, 4);
  payload += std::string(64, '\0');
  std::vector<RecordView> views;
  Status s = DecodeRecordBatch(payload, kChannel, &views);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), std::string(kChannel) +
                             ": malformed RECORDS frame: record count 4294967295 cannot fit in "
                             "64 bytes");
  EXPECT_EQ(views.capacity(), 0u);
}

TEST(DataFrame, UnknownKindIsRejectedEvenWithAValidChecksum) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1, ChannelEvent::EndOfInput(), &frame);
  frame[16] = 9;
  Reseal(&frame);
  Status s = DecodeFrame(frame, kChannel).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), std::string(kChannel) + ": unknown frame kind 9");
}

TEST(DataFrame, EventPayloadOfTheWrongSizeIsRejected) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1, ChannelEvent::Watermark(Timestamp(1)),
                   &frame);
  frame.push_back('\0');
  uint32_t length = 9;
  std::memcpy(frame.data() + 40, &length, 4);
  Reseal(&frame);
  auto decoded = DecodeFrame(frame, kChannel);
  ASSERT_OK(decoded);
  Status s = DecodeChannelEvent(*decoded, kChannel).status();
  EXPECT_EQ(s.message(),
            std::string(kChannel) + ": WATERMARK frame has a 9-byte payload, expected 8");
}

TEST(DataFrame, LatencyMarkerBeforeTheEpochIsRejected) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1, ChannelEvent::LatencyMarker(-5), &frame);
  auto decoded = DecodeFrame(frame, kChannel);
  ASSERT_OK(decoded);
  EXPECT_EQ(DecodeChannelEvent(*decoded, kChannel).status().message(),
            std::string(kChannel) + ": LATENCY_MARKER time -5 is before the epoch");
}

TEST(DataFrame, WatermarkStatusOtherThanIdleOrActiveIsRejected) {
  std::string frame;
  EncodeEventFrame(SubtaskIndex(3), AttemptNumber(5), 1, ChannelEvent::Idle(), &frame);
  frame[kFrameHeaderSize] = 2;
  Reseal(&frame);
  auto decoded = DecodeFrame(frame, kChannel);
  ASSERT_OK(decoded);
  EXPECT_EQ(DecodeChannelEvent(*decoded, kChannel).status().code(), StatusCode::kCorruption);
}

TEST(DataFrame, RecordWithAnImpossibleKeyGroupIsRejected) {
  // count 1, key "", key group 2^31 (varint 80 80 80 80 08), timestamp, payload "".
  std::string payload("\x01\x00\x00\x00\x00\x80\x80\x80\x80\x08", 10);
  payload += std::string(8, '\0');
  payload += std::string(1, '\0');
  std::vector<RecordView> views;
  Status s = DecodeRecordBatch(payload, kChannel, &views);
  EXPECT_EQ(s.message(), std::string(kChannel) +
                             ": malformed RECORDS frame: record 0 has key group 2147483648, "
                             "beyond any max parallelism");
  EXPECT_TRUE(views.empty());
}

}  // namespace
}  // namespace keyflow
