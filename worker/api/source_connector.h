// Sources a job library defines (Flink's FLIP-27 Source, reduced to what a library needs): the
// splits of an input, and a reader for each split that resumes from a position.
//
//   keyflow run --job-library L --job J --input connector:NAME[:ARGS] ...
//
// `keyflow run` (which loads L) calls `splits(ARGS)` once, before anything is deployed; an
// error is the command's usage error (exit 2). The coordinator hands the splits to the source
// subtasks (split i to subtask i mod P), and every checkpoint holds each split's position. A
// source subtask opens each of its splits with `open(ARGS, split, position)` — position "" is
// the split's start; after a restore or a rescale it is what ConnectorSplitReader::Position()
// returned at the checkpoint — and reads records from it: each record is one JSON Lines record
// (the text of one JSON object, no line terminator), parsed with the job's record format like
// a line of a file (key and time fields, declared fields, --on-bad-record; a malformed one is
// reported as "connector NAME split S record N: reason").
//
//   class CounterReader final : public keyflow::ConnectorSplitReader {
//     keyflow::Result<keyflow::ConnectorRead> Next(std::string* record) override { ... }
//     std::string Position() const override { return std::to_string(next_); }
//   };
//   std::vector<keyflow::SourceConnector> Sources() {
//     keyflow::SourceConnector counter;
//     counter.name = "counter";
//     counter.splits = [](const std::string& args) { ... };       // e.g. {"0", "1", "2"}
//     counter.open = [](const std::string& args, const std::string& split,
//                       const std::string& position) { ... };   // a CounterReader
//     return {counter};
//   }
//   keyflow::Connectors Connectors() { return {Sources(), {}}; }
//   KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS(Jobs, Connectors)
//
// Exactly once: a reader must produce the same records after Position() when opened there
// again. A reader is used by one thread at a time (the source subtask's); `splits` and `open`
// may run on any thread. An exception thrown out of them or out of a reader fails the task like
// an error Status does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace keyflow {

enum class ConnectorRead : uint8_t {
  kRecord,      // *record holds the next record
  kEndOfSplit,  // the split has no more records (a finished split is not opened again)
  kNothingYet,  // no record now (a live feed): the subtask asks again a few ms later
};

class ConnectorSplitReader {
 public:
  virtual ~ConnectorSplitReader() = default;
  // The next record into *record. An error fails the task (the job restarts from its last
  // checkpoint under its restart strategy).
  virtual Result<ConnectorRead> Next(std::string* record) = 0;
  // Where the reader is: what `open` takes to go on right after the last record Next returned.
  // Any bytes; asked only when a checkpoint is taken and when the split ends.
  virtual std::string Position() const = 0;
};

struct SourceConnector {
  std::string name;  // unique within the library: [a-z0-9][a-z0-9-]*
  std::string description;
  // The splits of `args`: distinct strings (any bytes but empty), at least one. InvalidArgument
  // with a sentence for bad `args`.
  std::function<Result<std::vector<std::string>>(const std::string& args)> splits;
  // The reader of `split` (one of splits(args)) from `position` ("" = its start).
  std::function<Result<std::unique_ptr<ConnectorSplitReader>>(
      const std::string& args, const std::string& split, const std::string& position)>
      open;
};

}  // namespace keyflow
