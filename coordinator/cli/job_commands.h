// The job commands of the `keyflow` CLI: `keyflow jobs` (no coordinator needed; jobs_command.cc),
// `keyflow run` (run_command.cc), and status, cancel, stop, checkpoint, savepoint, checkpoints,
// rescale, keys reload, log-level (job_commands.cc), which talk to a running coordinator through
// coordinator_requests.h.
#pragma once

#include <string>
#include <vector>

namespace keyflow::cli {

int RunRunCommand(const std::vector<std::string>& args);
// keyflow jobs [--job-library L] [--json]: the jobs of a job library (default: the built-in one)
int RunJobsCommand(const std::vector<std::string>& args);
int RunStatusCommand(const std::vector<std::string>& args);
int RunCancelCommand(const std::vector<std::string>& args);
// keyflow stop [--dir D]: stop with a savepoint
int RunStopCommand(const std::vector<std::string>& args);
// keyflow checkpoint [--coordinator ..]          trigger a checkpoint now and wait for it
// keyflow checkpoint inspect PATH [--json]        print a checkpoint's metadata
int RunCheckpointCommand(const std::vector<std::string>& args);
int RunSavepointCommand(const std::vector<std::string>& args);
int RunCheckpointsCommand(const std::vector<std::string>& args);
// keyflow rescale P' [--plan] [--wait-for-workers DUR] [--timeout DUR] [--json]
int RunRescaleCommand(const std::vector<std::string>& args);
// keyflow keys reload [--coordinator ..] [--keys DIR]: the coordinator re-reads its trusted keys
int RunKeysReloadCommand(const std::vector<std::string>& args);
// keyflow log-level [LEVEL] [--coordinator-only]: the coordinator's (and workers') log level
int RunLogLevelCommand(const std::vector<std::string>& args);

}  // namespace keyflow::cli
