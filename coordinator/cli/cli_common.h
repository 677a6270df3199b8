// Shared plumbing of the `keyflow` subcommands: option parsing with uniform errors and exit
// codes. Exit codes: 0 success, 1 the operation failed, 2 bad usage or bad input.
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
bool ParseCommandLine(const std::string& usage, const po::options_description& options,
                      const po::positional_options_description& positional,
                      const std::vector<std::string>& args, po::variables_map* vm, int* exit_code,
                      int style = kDefaultStyle);

// Prints "keyflow: <message>" to stderr and returns `code`.
int Fail(const Status& status, int code);
int Fail(const std::string& message, int code);

}  // namespace keyflow::cli
