#include "worker/connectors/kafka/kafka_source_reader.h"

#include <utility>

#include "common/logging/logging.h"
#include "worker/sources/builtin_source.h"

namespace keyflow {

Result<std::unique_ptr<SourceReader>> KafkaSourceReader::Create(
    const KafkaSourceSpec& kafka, const JobSpec& spec, const SourceReaderContext& context) {
  KF_ASSIGN_OR_RETURN(std::shared_ptr<KafkaReaderClient> client,
                      KafkaReaderClient::Create(kafka, context.wake_up));
  KF_RETURN_IF_ERROR(kafka.CheckAgainstKeyField(spec.key_field));
  JsonRecordFormat format = JsonRecordFormatOf(spec);
  if (kafka.kafka_timestamp) {
    format.timestamp_field.clear();  // the split reader sets the Kafka timestamp
  } else if (!kafka.timestamp_field.empty()) {
    format.timestamp_field = kafka.timestamp_field;
  }
  // Shared by the split readers of this subtask (one task thread).
  auto parser = std::make_shared<JsonRecordParser>(std::move(format), spec.max_parallelism);
  KafkaSplitReaderOptions options;
  options.kafka_timestamp = kafka.kafka_timestamp;
  options.on_bad_record = spec.fail_on_bad_record ? BadRecordPolicy::kFail : BadRecordPolicy::kSkip;
  options.bad_record_callback = [bad_records = context.bad_records](const std::string& bad) {
    bad_records->Inc();
    KF_LOG_WARN("bad record skipped: {}", bad);
  };
  const Clock* clock = context.clock;
  SplitReaderFactory open = [client, parser, options, clock](
                                const SourceSplitState& st,
                                size_t) -> Result<std::unique_ptr<SplitReader>> {
    if (st.split.kind() != SplitKind::kKafka) {
      return InvalidArgument(st.split.ToString() +
                             " is no Kafka partition: restore with the --input of the checkpoint");
    }
    KF_ASSIGN_OR_RETURN(
        std::unique_ptr<KafkaSplitReader> reader,
        KafkaSplitReader::Open(client, st.split, st.position, parser.get(), clock, options));
    return std::unique_ptr<SplitReader>(std::move(reader));
  };
  return std::unique_ptr<SourceReader>(new KafkaSourceReader(std::move(client), std::move(open)));
}

std::vector<SourceSplitState> KafkaSourceReader::SnapshotState(
    std::optional<CheckpointId> checkpoint) {
  std::vector<SourceSplitState> state = splits_.SnapshotState(checkpoint);
  if (checkpoint) {
    std::vector<std::pair<KafkaTopicPartition, int64_t>>& offsets = pending_[*checkpoint];
    for (const SourceSplitState& st : state) {
      offsets.push_back(
          {{st.split.topic(), st.split.partition()}, st.position.next_kafka_offset()});
    }
  }
  return state;
}

void KafkaSourceReader::NotifyCheckpointComplete(CheckpointId checkpoint) {
  auto end = pending_.upper_bound(checkpoint);
  if (end == pending_.begin()) return;
  const auto& latest = std::prev(end)->second;
  if (!latest.empty()) client_->CommitOffsets(latest);
  pending_.erase(pending_.begin(), end);
}

}  // namespace keyflow
