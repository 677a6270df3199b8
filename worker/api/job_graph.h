// JobGraph: the topology of a job — its operators and the edges between them — as the CLI
// submits it and the coordinator schedules it (Flink's StreamGraph/JobGraph). Plain data: no
// user code (the workers take the functions from the job library by operator uid), so it can be
// checked, printed, stored in checkpoints and compared.
//
// Built from a job's graph function by StreamGraphBuilder (worker/api/stream_graph.h), which
// validates it and decides the chains: operators joined by a forward edge of equal parallelism
// run in one task, one thread, without serialisation between them (Flink's operator chaining);
// every KeyBy is a key-group exchange between tasks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/key.h"

namespace keyflow {

enum class OperatorKind : uint8_t {
  kSource,          // reads the input bound to its name (--input NAME=SPEC, "in" by default)
  kMap,             // Record -> Record
  kFilter,          // Record -> keep or drop
  kFlatMap,         // Record -> 0..n Records
  kKeyedProcess,    // one keyed input, a KeyedProcessFunction (state, timers)
  kKeyedCoProcess,  // two keyed inputs (Connect + KeyBy), a KeyedCoProcessFunction
  kUnion,           // several inputs of one type, merged
  kSink,            // writes to the output bound to its name (--output NAME=SPEC, "out")
};
std::string_view OperatorKindName(OperatorKind kind);  // "source", "map", ...

// How records travel along an edge.
enum class Partitioning : uint8_t {
  kForward,    // subtask i to subtask i (chainable)
  kHash,       // by key group of the record's key (KeyBy): a data-plane exchange
  kRebalance,  // round robin (parallelism changes without a key)
};
std::string_view PartitioningName(Partitioning p);  // "forward", "hash", "rebalance"

struct OperatorNode {
  int32_t id = 0;   // index in JobGraph::operators
  std::string uid;  // stable across versions of the job: state is mapped by it
  OperatorKind kind = OperatorKind::kMap;
  std::string binding;      // sources and sinks: the name --input/--output bind ("in", "out")
  int32_t parallelism = 0;  // 0: the job's parallelism
  std::vector<std::string> side_outputs;  // tags this operator may emit to (process functions)
  int32_t chain = 0;                      // the task this operator runs in (JobGraph::chains index)
  friend bool operator==(const OperatorNode&, const OperatorNode&) = default;
};

struct StreamEdge {
  int32_t from = 0;  // operator ids
  int32_t to = 0;
  int32_t input = 0;  // which input of `to`: 0, or 1 for the second input of a co-process
  Partitioning partitioning = Partitioning::kForward;
  // kHash: the key of each record.
  std::string key_field;
  KeyType key_type = KeyType::kString;
  std::string side_output;  // non-empty: this edge carries that tag's side output of `from`
  friend bool operator==(const StreamEdge&, const StreamEdge&) = default;
};

// One task of the job: operators that run chained, head first.
struct OperatorChain {
  std::vector<int32_t> operators;
  int32_t parallelism = 0;  // 0: the job's parallelism
  friend bool operator==(const OperatorChain&, const OperatorChain&) = default;
};

struct JobGraph {
  std::vector<OperatorNode> operators;  // topologically ordered: sources first
  std::vector<StreamEdge> edges;
  std::vector<OperatorChain> chains;  // topologically ordered
  int32_t max_parallelism = 0;        // 0: the job's (every KeyBy shares it)

  // The operator with that uid, or null.
  const OperatorNode* Find(std::string_view uid) const;
  // The edges into / out of operator `id`.
  std::vector<const StreamEdge*> Inputs(int32_t id) const;
  std::vector<const StreamEdge*> Outputs(int32_t id) const;
  // One line per chain, e.g. "[source in -> filter bids] =hash(auction)=> [keyed-process count]".
  std::string Describe() const;
  friend bool operator==(const JobGraph&, const JobGraph&) = default;
};

}  // namespace keyflow
