// The built-in sources behind --input: JSON Lines files and the generator, as SourceReaders
// (a MultiplexSourceReader over FileSplitReaders or GeneratorSplitReaders), and Kafka
// (KafkaSourceReader, worker/connectors/kafka/), and a job library's source
// (connector_split_source.h).
//
// CreateBuiltinSourceReader reads the job's record format from its JobSpec: key field and type,
// timestamp field, declared fields, bad-record and input-change policies; and from --input
// (JobSpec::input) the generator's parameters. Which files or generator splits it reads is
// what the coordinator's split enumerator assigns (AddSplits); it never lists a directory. Skipped
// bad records are counted in the context's bad_records and logged as warnings ("bad record skipped:
// ...").
#pragma once

#include <memory>

#include "common/input/input_spec.h"
#include "common/protocol/control_messages.h"
#include "worker/sources/json_record_parser.h"
#include "worker/sources/source_reader.h"

namespace keyflow {

class JobLibrary;

// The job's JSON Lines record format (key and time fields, key type, declared fields).
JsonRecordFormat JsonRecordFormatOf(const JobSpec& spec);

// Errors: InvalidArgument for a record format the input cannot produce (e.g. the generator with
// a key type other than string, found when its first split is added).
// `library`: the job's library, for --input connector:... (its source); may be null otherwise.
Result<std::unique_ptr<SourceReader>> CreateBuiltinSourceReader(
    const JobSpec& spec, const SourceReaderContext& context,
    std::shared_ptr<const JobLibrary> library = nullptr);

}  // namespace keyflow
