// Job libraries with a bad manifest, one per KF_BAD_* definition (CMakeLists.txt).
#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"
#include "worker/api/stream_graph.h"

namespace {

class NoOp final : public keyflow::KeyedFunction {
 public:
  void ProcessElement(const keyflow::Record&, keyflow::Context&,
                      keyflow::Collector<keyflow::OutputRecord>&) override {}
};

[[maybe_unused]] keyflow::JobDefinition Job(std::string name) {
  keyflow::JobDefinition job;
  job.name = std::move(name);
  job.create = [](const keyflow::JobParams&) { return std::make_unique<NoOp>(); };
  return job;
}

std::vector<keyflow::JobDefinition> Jobs() {
#if defined(KF_BAD_DUPLICATE_JOB)
  return {Job("twice"), Job("twice")};
#elif defined(KF_BAD_BAD_DEFAULT)
  keyflow::JobDefinition job = Job("sessions");
  job.params = {{"gap", keyflow::ParamType::kDuration, "soon", "inactivity gap", {}}};
  return {job};
#elif defined(KF_BAD_NULL_CREATE)
  keyflow::JobDefinition job = Job("lazy");
  job.create = nullptr;
  return {job};
#elif defined(KF_BAD_CREATE_AND_GRAPH)
  keyflow::JobDefinition job = Job("both");
  job.graph = [](keyflow::StreamGraphBuilder&, const keyflow::JobParams&) {};
  return {job};
#elif defined(KF_BAD_BAD_NAME)
  return {Job("Running Sum")};
#elif defined(KF_BAD_NO_JOBS)
  return {};
#else
#error "define one KF_BAD_*"
#endif
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
