#include "coordinator/source/split_enumerator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/binary_io.h"
#include "common/file_io.h"
#include "coordinator/source/static_split_enumerator.h"
#include "tests/coordinator/source/recording_context.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

using test::Encode;

SourceSplitState Decode(const std::string& bytes) {
  BinaryReader r(bytes);
  Result<SourceSplitState> st = SourceSplitState::DecodeFrom(&r);
  EXPECT_OK(st);
  return st.ok() ? *st : SourceSplitState{};
}

JobSpec SpecOf(const std::string& input) {
  JobSpec spec;
  spec.input = input;
  return spec;
}

// Starts the enumerator of `input` at `parallelism`; each reader's decoded splits.
Result<std::vector<std::vector<SourceSplitState>>> Assign(const std::string& input,
                                                          int32_t parallelism,
                                                          const RestoredSplits* restored) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<SplitEnumerator> e,
                      CreateSplitEnumerator(SpecOf(input), restored));
  DeploymentSplitAssignment assignment(parallelism);
  KF_RETURN_IF_ERROR(e->Start(assignment));
  std::vector<std::vector<SourceSplitState>> readers;
  for (int32_t i = 0; i < parallelism; ++i) {
    EXPECT_TRUE(assignment.no_more_splits(SubtaskIndex(i))) << "reader " << i;
    readers.emplace_back();
    for (const std::string& bytes : assignment.splits(SubtaskIndex(i))) {
      readers.back().push_back(Decode(bytes));
    }
  }
  return readers;
}

TEST(DeploymentSplitAssignmentTest, CollectsEncodedSplitsInOrderAndTheEndOfEachReader) {
  DeploymentSplitAssignment a(2);
  EXPECT_EQ(a.parallelism(), 2);
  SourceSplitState s0{SourceSplit::Generator(SplitId(0), 0), SplitPosition::InGenerator(5)};
  SourceSplitState s2{SourceSplit::Generator(SplitId(2), 2), SplitPosition::InGenerator(7)};
  a.AssignSplits(SubtaskIndex(1), {s2});
  a.AssignSplits(SubtaskIndex(1), {s0});
  EXPECT_TRUE(a.splits(SubtaskIndex(0)).empty());
  EXPECT_EQ(a.splits(SubtaskIndex(1)), (std::vector<std::string>{Encode(s2), Encode(s0)}));
  EXPECT_FALSE(a.no_more_splits(SubtaskIndex(1)));
  a.SignalNoMoreSplits(SubtaskIndex(1));
  EXPECT_TRUE(a.no_more_splits(SubtaskIndex(1)));
  EXPECT_FALSE(a.no_more_splits(SubtaskIndex(0)));
}

TEST(DeploymentSplitAssignmentDeathTest, AReaderOutsideTheParallelismIsABug) {
  DeploymentSplitAssignment a(2);
  EXPECT_DEATH(a.SignalNoMoreSplits(SubtaskIndex(2)), "split assignment to subtask 2 of 2");
}

TEST(StaticSplitEnumeratorTest, SplitIGoesToReaderIModuloPFromItsStart) {
  ASSERT_OK_AND_ASSIGN(auto readers, Assign("gen:events=100,keys=5,splits=5,seed=1", 2, nullptr));
  ASSERT_EQ(readers.size(), 2u);
  ASSERT_EQ(readers[0].size(), 3u);
  ASSERT_EQ(readers[1].size(), 2u);
  const int32_t expected[2][3] = {{0, 2, 4}, {1, 3, -1}};
  for (size_t r = 0; r < 2; ++r) {
    for (size_t i = 0; i < readers[r].size(); ++i) {
      EXPECT_EQ(readers[r][i].split,
                SourceSplit::Generator(SplitId(expected[r][i]), expected[r][i]));
      EXPECT_EQ(readers[r][i].position, SplitPosition{});
    }
  }
}

TEST(StaticSplitEnumeratorTest, StatusSaysTheKindAndHowManySplits) {
  ASSERT_OK_AND_ASSIGN(auto gen,
                       CreateSplitEnumerator(SpecOf("gen:events=9,keys=3,splits=3"), nullptr));
  EXPECT_EQ(gen->StatusJson(), (nlohmann::json{{"kind", "generator"}, {"splits", 3}}));
  TempDir dir("split-enumerator");
  ASSERT_OK(WriteFileAtomically(dir.path() + "/a.jsonl", ""));
  ASSERT_OK_AND_ASSIGN(auto files, CreateSplitEnumerator(SpecOf(dir.path()), nullptr));
  EXPECT_EQ(files->StatusJson(), (nlohmann::json{{"kind", "files"}, {"splits", 1}}));
}

TEST(StaticSplitEnumeratorTest, MoreReadersThanSplitsLeavesTheRestWithoutSplitsButEnded) {
  ASSERT_OK_AND_ASSIGN(auto readers, Assign("gen:events=10,keys=2,splits=1,seed=1", 3, nullptr));
  EXPECT_EQ(readers[0].size(), 1u);
  EXPECT_TRUE(readers[1].empty());
  EXPECT_TRUE(readers[2].empty());  // Assign checked no_more_splits of each
}

TEST(StaticSplitEnumeratorTest, ARestoreHandsOutEverySplitAtItsPositionOverTheNewParallelism) {
  RestoredSplits restored;
  for (int32_t s = 0; s < 3; ++s) {
    restored[std::to_string(s)] = Encode(SourceSplitState{
        SourceSplit::Generator(SplitId(s), s), SplitPosition::InGenerator(10 * (s + 1))});
  }
  // Taken at parallelism 2, restored at 3: split s -> reader s, at its position.
  ASSERT_OK_AND_ASSIGN(auto readers, Assign("gen:events=90,keys=5,splits=3,seed=1", 3, &restored));
  for (int32_t s = 0; s < 3; ++s) {
    ASSERT_EQ(readers[static_cast<size_t>(s)].size(), 1u);
    EXPECT_EQ(readers[static_cast<size_t>(s)][0].split, SourceSplit::Generator(SplitId(s), s));
    EXPECT_EQ(readers[static_cast<size_t>(s)][0].position,
              SplitPosition::InGenerator(10 * (s + 1)));
  }
}

TEST(StaticSplitEnumeratorTest, ARestoreWithoutASplitsPositionNamesTheSplit) {
  RestoredSplits restored;
  restored["0"] = Encode(SourceSplitState{SourceSplit::Generator(SplitId(0), 0), {}});
  auto r = Assign("gen:events=90,keys=5,splits=2,seed=1", 1, &restored);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "the checkpoint has no position for generator split 1: the --input changed since the "
            "checkpoint was taken");
}

TEST(StaticSplitEnumeratorTest, ARestoreOfOtherFilesUnderTheSameIdsIsRefused) {
  TempDir dir("split-enumerator");
  ASSERT_OK(WriteFileAtomically(dir.File("a.jsonl"), "{}\n"));
  ASSERT_OK_AND_ASSIGN(InputSpec input, InputSpec::Parse(dir.path()));
  ASSERT_EQ(input.splits().size(), 1u);
  RestoredSplits restored;
  restored["0"] = Encode(SourceSplitState{SourceSplit::Generator(SplitId(0), 0), {}});
  auto r = Assign(dir.path(), 1, &restored);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "split 0 of the checkpoint is generator split 0 but --input now gives " +
                input.splits()[0].ToString() + ": restore with the same --input");
}

TEST(StaticSplitEnumeratorTest, ACorruptedRestoredPositionIsCorruption) {
  RestoredSplits restored;
  restored["0"] = "\xff\xff";
  auto r = Assign("gen:events=10,keys=2,splits=1,seed=1", 1, &restored);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
}

TEST(StaticSplitEnumeratorTest, AnInputDeletedSinceSubmitIsAnErrorNamingIt) {
  TempDir dir("split-enumerator");
  const std::string gone = dir.File("gone");
  auto r = CreateSplitEnumerator(SpecOf(gone), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("reading --input " + gone));
}

}  // namespace
}  // namespace keyflow
