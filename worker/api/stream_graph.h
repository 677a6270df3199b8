// A job as a dataflow graph, in Flink's DataStream vocabulary:
//
//   keyflow::StreamGraphBuilder g;
//   keyflow::OutputTag late{"late"};
//   keyflow::DataStream bids = g.Source("bids").Filter("only-bids", IsBid);
//   keyflow::DataStream counts =
//       bids.KeyBy("auction").Process("count-per-window", MakeCounter, {late});
//   counts.KeyBy("window_end").Process("hottest", MakeMax).Sink("out");
//   counts.GetSideOutput(late).Sink("late");
//   keyflow::Result<keyflow::JobGraph> graph = g.Build({});
//
// Every operator but a union carries a uid, stable across versions of the job: state is kept per
// operator uid (Flink's uid()). Map, Filter and FlatMap are stateless and chain into the task of
// their upstream; every KeyBy is a key-group exchange between tasks. Sources and sinks are
// bound by name to the job's --input/--output ("in" and "out" when there is one of each).
//
// The builder collects what is wrong while the graph is built and Build() refuses the graph with
// one sentence naming the operator: a uid used twice or malformed, a stream that goes nowhere
// (no sink behind it), a declared side output nobody reads, a side output read but not declared,
// a KeyBy right after a source on a field the job does not declare, two sinks on one output,
// a graph without source or sink. ValidateJobGraph checks a JobGraph that came from elsewhere
// (a spec on the wire): ids and edges in range, no cycle, the inputs each kind needs.
//
// The user functions stay in the builder (functions_of), by operator id: a worker builds the
// graph of the job again from the job library and takes them from there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/key.h"
#include "common/status.h"
#include "worker/api/job_graph.h"
#include "worker/api/keyed_co_process_function.h"
#include "worker/api/keyed_process_function.h"

namespace keyflow {

struct Record;
struct OutputRecord;
template <typename IN, typename OUT>
class KeyedProcessFunction;
using KeyedFunction = KeyedProcessFunction<Record, OutputRecord>;

using MapFunction = std::function<Record(const Record&)>;
using FilterFunction = std::function<bool(const Record&)>;
using FlatMapFunction = std::function<void(const Record&, Collector<Record>&)>;
// Called once per subtask of the operator and deployment attempt.
using KeyedFunctionFactory = std::function<std::unique_ptr<KeyedFunction>()>;
using KeyedCoFunctionFactory = std::function<std::unique_ptr<KeyedCoFunction>()>;

// Names a side output of a process function (Flink's OutputTag): declared on Process(), read
// with GetSideOutput().
struct OutputTag {
  std::string id;
};

// What Build() needs to know of the job.
struct StreamGraphOptions {
  // The fields the job's sources keep (JobDefinition::fields); empty: every field.
  std::vector<std::string> declared_fields;
  int32_t max_parallelism = 0;  // 0: unknown here (not checked)
};

// The user functions of one operator (those of its kind are set).
struct OperatorFunctions {
  MapFunction map;
  FilterFunction filter;
  FlatMapFunction flat_map;
  KeyedFunctionFactory process;
  KeyedCoFunctionFactory co_process;
};

class StreamGraphBuilder;
class KeyedStream;
class ConnectedStreams;

// A stream of records: the main output of an operator, or one of its side outputs.
class DataStream {
 public:
  DataStream Map(std::string uid, MapFunction fn) const;
  DataStream Filter(std::string uid, FilterFunction fn) const;
  DataStream FlatMap(std::string uid, FlatMapFunction fn) const;
  KeyedStream KeyBy(std::string field, KeyType type = KeyType::kString) const;
  ConnectedStreams Connect(const DataStream& other) const;
  // The records of this stream and of `other` (of the same job) as one stream.
  DataStream Union(const DataStream& other) const;
  // The side output `tag` of the process function that produced this stream.
  DataStream GetSideOutput(const OutputTag& tag) const;
  // Sets the parallelism of the operator that produced this stream (default: the job's).
  DataStream SetParallelism(int32_t parallelism) const;
  // Writes the stream to the output bound to `binding` (--output BINDING=SPEC; "out" is the
  // plain --output). uid default: "sink-<binding>".
  void Sink(std::string binding = "out", std::string uid = "") const;

 private:
  friend class StreamGraphBuilder;
  friend class KeyedStream;
  friend class ConnectedStreams;
  DataStream(StreamGraphBuilder* builder, int32_t node, std::string side_output = "")
      : builder_(builder), node_(node), side_output_(std::move(side_output)) {}
  // A Map, Filter or FlatMap fed by this stream.
  DataStream Stateless(OperatorKind kind, std::string uid, OperatorFunctions functions,
                       bool has_function) const;

  StreamGraphBuilder* builder_;
  int32_t node_;
  std::string side_output_;  // non-empty: this is that side output of node_
};

class KeyedStream {
 public:
  // A KeyedProcessFunction per subtask; `side_outputs` are the tags it may emit to.
  DataStream Process(std::string uid, KeyedFunctionFactory factory,
                     std::vector<OutputTag> side_outputs = {}) const;

 private:
  friend class DataStream;
  KeyedStream(DataStream input, std::string field, KeyType type)
      : input_(std::move(input)), field_(std::move(field)), type_(type) {}
  DataStream input_;
  std::string field_;
  KeyType type_;
};

class ConnectedStreams {
 public:
  class Keyed {
   public:
    // A KeyedCoProcessFunction per subtask over both inputs, keyed alike.
    DataStream Process(std::string uid, KeyedCoFunctionFactory factory,
                       std::vector<OutputTag> side_outputs = {}) const;

   private:
    friend class ConnectedStreams;
    Keyed(const ConnectedStreams& streams, std::string field1, std::string field2, KeyType type)
        : first_(streams.first_),
          second_(streams.second_),
          field1_(std::move(field1)),
          field2_(std::move(field2)),
          type_(type) {}
    DataStream first_;
    DataStream second_;
    std::string field1_;
    std::string field2_;
    KeyType type_;
  };

  // Keys the first input by `field1` and the second by `field2` (one key type).
  Keyed KeyBy(std::string field1, std::string field2, KeyType type = KeyType::kString) const;

 private:
  friend class DataStream;
  ConnectedStreams(DataStream first, DataStream second)
      : first_(std::move(first)), second_(std::move(second)) {}
  DataStream first_;
  DataStream second_;
};

class StreamGraphBuilder {
 public:
  StreamGraphBuilder() = default;
  StreamGraphBuilder(const StreamGraphBuilder&) = delete;  // streams point into it
  StreamGraphBuilder& operator=(const StreamGraphBuilder&) = delete;

  // Reads the input bound to `binding` (--input BINDING=SPEC; "in" is the plain --input).
  // uid default: "source-<binding>".
  DataStream Source(std::string binding = "in", std::string uid = "");

  // The validated graph with its chains; InvalidArgument with one sentence otherwise.
  Result<JobGraph> Build(const StreamGraphOptions& options) const;

  // The functions of operator `id` (as numbered in the JobGraph Build returns).
  const OperatorFunctions& functions_of(int32_t id) const { return nodes_.at(id).functions; }

 private:
  friend class DataStream;
  friend class KeyedStream;
  friend class ConnectedStreams;

  struct Node {
    OperatorNode op;
    OperatorFunctions functions;
  };
  // Adds an operator fed by `inputs` (edges without `to`); returns its id.
  int32_t Add(OperatorKind kind, std::string uid, OperatorFunctions functions,
              std::vector<StreamEdge> inputs);
  void Error(std::string sentence);
  Status CheckDangling() const;
  Status CheckSideOutputs() const;
  Status CheckKeyFields(const StreamGraphOptions& options) const;
  void Chain(JobGraph* graph) const;

  std::vector<Node> nodes_;
  std::vector<StreamEdge> edges_;
  std::vector<std::string> errors_;  // the first one is what Build() says
};

// A JobGraph decoded from elsewhere is well formed: ids dense and in range, edges between
// existing operators, no cycle, the inputs of each kind (a source none, a keyed process one
// hash-partitioned input, a co-process a hash input 0 and 1, a sink no output), unique uids, and
// chains that cover every operator once. InvalidArgument naming what is wrong.
Status ValidateJobGraph(const JobGraph& graph);

// The graph of a single-function job (JobDefinition::create): source "in" -> KeyBy(key_field)
// -> Process(uid) -> sink "out".
JobGraph SingleFunctionGraph(const std::string& uid, const std::string& key_field,
                             KeyType key_type);

}  // namespace keyflow
