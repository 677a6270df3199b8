// Resource usage of this process (RSS, CPU time, open file descriptors) from /proc/self, for the
// worker's heartbeats (WorkerHeartbeat::usage) and the coordinator's status and /metrics.
//
// The parsing functions are pure (fixed text in, numbers out) so they are unit-tested on
// captured /proc text; ReadProcessUsage does the file reads. Linux only.
//
// Threading: all functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/protocol/control_messages.h"
#include "common/status.h"

namespace keyflow {

struct CpuTicks {
  int64_t user = 0;    // utime, in clock ticks
  int64_t system = 0;  // stime, in clock ticks
};

// Fields 14 (utime) and 15 (stime) of a /proc/<pid>/stat line. The command name (field 2) is in
// parentheses and may itself contain spaces and ')': fields are counted after the last ')'.
Result<CpuTicks> ParseProcStatCpuTicks(std::string_view stat);

// Field 2 (resident, in pages) of a /proc/<pid>/statm line.
Result<int64_t> ParseStatmResidentPages(std::string_view statm);

// Combines the two into a ProcessUsage (open_fds as given).
// Preconditions: ticks_per_second > 0, page_size > 0.
Result<ProcessUsage> ParseProcessUsage(std::string_view stat, std::string_view statm,
                                       int64_t ticks_per_second, int64_t page_size,
                                       int64_t open_fds);

// The entries of `fd_dir` (e.g. "/proc/self/fd"), not counting the descriptor that lists it.
Result<int64_t> CountOpenFds(const std::string& fd_dir);

// This process's usage now (reads /proc/self/stat, statm and fd: three small reads, a few tens
// of microseconds). IoError with a sentence if /proc is not mounted.
Result<ProcessUsage> ReadProcessUsage();

}  // namespace keyflow
