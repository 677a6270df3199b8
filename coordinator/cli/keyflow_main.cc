// `keyflow` — the command-line client of a keyflow cluster and its key-group tools.
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/logging/logging.h"
#include "common/process/command_line.h"
#include "common/process/file_access.h"
#include "common/process/logging_flags.h"
#include "coordinator/cli/job_commands.h"
#include "coordinator/cli/key_group_commands.h"
#include "coordinator/cli/keys_command.h"

namespace {

using Command = std::function<int(const std::vector<std::string>&)>;

struct CommandInfo {
  Command run;
  const char* summary;
};

const std::map<std::string, CommandInfo>& Commands() {
  using namespace keyflow::cli;
  static const std::map<std::string, CommandInfo> commands = {
      {"ranges",
       {[](const auto& a) { return RunRangesCommand(a, std::cin, std::cout); },
        "print the key-group range of every subtask for M and P"}},
      {"jobs", {RunJobsCommand, "list the jobs of a job library, their parameters and defaults"}},
      {"run", {RunRunCommand, "submit a job (--wait: follow it to the end)"}},
      {"status", {RunStatusCommand, "show workers, the job, subtasks, throughput, watermarks"}},
      {"cancel", {RunCancelCommand, "cancel the running job"}},
      {"stop",
       {RunStopCommand, "stop the running job with a savepoint (continue with --from-savepoint)"}},
      {"checkpoint",
       {RunCheckpointCommand, "take a checkpoint now; `checkpoint inspect PATH` shows one"}},
      {"savepoint",
       {RunSavepointCommand, "take a savepoint (kept; restore with --from-savepoint)"}},
      {"checkpoints", {RunCheckpointsCommand, "list completed checkpoints and savepoints"}},
      {"rescale", {RunRescaleCommand, "rescale the running job to P' subtasks (--plan: preview)"}},
      {"key-group",
       {[](const auto& a) { return RunKeyGroupCommand(a, std::cin, std::cout); },
        "print the key group (and subtask) of keys"}},
      {"log-level",
       {RunLogLevelCommand, "change the log level of the coordinator and workers at run time"}},
      {"keys",
       {[](const auto& a) { return RunKeysCommand(a, std::cout, std::cerr); },
        "create and list the cluster's CURVE keys (init, add-worker, add-client, list, reload)"}},
  };
  return commands;
}

void PrintUsage(std::ostream& os) {
  os << "usage: keyflow <command> [options]   (keyflow <command> --help for its options;\n"
        "       keyflow --version prints the version)\n\n"
        "options of every command (before or after it):\n"
        "  --log-level L   trace|debug|info|warn|error: what the CLI logs to stderr (default "
        "warn)\n"
        "  --log-format F  text|json\n\n"
        "commands:\n";
  for (const auto& [name, info] : Commands()) {
    os << "  " << name << std::string(12 - std::min<size_t>(name.size(), 11), ' ') << info.summary
       << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace keyflow;
  // What the CLI writes is its user's alone (the key set's files set their modes exactly).
  ApplyFileAccess(FileAccess::kPrivate);
  std::vector<std::string> args(argv + 1, argv + argc);
  cli::LoggingFlags log_flags;
  log_flags.level = "warn";
  if (Status s = cli::ExtractCliLoggingFlags(&args, &log_flags); !s.ok()) {
    return cli::Fail(s, cli::kExitUsage);
  }
  auto logging = cli::LoggingOptionsFromFlags("keyflow", log_flags);
  if (!logging.ok()) return cli::Fail(logging.status(), cli::kExitUsage);
  if (Status s = InitLogging(*logging); !s.ok()) return cli::Fail(s, cli::kExitUsage);
  if (args.empty()) {
    PrintUsage(std::cerr);
    return keyflow::cli::kExitUsage;
  }
  std::string name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(std::cout);
    return keyflow::cli::kExitOk;
  }
  if (name == "--version" || name == "version") {
    keyflow::cli::PrintVersion("keyflow");
    return keyflow::cli::kExitOk;
  }
  auto it = Commands().find(name);
  if (it == Commands().end()) {
    std::cerr << "keyflow: unknown command '" << name << "'\n";
    PrintUsage(std::cerr);
    return keyflow::cli::kExitUsage;
  }
  args.erase(args.begin());
  return it->second.run(args);
}
