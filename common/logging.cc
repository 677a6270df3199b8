#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <memory>

namespace keyflow {
namespace {

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
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<EscapedPayload>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %n %*");
  logger->set_formatter(std::move(formatter));
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

}  // namespace keyflow
