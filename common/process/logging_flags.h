// The logging flags of every keyflow binary: --log-file, --log-level, --log-format,
// --log-max-size, --log-max-files (keyflow-coordinator, keyflow-worker), and --log-level,
// --log-format for the `keyflow` CLI, which logs to stderr and takes them before or after its
// command (ExtractCliLoggingFlags).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/logging/logging.h"
#include "common/process/command_line.h"
#include "common/status.h"

namespace keyflow::cli {

struct LoggingFlags {
  std::string file;  // --log-file; empty: stderr
  std::string level = "info";
  std::string format = "text";
  std::string max_size = "64MiB";
  int64_t max_files = 5;
};

// Adds the five flags to `opts` (defaults from *flags).
void AddLoggingFlags(po::options_description& opts, LoggingFlags* flags);

// Checks the flags (InvalidArgument: a sentence naming the flag, for exit code 2) and returns
// the options InitLogging takes for process `process`.
Result<LoggingOptions> LoggingOptionsFromFlags(const std::string& process,
                                               const LoggingFlags& flags);

// The CLI's --log-level/--log-format (also --log-level=L): removed from *args, wherever they
// are, into *flags. InvalidArgument if one has no value.
Status ExtractCliLoggingFlags(std::vector<std::string>* args, LoggingFlags* flags);

}  // namespace keyflow::cli
