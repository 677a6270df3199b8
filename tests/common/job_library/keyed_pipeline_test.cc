// Which graphs this version runs (common/job_library/keyed_pipeline.h): the source -> stateless
// operators -> KeyBy -> Process -> sink pipeline, found in a built graph, and one sentence for
// each shape it does not run yet.
#include "common/job_library/keyed_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/record.h"
#include "tests/testutil/graph_functions.h"
#include "tests/testutil/refusals.h"
#include "tests/testutil/status_matchers.h"
#include "worker/api/stream_graph.h"

namespace keyflow {
namespace {

using test::Keep;
using test::NoCoFunction;
using test::NoFunction;
using test::Same;
using test::Twice;
using ::testing::HasSubstr;

JobGraph Built(const StreamGraphBuilder& g) {
  Result<JobGraph> graph = g.Build({});
  EXPECT_OK(graph);
  return graph.ok() ? *graph : JobGraph();
}

// The sentence PlanKeyedPipeline refuses `g` with.
std::string Refusal(const StreamGraphBuilder& g) {
  return test::InvalidArgumentMessage(PlanKeyedPipeline(Built(g)));
}

TEST(KeyedPipelineTest, FindsTheOperatorsBeforeTheKeyByInOrder) {
  StreamGraphBuilder g;
  g.Source()
      .Filter("keep", Keep)
      .FlatMap("twice", Twice)
      .Map("same", Same)
      .KeyBy("word", KeyType::kLong)
      .Process("count", NoFunction)
      .Sink();
  JobGraph graph = Built(g);
  ASSERT_OK_AND_ASSIGN(KeyedPipeline p, PlanKeyedPipeline(graph));
  EXPECT_EQ(p.source, graph.Find("source-in")->id);
  EXPECT_EQ(p.before_key_by, (std::vector<int32_t>{graph.Find("keep")->id, graph.Find("twice")->id,
                                                   graph.Find("same")->id}));
  EXPECT_EQ(p.key_by.key_field, "word");
  EXPECT_EQ(p.key_by.key_type, KeyType::kLong);
  EXPECT_EQ(p.key_by.from, graph.Find("same")->id);
  EXPECT_EQ(p.process, graph.Find("count")->id);
  EXPECT_EQ(p.sink, graph.Find("sink-out")->id);
}

TEST(KeyedPipelineTest, FindsTheOperatorsAfterTheKeyedStageInOrder) {
  StreamGraphBuilder g;
  g.Source()
      .KeyBy("uid")
      .Process("count", NoFunction)
      .Filter("keep", Keep)
      .Map("format", Same)
      .Sink();
  JobGraph graph = Built(g);
  ASSERT_OK_AND_ASSIGN(KeyedPipeline p, PlanKeyedPipeline(graph));
  EXPECT_TRUE(p.before_key_by.empty());
  EXPECT_EQ(p.after_process,
            (std::vector<int32_t>{graph.Find("keep")->id, graph.Find("format")->id}));
  EXPECT_EQ(p.sink, graph.Find("sink-out")->id);
}

TEST(KeyedPipelineTest, ASingleFunctionJobIsThePipelineWithoutOperators) {
  JobGraph graph = SingleFunctionGraph("count-window", "uid", KeyType::kString);
  ASSERT_OK_AND_ASSIGN(KeyedPipeline p, PlanKeyedPipeline(graph));
  EXPECT_TRUE(p.before_key_by.empty());
  EXPECT_TRUE(p.after_process.empty());
  EXPECT_EQ(p.key_by.key_field, "uid");
  EXPECT_EQ(graph.operators.at(static_cast<size_t>(p.process)).uid, "count-window");
}

TEST(KeyedPipelineTest, KeysAfterChainedOperatorsOnlyWithOperatorsBeforeTheKeyBy) {
  JobSpec spec;
  EXPECT_FALSE(KeysAfterChainedOperators(spec)) << "a single-function job";
  spec.graph = SingleFunctionGraph("count", "uid", KeyType::kString);
  EXPECT_FALSE(KeysAfterChainedOperators(spec));
  StreamGraphBuilder g;
  g.Source().Map("same", Same).KeyBy("uid").Process("count", NoFunction).Sink();
  spec.graph = Built(g);
  EXPECT_TRUE(KeysAfterChainedOperators(spec));
}

TEST(KeyedPipelineTest, AGraphWithoutKeyByIsAStatelessPipelineInTheSourceTask) {
  StreamGraphBuilder g;
  g.Source().Filter("keep", Keep).FlatMap("twice", Twice).Map("same", Same).Sink();
  JobGraph graph = Built(g);
  ASSERT_OK_AND_ASSIGN(KeyedPipeline p, PlanKeyedPipeline(graph));
  EXPECT_FALSE(p.keyed);
  EXPECT_EQ(p.source, graph.Find("source-in")->id);
  EXPECT_EQ(p.before_key_by, (std::vector<int32_t>{graph.Find("keep")->id, graph.Find("twice")->id,
                                                   graph.Find("same")->id}));
  EXPECT_EQ(p.process, -1);
  EXPECT_TRUE(p.after_process.empty());
  EXPECT_EQ(p.sink, graph.Find("sink-out")->id);

  StreamGraphBuilder direct;
  direct.Source().Sink();
  JobGraph pass = Built(direct);
  ASSERT_OK_AND_ASSIGN(KeyedPipeline q, PlanKeyedPipeline(pass));
  EXPECT_FALSE(q.keyed);
  EXPECT_TRUE(q.before_key_by.empty());
  EXPECT_EQ(q.sink, pass.Find("sink-out")->id);

  JobSpec spec;
  spec.graph = graph;
  EXPECT_TRUE(KeysAfterChainedOperators(spec)) << "nothing is keyed";
  spec.graph = pass;
  EXPECT_TRUE(KeysAfterChainedOperators(spec)) << "nothing is keyed";
}

constexpr std::string_view kShape =
    ", which this version of keyflow does not run yet (this version runs a graph of one source, "
    "Map/Filter/FlatMap operators, at most one KeyBy into one Process, Map/Filter/FlatMap "
    "operators, and "
    "one sink)";

TEST(KeyedPipelineTest, EachShapeNotRunYetIsRefusedWithOneSentence) {
  {
    StreamGraphBuilder g;
    g.Source()
        .KeyBy("uid")
        .Process("first", NoFunction)
        .KeyBy("n")
        .Process("second", NoFunction)
        .Sink();
    EXPECT_EQ(Refusal(g), "the job's graph has more than one keyed stage (keyed-process 'second')" +
                              std::string(kShape));
  }
  {
    StreamGraphBuilder g;
    DataStream a = g.Source("a");
    a.Connect(g.Source("b")).KeyBy("x", "y").Process("join", NoCoFunction).Sink();
    EXPECT_EQ(Refusal(g), "the job's graph uses a two-input operator (keyed-co-process 'join')" +
                              std::string(kShape));
  }
  {
    StreamGraphBuilder g;
    DataStream in = g.Source();
    in.Map("a", Same).Union(in.Map("b", Same)).KeyBy("uid").Process("count", NoFunction).Sink();
    EXPECT_THAT(Refusal(g), HasSubstr("the job's graph uses a union (union '"));
  }
  {
    StreamGraphBuilder g;
    OutputTag late{"late"};
    DataStream counts = g.Source().KeyBy("uid").Process("count", NoFunction, {late});
    counts.Sink();
    counts.GetSideOutput(late).Sink("late");
    EXPECT_EQ(Refusal(g),
              "the job's graph uses side outputs (keyed-process 'count' declares 'late')" +
                  std::string(kShape));
  }
  {
    StreamGraphBuilder g;
    DataStream counts = g.Source().KeyBy("uid").Process("count", NoFunction);
    counts.Sink();
    counts.Map("copy", Same).Sink("copy");
    EXPECT_EQ(Refusal(g),
              "the job's graph has more than one sink (sink 'sink-copy')" + std::string(kShape));
  }
  {
    StreamGraphBuilder g;
    g.Source().Map("wide", Same).SetParallelism(4).KeyBy("uid").Process("count", NoFunction).Sink();
    EXPECT_EQ(Refusal(g),
              "the job's graph sets a parallelism of its own on map 'wide'" + std::string(kShape));
  }
  {
    StreamGraphBuilder g;
    DataStream kept = g.Source().Filter("keep", Keep);
    kept.Sink();
    kept.Map("copy", Same).Sink("copy");
    EXPECT_EQ(Refusal(g),
              "the job's graph has more than one sink (sink 'sink-copy')" + std::string(kShape));
  }
  {
    StreamGraphBuilder g;
    g.Source("bids").KeyBy("uid").Process("count", NoFunction).Sink();
    EXPECT_EQ(Refusal(g), "the job's graph binds its source to input 'bids' instead of \"in\"" +
                              std::string(kShape));
  }
}

}  // namespace
}  // namespace keyflow
