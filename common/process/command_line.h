// Command lines of keyflow binaries (Boost.Program_options) with uniform help, errors and exit
// codes: 0 success, 1 the operation failed, 2 bad usage or bad input. Used by keyflow,
// keyflow-coordinator and keyflow-worker.
#pragma once

#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "common/status.h"

namespace keyflow::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

namespace po = boost::program_options;

// Parses `args` (the subcommand's arguments, without the subcommand name) against `options`
// and `positional`. Prints "--help" text and returns kExitOk in *exit_code when asked; prints a
// usage error and returns kExitUsage when the arguments do not parse. Returns true when the
// command should go on.
// kLongOptionsOnly: only --name options, so that "-5" is a positional value (a negative key).
inline constexpr int kDefaultStyle = po::command_line_style::default_style;
inline constexpr int kLongOptionsOnly =
    po::command_line_style::unix_style ^ po::command_line_style::allow_short;
// `program` non-empty (the binaries' own command lines) also adds --version (PrintVersion).
bool ParseCommandLine(const std::string& usage, const po::options_description& options,
                      const po::positional_options_description& positional,
                      const std::vector<std::string>& args, po::variables_map* vm, int* exit_code,
                      int style = kDefaultStyle, const std::string& program = "");

// Prints "keyflow: <message>" to stderr and returns `code`.
int Fail(const Status& status, int code);
int Fail(const std::string& message, int code);

// The values a duration flag accepts. The default upper bound (one year) keeps "now + value"
// far from int64 overflow; min_ms = 1 where 0 is meaningless (an interval, a timeout).
struct DurationRange {
  int64_t min_ms = 0;
  int64_t max_ms = int64_t{365} * 24 * 3600 * 1000;
};
inline constexpr DurationRange kPositiveDuration{.min_ms = 1};

// Parses a duration flag value ("500ms", "2s", "12h") and checks it against `range`; the error
// names the flag and the accepted range.
Result<int64_t> DurationFlagMillis(const std::string& flag, const std::string& value,
                                   DurationRange range = {});

// Checks a TCP port flag: 1..65535, or also 0 ("any free port") when `allow_ephemeral`.
// Boost parses "70000" into an int without complaint; ZeroMQ would then wrap it around.
Result<int> PortFlag(const std::string& flag, int64_t value, bool allow_ephemeral = false);

// Checks the port of a "tcp://HOST:PORT" endpoint flag (other transports pass unchanged);
// `allow_ephemeral` also accepts port 0 and "*" (a bind endpoint).
Status EndpointFlag(const std::string& flag, const std::string& endpoint,
                    bool allow_ephemeral = false);

// The address to bind for `host` (a --host/--data-host flag): a numeric IPv4/IPv6 address or
// "*" as is, a host name resolved to its first IPv4 address (ZeroMQ binds no DNS names).
// InvalidArgument naming `flag` when it does not resolve.
Result<std::string> BindAddressFor(const std::string& flag, const std::string& host);

// Prints "<program> <version> (git <rev>)" to stdout, as `--version` does on every binary.
void PrintVersion(const std::string& program);

// Reads `--config FILE` options (INI syntax, `name = value`, same names as the flags) into vm;
// flags given on the command line win. No-op when `path` is empty.
Status ParseConfigFile(const std::string& path, const po::options_description& options,
                       po::variables_map* vm);

}  // namespace keyflow::cli
