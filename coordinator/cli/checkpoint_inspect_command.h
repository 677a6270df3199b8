// `keyflow checkpoint inspect PATH [--json]`: prints what a checkpoint or savepoint holds, from
// its `_metadata` alone (checkpoint/checkpoint_metadata.h): job, id, type, times, max
// parallelism, parallelism, then per subtask its file, key-group range and size, and per key
// group the block offset, bytes, keys and timers, with totals. Also checks that every state
// file exists with the recorded size. Works without a running coordinator.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace keyflow::cli {

// `args` are the arguments after `keyflow checkpoint inspect`: PATH (a checkpoint/savepoint
// directory or its `_metadata` file) and optionally --json. Writes the report to `out`, errors
// to stderr. Exit code 0; 1 for a missing or corrupted checkpoint (metadata that does not
// verify, or a missing/truncated state file — the report is still printed then); 2 for bad
// usage.
int RunCheckpointInspect(const std::vector<std::string>& args, std::ostream& out);

}  // namespace keyflow::cli
