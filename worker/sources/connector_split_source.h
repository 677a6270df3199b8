// The source of --input connector:NAME[:ARGS]: a job library's SourceConnector
// (worker/api/source_connector.h) read through the runtime's split reading.
//
// Each split the coordinator assigns is opened with the connector's `open(ARGS, split,
// position)` and wrapped in a ConnectorSplitSource, a SplitReader: its records (JSON text) are
// parsed with the job's record format like file lines (a malformed one is a bad record,
// "connector NAME split S record N: reason", skipped and counted, or the task's error under
// --on-bad-record fail); kNothingYet is kThrottled for kRetryInterval; the position is the
// number of records read plus the reader's Position(), asked only when the multiplexing reader
// snapshots or the split ends. Each source subtask reads its splits with a
// MultiplexSourceReader (worker/sources/multiplex_source_reader.h).
//
// User code: an exception out of open or Next fails the task with a sentence naming the source,
// the library and the call. Position() must not throw: a position cannot be made up without
// breaking exactly-once, so one that throws stops the worker with that sentence (the job
// restarts from its last checkpoint). The reader keeps the library loaded while it lives.
//
// Threading: the source subtask's task thread.
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/job_library/job_library.h"
#include "common/metrics.h"
#include "common/protocol/control_messages.h"
#include "worker/sources/source_reader.h"

namespace keyflow {

// The SourceReader of `spec`'s connector input, from `library`. NotFound if the library has no
// such source (it changed since the submit).
Result<std::unique_ptr<SourceReader>> CreateConnectorSourceReader(
    const JobSpec& spec, const SourceReaderContext& context,
    std::shared_ptr<const JobLibrary> library);

}  // namespace keyflow
