// The built-in sinks behind --output: the exactly-once file sink (FileSink) into a directory, or
// without --output the print sink (PrintSink) into the worker's stdout, as SinkWriters.
#pragma once

#include <cstdio>
#include <memory>

#include "common/protocol/control_messages.h"
#include "worker/sinks/file_sink.h"
#include "worker/sinks/print_sink.h"
#include "worker/sinks/sink_writer.h"

namespace keyflow {

// The sink of deployment `d`, ready to write. With --output (JobSpec::output_dir) it first
// recovers the output directory (FileSink::Recover) from the restored checkpoint's
// committables of all subtasks — committing them where the checkpointed job wrote them if that
// was another directory — and refuses, on a job's first attempt from scratch, a directory that
// already holds results. Errors name the directory and the file.
Result<std::unique_ptr<SinkWriter>> OpenBuiltinSink(const DeployTask& d,
                                                    std::FILE* print_stream = stdout);

// Adapters, for tasks and tests that bring their own sink.
std::unique_ptr<SinkWriter> FileSinkWriter(FileSink sink);
std::unique_ptr<SinkWriter> PrintSinkWriter(PrintSink sink);

}  // namespace keyflow
