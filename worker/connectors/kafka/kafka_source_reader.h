// KafkaSourceReader: the Kafka source's SourceReader — a MultiplexSourceReader over the
// subtask's KafkaSplitReaders (one shared consumer), which also commits to the consumer group,
// when a checkpoint completes, the offsets that checkpoint holds. Those commits are for lag
// monitoring (and for a later job's start=committed): keyflow restores from its checkpoints,
// never from the group. A commit is asynchronous and its failure only logged.
//
// Threading: the source subtask's task thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/input/kafka_spec.h"
#include "common/protocol/job_spec.h"
#include "worker/connectors/kafka/kafka_split_reader.h"
#include "worker/sources/multiplex_source_reader.h"

namespace keyflow {

class KafkaSourceReader final : public SourceReader {
 public:
  // Creates the subtask's consumer. Errors: a client property librdkafka refuses.
  static Result<std::unique_ptr<SourceReader>> Create(const KafkaSourceSpec& kafka,
                                                      const JobSpec& spec,
                                                      const SourceReaderContext& context);
  // No wake-ups from here on: the split readers' teardown (unassigning partitions) must not
  // wake a task that is going away.
  ~KafkaSourceReader() override { client_->StopWakeUps(); }

  Status AddSplits(std::vector<SourceSplitState> splits) override {
    return splits_.AddSplits(std::move(splits));
  }
  void NotifyNoMoreSplits() override { splits_.NotifyNoMoreSplits(); }
  Result<PollResult> PollNext(ReaderOutput& output) override { return splits_.PollNext(output); }
  // Also remembers checkpoint c's offsets, to commit them once c completes.
  std::vector<SourceSplitState> SnapshotState(std::optional<CheckpointId> checkpoint) override;
  // Commits the offsets of the latest remembered checkpoint <= `checkpoint`; forgets those.
  void NotifyCheckpointComplete(CheckpointId checkpoint) override;

 private:
  KafkaSourceReader(std::shared_ptr<KafkaReaderClient> client, SplitReaderFactory open)
      : client_(std::move(client)), splits_(std::move(open)) {}

  std::shared_ptr<KafkaReaderClient> client_;
  MultiplexSourceReader splits_;
  std::map<CheckpointId, std::vector<std::pair<KafkaTopicPartition, int64_t>>> pending_;
};

}  // namespace keyflow
