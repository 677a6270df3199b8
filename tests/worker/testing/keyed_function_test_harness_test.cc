// The installed test harness on a graph job (JobDefinition::graph): ForJob runs the function of
// its keyed stage, keyed by its KeyBy's field and type.
#include "worker/testing/keyed_function_test_harness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testutil/graph_functions.h"
#include "tests/testutil/status_matchers.h"
#include "worker/api/output.h"
#include "worker/api/stream_graph.h"

namespace keyflow {
namespace {

// Emits the key and how many records it saw so far.
class CountSoFar final : public KeyedFunction {
 public:
  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(count_, runtime.GetState(ValueStateDescriptor<int64_t>("count", 0)));
    return Status::Ok();
  }
  void ProcessElement(const Record&, Context& ctx, Collector<OutputRecord>& out) override {
    count_->Update(*count_->Value() + 1);
    out.Collect(JsonObject()
                    .Add("key", ctx.current_key(), runtime_->key_type())
                    .Add("n", *count_->Value()));
  }

 private:
  RuntimeContext* runtime_ = nullptr;
  ValueState<int64_t>* count_ = nullptr;
};

JobDefinition GraphJob(std::string graph_shape = "pipeline") {
  JobDefinition job;
  job.name = "count-so-far";
  job.reads_fields = true;
  job.graph = [graph_shape](StreamGraphBuilder& g, const JobParams&) {
    DataStream counted =
        g.Source().Map("same", test::Same).KeyBy("account", KeyType::kLong).Process("count", [] {
          return std::make_unique<CountSoFar>();
        });
    if (graph_shape == "two-stage") {
      counted.KeyBy("n").Process("again", test::NoFunction).Sink();
    } else {
      counted.Sink();
    }
  };
  return job;
}

TEST(KeyedFunctionTestHarnessTest, AGraphJobRunsItsKeyedStageKeyedByItsKeyBy) {
  ASSERT_OK_AND_ASSIGN(auto h, KeyedFunctionTestHarness::ForJob(GraphJob()));
  ASSERT_OK(h->Open());
  ASSERT_OK(h->ProcessJson(R"({"account":7,"ts":1})"));
  ASSERT_OK(h->ProcessJson(R"({"account":"7","ts":2})"));
  ASSERT_OK(h->ProcessJson(R"({"account":8,"ts":3})"));
  EXPECT_EQ(
      h->ExtractOutput(),
      (std::vector<std::string>{R"({"key":7,"n":1})", R"({"key":7,"n":2})", R"({"key":8,"n":1})"}));
}

TEST(KeyedFunctionTestHarnessTest, AGraphThisVersionDoesNotRunIsRefused) {
  auto h = KeyedFunctionTestHarness::ForJob(GraphJob("two-stage"));
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.status().message(),
              ::testing::HasSubstr("job 'count-so-far': the job's graph has more than one keyed "
                                   "stage (keyed-process 'again')"));
}

}  // namespace
}  // namespace keyflow
