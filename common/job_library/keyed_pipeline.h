// KeyedPipeline: the job graphs the runtime runs in this version, found in a JobGraph — one
// source, stateless operators (Map, Filter, FlatMap) chained into the source's task, one KeyBy
// into one keyed process function, stateless operators chained behind it, and one sink:
//
//   source "in" -> [map|filter|flat-map]* =hash(key)=> keyed-process -> [map|filter|flat-map]*
//     -> sink "out"
//
// or, without a KeyBy, a stateless pipeline (keyed = false):
//
//   source "in" -> [map|filter|flat-map]* -> sink "out"
//
// whose operators run chained in the source's task; what they emit goes forward to the sink of
// the same subtask index (the keyed task of that index, which passes each record on unchanged:
// keyflow's tasks are source + keyed pairs, so the forward edge is one local hop).
//
// A graph that needs more (a second keyed stage, a two-input operator, a union, side outputs,
// a parallelism per operator, more sources or sinks) is valid as a graph but refused here with
// one sentence naming what it uses, so
// `keyflow run` says so before anything is deployed. A single-function job is the pipeline
// without stateless operators.
#pragma once

#include <cstdint>
#include <vector>

#include "common/protocol/job_spec.h"
#include "common/status.h"
#include "worker/api/job_graph.h"

namespace keyflow {

struct KeyedPipeline {
  bool keyed = true;   // false: no KeyBy (key_by, process and after_process are unset)
  int32_t source = 0;  // operator ids of the JobGraph
  // The Map/Filter/FlatMap operators between the source and the KeyBy, in order; they run in
  // the source's task, and the key is taken from each record they emit.
  std::vector<int32_t> before_key_by;
  StreamEdge key_by;  // the hash edge into `process`
  int32_t process = -1;
  // The Map/Filter/FlatMap operators between the keyed process and the sink, in order; they run
  // in the keyed task, on what the process function emits.
  std::vector<int32_t> after_process;
  int32_t sink = 0;
};

// Precondition: ValidateJobGraph(graph) is OK. InvalidArgument with one sentence when the graph
// is of a shape this version does not run.
Result<KeyedPipeline> PlanKeyedPipeline(const JobGraph& graph);

// Whether a job's sources leave the key to the operators before its KeyBy: a graph job with
// Map/Filter/FlatMap operators before it (the key is read from what they emit), or a graph
// without a KeyBy (nothing is keyed).
bool KeysAfterChainedOperators(const JobSpec& spec);

}  // namespace keyflow
