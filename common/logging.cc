#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace keyflow {

Status InitLogging(const std::string& process, const std::string& log_file,
                   const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  if (spdlog::level::to_string_view(lvl) != level && !(level == "warn" || level == "warning")) {
    return InvalidArgument("unknown log level '" + level +
                           "'; use one of: trace, debug, info, warn, error");
  }
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (log_file.empty()) {
      logger = spdlog::stderr_logger_mt(process);
    } else {
      logger = spdlog::basic_logger_mt(process, log_file, /*truncate=*/false);
    }
  } catch (const spdlog::spdlog_ex& e) {
    return IoError("cannot open log file " + log_file + ": " + e.what());
  }
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %n %v", spdlog::pattern_time_type::utc);
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

}  // namespace keyflow
