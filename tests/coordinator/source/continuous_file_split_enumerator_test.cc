#include "coordinator/source/continuous_file_split_enumerator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/binary_io.h"
#include "common/file_io.h"
#include "tests/coordinator/source/recording_context.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using test::Encode;
using test::RecordingContext;

class ContinuousFileSplitEnumeratorTest : public ::testing::Test {
 protected:
  std::string Add(const std::string& name) {
    const std::string path = dir_.path() + "/" + name;
    EXPECT_OK(WriteFileAtomically(path, "{}\n"));
    return path;
  }
  // Lists on the calling thread: the result is ready when the tick that started it looks.
  static DirectoryLister SyncLister() {
    return [](const std::string& dir) {
      std::promise<Result<std::vector<std::string>>> listed;
      listed.set_value(InputSpec::ListFiles(dir));
      return listed.get_future();
    };
  }
  std::unique_ptr<ContinuousFileSplitEnumerator> Create(const RestoredSplits* restored,
                                                        DirectoryLister lister = SyncLister()) {
    Result<InputSpec> input = InputSpec::Parse("monitor:" + dir_.path() + ",interval=100ms");
    EXPECT_OK(input);
    if (!input.ok()) return nullptr;
    Result<std::unique_ptr<ContinuousFileSplitEnumerator>> e =
        ContinuousFileSplitEnumerator::Create(*input, restored, std::move(lister));
    EXPECT_OK(e);
    return e.ok() ? std::move(e).value() : nullptr;
  }
  static SourceSplitState At(int32_t id, const std::string& path, int64_t offset = 0,
                             bool finished = false) {
    return {SourceSplit::File(SplitId(id), path), SplitPosition::InFile(offset, 1 + offset / 3),
            finished};
  }

  TempDir dir_{"monitor-enumerator"};
};

TEST_F(ContinuousFileSplitEnumeratorTest,
       AssignsTheFilesThereAtStartThenEachNewFileOnceAtItsInterval) {
  const std::string a = Add("a.jsonl");
  const std::string b = Add("b.jsonl");
  auto e = Create(nullptr);
  ASSERT_NE(e, nullptr);
  RecordingContext ctx(2);
  ASSERT_OK(e->Start(ctx));
  ASSERT_EQ(ctx.assigned.size(), 2u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, At(0, a)));
  EXPECT_EQ(ctx.assigned[1], std::make_pair(1, At(1, b)));
  EXPECT_TRUE(ctx.ended.empty()) << "a monitored directory never ends";

  const std::string c = Add("c.jsonl");
  Add(".c.jsonl.tmp");   // hidden: not yet
  Add("_in-progress");   // in progress: not yet
  e->OnTick(ctx, 1000);  // the first tick starts the interval
  EXPECT_EQ(ctx.assigned.size(), 2u);
  e->OnTick(ctx, 1099);
  EXPECT_EQ(ctx.assigned.size(), 2u);
  e->OnTick(ctx, 1100);
  ASSERT_EQ(ctx.assigned.size(), 3u);
  EXPECT_EQ(ctx.assigned[2], std::make_pair(0, At(2, c)));
  e->OnTick(ctx, 1200);  // nothing new
  EXPECT_EQ(ctx.assigned.size(), 3u);
  // A file that is removed and one renamed in: only the new name is new.
  std::filesystem::remove(a);
  std::filesystem::rename(dir_.path() + "/_in-progress", dir_.path() + "/d.jsonl");
  e->OnTick(ctx, 1300);
  ASSERT_EQ(ctx.assigned.size(), 4u);
  EXPECT_EQ(ctx.assigned[3], std::make_pair(1, At(3, dir_.path() + "/d.jsonl")));
  EXPECT_EQ(e->known_splits(), 4u);
}

// The cursor is the readers' state: a restored attempt hands every split of the checkpoint back
// (finished ones too, so they stay known) over the new parallelism, and only files the
// checkpoint does not know are new, with ids after the highest known one.
TEST_F(ContinuousFileSplitEnumeratorTest,
       ARestoreHandsBackTheCheckpointsSplitsAndFindsOnlyNewFiles) {
  const std::string a = Add("a.jsonl");
  const std::string b = Add("b.jsonl");
  const std::string c = Add("c.jsonl");                 // arrived after the checkpoint
  const std::string gone = dir_.path() + "/old.jsonl";  // read and removed before it
  RestoredSplits restored = {{"0", Encode(At(0, a, 30))},
                             {"1", Encode(At(1, b, 3, true))},
                             {"5", Encode(At(5, gone, 9, true))}};
  auto e = Create(&restored);
  ASSERT_NE(e, nullptr);
  RecordingContext ctx(3);
  ASSERT_OK(e->Start(ctx));
  ASSERT_EQ(ctx.assigned.size(), 4u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, At(0, a, 30)));
  EXPECT_EQ(ctx.assigned[1], std::make_pair(1, At(1, b, 3, true)));
  EXPECT_EQ(ctx.assigned[2], std::make_pair(2, At(5, gone, 9, true)));
  EXPECT_EQ(ctx.assigned[3], std::make_pair(0, At(6, c)));
  EXPECT_EQ(e->known_splits(), 4u);
}

TEST_F(ContinuousFileSplitEnumeratorTest, ACheckpointOfAnotherInputIsRefusedWithASentence) {
  RestoredSplits generator = {
      {"0", Encode({SourceSplit::Generator(SplitId(0), 0), SplitPosition::InGenerator(5)})}};
  Result<InputSpec> input = InputSpec::Parse("monitor:" + dir_.path());
  ASSERT_OK(input);
  EXPECT_EQ(ContinuousFileSplitEnumerator::Create(*input, &generator).status(),
            FailedPrecondition("split 0 of the checkpoint is generator split 0, not a file of the "
                               "monitored directory " +
                               dir_.path() + ": restore with the same --input"));
  RestoredSplits elsewhere = {{"0", Encode(At(0, "/elsewhere/a.jsonl"))}};
  EXPECT_EQ(ContinuousFileSplitEnumerator::Create(*input, &elsewhere).status().code(),
            StatusCode::kFailedPrecondition);
  RestoredSplits corrupt = {{"0", "\x01"}};
  EXPECT_EQ(ContinuousFileSplitEnumerator::Create(*input, &corrupt).status().code(),
            StatusCode::kCorruption);
}

// A listing that fails while the job runs (the directory was removed) is retried at the next
// interval; files found then are assigned.
TEST_F(ContinuousFileSplitEnumeratorTest, AFailedListingIsRetriedAtTheNextInterval) {
  auto e = Create(nullptr);
  ASSERT_NE(e, nullptr);
  RecordingContext ctx(1);
  ASSERT_OK(e->Start(ctx));
  EXPECT_TRUE(ctx.assigned.empty());
  std::filesystem::remove_all(dir_.path());
  e->OnTick(ctx, 0);
  e->OnTick(ctx, 100);  // logged, retried
  std::filesystem::create_directory(dir_.path());
  const std::string a = Add("a.jsonl");
  e->OnTick(ctx, 200);
  ASSERT_EQ(ctx.assigned.size(), 1u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, At(0, a)));
}

// While the attempt runs the directory is listed off the control thread: a tick starts the
// listing, later ticks pick it up once it finished (one listing at a time), and the next one
// starts an interval after that.
TEST_F(ContinuousFileSplitEnumeratorTest, ARunningListingIsPickedUpByALaterTickOneAtATime) {
  std::vector<std::promise<Result<std::vector<std::string>>>> listings;
  std::vector<std::string> listed_dirs;
  auto e = Create(nullptr, [&](const std::string& dir) {
    listed_dirs.push_back(dir);
    listings.emplace_back();
    return listings.back().get_future();
  });
  ASSERT_NE(e, nullptr);
  RecordingContext ctx(1);
  ASSERT_OK(e->Start(ctx));  // synchronous: nothing there
  e->OnTick(ctx, 0);
  e->OnTick(ctx, 100);  // due: the listing starts
  ASSERT_EQ(listings.size(), 1u);
  EXPECT_EQ(listed_dirs[0], dir_.path());
  e->OnTick(ctx, 200);
  e->OnTick(ctx, 300);  // still running: no second listing, nothing assigned
  EXPECT_EQ(listings.size(), 1u);
  EXPECT_TRUE(ctx.assigned.empty());
  const std::string a = dir_.path() + "/a.jsonl";
  listings[0].set_value(std::vector<std::string>{a});
  e->OnTick(ctx, 350);  // picked up
  ASSERT_EQ(ctx.assigned.size(), 1u);
  EXPECT_EQ(ctx.assigned[0], std::make_pair(0, At(0, a)));
  e->OnTick(ctx, 440);  // the next listing is due an interval after the last one ended
  EXPECT_EQ(listings.size(), 1u);
  e->OnTick(ctx, 450);
  ASSERT_EQ(listings.size(), 2u);
  listings[1].set_value(IoError("cannot list: Input/output error"));
  e->OnTick(ctx, 460);  // a failed listing: logged, shown in status, retried at the next interval
  EXPECT_EQ(e->StatusJson(),
            (nlohmann::json{{"kind", "monitor"},
                            {"directory", dir_.path()},
                            {"interval_ms", 100},
                            {"splits", 1},
                            {"listing_error", "cannot list: Input/output error"}}));
  e->OnTick(ctx, 559);
  EXPECT_EQ(listings.size(), 2u);
  e->OnTick(ctx, 560);
  EXPECT_EQ(listings.size(), 3u);
  listings[2].set_value(std::vector<std::string>{a});
  e->OnTick(ctx, 570);
  EXPECT_EQ(ctx.assigned.size(), 1u) << "a known file is not new";
  EXPECT_EQ(e->StatusJson()["listing_error"], "");
}

TEST(AsyncDirectoryListerTest, ListsOnAnotherThread) {
  TempDir dir("async-lister");
  ASSERT_OK(WriteFileAtomically(dir.path() + "/x.jsonl", ""));
  auto listed = AsyncDirectoryLister()(dir.path()).get();
  ASSERT_OK(listed);
  EXPECT_EQ(*listed, std::vector<std::string>{dir.path() + "/x.jsonl"});
}

TEST(LiveSplitAssignmentTest, SendsEachAssignmentEncodedAtOnce) {
  std::vector<std::pair<int32_t, std::vector<std::string>>> sent;
  LiveSplitAssignment live(2, [&](SubtaskIndex s, std::vector<std::string> splits) {
    sent.emplace_back(s.value(), std::move(splits));
  });
  const SourceSplitState st{SourceSplit::File(SplitId(4), "/d/e"), {}};
  live.AssignSplits(SubtaskIndex(1), {st});
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, 1);
  EXPECT_EQ(sent[0].second, std::vector<std::string>{Encode(st)});
  EXPECT_EQ(live.parallelism(), 2);
}

}  // namespace
}  // namespace keyflow
