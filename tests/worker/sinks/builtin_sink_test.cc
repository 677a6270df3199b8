#include "worker/sinks/builtin_sink.h"

#include <gtest/gtest.h>
#include <stdio.h>

#include <string>
#include <vector>

#include "common/output_directory.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

DeployTask Deployment(const std::string& output_dir, int32_t attempt = 1) {
  DeployTask d;
  d.job_id = "job-1";
  d.attempt = AttemptNumber(attempt);
  d.subtask = SubtaskIndex(1);
  d.spec.parallelism = 2;
  d.spec.output_dir = output_dir;
  return d;
}

TEST(BuiltinSinkTest, WithoutOutputThePrintSinkFlushesAtTheBarrierAndHasNothingToCommit) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkWriter> sink, OpenBuiltinSink(Deployment(""), f));
  ASSERT_OK(sink->Write(OutputRecord("a")));
  ASSERT_OK(sink->Write(OutputRecord("b")));
  EXPECT_EQ(test_util::ReadStream(f), "");  // buffered
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkPreCommitSync> sync,
                       sink->PrepareCommit(CheckpointId(1)));
  EXPECT_EQ(sync, nullptr);
  EXPECT_TRUE(sink->PendingCommittables().empty());
  EXPECT_EQ(test_util::ReadStream(f),
            "2> a\n2> b\n");  // at least once: out before the checkpoint completes
  ASSERT_OK(sink->Write(OutputRecord("c")));
  ASSERT_OK(sink->FinishAndCommit());
  EXPECT_EQ(test_util::ReadStream(f), "2> a\n2> b\n2> c\n");
  std::fclose(f);
}

TEST(BuiltinSinkTest, TheFileSinkCommitsOnlyWhatACompletedCheckpointCovers) {
  test_util::TempDir dir;
  const std::string out = dir.File("out");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkWriter> sink, OpenBuiltinSink(Deployment(out)));
  ASSERT_OK(sink->Write(OutputRecord("x")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SinkPreCommitSync> sync,
                       sink->PrepareCommit(CheckpointId(3)));
  ASSERT_NE(sync, nullptr);
  ASSERT_OK(sync->Run());
  std::vector<std::string> pending = sink->PendingCommittables();
  ASSERT_EQ(pending.size(), 1u);
  BinaryReader r(pending[0]);
  ASSERT_OK_AND_ASSIGN(FileSinkCommittable c, FileSinkCommittable::DecodeFrom(&r));
  EXPECT_EQ(c.checkpoint, CheckpointId(3));
  EXPECT_EQ(c.final_name, "part-job-1-1-1-3.jsonl");
  EXPECT_EQ(c.size, 2u);
  ASSERT_OK(sink->Write(OutputRecord("y")));  // after the barrier: not in checkpoint 3
  EXPECT_FALSE(std::filesystem::exists(out + "/" + c.final_name));
  ASSERT_OK(sink->NotifyCheckpointComplete(CheckpointId(3)));
  EXPECT_EQ(test_util::ReadFile(out + "/" + c.final_name), "x\n");
  EXPECT_TRUE(sink->PendingCommittables().empty());
  ASSERT_OK(sink->FinishAndCommit());
  EXPECT_EQ(test_util::ReadFile(out + "/part-job-1-1-1-final.jsonl"), "y\n");
}

TEST(BuiltinSinkTest, ANewJobRefusesAnOutputDirectoryWithResultsAndARestartRecoversIt) {
  test_util::TempDir dir;
  dir.Write("part-other-0-1-final.jsonl", "old\n");
  Result<std::unique_ptr<SinkWriter>> fresh = OpenBuiltinSink(Deployment(dir.path()));
  ASSERT_FALSE(fresh.ok());
  EXPECT_EQ(fresh.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(fresh.status().ToString(), CheckOutputDirectoryIsFresh(dir.path()).ToString());

  // A restart (attempt 2) of this job: its own leftovers go, another job's files stay.
  dir.Write(".part-job-1-1-1-0.inprogress", "half");
  ASSERT_OK(OpenBuiltinSink(Deployment(dir.path(), 2)));
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"part-other-0-1-final.jsonl"}));
}

}  // namespace
}  // namespace keyflow
