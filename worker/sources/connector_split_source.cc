#include "worker/sources/connector_split_source.h"

#include <cstdlib>
#include <exception>
#include <utility>

#include "common/input/input_spec.h"
#include "common/job_library/user_function_guard.h"
#include "common/logging/logging.h"
#include "worker/sources/builtin_source.h"
#include "worker/sources/json_record_parser.h"
#include "worker/sources/multiplex_source_reader.h"

namespace keyflow {
namespace {

constexpr Duration kRetryInterval = Duration::Millis(5);  // after kNothingYet

struct ConnectorOptions {
  std::string description;  // "source 'lines' of liblines.so"
  std::string name;
  std::string args;
  bool fail_on_bad_record = false;
  Counter* bad_records = nullptr;
};

class ConnectorSplitSource final : public SplitReader {
 public:
  ConnectorSplitSource(std::shared_ptr<const JobLibrary> library,
                       std::unique_ptr<ConnectorSplitReader> reader, SourceSplit split,
                       int64_t records, std::shared_ptr<JsonRecordParser> parser,
                       const Clock* clock, std::shared_ptr<const ConnectorOptions> options)
      : library_(std::move(library)),
        reader_(std::move(reader)),
        split_(std::move(split)),
        records_(records),
        parser_(std::move(parser)),
        clock_(clock),
        options_(std::move(options)) {}

  Result<SplitReadResult> Next(Record* out) override {
    retry_at_ = kMaxWatermark;
    for (;;) {
      Result<ConnectorRead> read = ConnectorRead::kEndOfSplit;
      try {
        read = reader_->Next(&record_);
      } catch (...) {
        return Internal(options_->description + " threw in Next (" + split_.ToString() +
                        "): " + DescribeException(std::current_exception()));
      }
      if (!read.ok()) {
        return read.status().WithContext(options_->description + " reading " + split_.ToString());
      }
      if (*read == ConnectorRead::kEndOfSplit) return SplitReadResult::kEndOfSplit;
      if (*read == ConnectorRead::kNothingYet) {
        retry_at_ = clock_->Now() + kRetryInterval;
        return SplitReadResult::kThrottled;
      }
      ++records_;
      Status parsed = parser_->Parse(record_, out);
      if (parsed.ok()) return SplitReadResult::kRecord;
      const std::string bad = "connector " + options_->name + " split " + split_.connector_split() +
                              " record " + std::to_string(records_) + ": " + parsed.message();
      if (options_->fail_on_bad_record) return InvalidArgument(bad + " (--on-bad-record fail)");
      options_->bad_records->Inc();
      KF_LOG_WARN("bad record skipped: {}", bad);
    }
  }

  SplitPosition position() const override {
    try {
      return SplitPosition::InConnector(records_, reader_->Position());
    } catch (...) {
      KF_LOG_ERROR(
          "{} threw in Position() ({}): {}; stopping the worker: a made-up position "
          "would lose or repeat records (the job restarts from its last checkpoint)",
          options_->description, split_.ToString(), DescribeException(std::current_exception()));
      std::abort();
    }
  }
  Timestamp next_available_time() const override { return retry_at_; }

 private:
  std::shared_ptr<const JobLibrary> library_;  // first: outlives the reader (its code)
  std::unique_ptr<ConnectorSplitReader> reader_;
  SourceSplit split_;
  int64_t records_;
  std::string record_;
  std::shared_ptr<JsonRecordParser> parser_;
  const Clock* clock_;
  std::shared_ptr<const ConnectorOptions> options_;
  Timestamp retry_at_ = kMaxWatermark;
};

}  // namespace

Result<std::unique_ptr<SourceReader>> CreateConnectorSourceReader(
    const JobSpec& spec, const SourceReaderContext& context,
    std::shared_ptr<const JobLibrary> library) {
  KF_ASSIGN_OR_RETURN(InputSpec input, InputSpec::Parse(spec.input));
  if (library == nullptr) return FailedPrecondition("--input " + spec.input + " needs its library");
  KF_ASSIGN_OR_RETURN(const SourceConnector* source, library->FindSource(input.connector_name()));
  auto options = std::make_shared<ConnectorOptions>();
  options->description = "source '" + source->name + "' of " + library->file_name();
  options->name = source->name;
  options->args = input.connector_args();
  options->fail_on_bad_record = spec.fail_on_bad_record;
  options->bad_records = context.bad_records;
  // Shared by the split readers of this subtask (one task thread).
  auto parser = std::make_shared<JsonRecordParser>(JsonRecordFormatOf(spec), spec.max_parallelism);
  const Clock* clock = context.clock;
  SplitReaderFactory open = [library, source, parser, clock, options](
                                const SourceSplitState& st,
                                size_t) -> Result<std::unique_ptr<SplitReader>> {
    if (st.split.kind() != SplitKind::kConnector) {
      return InvalidArgument(st.split.ToString() +
                             " is no connector split: restore with the --input of the checkpoint");
    }
    Result<std::unique_ptr<ConnectorSplitReader>> reader = InvalidArgument("open returned nothing");
    try {
      reader =
          source->open(options->args, st.split.connector_split(), st.position.connector_position());
    } catch (...) {
      return Internal(options->description + " threw in open (" + st.split.ToString() +
                      "): " + DescribeException(std::current_exception()));
    }
    if (!reader.ok()) {
      return reader.status().WithContext(options->description + " opening " + st.split.ToString());
    }
    if (*reader == nullptr) {
      return Internal(options->description + " returned no reader for " + st.split.ToString());
    }
    return std::unique_ptr<SplitReader>(
        new ConnectorSplitSource(library, std::move(reader).value(), st.split,
                                 st.position.next_event_index(), parser, clock, options));
  };
  return std::unique_ptr<SourceReader>(new MultiplexSourceReader(std::move(open)));
}

}  // namespace keyflow
