// The Kafka source's split readers: each Kafka partition assigned to a source subtask is read by
// a KafkaSplitReader, and all of them share the subtask's one Kafka consumer (KafkaReaderClient),
// so a subtask holds one set of broker connections however many partitions it reads.
//
// The consumer is assign-only (it never joins the group: keyflow's split enumerator decides who
// reads what, and keyflow's checkpoints hold the positions), reads committed records only
// (isolation.level=read_committed), and starts each partition at the exact offset of its split
// position. A position the broker no longer has (the log start moved past it: retention, or the
// mock cluster trimming) is not silently skipped: auto.offset.reset=error, and the reader fails
// with DataLoss naming the partition and the offset.
//
// Polling never blocks: the consumer's queue is polled with a zero timeout and each message
// goes to the buffer of its partition's reader; a reader with nothing buffered and nothing
// arriving is kThrottled. With a wake-up (the source task's SourceReaderContext::wake_up),
// librdkafka calls it from its own thread when the empty consumer queue gets a message, and the
// reader asks to be polled again only after kWakeUpSafetyInterval (in case a wake-up raced with
// the poll); without one, after kIdlePollInterval.
//
// A record's value is one JSON Lines record, parsed with the job's record format (its event time
// from the time field, or with ts=kafka the record's Kafka timestamp); a malformed
// one is a bad record ("topic T partition P offset O: reason"), skipped and counted or, under
// --on-bad-record fail, the task's error. In read_committed mode offsets have gaps (transaction
// markers, aborted records): the end of a partition is known from librdkafka's partition-EOF
// event, which carries the next offset, so a bounded split (stop offset) ends exactly there.
//
// Threading: the source subtask's task thread (librdkafka's threads are its own).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/input/kafka_spec.h"
#include "common/input/source_split.h"
#include "common/kafka/kafka_client.h"
#include "common/kafka/partition_discovery.h"
#include "worker/sources/file_split_reader.h"
#include "worker/sources/json_record_parser.h"
#include "worker/sources/source_reader.h"

namespace keyflow {

struct KafkaMessageDeleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
using KafkaMessage = std::unique_ptr<rd_kafka_message_t, KafkaMessageDeleter>;

// The consumer of one source subtask.
class KafkaReaderClient {
 public:
  // `wake_up` (may be empty): called from a librdkafka thread when the consumer queue gets a
  // message while it was empty.
  static Result<std::shared_ptr<KafkaReaderClient>> Create(const KafkaSourceSpec& spec,
                                                           std::function<void()> wake_up = {});
  // Stops the wake-ups (StopWakeUps), then closes the consumer.
  ~KafkaReaderClient();
  // No wake_up call starts after this returns, and none is in progress. Idempotent.
  void StopWakeUps();
  KafkaReaderClient(const KafkaReaderClient&) = delete;
  KafkaReaderClient& operator=(const KafkaReaderClient&) = delete;

  bool wakes_up() const { return queue_ != nullptr; }

  // Starts reading `tp` at `offset`. Errors: librdkafka's, naming the partition.
  Status Assign(const KafkaTopicPartition& tp, int64_t offset);
  void Unassign(const KafkaTopicPartition& tp);
  // Commits `offsets` (partition -> next offset) to the consumer group, asynchronously; a
  // failure is only logged (the commits are for monitoring).
  void CommitOffsets(const std::vector<std::pair<KafkaTopicPartition, int64_t>>& offsets);
  // The next message (or partition event: EOF, error) of `tp`, polling the consumer without
  // waiting; null when there is none now. An error only for a fatal client error.
  Result<KafkaMessage> Take(const KafkaTopicPartition& tp);

 private:
  struct QueueDeleter {
    void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
  };
  explicit KafkaReaderClient(KafkaHandle rk) : rk_(std::move(rk)) {}
  static void OnQueueEvent(rd_kafka_t* rk, void* opaque);
  static constexpr int kBatch = 256;  // messages per consumer-queue poll

  KafkaHandle rk_;
  std::unique_ptr<std::function<void()>> wake_up_;         // the callback's opaque
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> queue_;  // the consumer queue, with wake-ups
  // The messages polled for each assigned partition and not taken yet. A subtask reads a few
  // partitions: a linear scan comparing the partition first beats a map keyed by strings.
  struct Buffered {
    KafkaTopicPartition tp;
    std::deque<KafkaMessage> messages;
  };
  Buffered* Find(std::string_view topic, int32_t partition);
  // The consumer queue: polled in batches (and the wake-ups' queue when there are any).
  rd_kafka_queue_t* consumer_queue();
  std::vector<std::unique_ptr<Buffered>> buffered_;
  std::unique_ptr<rd_kafka_queue_t, QueueDeleter> poll_queue_;  // when queue_ is not set
};

struct KafkaSplitReaderOptions {
  BadRecordPolicy on_bad_record = BadRecordPolicy::kSkip;
  // The record's time is its Kafka timestamp (ts=kafka; the parser then reads no time field).
  // A record without one (timestamp -1, e.g. from a pre-0.10 producer) is a bad record.
  bool kafka_timestamp = false;
  std::function<void(const std::string&)> bad_record_callback;  // "topic T partition P ..."
};

class KafkaSplitReader final : public SplitReader {
 public:
  static constexpr Duration kIdlePollInterval = Duration::Millis(5);
  static constexpr Duration kWakeUpSafetyInterval = Duration::Millis(100);

  // Assigns the split's partition at `from` on `client`. `parser` and `clock` are borrowed.
  static Result<std::unique_ptr<KafkaSplitReader>> Open(
      std::shared_ptr<KafkaReaderClient> client, const SourceSplit& split, SplitPosition from,
      JsonRecordParser* parser, const Clock* clock, KafkaSplitReaderOptions options);
  ~KafkaSplitReader() override;

  // kRecord, kEndOfSplit (a bounded split reached its stop offset) or kThrottled (nothing now).
  // Errors: DataLoss for an offset the broker no longer has; Unavailable for a partition error
  // (e.g. the topic was deleted); InvalidArgument for a bad record under kFail.
  Result<SplitReadResult> Next(Record* out) override;
  SplitPosition position() const override { return position_; }
  Timestamp next_available_time() const override { return retry_at_; }

 private:
  KafkaSplitReader() = default;
  bool AtStop() const { return stop_offset_ >= 0 && position_.next_kafka_offset() >= stop_offset_; }
  std::string Where(int64_t offset) const;

  std::shared_ptr<KafkaReaderClient> client_;
  bool assigned_ = false;
  KafkaTopicPartition tp_;
  int64_t stop_offset_ = -1;
  SplitPosition position_;
  JsonRecordParser* parser_ = nullptr;
  const Clock* clock_ = nullptr;
  KafkaSplitReaderOptions options_;
  Timestamp retry_at_ = kMaxWatermark;
};

}  // namespace keyflow
