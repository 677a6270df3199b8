// The built-in job library, libkeyflow-builtin-jobs.so (worker/jobs/CMakeLists.txt): the jobs
// `keyflow run --job NAME` finds without --job-library. Built with keyflow_add_job like any
// user library; the loader finds it relative to the binary (../lib/keyflow/jobs/).
#include "worker/api/job_definition.h"
#include "worker/jobs/count_window_function.h"
#include "worker/jobs/tumbling_count_function.h"

namespace keyflow {
namespace {

std::vector<JobDefinition> BuiltInJobs() {
  JobDefinition count_window;
  count_window.name = "count-window";
  count_window.description =
      "per key, emit (key, count, start, time, cause) when `count` records have arrived or "
      "`timeout` after the window's first record, whichever comes first";
  count_window.params = {
      {"count", ParamType::kPositiveInt, "500", "records that close a window", {}},
      {"timeout", ParamType::kDuration, "12h", "window length after its first record", {}},
      {"time",
       ParamType::kChoice,
       "processing",
       "time domain of the timeout",
       {"processing", "event"}},
  };
#ifdef KEYFLOW_JOB_BUILD_TAG  // another build of the same jobs (the job-upgrade test)
  count_window.description += " (build " KEYFLOW_JOB_BUILD_TAG ")";
#endif
  count_window.reads_fields = false;  // key and timestamp only
  count_window.create = [](const JobParams& p) { return MakeCountWindowFunction(p); };

  JobDefinition tumbling;
  tumbling.name = "tumbling-count";
  tumbling.description =
      "event-time tumbling windows: per key and window [floor(ts/size)*size, +size) count "
      "records; late records are counted and dropped";
  tumbling.params = {{"size", ParamType::kDuration, "1h", "window size", {}}};
  tumbling.reads_fields = false;
  tumbling.create = [](const JobParams& p) { return MakeTumblingCountFunction(p); };
  return {count_window, tumbling};
}

}  // namespace
}  // namespace keyflow

KEYFLOW_JOB_LIBRARY(keyflow::BuiltInJobs)
