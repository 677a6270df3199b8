// Structured logging for keyflow processes (spdlog).
//
//   KF_LOG_INFO("worker registered worker={} slot={} host={}", id, slot, host);
//
// Lines look like `2026-11-29T18:52:42.123Z info coordinator message key=value ...`: one event
// per line, fields as key=value so logs can be grepped and parsed. Each process logs to its own
// file (--log-file, rotated by size: --log-max-size, --log-max-files) or to stderr, as text or
// as JSON lines (--log-format json). The logger is process-wide, set up once in main() by
// InitLogging; libraries only use the macros (logging is the one sanctioned global). The level
// can change at run time (ChangeLogLevel: `keyflow log-level`, REST PUT /api/v1/logging).
//
// Messages carry strings from peers (host names, job names, paths, failure reasons): every
// text message is written through LogSafe, so a newline in a peer's host name cannot forge a
// log line and an ANSI escape cannot repaint the operator's terminal. In JSON, the string
// escaping does the same (control characters, DEL and C1 controls as \uXXXX, invalid UTF-8 as
// U+FFFD).
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

enum class LogFormat { kText, kJson };

struct LoggingOptions {
  std::string process;  // names the process in every line ("coordinator", "worker-2", "keyflow")
  std::string file;     // empty: stderr (then max_size_bytes/max_files do not apply)
  std::string level = "info";  // trace|debug|info|warn|error
  LogFormat format = LogFormat::kText;
  // The file rotates before a line would make it longer than max_size_bytes: FILE -> FILE.1
  // (name.log -> name.1.log) ... -> FILE.<max_files>, the oldest deleted; at most max_files + 1
  // files exist. Both >= 1.
  uint64_t max_size_bytes = uint64_t{64} << 20;
  int max_files = 5;
};

// A logger as InitLogging would install it, not installed (tests; at most one per file).
// InvalidArgument for a bad level or size; IoError (a sentence) if the file cannot be opened
// for appending (its directory is created if missing).
Result<std::shared_ptr<spdlog::logger>> MakeLogger(const LoggingOptions& options);

// Makes MakeLogger(options) the process's logger. Called once in main(), before threads log.
Status InitLogging(const LoggingOptions& options);
// The same with text format and the default rotation.
Status InitLogging(const std::string& process, const std::string& log_file,
                   const std::string& level = "info");

// Changes the level of the process's logger (any thread). InvalidArgument with the accepted
// names for anything but trace|debug|info|warn|error (then nothing changes). Logs one info line
// "log level changed from OLD to NEW (reason)", visible when either level shows info.
Status ChangeLogLevel(std::string_view level, std::string_view reason = {});
// The level of the process's logger: trace|debug|info|warn|error (or critical|off).
std::string LogLevel();

// Parses a level name (trace|debug|info|warn|error; "warning" is accepted for warn).
Result<spdlog::level::level_enum> ParseLogLevel(std::string_view level);
// Parses "text" or "json".
Result<LogFormat> ParseLogFormat(std::string_view format);
// Parses a size: bytes ("1048576") or a whole number with B, KiB, MiB or GiB ("64MiB";
// the unit is case-insensitive). InvalidArgument naming `what` otherwise, or for 0 or > 1 TiB.
Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what);

// Escapes control characters so `text` stays on one line and inert on a terminal: "\n" "\r"
// "\t" as those two-character escapes, other C0 controls, DEL and the UTF-8 encoded C1
// controls (U+0080..U+009F, e.g. the one-byte CSI) as "\xNN" per byte. Other bytes, printable
// UTF-8 included, pass unchanged (a backslash too: escapes are for reading, not for parsing).
std::string LogSafe(std::string_view text);

// One JSON log line (no newline): {"ts":..,"level":..,"process":..,"msg":..} and, when the
// message ends in key=value tokens (every token after the first such one is one), "fields":
// {key: "value", ...} (strings; the first of a repeated key wins). `msg` is always the exact
// message: fields are a convenience for queries, taken from what the message says.
std::string JsonLogLine(std::string_view ts, std::string_view level, std::string_view process,
                        std::string_view msg);

}  // namespace keyflow

#define KF_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define KF_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define KF_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define KF_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
