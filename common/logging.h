// Structured logging for keyflow processes (spdlog).
//
//   KF_LOG_INFO("worker registered worker={} slot={} host={}", id, slot, host);
//
// Lines look like `2026-11-29T18:52:42.123Z INFO coordinator message key=value ...`: one event
// per line, fields as key=value so logs can be grepped and parsed. Each process logs to its own
// file (--log-file) or to stderr. The logger is process-wide, set up once in main() by
// InitLogging; libraries only use the macros (logging is the one sanctioned global).
//
// Messages carry strings from peers (host names, job names, paths, failure reasons): every
// message is written through LogSafe, so a newline in a peer's host name cannot forge a log
// line and an ANSI escape cannot repaint the operator's terminal.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

// `process` names the process in every line ("coordinator", "worker-2", "keyflow").
// Empty `log_file` = stderr. `level`: trace|debug|info|warn|error.
Status InitLogging(const std::string& process, const std::string& log_file,
                   const std::string& level = "info");

// Escapes control characters so `text` stays on one line and inert on a terminal: "\n" "\r"
// "\t" as those two-character escapes, other C0 controls, DEL and the UTF-8 encoded C1
// controls (U+0080..U+009F, e.g. the one-byte CSI) as "\xNN" per byte. Other bytes, printable
// UTF-8 included, pass unchanged (a backslash too: escapes are for reading, not for parsing).
std::string LogSafe(std::string_view text);

}  // namespace keyflow

#define KF_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define KF_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define KF_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define KF_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
