// What --output names, and the rule for a job's --output directory, checked by `keyflow run` before
// it submits and by each worker before the first attempt of a new job writes there.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

// Whether --output `output` names a directory (the file sink): not empty (the print sink), not
// kafka:... (the Kafka sink) and not connector:... (a job library's sink).
bool OutputIsDirectory(std::string_view output);
// Whether --output `output` names a job library's sink: connector:NAME[:ARGS].
bool OutputIsConnector(std::string_view output);

// A new job (first attempt, nothing restored) must not mix its results with another run's:
// FailedPrecondition naming a result file when `dir` holds one. Files whose names start with
// '.' or '_' (in-progress and pre-committed files) are not results. OK when `dir` does not exist.
Status CheckOutputDirectoryIsFresh(const std::string& dir);

}  // namespace keyflow
