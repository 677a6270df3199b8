// PrintSink: writes output lines to stdout (or another stdio stream), like Flink's
// PrintSinkFunction: with parallelism > 1 every line is prefixed with "<subtask + 1>> ".
// The keyed task uses it when a job has no --output (worker/sinks/README.md): the lines land
// in the worker's stdout, which scripts/start-cluster.sh sends to the worker's log file.
//
// At-least-once at best (nothing is transactional); use FileSink for exactly-once results.
// Lines are buffered here and written in whole lines: Flush() (and a full buffer) writes them
// with one write(2) on the stream's file descriptor (after flushing the stream), so lines of
// concurrent writers in one process, and the log lines a process writes to the same file,
// never interleave within a line. Threading: one instance per task thread.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace keyflow {

class PrintSink {
 public:
  // Buffered bytes that trigger a write.
  static constexpr size_t kBufferBytes = 64 * 1024;

  // `out` is borrowed (stdout by default). `prefix` goes before every line.
  explicit PrintSink(std::FILE* out = stdout, std::string prefix = "");
  // Flink's prefix rule: "<index + 1>> " when parallelism > 1, none otherwise.
  static PrintSink ForSubtask(SubtaskIndex index, int32_t parallelism, std::FILE* out = stdout);
  PrintSink(PrintSink&&) = default;
  PrintSink& operator=(PrintSink&&) = default;
  ~PrintSink();  // flushes what is buffered (errors ignored)

  // Buffers prefix + line + '\n'; writes the buffer once it holds kBufferBytes. IoError if the
  // stream fails (e.g. a closed pipe).
  Status Write(std::string_view line);
  // Writes the buffered lines and flushes the stream.
  Status Flush();

  const std::string& prefix() const { return prefix_; }

 private:
  std::FILE* out_;
  std::string prefix_;
  std::string buffer_;  // whole lines not yet written
};

}  // namespace keyflow
