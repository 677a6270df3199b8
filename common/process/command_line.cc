#include "common/process/command_line.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <charconv>
#include <fstream>

#include "common/duration.h"
#include "common/version.h"

namespace keyflow::cli {

bool ParseCommandLine(const std::string& usage, const po::options_description& options,
                      const po::positional_options_description& positional,
                      const std::vector<std::string>& args, po::variables_map* vm, int* exit_code,
                      int style, const std::string& program) {
  po::options_description all("options");
  all.add(options);
  if (style & po::command_line_style::allow_short) {
    all.add_options()("help,h", "show this help and exit");
  } else {
    all.add_options()("help", "show this help and exit");
  }
  if (!program.empty()) all.add_options()("version", "print the version and exit");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(),
              *vm);
    if (vm->count("help")) {
      std::cout << usage << "\n\n" << all << "\n";
      *exit_code = kExitOk;
      return false;
    }
    if (!program.empty() && vm->count("version")) {
      PrintVersion(program);
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

Result<int64_t> DurationFlagMillis(const std::string& flag, const std::string& value,
                                   DurationRange range) {
  auto d = ParseDuration(value);
  if (!d.ok()) return d.status().WithContext("--" + flag);
  if (d->millis() < range.min_ms || d->millis() > range.max_ms) {
    return InvalidArgument("--" + flag + " " + value + " is out of range: give a duration from " +
                           FormatDuration(Duration::Millis(range.min_ms)) + " to " +
                           FormatDuration(Duration::Millis(range.max_ms)));
  }
  return d->millis();
}

Result<int> PortFlag(const std::string& flag, int64_t value, bool allow_ephemeral) {
  const int64_t low = allow_ephemeral ? 0 : 1;
  if (value < low || value > 65535) {
    return InvalidArgument("--" + flag + " " + std::to_string(value) +
                           " is not a TCP port: give a number from " + std::to_string(low) +
                           " to 65535" + (allow_ephemeral ? " (0: any free port)" : ""));
  }
  return static_cast<int>(value);
}

Status EndpointFlag(const std::string& flag, const std::string& endpoint, bool allow_ephemeral) {
  if (endpoint.rfind("tcp://", 0) != 0) return Status::Ok();
  size_t colon = endpoint.rfind(':');
  std::string port = colon == std::string::npos ? "" : endpoint.substr(colon + 1);
  auto bad = [&] {
    return InvalidArgument("--" + flag + " " + endpoint +
                           " has no valid TCP port: write tcp://HOST:PORT with PORT from " +
                           (allow_ephemeral ? "0" : "1") + " to 65535" +
                           (allow_ephemeral ? " (or *: any free port)" : ""));
  };
  if (colon < 6 || port.empty()) return bad();
  if (port == "*") return allow_ephemeral ? Status::Ok() : bad();
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || ptr != port.data() + port.size()) return bad();
  if (!PortFlag(flag, value, allow_ephemeral).ok()) return bad();
  return Status::Ok();
}

Result<std::string> BindAddressFor(const std::string& flag, const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  if (host == "*" || ::inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
      ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return host;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 ||
      found == nullptr) {
    return InvalidArgument("--" + flag + " '" + host +
                           "' is not an address of this host: give an IP address or a host name "
                           "that resolves (or choose the interface to bind explicitly)");
  }
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
              sizeof(text));
  ::freeaddrinfo(found);
  return std::string(text);
}

void PrintVersion(const std::string& program) {
  std::cout << program << " " << kKeyflowVersion << " (git " << kKeyflowGitRevision << ")\n";
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
