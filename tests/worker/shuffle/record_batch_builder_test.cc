#include "worker/shuffle/record_batch_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->header.sequence, 1u);
  std::vector<RecordView> views;
  ASSERT_TRUE(DecodeRecordBatch(decoded->payload, "test", &views).ok());
  ASSERT_EQ(views.size(), 1u);  // only the record appended after the first FinishInto
  EXPECT_EQ(views[0].key, "b");
  EXPECT_EQ(views[0].payload, "y");
  // The first frame is untouched by the second batch.
  ASSERT_TRUE(DecodeFrame(first, "test").ok());
}

TEST(RecordBatchBuilder, ClearDropsAppendedRecords) {
  RecordBatchBuilder builder;
  builder.Append(Record{Key::FromBytes("a"), KeyGroupId(1), Timestamp(1), ""});
  builder.Clear();
  EXPECT_TRUE(builder.empty());
  EXPECT_EQ(builder.frame_size(), kFrameHeaderSize + 4);
}

}  // namespace
}  // namespace keyflow
