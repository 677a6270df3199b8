#include "worker/shuffle/record_batch_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/field_tape_writer.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

TEST(RecordBatchBuilder, FrameSizeGrowsByTheEncodedRecordSize) {
  RecordBatchBuilder builder;
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4);  // header + record count
  // 12-byte key, key group < 128, empty payload: 1 + 12 + 1 + 8 + 1 = 23 bytes.
  builder.Append(Record{Key::FromBytes("user-0000001"), KeyGroupId(5), Timestamp(9), ""});
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4 + 23);
  // Key group 200 takes a 2-byte varint, payload "abc" 1 + 3 bytes.
  builder.Append(Record{Key::FromBytes("user-0000002"), KeyGroupId(200), Timestamp(9), "abc"});
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4 + 23 + 27);
  EXPECT_EQ(builder.num_records(), 2u);
}

TEST(RecordBatchBuilder, FinishIntoStartsAnEmptyBatchThatReusesTheBuffers) {
  RecordBatchBuilder builder;
  builder.Append(Record{Key::FromBytes("a"), KeyGroupId(1), Timestamp(1), "x"});
  std::string first;
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), 0, &first);
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4);

  builder.Append(Record{Key::FromBytes("b"), KeyGroupId(2), Timestamp(2), "y"});
  std::string second;
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), 1, &second);

  auto decoded = DecodeFrame(second, "test");
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->header.sequence, 1u);
  std::vector<RecordView> views;
  ASSERT_OK(DecodeRecordBatch(decoded->payload, "test", &views));
  ASSERT_EQ(views.size(), 1u);  // only the record appended after the first FinishInto
  EXPECT_EQ(views[0].key, "b");
  EXPECT_EQ(views[0].payload, "y");
  // The first frame is untouched by the second batch.
  ASSERT_OK(DecodeFrame(first, "test"));
}

TEST(RecordBatchBuilder, ClearDropsAppendedRecords) {
  RecordBatchBuilder builder;
  builder.Append(Record{Key::FromBytes("a"), KeyGroupId(1), Timestamp(1), ""});
  builder.Clear();
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4);
}

std::string AmountTape(int64_t amount) {
  std::string tape;
  FieldTapeWriter w(&tape);
  w.BeginObject();
  w.Name("uid");
  w.String("a");
  w.Name("amount");
  w.Int(amount);
  w.EndObject();
  return tape;
}

// Seals `builder` and decodes the frame again.
Status SealAndDecode(RecordBatchBuilder& builder, std::string* frame,
                     std::vector<RecordView>* views) {
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), 0, frame);
  auto decoded = DecodeFrame(*frame, "test");
  if (!decoded.ok()) return decoded.status();
  return DecodeRecordBatch(decoded->payload, "test", views);
}

TEST(RecordBatchBuilder, RecordsWithFieldsRoundTrip) {
  RecordBatchBuilder builder;
  Record with{Key::FromBytes("a"), KeyGroupId(3), Timestamp(7), R"({"uid":"a","amount":5})",
              AmountTape(5)};
  Record key_only{Key::FromBytes("b"), KeyGroupId(4), Timestamp(8), "", ""};
  Record payload_only{Key::FromBytes("c"), KeyGroupId(5), Timestamp(9), "raw", ""};
  builder.Append(with);
  builder.Append(key_only);
  builder.Append(payload_only);
  std::string frame;
  std::vector<RecordView> views;
  ASSERT_OK(SealAndDecode(builder, &frame, &views));
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].ToRecord(), with);
  EXPECT_EQ(views[1].ToRecord(), key_only);
  EXPECT_EQ(views[2].ToRecord(), payload_only);
  EXPECT_EQ(views[0].ToRecord().GetInt64("amount").value(), 5);
}

TEST(RecordBatchBuilder, KeyOnlyRecordsAreAsCompactAsInVersion1) {
  // 1-byte key, key group < 128, no payload, no fields: 1 + 1 + 1 + 8 + 1 = 12 bytes, and a
  // record with fields adds the payload and `varint length + tape`.
  RecordBatchBuilder builder;
  builder.Append(Record{Key::FromBytes("a"), KeyGroupId(1), Timestamp(1), "", ""});
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4 + 12);
  const std::string tape = AmountTape(5);
  builder.Append(Record{Key::FromBytes("a"), KeyGroupId(1), Timestamp(1), "xy", tape});
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4 + 12 + (12 + 2 + 1 + tape.size()));
}

TEST(RecordBatchBuilder, CorruptFieldTapeIsCorruptionNamingTheRecord) {
  RecordBatchBuilder builder;
  builder.Append(Record{Key::FromBytes("a"), KeyGroupId(1), Timestamp(1), "", AmountTape(1)});
  std::string bad = AmountTape(2);
  bad[6] = 5;  // member count 5 instead of 2
  builder.Append(Record{Key::FromBytes("b"), KeyGroupId(1), Timestamp(1), "", bad});
  std::string frame;
  std::vector<RecordView> views;
  Status s = SealAndDecode(builder, &frame, &views);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(
      s.message().rfind("test: malformed RECORDS frame: record 1 of 2: malformed field tape", 0),
      0u)
      << s.message();
  EXPECT_TRUE(views.empty());
}

}  // namespace
}  // namespace keyflow
