// A job library that needs libkf-dep.so, which is not on the library path when it is loaded.
#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

int KfDepValue();

namespace {

class NoOp final : public keyflow::KeyedFunction {
 public:
  void ProcessElement(const keyflow::Record&, keyflow::Context&,
                      keyflow::Collector<keyflow::OutputRecord>&) override {}
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "needs-dep-" + std::to_string(KfDepValue());
  job.create = [](const keyflow::JobParams&) { return std::make_unique<NoOp>(); };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
