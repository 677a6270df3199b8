// The graph model of multi-stage jobs (worker/api/stream_graph.h): what the builder makes of a
// pipeline (operators, edges, the chains that become tasks) and each construction error refused
// with its sentence; ValidateJobGraph on graphs that did not come from the builder.
#include "worker/api/stream_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/record.h"
#include "tests/testutil/graph_functions.h"
#include "tests/testutil/refusals.h"
#include "tests/testutil/status_matchers.h"
#include "worker/api/output.h"

namespace keyflow {
namespace {

using test::Keep;
using test::NoCoFunction;
using test::NoFunction;
using test::Same;

// The sentence Build() refuses the graph with.
std::string Refusal(const StreamGraphBuilder& g, const StreamGraphOptions& options = {}) {
  return test::InvalidArgumentMessage(g.Build(options));
}

TEST(StreamGraphTest, StatelessOperatorsChainAndEveryKeyByStartsATask) {
  StreamGraphBuilder g;
  g.Source("in")
      .Filter("only-bids", Keep)
      .Map("price-in-euro", Same)
      .KeyBy("auction")
      .Process("count", NoFunction)
      .Map("format", Same)
      .Sink("out");
  ASSERT_OK_AND_ASSIGN(JobGraph graph, g.Build({}));
  ASSERT_EQ(graph.operators.size(), 6u);
  EXPECT_EQ(graph.Describe(),
            "task 0 [source source-in -> filter only-bids -> map price-in-euro] parallelism of "
            "the job\n"
            "task 1 [keyed-process count -> map format -> sink sink-out] parallelism of the job\n"
            "  price-in-euro =hash(auction)=> count\n");
  const StreamEdge* keyed = graph.Inputs(graph.Find("count")->id).at(0);
  EXPECT_EQ(keyed->partitioning, Partitioning::kHash);
  EXPECT_EQ(keyed->key_field, "auction");
  EXPECT_OK(ValidateJobGraph(graph));
  // The functions stay with the builder, by operator id.
  Record r;
  r.timestamp = Timestamp(7);
  EXPECT_EQ(g.functions_of(graph.Find("price-in-euro")->id).map(r).timestamp, Timestamp(7));
  EXPECT_TRUE(g.functions_of(graph.Find("only-bids")->id).filter(r));
}

TEST(StreamGraphTest, ASingleFunctionJobIsSourceKeyByProcessSink) {
  JobGraph graph = SingleFunctionGraph("count-window", "uid", KeyType::kString);
  EXPECT_EQ(graph.Describe(),
            "task 0 [source source-in] parallelism of the job\n"
            "task 1 [keyed-process count-window -> sink sink-out] parallelism of the job\n"
            "  source-in =hash(uid)=> count-window\n");
  EXPECT_OK(ValidateJobGraph(graph));
}

TEST(StreamGraphTest, TwoKeyedStagesAJoinSideOutputsAndAUnion) {
  StreamGraphBuilder g;
  OutputTag late{"late"};
  DataStream bids = g.Source("bids");
  DataStream auctions = g.Source("auctions");
  DataStream counts = bids.KeyBy("auction").Process("count", NoFunction, {late});
  counts.KeyBy("window_end").Process("hottest", NoFunction).Sink("out");
  DataStream joined = auctions.Connect(bids).KeyBy("id", "auction").Process("join", NoCoFunction);
  joined.Union(counts.GetSideOutput(late)).Sink("late");
  ASSERT_OK_AND_ASSIGN(JobGraph graph, g.Build({}));
  EXPECT_EQ(graph.Describe(),
            "task 0 [source source-bids] parallelism of the job\n"
            "task 1 [source source-auctions] parallelism of the job\n"
            "task 2 [keyed-process count] parallelism of the job\n"
            "task 3 [keyed-process hottest -> sink sink-out] parallelism of the job\n"
            "task 4 [keyed-co-process join] parallelism of the job\n"
            "task 5 [union union-6 -> sink sink-late] parallelism of the job\n"
            "  source-bids =hash(auction)=> count\n"
            "  count =hash(window_end)=> hottest\n"
            "  source-auctions =hash(id)=> join input 1\n"
            "  source-bids =hash(auction)=> join input 2\n"
            "  join =forward=> union-6\n"
            "  count[late] =forward=> union-6\n");
  EXPECT_OK(ValidateJobGraph(graph));
}

TEST(StreamGraphTest, ADifferentParallelismBreaksTheChainWithARebalance) {
  StreamGraphBuilder g;
  g.Source().Map("parse", Same).SetParallelism(4).Sink();
  ASSERT_OK_AND_ASSIGN(JobGraph graph, g.Build({}));
  EXPECT_EQ(graph.Describe(),
            "task 0 [source source-in] parallelism of the job\n"
            "task 1 [map parse] parallelism 4\n"
            "task 2 [sink sink-out] parallelism of the job\n"
            "  source-in =rebalance=> parse\n"
            "  parse =rebalance=> sink-out\n");
  StreamGraphBuilder too_wide;
  too_wide.Source().Map("parse", Same).SetParallelism(300).Sink();
  EXPECT_EQ(Refusal(too_wide, {.max_parallelism = 128}),
            "map 'parse' has parallelism 300, above the job's maximum 128 (--max-parallelism)");
}

TEST(StreamGraphTest, ConstructionErrorsAreRefusedWithOneSentence) {
  {
    StreamGraphBuilder g;
    g.Source().Map("m", Same).Map("m", Same).Sink();
    EXPECT_EQ(Refusal(g),
              "two operators have the uid 'm': a uid names one operator (its state is kept "
              "under it)");
  }
  {
    StreamGraphBuilder g;
    g.Source().Map("has space", Same).Sink();
    EXPECT_EQ(Refusal(g),
              "operator uid 'has space' of a map is not valid: use 1-64 of [A-Za-z0-9._-]");
  }
  {
    StreamGraphBuilder g;
    g.Source().Map("m", Same);
    EXPECT_EQ(Refusal(g), "the job's graph has no sink: end each stream with Sink()");
  }
  {
    StreamGraphBuilder g;
    EXPECT_EQ(Refusal(g), "the job's graph has no source: start it with Source()");
  }
  {
    StreamGraphBuilder g;
    DataStream in = g.Source();
    in.Sink();
    in.Map("forgotten", Same);
    EXPECT_EQ(Refusal(g),
              "the output of map 'forgotten' goes nowhere: add a Sink() behind it or remove it");
  }
  {
    StreamGraphBuilder g;
    g.Source().KeyBy("uid").Process("count", NoFunction, {OutputTag{"late"}}).Sink();
    EXPECT_EQ(Refusal(g),
              "side output 'late' of keyed-process 'count' is read by nobody: read it with "
              "GetSideOutput() and sink it, or do not declare it");
  }
  {
    StreamGraphBuilder g;
    DataStream counts = g.Source().KeyBy("uid").Process("count", NoFunction);
    counts.Sink();
    counts.GetSideOutput(OutputTag{"late"}).Sink("late");
    EXPECT_EQ(Refusal(g),
              "GetSideOutput('late') on keyed-process 'count', which declares no such side "
              "output: pass the tag to its Process()");
  }
  {
    StreamGraphBuilder g;
    DataStream in = g.Source();
    in.Sink();
    in.Map("copy", Same).Sink("out", "copy-sink");
    EXPECT_EQ(Refusal(g),
              "sinks 'sink-out' and 'copy-sink' are both bound to 'out': give each its own name");
  }
  {
    StreamGraphBuilder g;
    DataStream in = g.Source();
    in.Union(in).Sink();
    EXPECT_EQ(Refusal(g),
              "a stream of 'source-in' is unioned with itself: every record would come twice");
  }
  {
    StreamGraphBuilder g;
    g.Source().Map("m", Same).SetParallelism(0).Sink();
    EXPECT_EQ(Refusal(g), "SetParallelism(0) on map 'm': a parallelism is at least 1");
  }
}

TEST(StreamGraphTest, AKeyByRightAfterASourceMustKeyByADeclaredField) {
  StreamGraphBuilder g;
  g.Source().Filter("f", Keep).KeyBy("auction").Process("count", NoFunction).Sink();
  EXPECT_EQ(Refusal(g, {.declared_fields = {"uid", "price"}}),
            "KeyBy('auction') before keyed-process 'count' keys by a field that source "
            "'source-in' drops: the sources keep only the fields the job declares "
            "(JobDefinition::fields: 'uid', 'price'): add 'auction'");
  EXPECT_OK(g.Build({.declared_fields = {"auction"}}).status());
  EXPECT_OK(g.Build({}).status());  // no declaration: every field travels
  // After a map the field may be new: not checked here (the runtime says so per record).
  StreamGraphBuilder mapped;
  mapped.Source().Map("m", Same).KeyBy("auction").Process("count", NoFunction).Sink();
  EXPECT_OK(mapped.Build({.declared_fields = {"uid"}}).status());
}

// Graphs that did not come from the builder (a spec from the wire).
JobGraph ThreeOperators() {
  return SingleFunctionGraph("count", "uid", KeyType::kString);
}

TEST(StreamGraphTest, ValidateRefusesCyclesAndMalformedGraphs) {
  {
    JobGraph g = ThreeOperators();
    StreamEdge back;  // count -> source: a cycle
    back.from = 1;
    back.to = 0;
    g.edges.push_back(back);
    EXPECT_EQ(ValidateJobGraph(g).message(),
              "the job's graph has a cycle through operator 0 ('source-in'): records would flow "
              "forever");
  }
  {
    JobGraph g = ThreeOperators();
    g.edges[0].to = 9;
    EXPECT_EQ(ValidateJobGraph(g).message(),
              "an edge from operator 0 to 9 does not join two operators");
  }
  {
    JobGraph g = ThreeOperators();
    g.edges[0].partitioning = Partitioning::kForward;
    EXPECT_EQ(ValidateJobGraph(g).message(),
              "operator 1 (keyed-process 'count') needs exactly one keyed (hash) input");
  }
  {
    JobGraph g = ThreeOperators();
    g.operators[2].uid = "count";
    EXPECT_EQ(ValidateJobGraph(g).message(),
              "operator 2 has a missing, malformed or repeated uid 'count'");
  }
  {
    JobGraph g = ThreeOperators();
    g.chains[1].operators = {1};  // the sink in no task
    EXPECT_EQ(ValidateJobGraph(g).message(), "operator 2 is in 0 tasks, not one");
  }
  {
    JobGraph g = ThreeOperators();
    g.edges[0].side_output = "late";
    EXPECT_EQ(ValidateJobGraph(g).message(),
              "an edge reads side output 'late' of operator 0, which does not declare it");
  }
}

}  // namespace
}  // namespace keyflow
