// A job library whose functions fail on purpose, for the tests of failures of user code
// (tests/integration/user_code_failures_test.cc; worker/README.md "Failures of user code").
// Built with keyflow_add_job as libfaulty-jobs.so. Each job emits {"key":K,"seen":N} per record
// until it fails; N counts the records this subtask's function saw (in this attempt).
//
//   open-fails         Open returns an error (param message)
//   throws-after-n     ProcessElement throws std::runtime_error at the n-th record (param n)
//   crashes-after-n    ProcessElement crashes the worker at the n-th record (params n, signal:
//                      segv = a null pointer write, abrt = abort(), fpe = an integer division by 0)
#include <csignal>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

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
using keyflow::ParamSpec;
using keyflow::ParamType;
using keyflow::Record;
using keyflow::RuntimeContext;
using keyflow::Status;

class CountingFunction : public KeyedFunction {
 public:
  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    ++seen_;
    Check(r);
    out.Collect(keyflow::JsonObject()
                    .Add("key", ctx.current_key(), keyflow::KeyType::kString)
                    .Add("seen", seen_));
  }

 protected:
  virtual void Check(const Record&) {}
  int64_t seen_ = 0;
};

class OpenFails final : public CountingFunction {
 public:
  explicit OpenFails(std::string message) : message_(std::move(message)) {}
  Status Open(RuntimeContext&) override { return keyflow::FailedPrecondition(message_); }

 private:
  std::string message_;
};

class ThrowsAfterN final : public CountingFunction {
 public:
  explicit ThrowsAfterN(int64_t n) : n_(n) {}

 private:
  void Check(const Record&) override {
    if (seen_ == n_) throw std::runtime_error("record " + std::to_string(n_) + " is poisoned");
  }
  int64_t n_;
};

volatile int g_zero = 0;
int* volatile g_null = nullptr;

class CrashesAfterN final : public CountingFunction {
 public:
  CrashesAfterN(int64_t n, std::string signal) : n_(n), signal_(std::move(signal)) {}

 private:
  // Not instrumented by UBSan (the ASan+UBSan suite): it would report the null store or the
  // division by zero and exit before the signal this job is for.
  __attribute__((no_sanitize("undefined"))) void Check(const Record&) override {
    if (seen_ != n_) return;
    if (signal_ == "abrt") std::abort();
    if (signal_ == "fpe") {
      volatile int x = 1 / g_zero;
      (void)x;
      std::raise(SIGFPE);  // where an integer division by zero does not trap
    }
    *g_null = 1;
  }
  int64_t n_;
  std::string signal_;
};

std::vector<JobDefinition> Jobs() {
  std::vector<JobDefinition> jobs(3);
  JobDefinition& open = jobs[0];
  open.name = "open-fails";
  open.description = "Open returns FailedPrecondition(message)";
  open.params = {{"message", ParamType::kString, "the lookup table is missing", "Open's error"}};
  open.reads_fields = false;
  open.create = [](const JobParams& p) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<OpenFails>(p.GetString("message"));
  };
  JobDefinition& throws = jobs[1];
  throws.name = "throws-after-n";
  throws.description = "ProcessElement throws std::runtime_error at the n-th record of a subtask";
  throws.params = {{"n", ParamType::kPositiveInt, "3", "the record that throws"}};
  throws.reads_fields = false;
  throws.create = [](const JobParams& p) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<ThrowsAfterN>(p.GetInt("n"));
  };
  JobDefinition& crashes = jobs[2];
  crashes.name = "crashes-after-n";
  crashes.description = "ProcessElement crashes the worker process at the n-th record";
  crashes.params = {{"n", ParamType::kPositiveInt, "3", "the record that crashes"},
                    {"signal", ParamType::kChoice, "segv", "how", {"segv", "abrt", "fpe"}}};
  crashes.reads_fields = false;
  crashes.create = [](const JobParams& p) -> std::unique_ptr<KeyedFunction> {
    return std::make_unique<CrashesAfterN>(p.GetInt("n"), p.GetString("signal"));
  };
  return jobs;
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
