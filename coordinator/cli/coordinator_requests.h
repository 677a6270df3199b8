// How the commands of the `keyflow` CLI talk to the coordinator: the --coordinator option (with
// the client's keys: --keys, --key-name, --insecure), one request and its reply, a long-running
// command that notices a coordinator restart, and waiting for a job's end with a progress line.
// Every function prints its error (one sentence) and says which exit code the command returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/process/command_line.h"
#include "common/protocol/control_messages.h"

namespace keyflow::cli {

// How long a request waits for its reply unless the command says otherwise.
inline constexpr int64_t kRequestTimeoutMs = 5000;

// --coordinator (default: $KEYFLOW_COORDINATOR, which scripts/start-cluster.sh writes into
// RUN_DIR/cluster.env, else tcp://127.0.0.1:6123) and the client's security flags.
void AddCoordinatorOption(po::options_description* opts, std::string* endpoint);

// One request/reply exchange; prints the error (unless `quiet`) and returns nullopt with
// *exit_code set on failure.
std::optional<Reply> Ask(const std::string& endpoint, const ControlMessage& msg, int* exit_code,
                         bool quiet = false, int64_t timeout_ms = kRequestTimeoutMs);

// Sends a long-running command (rescale, stop, savepoint, checkpoint — `what` as the coordinator
// names it: "rescale to 3") and waits for its reply, polling the coordinator's status every
// second: if the coordinator restarted meanwhile (a new incarnation), the reply will never come;
// the job's last_command then says what became of the command. Prints the outcome; returns the
// reply, or nullopt with *exit_code set.
std::optional<Reply> AskWatchingRestarts(const std::string& endpoint, const ControlMessage& msg,
                                         const std::string& what, int64_t timeout_ms,
                                         int* exit_code);

// Polls the coordinator until the job `job_id` ends (a progress line on stderr meanwhile), prints
// its summary and returns the exit code (0: FINISHED). Survives a coordinator restart: it keeps
// asking for up to two minutes.
int WaitForJob(const std::string& endpoint, const std::string& job_id);

}  // namespace keyflow::cli
