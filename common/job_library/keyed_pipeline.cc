#include "common/job_library/keyed_pipeline.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace keyflow {
namespace {

constexpr std::string_view kShape =
    " (this version runs a graph of one source, Map/Filter/FlatMap operators, at most one KeyBy "
    "into one Process, Map/Filter/FlatMap operators, and one sink)";

Status NotYet(const std::string& what) {
  return InvalidArgument("the job's graph " + what + ", which this version of keyflow does not " +
                         "run yet" + std::string(kShape));
}

std::string Named(const OperatorNode& op) {
  return std::string(OperatorKindName(op.kind)) + " '" + op.uid + "'";
}

// What the graph uses that the pipeline has not, the larger features first: each check names
// the first operator that needs it.
Status CheckKinds(const JobGraph& graph) {
  using Check = std::function<std::string(const OperatorNode& op, int seen)>;
  const std::vector<std::pair<OperatorKind, Check>> checks = {
      {OperatorKind::kKeyedCoProcess,
       [](const OperatorNode& op, int) { return "uses a two-input operator (" + Named(op) + ")"; }},
      {OperatorKind::kUnion,
       [](const OperatorNode& op, int) { return "uses a union (" + Named(op) + ")"; }},
      {OperatorKind::kKeyedProcess,
       [](const OperatorNode& op, int seen) {
         return seen > 1 ? "has more than one keyed stage (" + Named(op) + ")" : std::string();
       }},
      {OperatorKind::kSource,
       [](const OperatorNode& op, int seen) {
         if (seen > 1) return "has more than one source (" + Named(op) + ")";
         if (op.binding != "in") {
           return "binds its source to input '" + op.binding + "' instead of \"in\"";
         }
         return std::string();
       }},
      {OperatorKind::kSink,
       [](const OperatorNode& op, int seen) {
         if (seen > 1) return "has more than one sink (" + Named(op) + ")";
         if (op.binding != "out") {
           return "binds its sink to output '" + op.binding + "' instead of \"out\"";
         }
         return std::string();
       }},
  };
  for (const OperatorNode& op : graph.operators) {
    if (!op.side_outputs.empty()) {
      return NotYet("uses side outputs (" + Named(op) + " declares '" + op.side_outputs[0] + "')");
    }
  }
  for (const auto& [kind, check] : checks) {
    int seen = 0;
    for (const OperatorNode& op : graph.operators) {
      if (op.kind != kind) continue;
      if (std::string what = check(op, ++seen); !what.empty()) return NotYet(what);
    }
  }
  for (const OperatorNode& op : graph.operators) {
    if (op.parallelism != 0) return NotYet("sets a parallelism of its own on " + Named(op));
  }
  return Status::Ok();
}

bool IsStateless(OperatorKind kind) {
  return kind == OperatorKind::kMap || kind == OperatorKind::kFilter ||
         kind == OperatorKind::kFlatMap;
}

// Follows the one output of operator `at` through stateless operators (appended to `chained`);
// returns the first edge that does not lead to one over a forward edge.
Result<const StreamEdge*> FollowStateless(const JobGraph& graph, int32_t at,
                                          std::vector<int32_t>* chained) {
  while (true) {
    std::vector<const StreamEdge*> out = graph.Outputs(at);
    if (out.size() != 1) {
      return NotYet("sends the records of " + Named(graph.operators.at(static_cast<size_t>(at))) +
                    " to " + std::to_string(out.size()) + " operators");
    }
    const OperatorNode& to = graph.operators.at(static_cast<size_t>(out[0]->to));
    if (out[0]->partitioning == Partitioning::kHash || !IsStateless(to.kind)) return out[0];
    chained->push_back(to.id);
    at = to.id;
  }
}

}  // namespace

Result<KeyedPipeline> PlanKeyedPipeline(const JobGraph& graph) {
  KF_RETURN_IF_ERROR(CheckKinds(graph));
  KeyedPipeline p;
  for (const OperatorNode& op : graph.operators) {
    if (op.kind == OperatorKind::kSource) p.source = op.id;
  }
  KF_ASSIGN_OR_RETURN(const StreamEdge* key_by, FollowStateless(graph, p.source, &p.before_key_by));
  if (const OperatorNode& to = graph.operators.at(static_cast<size_t>(key_by->to));
      to.kind == OperatorKind::kSink && key_by->partitioning != Partitioning::kHash) {
    p.keyed = false;  // source -> stateless operators -> sink
    p.sink = to.id;
    return p;
  }
  if (key_by->partitioning != Partitioning::kHash) {
    return NotYet("sends " + Named(graph.operators.at(static_cast<size_t>(key_by->from))) + " to " +
                  Named(graph.operators.at(static_cast<size_t>(key_by->to))) + " without a KeyBy");
  }
  p.key_by = *key_by;
  p.process = key_by->to;
  KF_ASSIGN_OR_RETURN(const StreamEdge* last, FollowStateless(graph, p.process, &p.after_process));
  const OperatorNode& sink = graph.operators.at(static_cast<size_t>(last->to));
  if (sink.kind != OperatorKind::kSink)
    return NotYet("has " + Named(sink) + " after the keyed stage");
  p.sink = sink.id;
  return p;
}

bool KeysAfterChainedOperators(const JobSpec& spec) {
  if (!spec.is_graph_job()) return false;
  Result<KeyedPipeline> pipeline = PlanKeyedPipeline(spec.graph);
  return pipeline.ok() && (!pipeline->keyed || !pipeline->before_key_by.empty());
}

}  // namespace keyflow
