#include "worker/task/job_functions.h"

#include <optional>
#include <utility>
#include <vector>

#include "common/job_library/job_library.h"
#include "common/job_library/keyed_pipeline.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

// What a chain does with a record it cannot handle: skip and count it, or fail.
std::function<Status(const Status&)> BadRecordPolicy(const JobSpec& spec, Counter* bad_records,
                                                     std::string what) {
  return [fail = spec.fail_on_bad_record, bad_records,
          what = std::move(what)](const Status& why) -> Status {
    if (fail) return InvalidArgument(what + why.message() + " (--on-bad-record fail)");
    bad_records->Inc();
    KF_LOG_WARN("bad record skipped: {}{}", what, why.message());
    return Status::Ok();
  };
}

// The chain of the graph's operators `ids`; null when there are none and nothing is forwarded.
// `key_by` null: the chain's output is not keyed (forwarded into `forward` if set).
std::unique_ptr<RecordChain> CreateChain(const JobSpec& spec, const JobLibrary& library,
                                         const BuiltJobGraph& built,
                                         const std::vector<int32_t>& ids, const StreamEdge* key_by,
                                         std::optional<KeyGroupId> forward,
                                         std::function<Status(const Status&)> on_bad,
                                         std::shared_ptr<const void> keep_alive) {
  if (ids.empty() && !forward.has_value()) return nullptr;
  std::vector<RecordChain::Operator> operators;
  for (int32_t id : ids) {
    const OperatorNode& node = built.graph.operators.at(static_cast<size_t>(id));
    operators.push_back({node.kind, node.uid, built.builder->functions_of(id)});
  }
  RecordChain::Options options;
  options.job_name = spec.job_name;
  options.library = library.file_name();
  if (key_by != nullptr) {
    options.key_field = key_by->key_field;
    options.key_type = key_by->key_type;
  }
  options.forward_key_group = forward;
  options.max_parallelism = spec.max_parallelism;
  options.on_bad_key = std::move(on_bad);
  return std::make_unique<RecordChain>(std::move(operators), std::move(options),
                                       std::move(keep_alive));
}

}  // namespace

Result<JobFunctions> CreateJobFunctions(const JobSpec& spec,
                                        const std::shared_ptr<const JobLibrary>& library,
                                        Counter* bad_records, KeyGroupRange key_groups) {
  // The params were resolved at submit; resolving again checks them against the library
  // actually loaded.
  KF_ASSIGN_OR_RETURN(const JobDefinition* job, library->FindJob(spec.job_name));
  KF_ASSIGN_OR_RETURN(JobParams params, ResolveJobParams(*job, spec.params));
  JobFunctions functions;
  if (spec.is_graph_job() != static_cast<bool>(job->graph)) {
    return FailedPrecondition("job '" + spec.job_name + "' of " + library->file_name() +
                              (job->graph ? " is a graph job but was submitted without its graph"
                                          : " has no graph but was submitted with one"));
  }
  if (spec.is_graph_job()) {
    KF_ASSIGN_OR_RETURN(BuiltJobGraph built, library->BuildGraph(*job, params));
    if (!(built.graph == spec.graph)) {
      return FailedPrecondition("job '" + spec.job_name + "' of " + library->file_name() +
                                " builds another graph on this worker than at submit (" +
                                built.graph.Describe() + " instead of " + spec.graph.Describe() +
                                "): its graph function must depend on its parameters only");
    }
    KF_ASSIGN_OR_RETURN(KeyedPipeline pipeline, PlanKeyedPipeline(built.graph));
    if (!pipeline.keyed) {
      // Nothing to key, so no bad keys: on_bad is never called.
      functions.chain = CreateChain(spec, *library, built, pipeline.before_key_by, nullptr,
                                    KeyGroupId(key_groups.start()), nullptr, library);
    } else {
      const std::string process =
          "'" + built.graph.operators.at(static_cast<size_t>(pipeline.process)).uid + "'";
      functions.chain =
          CreateChain(spec, *library, built, pipeline.before_key_by, &pipeline.key_by, std::nullopt,
                      BadRecordPolicy(spec, bad_records,
                                      "a record of job '" + spec.job_name + "' before its KeyBy (" +
                                          process + "): "),
                      library);
      functions.on_bad_result = BadRecordPolicy(
          spec, bad_records,
          "a result of job '" + spec.job_name + "' after its keyed stage " + process + ": ");
      functions.after_process = CreateChain(spec, *library, built, pipeline.after_process, nullptr,
                                            std::nullopt, functions.on_bad_result, library);
    }
  }
  KF_ASSIGN_OR_RETURN(functions.keyed, library->CreateFunction(*job, params));
  return functions;
}

}  // namespace keyflow
