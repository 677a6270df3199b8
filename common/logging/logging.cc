#include "common/logging/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

namespace keyflow {
namespace {

constexpr char kLevels[] = "use one of: trace, debug, info, warn, error";

// The names --log-level takes (spdlog says "warning").
std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "off";
  }
}

// Lines at the logger's level and above info are flushed at once (a debug line must reach the
// file while the operator looks for it).
void SetLevelAndFlush(spdlog::logger& logger, spdlog::level::level_enum level) {
  logger.set_level(level);
  logger.flush_on(std::min(level, spdlog::level::info));
}

// The message part (%v) of a line, through LogSafe.
class EscapedPayload : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string safe = LogSafe(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(safe.data(), safe.data() + safe.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedPayload>();
  }
};

// "2026-11-29T18:52:42.123Z", as %Y-%m-%dT%H:%M:%S.%eZ in UTC.
std::string UtcTimestamp(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(((ms.count() % 1000) + 1000) % 1000));
  return buf;
}

class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = JsonLogLine(UtcTimestamp(msg.time), LevelName(msg.level),
                                   std::string_view(msg.logger_name.data(), msg.logger_name.size()),
                                   std::string_view(msg.payload.data(), msg.payload.size()));
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

bool IsKeyChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && ((c >= '0' && c <= '9') || c == '.' || c == '-'));
}

// "key=value" with a key of [A-Za-z_][A-Za-z0-9_.-]*: the key's length, else 0.
size_t KeyLength(std::string_view token) {
  size_t eq = token.find('=');
  if (eq == 0 || eq == std::string_view::npos) return 0;
  for (size_t i = 0; i < eq; ++i) {
    if (!IsKeyChar(token[i], i == 0)) return 0;
  }
  return eq;
}

// After nlohmann's escaping (C0 controls, quotes, backslashes; invalid UTF-8 replaced), DEL and
// the C1 controls, which terminals may act on, as \u escapes too.
std::string EscapeDelAndC1(const std::string& json) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const auto c = static_cast<unsigned char>(json[i]);
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && i + 1 < json.size() &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(json[i + 1]) <= 0x9f) {
      const auto b = static_cast<unsigned char>(json[++i]);
      out += "\\u00";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string LogSafe(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto hex = [&](unsigned char b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      hex(c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      hex(c);
      hex(static_cast<unsigned char>(text[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string JsonLogLine(std::string_view ts, std::string_view level, std::string_view process,
                        std::string_view msg) {
  nlohmann::ordered_json j;
  j["ts"] = ts;
  j["level"] = level;
  j["process"] = process;
  j["msg"] = msg;
  // The trailing run of key=value tokens.
  std::vector<std::string_view> tokens;
  for (size_t at = 0; at <= msg.size();) {
    size_t sp = msg.find(' ', at);
    if (sp == std::string_view::npos) sp = msg.size();
    tokens.push_back(msg.substr(at, sp - at));
    at = sp + 1;
  }
  size_t first = tokens.size();
  while (first > 0 && KeyLength(tokens[first - 1]) > 0) --first;
  if (first < tokens.size()) {
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();
    for (size_t i = first; i < tokens.size(); ++i) {
      const size_t k = KeyLength(tokens[i]);
      std::string key(tokens[i].substr(0, k));
      if (!fields.contains(key)) fields[key] = tokens[i].substr(k + 1);
    }
    j["fields"] = std::move(fields);
  }
  return EscapeDelAndC1(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Result<spdlog::level::level_enum> ParseLogLevel(std::string_view level) {
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "warn" || level == "warning") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  return InvalidArgument("unknown log level '" + LogSafe(level) + "': " + kLevels);
}

Result<LogFormat> ParseLogFormat(std::string_view format) {
  if (format == "text") return LogFormat::kText;
  if (format == "json") return LogFormat::kJson;
  return InvalidArgument("unknown log format '" + LogSafe(format) +
                         "': use text (one key=value line per event) or json (one JSON object "
                         "per line)");
}

Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(std::string(what) + " '" + LogSafe(text) + "' " + std::string(why) +
                           ": give bytes or a whole number with KiB, MiB or GiB (e.g. 64MiB)");
  };
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec == std::errc::result_out_of_range) return bad("is too large");
  if (ec != std::errc() || end == text.data()) return bad("is not a size");
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit == "kib") {
    shift = 10;
  } else if (unit == "mib") {
    shift = 20;
  } else if (unit == "gib") {
    shift = 30;
  } else if (!unit.empty() && unit != "b") {
    return bad("has an unknown unit");
  }
  constexpr uint64_t kMax = uint64_t{1} << 40;
  if (n == 0) return bad("is zero");
  if (n > (kMax >> shift)) return bad("is more than 1 TiB");
  return n << shift;
}

Result<std::shared_ptr<spdlog::logger>> MakeLogger(const LoggingOptions& options) {
  KF_ASSIGN_OR_RETURN(spdlog::level::level_enum level, ParseLogLevel(options.level));
  if (options.max_size_bytes == 0 || options.max_files < 1 || options.max_files > 1000) {
    return InvalidArgument("log rotation needs a maximum size > 0 and from 1 to 1000 files");
  }
  spdlog::sink_ptr sink;
  if (options.file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    try {
      sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
          options.file, options.max_size_bytes, static_cast<size_t>(options.max_files));
    } catch (const spdlog::spdlog_ex& e) {
      return IoError("cannot open log file " + options.file + " (" + e.what() +
                     "): give --log-file a file in a directory this user can write");
    }
  }
  auto logger = std::make_shared<spdlog::logger>(options.process, std::move(sink));
  if (options.format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<EscapedPayload>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %n %*");
    logger->set_formatter(std::move(formatter));
  }
  SetLevelAndFlush(*logger, level);
  return logger;
}

Status InitLogging(const LoggingOptions& options) {
  KF_ASSIGN_OR_RETURN(std::shared_ptr<spdlog::logger> logger, MakeLogger(options));
  spdlog::set_default_logger(std::move(logger));
  return Status::Ok();
}

Status InitLogging(const std::string& process, const std::string& log_file,
                   const std::string& level) {
  LoggingOptions options;
  options.process = process;
  options.file = log_file;
  options.level = level;
  return InitLogging(options);
}

Status ChangeLogLevel(std::string_view level, std::string_view reason) {
  KF_ASSIGN_OR_RETURN(spdlog::level::level_enum to, ParseLogLevel(level));
  spdlog::logger& logger = *spdlog::default_logger_raw();
  const spdlog::level::level_enum from = logger.level();
  std::string line = "log level changed from " + std::string(LevelName(from)) + " to " +
                     std::string(LevelName(to));
  if (!reason.empty()) line += " (" + std::string(reason) + ")";
  if (to > spdlog::level::info) logger.info("{}", line);  // before it would be hidden
  SetLevelAndFlush(logger, to);
  if (to <= spdlog::level::info) logger.info("{}", line);
  return Status::Ok();
}

std::string LogLevel() {
  return std::string(LevelName(spdlog::default_logger_raw()->level()));
}

}  // namespace keyflow
