// A job library whose function is slow on purpose, for tests/integration/latency_test.cc
// (issue 12, latency): built with keyflow_add_job as liblatency-jobs.so.
//
//   slow   per record, waits `delay` (default 2ms) before it returns (sleeps: the point is the
//          time a record takes, not CPU); emits nothing. A subtask of it processes at most
//          1/delay records per second, so a faster input queues up and its latency grows.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::JobDefinition;
using keyflow::JobParams;
using keyflow::KeyedFunction;
using keyflow::OutputRecord;
using keyflow::Record;

class Slow final : public KeyedFunction {
 public:
  explicit Slow(keyflow::Duration delay) : delay_(delay) {}
  void ProcessElement(const Record&, Context&, Collector<OutputRecord>&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_.millis()));
  }

 private:
  keyflow::Duration delay_;
};

std::vector<JobDefinition> Jobs() {
  JobDefinition slow;
  slow.name = "slow";
  slow.description = "waits `delay` per record and emits nothing (a deliberately slow function)";
  slow.params = {{"delay", keyflow::ParamType::kDuration, "2ms", "time spent per record"}};
  slow.create = [](const JobParams& p) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<Slow>(p.GetDuration("delay"));
  };
  return {slow};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
