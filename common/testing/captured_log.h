// CapturedLog: routes the process-wide log (common/logging/logging.h) into memory for the duration
// of a test, to assert on warnings and on how many lines were written. Keeps the last `capacity`
// lines; counts all of them.
//
// Threading: the logger is thread-safe; read Text()/lines() after the code under test is done.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace keyflow::testing {

class CapturedLog {
 public:
  explicit CapturedLog(size_t capacity = 100)
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(capacity)) {
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  // The kept lines, concatenated.
  std::string Text() const {
    std::string all;
    for (const std::string& line : sink_->last_formatted()) all += line;
    return all;
  }
  // Number of kept lines (all lines if fewer than `capacity` were written).
  size_t lines() const { return sink_->last_formatted().size(); }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace keyflow::testing
