// The sink of --output connector:NAME[:ARGS]: a job library's SinkConnector
// (worker/api/sink_connector.h) as the runtime's SinkWriter.
//
// Each sink subtask opens the connector's writer (open(ARGS, subtask, P)) and hands it its
// results (Write: the record's JSON text and timestamp). At each barrier the writer's
// PrepareCommit gives the checkpoint's committable, kept as this subtask's sink state in the
// checkpoint (below); when the checkpoint completes, commit(ARGS, committable) makes it visible
// (retried kCommitAttempts times, then the task fails and the job restarts from its last
// checkpoint). Without checkpoints, FinishAndCommit prepares and commits at the end of input.
//
// Recovery: the restored checkpoint's committables of every subtask reach every subtask;
// subtask s commits those of writers w with w % P == s (commit is idempotent, so one already
// committed before the failure is harmless) before it opens its writer.
//
// Committable encoding (inside the checkpoint): u8 version (1), i32 writer subtask,
// i64 checkpoint id, bytes the connector's committable.
//
// User code: exceptions out of open, Write, PrepareCommit and commit become the task's error,
// naming the sink, the library and the call. Threading: the sink subtask's task thread. The
// writer keeps the library loaded while it lives.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/job_library/job_library.h"
#include "common/protocol/control_messages.h"
#include "worker/sinks/sink_writer.h"

namespace keyflow {

inline constexpr int kCommitAttempts = 3;

// NAME and ARGS of --output connector:NAME[:ARGS]. Precondition: OutputIsConnector(output).
struct ConnectorOutput {
  std::string name;
  std::string args;
  static ConnectorOutput Of(const std::string& output);
};

// The writer of deployment `d`'s connector output, after committing this subtask's share of
// `restored_committables`.
Result<std::unique_ptr<SinkWriter>> OpenConnectorSink(
    const DeployTask& d, const std::vector<std::string>& restored_committables,
    std::shared_ptr<const JobLibrary> library);

// Commits this subtask's share of `committables` with the sink of `output` (a restored
// checkpoint's, maybe of another --output). Returns how many were committed.
Result<int> CommitConnectorSinkCommittables(const std::string& output,
                                            const std::vector<std::string>& committables,
                                            int32_t subtask, int32_t parallelism,
                                            const JobLibrary& library);

}  // namespace keyflow
