// The built-in jobs by name (the implementations of common/protocol/job_catalog.h).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/operators/keyed_process_operator.h"

namespace keyflow {

// NotFound for an unknown job, InvalidArgument for bad parameters (the catalog's messages).
Result<std::unique_ptr<RecordFunction>> CreateJobFunction(
    const std::string& job_name, const std::map<std::string, std::string>& params);

}  // namespace keyflow
