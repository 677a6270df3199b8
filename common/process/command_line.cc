#include "common/process/command_line.h"

#include <fstream>

#include "common/duration.h"

namespace keyflow::cli {

bool ParseCommandLine(const std::string& usage, const po::options_description& options,
                      const po::positional_options_description& positional,
                      const std::vector<std::string>& args, po::variables_map* vm, int* exit_code,
                      int style) {
  po::options_description all("options");
  all.add(options);
  if (style & po::command_line_style::allow_short) {
    all.add_options()("help,h", "show this help and exit");
  } else {
    all.add_options()("help", "show this help and exit");
  }
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(),
              *vm);
    if (vm->count("help")) {
      std::cout << usage << "\n\n" << all << "\n";
      *exit_code = kExitOk;
      return false;
    }
    po::notify(*vm);
  } catch (const po::error& e) {
    std::cerr << "keyflow: " << e.what() << "\n" << usage << "\n(try --help)\n";
    *exit_code = kExitUsage;
    return false;
  }
  return true;
}

int Fail(const Status& status, int code) {
  return Fail(status.message(), code);
}

int Fail(const std::string& message, int code) {
  std::cerr << "keyflow: " << message << "\n";
  return code;
}

Result<int64_t> DurationFlagMillis(const std::string& flag, const std::string& value) {
  auto d = ParseDuration(value);
  if (!d.ok()) return d.status().WithContext("--" + flag);
  return d->millis();
}

Status ParseConfigFile(const std::string& path, const po::options_description& options,
                       po::variables_map* vm) {
  if (path.empty()) return Status::Ok();
  std::ifstream in(path);
  if (!in) return NotFound("cannot read config file " + path);
  try {
    po::store(po::parse_config_file(in, options), *vm);
    po::notify(*vm);
  } catch (const po::error& e) {
    return InvalidArgument("config file " + path + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace keyflow::cli
