// Input generation, reference results and output reading for the integration tests of the
// built-in jobs (count-window, tumbling-count).
//
// The reference semantics are written here from the job specification (the function's
// contract in worker/jobs/count_window_function.h, tumbling_count_function.h), independently of the
// job code, so a test compares the runtime against the spec, not against itself.
//
// Threading: plain functions and values.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace keyflow::test {

struct JsonLinesInputOptions {
  int files = 6;  // one split each
  int64_t records_per_file = 50'000;
  int cold_keys_per_file = 2'000;
  int hot_keys_per_file = 3;  // together receive `hot_share` of a file's records
  double hot_share = 0.3;
  int64_t start_ms = 1'700'000'000'000;
  // File f covers event time [start + f*span, start + (f+1)*span): a source subtask that reads
  // several files in id order never goes back in time, so no record is late.
  int64_t span_ms_per_file = 100'000;
  int64_t max_disorder_ms = 500;  // jitter in [0, max): below the default watermark bound (1 s)
  uint64_t seed = 7;
};

// Per key, the timestamps of its records in input order (a key lives in exactly one file, so
// this is the order the keyed operator sees them in).
using KeyedTimestamps = std::map<std::string, std::vector<int64_t>>;

struct JsonLinesInput {
  std::vector<std::string> files;  // absolute paths, in split (name) order
  KeyedTimestamps records;
  int64_t total_records = 0;
};

// Writes `options.files` JSON Lines files {"uid":K,"ts":T,"seq":N} into `dir` (which must
// exist; names part-00.jsonl ...). Key "user-<n>" lives in file n % files only; hot keys are the
// first hot_keys_per_file keys of each file.
Result<JsonLinesInput> WriteJsonLinesInput(const std::string& dir,
                                           const JsonLinesInputOptions& options);

// Reference results as canonical lines (see Canonical* below), sorted.
// count-window, event time: a window opens at its first record's timestamp S with deadline
// D = S + timeout; a record with ts >= D first closes the open window (cause timeout, time D);
// each record adds 1 and the count-th closes the window (cause count, time = that record's ts);
// at the end every open window closes (cause timeout, time D).
std::vector<std::string> ReferenceCountWindow(const KeyedTimestamps& input, int64_t count,
                                              int64_t timeout_ms);
// The lines of a count-window reference (ReferenceCountWindow) of windows closed by count: what
// a job that never ends (no timeout reached) has committed once it read `input`.
std::vector<std::string> ClosedByCount(const std::vector<std::string>& reference);
// tumbling-count: per key and window [floor(ts/size)*size, +size), the number of records.
std::vector<std::string> ReferenceTumblingCount(const KeyedTimestamps& input, int64_t size_ms);

// `keyflow run` arguments of count-window in event time with these parameters on `input`,
// writing to `output`, then `extra`.
std::vector<std::string> CountWindowRunArgs(const std::string& input, const std::string& output,
                                            int64_t count, int64_t timeout_ms,
                                            std::vector<std::string> extra = {});

// Name -> content of every committed result file of an output directory (in-progress and pending
// files start with '.' or '_').
std::map<std::string, std::string> CommittedFiles(const std::string& dir);
// Every file of `committed` (CommittedFiles earlier) is still in `dir` with the same content:
// committed output is never deleted or changed.
void ExpectCommittedFilesKept(const std::map<std::string, std::string>& committed,
                              const std::string& dir);

// Canonical form of one output line without "subtask":
//   count-window:   "key|count|start|time|cause"
//   tumbling-count: "key|window_start|window_end|count"
// InvalidArgument if a field is missing or has the wrong type.
Result<std::string> CanonicalCountWindow(const nlohmann::json& line);
// The sorted canonical lines (CanonicalCountWindow) of a count-window output directory.
Result<std::vector<std::string>> CanonicalCountWindowOutput(const std::string& dir);
Result<std::string> CanonicalTumblingCount(const nlohmann::json& line);

struct JobOutput {
  std::vector<std::string> files;     // result files (not starting with '.' or '_')
  std::vector<nlohmann::json> lines;  // every line of every result file
};
// Reads every result file of a file-sink output directory; an unparsable line is an error
// naming file and line.
Result<JobOutput> ReadJobOutput(const std::string& dir);

// The committed output of `dir`, each line as the values of its `fields` joined with '|' (a
// string as its text, anything else as JSON), sorted. An error names a line without one of them.
Result<std::vector<std::string>> OutputColumns(const std::string& dir,
                                               const std::vector<std::string>& fields);
// The same columns of one JSON object (an error names a missing one).
Result<std::string> JoinedColumns(const nlohmann::json& line,
                                  const std::vector<std::string>& fields);

// Compares sorted lines as multisets; a failure names how many lines are missing and unexpected,
// with the first few of each (not 100k lines).
::testing::AssertionResult SameLines(const std::vector<std::string>& actual,
                                     const std::vector<std::string>& expected);
// EXPECT_TRUE(SameLines(actual, expected)) << what.
void ExpectSameLines(const std::vector<std::string>& actual,
                     const std::vector<std::string>& expected, const std::string& what);

// The sorted canonical lines of count-window output directory `dir` (CanonicalCountWindowOutput)
// are `expected` (ExpectSameLines, `what` in the message); a directory that cannot be read fails.
void ExpectCountWindowOutput(const std::string& dir, const std::vector<std::string>& expected,
                             const std::string& what);

// Sum of "count" per "key" over output lines.
std::map<std::string, int64_t> CountsPerKey(const std::vector<nlohmann::json>& lines);
// Number of input records per key.
std::map<std::string, int64_t> RecordsPerKey(const KeyedTimestamps& input);

}  // namespace keyflow::test
