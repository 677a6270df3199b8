#include "common/input/source_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

// Encodes `states` one after the other and decodes them back: equal, nothing left over.
void ExpectRoundTrip(const std::vector<SourceSplitState>& states) {
  std::string buf;
  BinaryWriter w(&buf);
  for (const SourceSplitState& s : states) s.EncodeTo(&w);
  BinaryReader r(buf);
  for (const SourceSplitState& s : states) {
    Result<SourceSplitState> back = SourceSplitState::DecodeFrom(&r);
    ASSERT_OK(back);
    EXPECT_EQ(*back, s);
    EXPECT_EQ(back->split.ToString(), s.split.ToString());
  }
  EXPECT_TRUE(r.at_end());
}

TEST(SourceSplit, FileAndGeneratorSplitsRoundTripThroughBinaryIo) {
  ExpectRoundTrip({
      {SourceSplit::File(SplitId(0), "/data/a.jsonl"), SplitPosition::InFile(1234, 17)},
      {SourceSplit::File(SplitId(7), "/data/\xC3\xA9t\xC3\xA9.jsonl"), SplitPosition()},
      {SourceSplit::Generator(SplitId(3), 3), SplitPosition::InGenerator(1ll << 40)},
  });
}

// A finished split carries a flag prefix; an unfinished one encodes exactly as before the flag
// existed (so the states of older checkpoints decode, unfinished).
TEST(SourceSplit, AFinishedSplitRoundTripsWithItsFlagAndAnUnfinishedOneHasNoPrefix) {
  const SourceSplitState open{SourceSplit::File(SplitId(2), "/d/a"), SplitPosition::InFile(9, 2)};
  SourceSplitState done = open;
  done.finished = true;
  std::string open_bytes, done_bytes;
  BinaryWriter ow(&open_bytes), dw(&done_bytes);
  open.EncodeTo(&ow);
  done.EncodeTo(&dw);
  EXPECT_EQ(open_bytes[0], '\x01');  // the SourceSplit format version, as always
  EXPECT_EQ(done_bytes, std::string("\xF2\x01", 2) + open_bytes);
  const std::string both = done_bytes + open_bytes;
  BinaryReader r(both);
  ASSERT_OK_AND_ASSIGN(SourceSplitState a, SourceSplitState::DecodeFrom(&r));
  ASSERT_OK_AND_ASSIGN(SourceSplitState b, SourceSplitState::DecodeFrom(&r));
  EXPECT_EQ(a, done);
  EXPECT_EQ(b, open);
  EXPECT_TRUE(r.at_end());
  const std::string unknown_flag = std::string("\xF2\x03", 2) + open_bytes;
  BinaryReader unknown(unknown_flag);
  EXPECT_EQ(SourceSplitState::DecodeFrom(&unknown).status(),
            Corruption("split state has unknown flags 3"));
  const std::string marker_only("\xF2", 1);
  BinaryReader cut(marker_only);
  EXPECT_EQ(SourceSplitState::DecodeFrom(&cut).status().code(), StatusCode::kCorruption);
}

TEST(SourceSplit, PositionAccessorsAndDefaultIsTheStart) {
  SplitPosition start;
  EXPECT_EQ(start.byte_offset(), 0);
  EXPECT_EQ(start.next_line_number(), 1);
  EXPECT_EQ(start.next_event_index(), 0);
  EXPECT_EQ(start, SplitPosition::InFile(0, 1));
  EXPECT_EQ(start, SplitPosition::InGenerator(0));

  SplitPosition p = SplitPosition::InFile(100, 5);
  p.AdvanceLine(20);
  EXPECT_EQ(p, SplitPosition::InFile(120, 6));
  EXPECT_EQ(p.ToString(), "offset 120, line 6");
  SplitPosition g = SplitPosition::InGenerator(9);
  g.AdvanceEvent();
  EXPECT_EQ(g.next_event_index(), 10);
}

TEST(SourceSplit, SplitsOrderByIdAndPositionsByOffset) {
  std::vector<SourceSplit> splits = {SourceSplit::File(SplitId(2), "/a"),
                                     SourceSplit::File(SplitId(0), "/z"),
                                     SourceSplit::File(SplitId(1), "/m")};
  std::sort(splits.begin(), splits.end());
  EXPECT_EQ(splits[0].id(), SplitId(0));
  EXPECT_EQ(splits[1].id(), SplitId(1));
  EXPECT_EQ(splits[2].id(), SplitId(2));
  EXPECT_NE(SourceSplit::File(SplitId(0), "/a"), SourceSplit::File(SplitId(0), "/b"));
  EXPECT_NE(SourceSplit::Generator(SplitId(0), 0), SourceSplit::Generator(SplitId(0), 1));
  EXPECT_LT(SplitPosition::InFile(10, 2), SplitPosition::InFile(11, 2));
  EXPECT_LT(SplitPosition::InGenerator(4), SplitPosition::InGenerator(5));
}

TEST(SourceSplit, ToStringNamesKindIdAndPath) {
  EXPECT_EQ(SourceSplit::File(SplitId(2), "/data/b.jsonl").ToString(),
            "file split 2 (/data/b.jsonl)");
  EXPECT_EQ(SourceSplit::Generator(SplitId(3), 3).ToString(), "generator split 3");
  EXPECT_EQ(SourceSplit::KafkaPartition(SplitId(4), "events", 1).ToString(),
            "kafka split 4 (events-1)");
}

TEST(SourceSplit, KafkaPartitionsRoundTripWithTheirStopOffsetAndPosition) {
  const SourceSplit a = SourceSplit::KafkaPartition(SplitId(0), "events", 0);
  const SourceSplit b = SourceSplit::KafkaPartition(SplitId(9), "t.x", 31, 1'000'000);
  ExpectRoundTrip({{a, SplitPosition::InKafka(0)}, {b, SplitPosition::InKafka(77), true}});
  EXPECT_EQ(b.topic(), "t.x");
  EXPECT_EQ(b.partition(), 31);
  EXPECT_EQ(b.stop_offset(), 1'000'000);
  EXPECT_EQ(a.stop_offset(), SourceSplit::kNoStopOffset);
  SplitPosition p = SplitPosition::InKafka(5);
  p.AdvanceKafka(41);  // offsets have gaps (transaction markers)
  EXPECT_EQ(p.next_kafka_offset(), 42);
}

// A job library source's split and its reader's own position (any bytes, NUL included).
TEST(SourceSplit, ConnectorSplitsRoundTripWithTheirReadersOpaquePosition) {
  const SourceSplit a = SourceSplit::Connector(SplitId(0), "shard-a");
  const SourceSplit b = SourceSplit::Connector(SplitId(3), std::string("s\0b", 3));
  ExpectRoundTrip({{a, SplitPosition::InConnector(0, "")},
                   {b, SplitPosition::InConnector(17, std::string("pos\0\xff", 5)), true}});
  EXPECT_EQ(a.connector_split(), "shard-a");
  EXPECT_EQ(a.ToString(), "connector split 0 (shard-a)");
  const SplitPosition p = SplitPosition::InConnector(17, "offset=99");
  EXPECT_EQ(p.next_event_index(), 17);
  EXPECT_EQ(p.connector_position(), "offset=99");
  // An empty connector split is corruption.
  std::string buf;
  BinaryWriter w(&buf);
  w.U8(1);
  w.U8(4);  // connector
  w.I32(2);
  w.Bytes("");
  BinaryReader r(buf);
  EXPECT_EQ(SourceSplit::DecodeFrom(&r).status(), Corruption("connector split 2 is empty"));
}

TEST(SourceSplit, AnInvalidKafkaPartitionIsCorruption) {
  std::string buf;
  BinaryWriter w(&buf);
  w.U8(1);
  w.U8(3);  // kafka
  w.I32(2);
  w.Bytes("events");
  w.I32(-1);
  w.I64(-1);
  BinaryReader r(buf);
  EXPECT_EQ(SourceSplit::DecodeFrom(&r).status(),
            Corruption("kafka split 2 is invalid (topic 'events', partition -1, stop offset -1)"));
}

TEST(SourceSplit, TruncatedBytesAreCorruption) {
  std::string buf;
  BinaryWriter w(&buf);
  SourceSplitState{SourceSplit::File(SplitId(1), "/data/a.jsonl"), SplitPosition::InFile(5, 2)}
      .EncodeTo(&w);
  for (size_t cut = 0; cut < buf.size(); ++cut) {
    BinaryReader r(std::string_view(buf).substr(0, cut));
    Result<SourceSplitState> back = SourceSplitState::DecodeFrom(&r);
    EXPECT_FALSE(back.ok()) << "cut at " << cut;
    EXPECT_EQ(back.status().code(), StatusCode::kCorruption) << "cut at " << cut;
  }
}

TEST(SourceSplit, UnknownVersionOrKindIsCorruption) {
  std::string buf;
  BinaryWriter w(&buf);
  SourceSplit::Generator(SplitId(1), 1).EncodeTo(&w);
  std::string bad_version = buf;
  bad_version[0] = 9;
  BinaryReader r1(bad_version);
  EXPECT_EQ(SourceSplit::DecodeFrom(&r1).status(),
            Corruption("source split has format version 9, this build reads version 1"));
  std::string bad_kind = buf;
  bad_kind[1] = 42;
  BinaryReader r2(bad_kind);
  EXPECT_EQ(SourceSplit::DecodeFrom(&r2).status(), Corruption("source split has unknown kind 42"));
}

}  // namespace
}  // namespace keyflow
