// How `keyflow run --wait` and `keyflow status` render the coordinator's status JSON as text:
// the one-line progress of a running job, the summary of an ended one, the full status.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace keyflow::cli {

// 1234 -> "1.2k", 5e6 -> "5.0M", 12 -> "12".
std::string Human(double v);

// "[RUNNING] job-id  in 1.2M (300.0k/s)  processed ...  watermark ...": a job's one-line progress.
// From the second attempt on it names the attempt and the last failure (why it restarted).
std::string ProgressLine(const nlohmann::json& job);

// The summary `keyflow run --wait` prints when the job ended: counters, output, attempts, reason.
void PrintSummary(const nlohmann::json& job, std::ostream& os);

// `keyflow status` without --json: security, workers, the job, checkpoints, subtasks and state.
void PrintStatus(nlohmann::json status, std::ostream& os);

}  // namespace keyflow::cli
