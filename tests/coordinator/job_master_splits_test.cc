// The job master and the source's split enumerator: a monitored directory's files are assigned
// at deployment (DeployTask) and, while the attempt runs, as they appear (AddSplits, sent before
// any checkpoint trigger of the same tick); a restart hands the checkpoint's splits back and
// finds only the files the checkpoint did not know.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/coordinator/coordinator_harness.h"

namespace keyflow {
namespace {

class JobMasterSplitsTest : public test::CoordinatorHarness {
 protected:
  std::string Add(const std::string& name) {
    const std::string path = input_.path() + "/" + name;
    EXPECT_OK(WriteFileAtomically(path, "{}\n"));
    return path;
  }
  JobSpec MonitorSpec(int32_t p) {
    JobSpec spec = Spec(p, 1000);
    spec.input = "monitor:" + input_.path() + ",interval=200ms";
    return spec;
  }
  static std::string Encoded(const SourceSplitState& st) {
    std::string bytes;
    BinaryWriter w(&bytes);
    st.EncodeTo(&w);
    return bytes;
  }
  static SourceSplitState File(int32_t id, const std::string& path, int64_t offset = 0) {
    return {SourceSplit::File(SplitId(id), path), SplitPosition::InFile(offset, 1 + offset / 3)};
  }
  // The position of every message of type T sent to `identity` in the outbox's order.
  template <typename T>
  std::vector<size_t> IndexesOf(const std::string& identity) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < outbox_.sent.size(); ++i) {
      if (outbox_.sent[i].first == identity && std::holds_alternative<T>(outbox_.sent[i].second))
        out.push_back(i);
    }
    return out;
  }

  TempDir input_{"monitored"};
};

TEST_F(JobMasterSplitsTest, NewFilesGoToTheirReadersWhileTheJobRunsBeforeTheNextTrigger) {
  const std::string a = Add("a.jsonl");
  Register("w0", 0);
  Register("w1", 1);
  Submit(MonitorSpec(2));
  auto d0 = outbox_.Last<DeployTask>("w0");
  auto d1 = outbox_.Last<DeployTask>("w1");
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->source_splits, std::vector<std::string>{Encoded(File(0, a))});
  EXPECT_TRUE(d1->source_splits.empty());
  EXPECT_FALSE(d0->no_more_splits);
  EXPECT_FALSE(d1->no_more_splits);
  DeployAll({"w0", "w1"});

  const std::string b = Add("b.jsonl");
  const std::string c = Add("c.jsonl");
  Advance(400);
  auto to_w1 = outbox_.To<AddSplits>("w1");
  auto to_w0 = outbox_.To<AddSplits>("w0");
  ASSERT_EQ(to_w1.size(), 1u);
  ASSERT_EQ(to_w0.size(), 1u);
  EXPECT_EQ(to_w1[0].splits, std::vector<std::string>{Encoded(File(1, b))});
  EXPECT_EQ(to_w1[0].subtask, SubtaskIndex(1));
  EXPECT_EQ(to_w1[0].attempt, AttemptNumber(1));
  EXPECT_EQ(to_w0[0].splits, std::vector<std::string>{Encoded(File(2, c))});
  const nlohmann::json source = coord_->StatusJson(now_)["job"]["source"];
  EXPECT_EQ(source["kind"], "monitor");
  EXPECT_EQ(source["splits"], 3);
  EXPECT_EQ(source["listing_error"], "");
  // Nothing twice, and the first checkpoint (at 1000 ms) is triggered after the assignment.
  AdvanceToNextCheckpoint("w0");
  EXPECT_EQ(outbox_.To<AddSplits>("w0").size(), 1u);
  EXPECT_LT(IndexesOf<AddSplits>("w0").back(), IndexesOf<TriggerCheckpoint>("w0").front());
}

TEST_F(JobMasterSplitsTest, ARestartHandsBackTheCheckpointsSplitsAndAssignsOnlyFilesItDidNotKnow) {
  const std::string a = Add("a.jsonl");
  const std::string b = Add("b.jsonl");
  RunOnOneWorker(MonitorSpec(1));
  AdvanceToNextCheckpoint("w0");
  // The checkpoint: a read to its end, b half way.
  SourceSplitState a_done = File(0, a, 3);
  a_done.finished = true;
  auto t = outbox_.Last<TriggerCheckpoint>("w0");
  auto d = outbox_.Last<DeployTask>("w0");
  AcknowledgeCheckpoint ack;
  ack.worker = ids_["w0"];
  ack.attempt = t->attempt;
  ack.subtask = d->subtask;
  ack.checkpoint = t->checkpoint;
  ack.keyed_state.path = CheckpointStorage::SubtaskStateFileName(d->subtask);
  ack.keyed_state.range = d->key_groups;
  for (int32_t g = 0; g < d->key_groups.size(); ++g) {
    ack.keyed_state.offsets.push_back(0);
    ack.keyed_state.lengths.push_back(0);
    ack.keyed_state.keys.push_back(0);
    ack.keyed_state.timers.push_back(0);
  }
  ASSERT_OK(WriteFileAtomically(t->directory + "/" + ack.keyed_state.path, ""));
  ack.split_positions = {{"0", Encoded(a_done)}, {"1", Encoded(File(1, b, 3))}};
  Deliver("w0", ack);
  ASSERT_EQ(outbox_.Last<NotifyCheckpointComplete>("w0")->checkpoint, t->checkpoint);

  const std::string c = Add("c.jsonl");  // after the checkpoint
  Deliver("w0", TaskFailed{ids_["w0"], AttemptNumber(1), SubtaskIndex(0), "boom"});
  Advance(1000);
  auto again = outbox_.Last<DeployTask>("w0");
  ASSERT_EQ(again->attempt, AttemptNumber(2));
  EXPECT_EQ(again->source_splits, (std::vector<std::string>{Encoded(a_done), Encoded(File(1, b, 3)),
                                                            Encoded(File(2, c))}));
  EXPECT_FALSE(again->no_more_splits);
}

TEST_F(JobMasterSplitsTest, AMonitoredDirectoryThatDoesNotExistIsRefusedAtSubmit) {
  Register("w0", 0);
  JobSpec spec = Spec(1, 1000);
  spec.input = "monitor:" + input_.path() + "/nope";
  Deliver("cli", SubmitJob{spec});
  EXPECT_EQ(RefusingReply("cli"), "job rejected: the directory to monitor '" + input_.path() +
                                      "/nope' does not exist: create it first (it may be empty)");
  EXPECT_EQ(coord_->job(), nullptr);
}

}  // namespace
}  // namespace keyflow
