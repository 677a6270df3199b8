// PrintSink: writes output lines to stdout (or another stdio stream) for demos, like Flink's
// PrintSinkFunction: with parallelism > 1 every line is prefixed with "<subtask + 1>> ".
//
// At-least-once at best (nothing is transactional); use FileSink for exactly-once results.
// Each line goes out in one fwrite, so lines of concurrent writers in one process never
// interleave. Threading: one instance per task thread.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace keyflow {

class PrintSink {
 public:
  // `out` is borrowed (stdout by default). `prefix` goes before every line.
  explicit PrintSink(std::FILE* out = stdout, std::string prefix = "");
  // Flink's prefix rule: "<index + 1>> " when parallelism > 1, none otherwise.
  static PrintSink ForSubtask(SubtaskIndex index, int32_t parallelism, std::FILE* out = stdout);

  // Writes prefix + line + '\n'. IoError if the stream fails (e.g. a closed pipe).
  Status Write(std::string_view line);
  // Flushes the stream's buffer.
  Status Flush();

  const std::string& prefix() const { return prefix_; }

 private:
  std::FILE* out_;
  std::string prefix_;
  std::string scratch_;  // prefix + line + '\n', reused
};

}  // namespace keyflow
