#include "worker/sources/builtin_source.h"

#include <algorithm>
#include <utility>

#include "common/job_library/keyed_pipeline.h"
#include "common/key_group_assignment.h"
#include "common/logging/logging.h"
#include "worker/connectors/kafka/kafka_source_reader.h"
#include "worker/sources/connector_split_source.h"
#include "worker/sources/file_split_reader.h"
#include "worker/sources/generator_split_reader.h"
#include "worker/sources/json_record_parser.h"
#include "worker/sources/multiplex_source_reader.h"

namespace keyflow {
namespace {

constexpr size_t kReadBufferBudget = 64 << 20;  // file read buffers of all splits together

class FileSplitSource final : public SplitReader {
 public:
  explicit FileSplitSource(FileSplitReader reader) : reader_(std::move(reader)) {}
  Result<SplitReadResult> Next(Record* out) override { return reader_.Next(out); }
  SplitPosition position() const override { return reader_.position(); }

 private:
  FileSplitReader reader_;
};

class GeneratorSplitSource final : public SplitReader {
 public:
  explicit GeneratorSplitSource(GeneratorSplitReader reader) : reader_(std::move(reader)) {}
  Result<SplitReadResult> Next(Record* out) override { return reader_.Next(out); }
  SplitPosition position() const override { return reader_.position(); }
  Timestamp next_available_time() const override { return reader_.next_available_time(); }

 private:
  GeneratorSplitReader reader_;
};

}  // namespace

JsonRecordFormat JsonRecordFormatOf(const JobSpec& spec) {
  JsonRecordFormat format;
  format.key_field = spec.key_field;
  format.timestamp_field = spec.ts_field;
  format.key_type = spec.key_type;
  format.extract_key = !KeysAfterChainedOperators(spec);
  format.keep_fields = spec.reads_fields;
  format.fields = spec.fields;
  return format;
}

namespace {

SplitReaderFactory FileSplits(const JobSpec& spec, Counter* bad_records) {
  // Shared by the split readers of this source (one task thread).
  auto parser = std::make_shared<JsonRecordParser>(JsonRecordFormatOf(spec), spec.max_parallelism);
  FileSplitReaderOptions options;
  options.on_bad_record = spec.fail_on_bad_record ? BadRecordPolicy::kFail : BadRecordPolicy::kSkip;
  options.on_input_change =
      spec.fail_on_input_change ? InputChangePolicy::kFail : InputChangePolicy::kWarn;
  options.bad_record_callback = [bad_records](const BadRecord& bad) {
    bad_records->Inc();
    KF_LOG_WARN("bad record skipped: {}", bad.ToString());
  };
  options.input_change_callback = [](const InputChange& change) {
    KF_LOG_WARN("{}", change.ToString());
  };
  return [parser, options](const SourceSplitState& st,
                           size_t splits_open) -> Result<std::unique_ptr<SplitReader>> {
    FileSplitReaderOptions o = options;
    o.read_buffer_bytes =
        std::clamp<size_t>(kReadBufferBudget / std::max<size_t>(1, splits_open), 64 << 10, 1 << 20);
    KF_ASSIGN_OR_RETURN(FileSplitReader reader,
                        FileSplitReader::Open(st.split, st.position, parser.get(), o));
    return std::unique_ptr<SplitReader>(new FileSplitSource(std::move(reader)));
  };
}

SplitReaderFactory GeneratorSplits(const GeneratorSpec& generator, const JobSpec& spec,
                                   const Clock* clock) {
  KeyGroupAssigner assigner(spec.key_type, spec.max_parallelism);
  GeneratorRecordFormat format{spec.reads_fields, spec.key_field, spec.ts_field, spec.fields};
  return [generator, assigner, format, clock](const SourceSplitState& st,
                                              size_t) -> Result<std::unique_ptr<SplitReader>> {
    KF_ASSIGN_OR_RETURN(GeneratorSplitReader reader,
                        GeneratorSplitReader::Create(generator, st.split.generator_index(),
                                                     assigner, st.position, clock, format));
    return std::unique_ptr<SplitReader>(new GeneratorSplitSource(std::move(reader)));
  };
}

}  // namespace

Result<std::unique_ptr<SourceReader>> CreateBuiltinSourceReader(
    const JobSpec& spec, const SourceReaderContext& context,
    std::shared_ptr<const JobLibrary> library) {
  if (InputSpec::IsConnector(spec.input)) {
    return CreateConnectorSourceReader(spec, context, std::move(library));
  }
  SplitReaderFactory open;
  if (InputSpec::IsGenerator(spec.input)) {
    // Parsing the generator's parameters reads no file.
    KF_ASSIGN_OR_RETURN(InputSpec input, InputSpec::Parse(spec.input));
    open = GeneratorSplits(input.generator(), spec, context.clock);
  } else if (InputSpec::IsKafka(spec.input)) {
    KF_ASSIGN_OR_RETURN(InputSpec input, InputSpec::Parse(spec.input));
    return KafkaSourceReader::Create(input.kafka(), spec, context);
  } else {
    open = FileSplits(spec, context.bad_records);
  }
  return std::unique_ptr<SourceReader>(new MultiplexSourceReader(std::move(open)));
}

}  // namespace keyflow
