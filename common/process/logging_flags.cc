#include "common/process/logging_flags.h"

#include <array>

namespace keyflow::cli {

void AddLoggingFlags(po::options_description& opts, LoggingFlags* flags) {
  opts.add_options()("log-file", po::value(&flags->file),
                     "log to this file (default: stderr); it rotates by --log-max-size")(
      "log-level", po::value(&flags->level)->default_value(flags->level),
      "trace|debug|info|warn|error (changed at run time by `keyflow log-level`)")(
      "log-format", po::value(&flags->format)->default_value(flags->format),
      "text (one key=value line per event) or json (one JSON object per line)")(
      "log-max-size", po::value(&flags->max_size)->default_value(flags->max_size),
      "rotate --log-file before it grows past this size (bytes, or e.g. 512KiB, 64MiB, 1GiB)")(
      "log-max-files", po::value(&flags->max_files)->default_value(flags->max_files),
      "rotated files to keep (FILE.1 ... FILE.N, 1-1000; the oldest is deleted)");
}

Result<LoggingOptions> LoggingOptionsFromFlags(const std::string& process,
                                               const LoggingFlags& flags) {
  LoggingOptions options;
  options.process = process;
  options.file = flags.file;
  options.level = flags.level;
  KF_RETURN_IF_ERROR_CTX(ParseLogLevel(flags.level).status(), "--log-level");
  Result<LogFormat> format = ParseLogFormat(flags.format);
  if (!format.ok()) return format.status().WithContext("--log-format");
  options.format = *format;
  KF_ASSIGN_OR_RETURN(options.max_size_bytes, ParseByteSize(flags.max_size, "--log-max-size"));
  if (flags.max_files < 1 || flags.max_files > 1000) {
    return InvalidArgument("--log-max-files " + std::to_string(flags.max_files) +
                           " is out of range: give a number of rotated files from 1 to 1000");
  }
  options.max_files = static_cast<int>(flags.max_files);
  return options;
}

Status ExtractCliLoggingFlags(std::vector<std::string>* args, LoggingFlags* flags) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    bool matched = false;
    for (auto [name, value] : std::array<std::pair<std::string, std::string*>, 2>{
             {{"--log-level", &flags->level}, {"--log-format", &flags->format}}}) {
      if (a == name) {
        if (i + 1 >= args->size()) {
          return InvalidArgument(name + " needs a value (e.g. " + name +
                                 (name == "--log-level" ? " debug)" : " json)"));
        }
        *value = (*args)[++i];
        matched = true;
      } else if (a.rfind(name + "=", 0) == 0) {
        *value = a.substr(name.size() + 1);
        matched = true;
      }
      if (matched) break;
    }
    if (!matched) rest.push_back(a);
  }
  *args = std::move(rest);
  return Status::Ok();
}

}  // namespace keyflow::cli
