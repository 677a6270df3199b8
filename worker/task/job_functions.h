// The user code of a deployed job, taken from its job library: the keyed function of the keyed
// task and, for a graph job (JobSpec::graph), the operators its source task runs before the
// KeyBy and those its keyed task runs after the keyed function (worker/operators/
// record_chain.h). A graph without a KeyBy runs all its operators in the source task.
//
// A worker builds a graph job's graph again from the library, with the parameters resolved at
// submit, and takes the functions from it by operator: the graph it builds must be the one
// `keyflow run` validated and the coordinator deployed (the same library bytes, the same
// parameters), otherwise the deployment fails with a sentence saying so (a graph function that
// depends on something besides its parameters).
#pragma once

#include <functional>
#include <memory>

#include "common/key_group_range.h"
#include "common/metrics.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"
#include "worker/operators/keyed_process_operator.h"
#include "worker/operators/record_chain.h"

namespace keyflow {

class JobLibrary;

struct JobFunctions {
  std::unique_ptr<KeyedFunction> keyed;
  std::unique_ptr<RecordChain> chain;  // null: the source routes what it reads as it is
  // The operators between the keyed function and the sink (worker/sinks/chained_sink_writer.h);
  // null: none.
  std::unique_ptr<RecordChain> after_process;
  // What after_process's sink does with a result line that is not a JSON object.
  std::function<Status(const Status&)> on_bad_result;
};

// `bad_records` counts the records the chains skip (with --on-bad-record skip): one without a
// valid key before the KeyBy, a line of the keyed function that is not a JSON object after it.
// It must outlive the chains. `key_groups`: the subtask's key groups; a graph without a KeyBy
// forwards what its source task's chain emits (every operator of the graph) into the first of
// them, i.e. to the keyed task of the same subtask index, whose function passes each record on
// to the sink.
Result<JobFunctions> CreateJobFunctions(const JobSpec& spec,
                                        const std::shared_ptr<const JobLibrary>& library,
                                        Counter* bad_records, KeyGroupRange key_groups);

}  // namespace keyflow
