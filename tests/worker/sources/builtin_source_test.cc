#include "worker/sources/builtin_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/key_group_assignment.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"
#include "worker/sources/generator_split_reader.h"

namespace keyflow {
namespace {

// Collects (key, timestamp) in emission order over every split.
class CollectingOutput final : public ReaderOutput, public SourceOutput {
 public:
  SourceOutput& CreateOutputForSplit(SplitId) override { return *this; }
  void ReleaseOutputForSplit(SplitId split) override { ended.push_back(split.value()); }
  Status Collect(const Record& record) override {
    records.push_back(KeyToString(record.key, KeyType::kString) + "@" +
                      std::to_string(record.timestamp.millis()));
    return Status::Ok();
  }
  std::vector<std::string> records;
  std::vector<int32_t> ended;
};

JobSpec Spec() {
  JobSpec spec;
  spec.parallelism = 1;
  spec.max_parallelism = 128;
  return spec;
}

// Polls until the end of input; fails the test on an error or after `max_polls`.
void ReadToEnd(SourceReader& reader, CollectingOutput& out, int max_polls = 1000) {
  for (int i = 0; i < max_polls; ++i) {
    Result<PollResult> r = reader.PollNext(out);
    ASSERT_OK(r);
    if (r->status == InputStatus::kEndOfInput) return;
    ASSERT_EQ(r->status, InputStatus::kMoreAvailable);
  }
  FAIL() << "no end of input after " << max_polls << " polls";
}

std::vector<SourceSplitState> FromStart(const InputSpec& input) {
  std::vector<SourceSplitState> splits;
  for (const SourceSplit& s : input.splits()) splits.push_back(SourceSplitState{s, {}});
  return splits;
}

// The source of `input` with a manual clock, reading `splits` and no others; skipped bad
// records counted in `bad`.
std::unique_ptr<SourceReader> Open(const InputSpec& input, const ManualClock& clock, Counter& bad,
                                   std::vector<SourceSplitState> splits) {
  SourceReaderContext context{SubtaskIndex(0), 1, &clock, [] {}, &bad};
  JobSpec spec = Spec();
  spec.input = input.text();
  Result<std::unique_ptr<SourceReader>> reader = CreateBuiltinSourceReader(spec, context);
  EXPECT_OK(reader);
  if (!reader.ok()) return nullptr;
  EXPECT_OK((*reader)->AddSplits(std::move(splits)));
  (*reader)->NotifyNoMoreSplits();
  return std::move(reader).value();
}

TEST(BuiltinSourceTest, AFileSourceReadsEveryFileCountsBadRecordsAndResumesFromItsState) {
  test_util::TempDir dir;
  dir.Write("a.jsonl", "{\"uid\":\"a\",\"ts\":1}\nnot json\n{\"uid\":\"b\",\"ts\":2}\n");
  dir.Write("b.jsonl", "{\"uid\":\"c\",\"ts\":3}\n");
  ASSERT_OK_AND_ASSIGN(InputSpec input, InputSpec::Parse(dir.path()));
  ManualClock clock;
  Counter bad;
  std::unique_ptr<SourceReader> reader = Open(input, clock, bad, FromStart(input));
  ASSERT_NE(reader, nullptr);
  CollectingOutput out;
  ReadToEnd(*reader, out);
  // A split's turn is up to 128 records: a.jsonl ends within its first turn.
  EXPECT_EQ(out.records, (std::vector<std::string>{"a@1", "b@2", "c@3"}));
  EXPECT_EQ(out.ended, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(bad.value(), 1);

  // The final state restores to an immediate end; a mid-file state to the rest of the file.
  std::vector<SourceSplitState> state = reader->SnapshotState(std::nullopt);
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].position, SplitPosition::InFile(47, 4));
  EXPECT_TRUE(state[0].finished);
  SourceSplitState mid = state[0];
  mid.position = SplitPosition::InFile(19, 2);  // after the first line
  mid.finished = false;
  std::unique_ptr<SourceReader> again = Open(input, clock, bad, {mid});
  ASSERT_NE(again, nullptr);
  CollectingOutput rest;
  ReadToEnd(*again, rest);
  EXPECT_EQ(rest.records, (std::vector<std::string>{"b@2"}));
  EXPECT_EQ(bad.value(), 2);
}

TEST(BuiltinSourceTest, AGeneratorSourceEmitsExactlyTheGeneratorSplitsEvents) {
  ASSERT_OK_AND_ASSIGN(InputSpec input, InputSpec::Parse("gen:events=600,keys=50,splits=2,seed=3"));
  ManualClock clock;
  Counter bad;
  std::unique_ptr<SourceReader> reader =
      Open(input, clock, bad, {SourceSplitState{input.splits()[1], SplitPosition::InGenerator(7)}});
  ASSERT_NE(reader, nullptr);
  CollectingOutput out;
  ReadToEnd(*reader, out);

  ASSERT_OK_AND_ASSIGN(
      GeneratorSplitReader direct,
      GeneratorSplitReader::Create(input.generator(), 1, KeyGroupAssigner(KeyType::kString, 128),
                                   SplitPosition::InGenerator(7)));
  std::vector<std::string> expected;
  Record r;
  while (direct.Next(&r) == SplitReadResult::kRecord) {
    expected.push_back(KeyToString(r.key, KeyType::kString) + "@" +
                       std::to_string(r.timestamp.millis()));
  }
  EXPECT_EQ(expected.size(), 293u);
  EXPECT_EQ(out.records, expected);
  EXPECT_EQ(reader->SnapshotState(CheckpointId(4))[0].position, SplitPosition::InGenerator(300));
}

TEST(BuiltinSourceTest, ARateLimitedGeneratorSaysWhenToComeBack) {
  ASSERT_OK_AND_ASSIGN(InputSpec input,
                       InputSpec::Parse("gen:events=100,keys=10,splits=1,rate=10"));
  ManualClock clock(Timestamp(1000));
  Counter bad;
  std::unique_ptr<SourceReader> reader = Open(input, clock, bad, FromStart(input));
  ASSERT_NE(reader, nullptr);
  CollectingOutput out;
  ASSERT_OK(reader->PollNext(out));
  const size_t first = out.records.size();
  EXPECT_GE(first, 1u);
  ASSERT_OK_AND_ASSIGN(PollResult r, reader->PollNext(out));
  EXPECT_EQ(r.status, InputStatus::kNothingAvailable);
  EXPECT_GT(r.retry_at, Timestamp(1000));
  EXPECT_LE(r.retry_at, Timestamp(1100));  // 10 events/s: the next one within 100 ms
  EXPECT_EQ(out.records.size(), first);
}

}  // namespace
}  // namespace keyflow
