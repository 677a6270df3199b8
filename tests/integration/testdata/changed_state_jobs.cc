// A job library for the job-upgrade test (tests/integration/recovery_test.cc): a job named
// count-window, with the built-in one's parameters, whose state "window" is declared with
// another type (ValueState<long> instead of ValueState<CountWindow>). Restoring a checkpoint of
// the built-in job into it must be refused, naming the state.
#include <keyflow/keyflow.h>

namespace {

class ChangedStateCountWindow final : public keyflow::KeyedFunction {
 public:
  keyflow::Status Open(keyflow::RuntimeContext& runtime) override {
    KF_ASSIGN_OR_RETURN(window_,
                        runtime.GetState(keyflow::ValueStateDescriptor<int64_t>("window", 0)));
    return keyflow::Status::Ok();
  }
  void ProcessElement(const keyflow::Record&, keyflow::Context&,
                      keyflow::Collector<keyflow::OutputRecord>&) override {
    window_->Update(*window_->Value() + 1);
  }

 private:
  keyflow::ValueState<int64_t>* window_ = nullptr;
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "count-window";
  job.description = "count-window whose state 'window' changed its type (a bad upgrade)";
  job.params = {
      {"count", keyflow::ParamType::kPositiveInt, "500", "records that close a window", {}},
      {"timeout", keyflow::ParamType::kDuration, "12h", "window length", {}},
      {"time", keyflow::ParamType::kChoice, "processing", "time domain", {"processing", "event"}},
  };
  job.reads_fields = false;
  job.create = [](const keyflow::JobParams&) {
    return std::make_unique<ChangedStateCountWindow>();
  };
  return {job};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
