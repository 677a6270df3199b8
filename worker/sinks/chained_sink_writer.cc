#include "worker/sinks/chained_sink_writer.h"

#include <utility>

namespace keyflow {
namespace {

// Every member is a field: no key, no timestamp taken from the line.
JsonRecordFormat OutputLineFormat() {
  JsonRecordFormat format;
  format.key_field = "-";  // not read (extract_key = false)
  format.timestamp_field = "";
  format.extract_key = false;
  format.keep_fields = true;
  return format;
}

constexpr int32_t kAnyMaxParallelism = 128;  // no key groups are computed here

}  // namespace

ChainedSinkWriter::ChainedSinkWriter(std::unique_ptr<RecordChain> chain,
                                     std::unique_ptr<SinkWriter> sink,
                                     std::function<Status(const Status& why)> on_bad_line)
    : chain_(std::move(chain)),
      sink_(std::move(sink)),
      on_bad_line_(std::move(on_bad_line)),
      parser_(OutputLineFormat(), kAnyMaxParallelism) {}

Status ChainedSinkWriter::Write(const OutputRecord& record) {
  Status parsed = parser_.Parse(record.line, &parsed_);
  if (!parsed.ok()) {
    constexpr size_t kShown = 80;
    const std::string shown =
        record.line.size() > kShown ? record.line.substr(0, kShown) + "..." : record.line;
    return on_bad_line_(InvalidArgument("its record " + shown + " is not a JSON object (" +
                                        parsed.message() + ")"));
  }
  parsed_.raw_json_cache.clear();
  parsed_.timestamp = record.timestamp.value_or(Timestamp(0));
  return chain_->Process(parsed_, [&](const Record& out) {
    OutputRecord line(std::string(out.raw_json()));
    line.timestamp = record.timestamp;  // the emitted record's, or none
    return sink_->Write(line);
  });
}

}  // namespace keyflow
