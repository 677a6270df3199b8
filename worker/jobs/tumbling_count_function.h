// tumbling-count: event-time tumbling windows with namespaces. Per key and
// window [floor(ts/size)*size, +size) it counts records in the window's namespace and fires on
// an event-time timer at window end - 1 (the window's max timestamp), emitting
//   {"key":K,"window_start":S,"window_end":E,"count":N,"subtask":I}
// A record whose window already fired (end - 1 <= current watermark) is late: counted
// (RuntimeContext::late_records) and dropped. Parameter: size (default 1h).
#pragma once

#include <memory>

#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace keyflow {

// Precondition: params resolved for tumbling-count (ResolveJobParams, builtin_jobs.cc).
std::unique_ptr<KeyedFunction> MakeTumblingCountFunction(const JobParams& params);

}  // namespace keyflow
