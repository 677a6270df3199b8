// The rule for a job's --output directory, checked by `keyflow run` before it submits and by
// each worker before the first attempt of a new job writes there.
#pragma once

#include <string>

#include "common/status.h"

namespace keyflow {

// A new job (first attempt, nothing restored) must not mix its results with another run's:
// FailedPrecondition naming a result file when `dir` holds one. Files whose names start with
// '.' or '_' (in-progress and pre-committed files) are not results. OK when `dir` does not exist.
Status CheckOutputDirectoryIsFresh(const std::string& dir);

}  // namespace keyflow
