#include "worker/sources/multiplex_source_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

// A split of `size` records with timestamps 0, 1, ...; record i of split s has key "s-i". It
// may be throttled at a given index until a given time, or fail at a given index.
struct FakeSplit {
  int64_t size = 0;
  int64_t throttle_at = -1;
  Timestamp throttle_until = kMaxWatermark;
  int64_t fail_at = -1;
};

class FakeSplitReader final : public SplitReader {
 public:
  FakeSplitReader(SplitId id, FakeSplit split, int64_t from)
      : id_(id), split_(split), next_(from) {}
  Result<SplitReadResult> Next(Record* out) override {
    if (next_ >= split_.size) return SplitReadResult::kEndOfSplit;
    if (next_ == split_.fail_at) return IoError("split " + std::to_string(id_.value()) + " broke");
    if (next_ == split_.throttle_at) return SplitReadResult::kThrottled;
    out->key = Key::FromBytes(std::to_string(id_.value()) + "-" + std::to_string(next_));
    out->timestamp = Timestamp(next_);
    ++next_;
    return SplitReadResult::kRecord;
  }
  SplitPosition position() const override { return SplitPosition::InGenerator(next_); }
  Timestamp next_available_time() const override { return split_.throttle_until; }

 private:
  SplitId id_;
  FakeSplit split_;
  int64_t next_;
};

// Records what the reader emitted, per split, and which outputs exist.
class RecordingOutput final : public ReaderOutput {
 public:
  struct Split final : public SourceOutput {
    RecordingOutput* owner = nullptr;
    Status Collect(const Record& record) override {
      owner->order.push_back(KeyToString(record.key, KeyType::kString));
      return Status::Ok();
    }
  };
  SourceOutput& CreateOutputForSplit(SplitId split) override {
    created.push_back(split.value());
    Split& s = live[split.value()];
    s.owner = this;
    return s;
  }
  void ReleaseOutputForSplit(SplitId split) override {
    released.push_back(split.value());
    live.erase(split.value());
  }

  std::vector<std::string> order;  // keys in emission order
  std::vector<int32_t> created, released;
  std::map<int32_t, Split> live;
};

SourceSplitState At(int32_t id, int64_t from = 0, bool finished = false) {
  return SourceSplitState{SourceSplit::Generator(SplitId(id), id), SplitPosition::InGenerator(from),
                          finished};
}

MultiplexSourceReader Reader(std::map<int32_t, FakeSplit> splits) {
  return MultiplexSourceReader(
      [splits](const SourceSplitState& st, size_t) -> Result<std::unique_ptr<SplitReader>> {
        auto it = splits.find(st.split.id().value());
        if (it == splits.end()) return NotFound("no split " + st.split.ToString());
        return std::unique_ptr<SplitReader>(
            new FakeSplitReader(st.split.id(), it->second, st.position.next_event_index()));
      });
}

TEST(MultiplexSourceReaderTest, ReadsSplitsRoundRobinInTurnsAndEndsAfterNoMoreSplits) {
  const int64_t turn = MultiplexSourceReader::kRecordsPerSplitTurn;
  MultiplexSourceReader reader = Reader({{0, {turn + 2}}, {1, {1}}});
  ASSERT_OK(reader.AddSplits({At(0), At(1)}));
  RecordingOutput out;
  ASSERT_OK_AND_ASSIGN(PollResult first, reader.PollNext(out));
  EXPECT_EQ(first.status, InputStatus::kMoreAvailable);
  // Split 0 gives a whole turn, then split 1 its only record and ends.
  ASSERT_EQ(out.order.size(), static_cast<size_t>(turn + 1));
  EXPECT_EQ(out.order[0], "0-0");
  EXPECT_EQ(out.order[static_cast<size_t>(turn - 1)], "0-" + std::to_string(turn - 1));
  EXPECT_EQ(out.order[static_cast<size_t>(turn)], "1-0");
  EXPECT_EQ(out.created, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(out.released, (std::vector<int32_t>{1}));

  ASSERT_OK_AND_ASSIGN(PollResult second, reader.PollNext(out));
  EXPECT_EQ(out.order.size(), static_cast<size_t>(turn + 3));
  EXPECT_EQ(out.order.back(), "0-" + std::to_string(turn + 1));
  EXPECT_EQ(out.released, (std::vector<int32_t>{1, 0}));
  // Every split ended, but more may still be added: nothing available, no time to come back.
  EXPECT_EQ(second.status, InputStatus::kNothingAvailable);
  EXPECT_EQ(second.retry_at, kMaxWatermark);

  reader.NotifyNoMoreSplits();
  ASSERT_OK_AND_ASSIGN(PollResult third, reader.PollNext(out));
  EXPECT_EQ(third.status, InputStatus::kEndOfInput);
  EXPECT_EQ(out.order.size(), static_cast<size_t>(turn + 3));
}

TEST(MultiplexSourceReaderTest, EverySplitGetsItsOutputBeforeTheFirstRecordIsEmitted) {
  // 20 splits of 200 records: one poll (1024 records) reaches only the first 8 splits, yet all
  // 20 must hold back event time from the start.
  std::map<int32_t, FakeSplit> splits;
  std::vector<SourceSplitState> states;
  for (int32_t i = 0; i < 20; ++i) {
    splits[i] = FakeSplit{200};
    states.push_back(At(i));
  }
  MultiplexSourceReader reader = Reader(splits);
  ASSERT_OK(reader.AddSplits(states));
  RecordingOutput out;
  ASSERT_OK_AND_ASSIGN(PollResult r, reader.PollNext(out));
  EXPECT_EQ(r.status, InputStatus::kMoreAvailable);
  EXPECT_EQ(out.order.size(), static_cast<size_t>(MultiplexSourceReader::kRecordsPerPoll));
  EXPECT_EQ(out.created.size(), 20u);
  EXPECT_EQ(out.order.back(), "7-127");
}

TEST(MultiplexSourceReaderTest, AllSplitsThrottledMeansNothingAvailableUntilTheEarliestTime) {
  MultiplexSourceReader reader =
      Reader({{0, {10, 2, Timestamp(5000)}}, {1, {10, 0, Timestamp(3000)}}});
  ASSERT_OK(reader.AddSplits({At(0), At(1)}));
  reader.NotifyNoMoreSplits();
  RecordingOutput out;
  ASSERT_OK_AND_ASSIGN(PollResult first, reader.PollNext(out));
  // Split 0 emitted two records before its throttle: more may come at once.
  EXPECT_EQ(first.status, InputStatus::kMoreAvailable);
  EXPECT_EQ(out.order, (std::vector<std::string>{"0-0", "0-1"}));
  ASSERT_OK_AND_ASSIGN(PollResult second, reader.PollNext(out));
  EXPECT_EQ(second.status, InputStatus::kNothingAvailable);
  EXPECT_EQ(second.retry_at, Timestamp(3000));
}

TEST(MultiplexSourceReaderTest, SnapshotHoldsEverySplitWithTheNextPositionFinishedOnesIncluded) {
  MultiplexSourceReader reader = Reader({{0, {3}}, {1, {300}}, {2, {5}}});
  ASSERT_OK(reader.AddSplits({At(0), At(1, 100), At(2, 5)}));
  reader.NotifyNoMoreSplits();
  RecordingOutput out;
  ASSERT_OK(reader.PollNext(out));
  std::vector<SourceSplitState> state = reader.SnapshotState(CheckpointId(1));
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0], At(0, 3, true));  // ended: its final position, finished
  EXPECT_EQ(state[1], At(1, 100 + MultiplexSourceReader::kRecordsPerSplitTurn));
  EXPECT_EQ(state[2], At(2, 5, true));  // restored at its end: ends at once, position kept
  EXPECT_EQ(out.released, (std::vector<int32_t>{0, 2}));
}

TEST(MultiplexSourceReaderTest, AFailingSplitFailsThePollAndKeepsThePositionBeforeTheRecord) {
  MultiplexSourceReader reader = Reader({{0, FakeSplit{10, -1, kMaxWatermark, 4}}});
  ASSERT_OK(reader.AddSplits({At(0)}));
  RecordingOutput out;
  Result<PollResult> r = reader.PollNext(out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_EQ(r.status().message(), "split 0 broke");
  EXPECT_EQ(out.order.size(), 4u);
  EXPECT_EQ(reader.SnapshotState(CheckpointId(2))[0], At(0, 4));
}

TEST(MultiplexSourceReaderTest, ASplitThatCannotBeOpenedFailsAddSplits) {
  MultiplexSourceReader reader = Reader({{0, {3}}});
  Status s = reader.AddSplits({At(0), At(9)});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no split generator split 9");
}

TEST(MultiplexSourceReaderTest, WithoutSplitsItEndsOnceNoMoreWillCome) {
  MultiplexSourceReader reader = Reader({});
  RecordingOutput out;
  ASSERT_OK_AND_ASSIGN(PollResult before, reader.PollNext(out));
  EXPECT_EQ(before.status, InputStatus::kNothingAvailable);
  reader.NotifyNoMoreSplits();
  ASSERT_OK_AND_ASSIGN(PollResult after, reader.PollNext(out));
  EXPECT_EQ(after.status, InputStatus::kEndOfInput);
  EXPECT_TRUE(reader.SnapshotState(std::nullopt).empty());
}

// A restored finished split is kept in the state as it was and never opened: its file may be
// gone (a monitored directory's files are often removed once read).
TEST(MultiplexSourceReaderTest, AFinishedSplitIsKeptButNeverOpenedAgain) {
  MultiplexSourceReader reader = Reader({{1, {4}}});  // split 0 cannot be opened
  ASSERT_OK(reader.AddSplits({At(0, 7, true), At(1)}));
  reader.NotifyNoMoreSplits();
  RecordingOutput out;
  ASSERT_OK_AND_ASSIGN(PollResult r, reader.PollNext(out));
  EXPECT_EQ(r.status, InputStatus::kEndOfInput);      // split 1 ended in its first turn
  EXPECT_EQ(out.created, (std::vector<int32_t>{1}));  // no output: it holds back no event time
  EXPECT_EQ(out.order, (std::vector<std::string>{"1-0", "1-1", "1-2", "1-3"}));
  EXPECT_EQ(reader.SnapshotState(CheckpointId(1)),
            (std::vector<SourceSplitState>{At(0, 7, true), At(1, 4, true)}));
}

// A source that may get more splits (a monitored directory) waits once its splits ended, and
// reads the splits added later.
TEST(MultiplexSourceReaderTest, WithAllSplitsEndedItWaitsForMoreAndReadsSplitsAddedLater) {
  MultiplexSourceReader reader = Reader({{0, {2}}, {1, {3}}});
  ASSERT_OK(reader.AddSplits({At(0)}));
  RecordingOutput out;
  ASSERT_OK_AND_ASSIGN(PollResult first, reader.PollNext(out));
  EXPECT_EQ(first.status, InputStatus::kNothingAvailable);
  EXPECT_EQ(first.retry_at, kMaxWatermark);  // until the task wakes it (AddSplits)
  ASSERT_OK(reader.AddSplits({At(1)}));
  ASSERT_OK_AND_ASSIGN(PollResult second, reader.PollNext(out));
  EXPECT_EQ(second.status, InputStatus::kNothingAvailable);
  EXPECT_EQ(out.order, (std::vector<std::string>{"0-0", "0-1", "1-0", "1-1", "1-2"}));
  EXPECT_EQ(out.created, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(out.released, (std::vector<int32_t>{0, 1}));
}

}  // namespace
}  // namespace keyflow
