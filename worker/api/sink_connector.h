// Sinks a job library defines (Flink's Sink V2 TwoPhaseCommittingSink, reduced to what a library
// needs): a writer per subtask that stages what it is given, and a commit that makes a staged
// part visible once the checkpoint covering it completed.
//
//   keyflow run --job-library L --job J --output connector:NAME[:ARGS] ...
//
// `keyflow run` calls `check(ARGS)` (if set) before anything is deployed; an error is the
// command's usage error (exit 2). Every sink subtask opens its writer with `open(ARGS, subtask,
// parallelism)` and hands it the job's results in order (Write). At each checkpoint's barrier
// the writer stages what it was given since the last one and returns a committable (PrepareCommit:
// bytes that tell `commit` what to make visible, e.g. a staged file's name or a transaction id);
// the committable is part of the checkpoint. Once the checkpoint completed, `commit(ARGS,
// committable)` makes it visible. After a failure the job restarts from its last completed
// checkpoint, whose committables are committed again: `commit` must be idempotent (committing
// something already visible succeeds and changes nothing). Without checkpoints everything is
// committed at the end of the input.
//
// Exactly once: output is visible only once a completed checkpoint covers it, and never twice,
// as long as PrepareCommit makes its part durable before it returns and commit is idempotent.
// The writer is used by one thread at a time; `check`, `open` and `commit` may run on any
// thread. An exception thrown out of them or out of the writer fails the task like an error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"

namespace keyflow {

class ConnectorSinkWriter {
 public:
  virtual ~ConnectorSinkWriter() = default;
  // One result: its JSON text and its timestamp (epoch ms; none e.g. for what a processing-time
  // timer emitted).
  virtual Status Write(const std::string& record, std::optional<int64_t> timestamp_ms) = 0;
  // At checkpoint `checkpoint`'s barrier (checkpoint ids grow; the end of the input without a
  // later checkpoint comes as one more): stages everything written since the last call,
  // durably, not yet visible, and returns what `commit` needs to make it visible; "" when
  // nothing was written. Called on the task thread: keep it short.
  virtual Result<std::string> PrepareCommit(int64_t checkpoint) = 0;
};

struct SinkConnector {
  std::string name;  // unique within the library: [a-z0-9][a-z0-9-]*
  std::string description;
  // Optional: InvalidArgument with a sentence for bad `args`, at submit.
  std::function<Status(const std::string& args)> check;
  // The writer of sink subtask `subtask` of `parallelism`.
  std::function<Result<std::unique_ptr<ConnectorSinkWriter>>(const std::string& args,
                                                             int32_t subtask, int32_t parallelism)>
      open;
  // Makes a committable visible; idempotent (see the file comment). Retried a few times, then
  // its error fails the task.
  std::function<Status(const std::string& args, const std::string& committable)> commit;
};

}  // namespace keyflow
