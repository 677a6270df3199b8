// The operators between a graph job's keyed stage and its sink (worker/sinks/
// chained_sink_writer.h): what reaches the sink, with which timestamp, and what a line that is
// not a JSON object does; the sink's commit protocol passes through untouched.
#include "worker/sinks/chained_sink_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/field_tape_writer.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

// Records what it is given.
class RecordingSink final : public SinkWriter {
 public:
  explicit RecordingSink(std::vector<std::string>* calls) : calls_(calls) {}
  Status Write(const OutputRecord& r) override {
    calls_->push_back(r.line + (r.timestamp ? " @" + std::to_string(r.timestamp->millis())
                                            : std::string(" @none")));
    return Status::Ok();
  }
  Status Flush() override {
    calls_->push_back("flush");
    return Status::Ok();
  }
  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId id) override {
    calls_->push_back("prepare " + std::to_string(id.value()));
    return std::unique_ptr<SinkPreCommitSync>();
  }
  std::vector<std::string> PendingCommittables() const override { return {"c1"}; }
  Status NotifyCheckpointComplete(CheckpointId id) override {
    calls_->push_back("complete " + std::to_string(id.value()));
    return Status::Ok();
  }
  Status FinishAndCommit() override {
    calls_->push_back("finish");
    return Status::Ok();
  }

 private:
  std::vector<std::string>* calls_;
};

// Filter "big" (n >= 10) -> FlatMap "twice" ({"n":n} and {"n":n,"copy":true}).
std::unique_ptr<RecordChain> BigTwice() {
  RecordChain::Operator big{OperatorKind::kFilter, "big", {}};
  big.functions.filter = [](const Record& r) { return r.field("n").AsInt64().value_or(0) >= 10; };
  RecordChain::Operator twice{OperatorKind::kFlatMap, "twice", {}};
  twice.functions.flat_map = [](const Record& in, Collector<Record>& out) {
    out.Collect(in);
    Record copy;
    FieldTapeWriter w(&copy.fields);
    w.BeginObject();
    w.Name("n");
    w.Int(*in.field("n").AsInt64());
    w.Name("copy");
    w.Bool(true);
    w.EndObject();
    out.Collect(copy);
  };
  RecordChain::Options options;
  options.job_name = "j";
  options.max_parallelism = 128;
  options.on_bad_key = [](const Status& s) { return s; };  // never called: no key
  return std::make_unique<RecordChain>(std::vector<RecordChain::Operator>{big, twice}, options,
                                       nullptr);
}

TEST(ChainedSinkWriterTest, RunsTheOperatorsAndKeepsTheEmittedTimestampOrNone) {
  std::vector<std::string> calls;
  std::vector<Status> bad;
  ChainedSinkWriter sink(BigTwice(), std::make_unique<RecordingSink>(&calls),
                         [&](const Status& why) {
                           bad.push_back(why);
                           return Status::Ok();
                         });
  ASSERT_OK(sink.Write(OutputRecord(R"({"n":12, "ts":5})", Timestamp(900))));
  ASSERT_OK(sink.Write(OutputRecord(R"({"n":3})", Timestamp(901))));
  ASSERT_OK(sink.Write(OutputRecord(R"({"n":10})")));
  EXPECT_EQ(calls,
            (std::vector<std::string>{R"({"n":12,"ts":5} @900)", R"({"n":12,"copy":true} @900)",
                                      R"({"n":10} @none)", R"({"n":10,"copy":true} @none)"}));
  EXPECT_TRUE(bad.empty());
}

TEST(ChainedSinkWriterTest, ALineThatIsNotAJsonObjectIsABadRecord) {
  std::vector<std::string> calls;
  std::vector<Status> bad;
  ChainedSinkWriter sink(BigTwice(), std::make_unique<RecordingSink>(&calls),
                         [&](const Status& why) {
                           bad.push_back(why);
                           return bad.size() == 1 ? Status::Ok() : InvalidArgument("stop");
                         });
  ASSERT_OK(sink.Write(OutputRecord(std::string("plain text"))));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_THAT(bad[0].message(),
              ::testing::StartsWith("its record plain text is not a JSON object ("));
  Status second = sink.Write(OutputRecord(std::string("[1,2]")));
  EXPECT_EQ(second.message(), "stop");
  EXPECT_TRUE(calls.empty());
}

TEST(ChainedSinkWriterTest, TheCommitProtocolIsTheSinks) {
  std::vector<std::string> calls;
  ChainedSinkWriter sink(BigTwice(), std::make_unique<RecordingSink>(&calls),
                         [](const Status& s) { return s; });
  ASSERT_OK(sink.Flush());
  ASSERT_OK(sink.PrepareCommit(CheckpointId(4)).status());
  EXPECT_EQ(sink.PendingCommittables(), std::vector<std::string>{"c1"});
  ASSERT_OK(sink.NotifyCheckpointComplete(CheckpointId(4)));
  ASSERT_OK(sink.FinishAndCommit());
  EXPECT_EQ(calls, (std::vector<std::string>{"flush", "prepare 4", "complete 4", "finish"}));
}

}  // namespace
}  // namespace keyflow
