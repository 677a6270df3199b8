// The built-in sinks behind --output: the exactly-once file sink (FileSink) into a directory, the
// Kafka sink (worker/connectors/kafka/kafka_sink.h) for kafka:..., or without --output the print
// sink (PrintSink) into the worker's stdout, as SinkWriters.
#pragma once

#include <cstdio>
#include <memory>

#include "common/protocol/control_messages.h"
#include "worker/sinks/file_sink.h"
#include "worker/sinks/print_sink.h"
#include "worker/sinks/sink_writer.h"

namespace keyflow {

class JobLibrary;

// The sink of deployment `d`, ready to write. A restored checkpoint taken by a job that wrote
// elsewhere (JobSpec::output_dir differs: another directory or Kafka topic) has its pending output
// committed there first. With --output kafka:... the Kafka sink then recovers its share of the
// committables (OpenKafkaSink). With a directory it recovers the output directory
// (FileSink::Recover) from the restored checkpoint's committables of all subtasks and refuses, on
// a job's first attempt from scratch, a directory that already holds results. Errors name the
// directory and the file.
// With --output connector:... the job library's sink (connector_sink.h); `library` is the
// job's library (needed for connector outputs, old or new; may be null otherwise).
Result<std::unique_ptr<SinkWriter>> OpenBuiltinSink(
    const DeployTask& d, std::FILE* print_stream = stdout,
    std::shared_ptr<const JobLibrary> library = nullptr);

// Adapters, for tasks and tests that bring their own sink.
std::unique_ptr<SinkWriter> FileSinkWriter(FileSink sink);
std::unique_ptr<SinkWriter> PrintSinkWriter(PrintSink sink);

}  // namespace keyflow
