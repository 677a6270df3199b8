#include "worker/connectors/kafka/kafka_split_reader.h"

#include <algorithm>
#include <utility>

#include "common/logging/logging.h"

namespace keyflow {
namespace {

std::string RdkafkaErrorText(rd_kafka_error_t* error) {
  std::string text = rd_kafka_error_string(error);
  rd_kafka_error_destroy(error);
  return text;
}

KafkaPartitionList OnePartition(const KafkaTopicPartition& tp, int64_t offset) {
  KafkaPartitionList list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second)->offset = offset;
  return list;
}

// out->timestamp = the message's Kafka timestamp (ts=kafka).
Status SetKafkaTimestamp(const rd_kafka_message_t* m, Record* out) {
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t ms = rd_kafka_message_timestamp(m, &type);
  if (type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ms < 0) {
    return InvalidArgument("the record has no Kafka timestamp (ts=kafka)");
  }
  out->timestamp = Timestamp(ms);
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<KafkaReaderClient>> KafkaReaderClient::Create(
    const KafkaSourceSpec& spec, std::function<void()> wake_up) {
  KF_ASSIGN_OR_RETURN(KafkaHandle rk, NewKafkaClient(RD_KAFKA_CONSUMER, spec,
                                                     {{"enable.auto.commit", "false"},
                                                      {"enable.auto.offset.store", "false"},
                                                      {"auto.offset.reset", "error"},
                                                      {"enable.partition.eof", "true"}}));
  std::shared_ptr<KafkaReaderClient> client(new KafkaReaderClient(std::move(rk)));
  if (wake_up) {
    client->wake_up_ = std::make_unique<std::function<void()>>(std::move(wake_up));
    client->queue_.reset(rd_kafka_queue_get_consumer(client->rk_.get()));
    if (client->queue_ != nullptr) {
      rd_kafka_queue_cb_event_enable(client->queue_.get(), OnQueueEvent, client->wake_up_.get());
    }
  }
  return client;
}

KafkaReaderClient::~KafkaReaderClient() {
  StopWakeUps();
  poll_queue_.reset();  // before the consumer is closed
}

void KafkaReaderClient::StopWakeUps() {
  if (queue_ == nullptr) return;
  // Takes the queue's lock, which a callback in progress holds: none runs after this.
  rd_kafka_queue_cb_event_enable(queue_.get(), nullptr, nullptr);
  queue_.reset();  // before the consumer is closed (rk_'s deleter), as librdkafka requires
}

void KafkaReaderClient::OnQueueEvent(rd_kafka_t*, void* opaque) {
  (*static_cast<std::function<void()>*>(opaque))();
}

Status KafkaReaderClient::Assign(const KafkaTopicPartition& tp, int64_t offset) {
  KafkaPartitionList list = OnePartition(tp, offset);
  if (rd_kafka_error_t* error = rd_kafka_incremental_assign(rk_.get(), list.get())) {
    return Unavailable("cannot read Kafka " + KafkaPartitionName(tp.first, tp.second) + ": " +
                       RdkafkaErrorText(error));
  }
  if (Find(tp.first, tp.second) == nullptr) {
    buffered_.push_back(std::make_unique<Buffered>(Buffered{tp, {}}));
  }
  return Status::Ok();
}

void KafkaReaderClient::Unassign(const KafkaTopicPartition& tp) {
  KafkaPartitionList list = OnePartition(tp, RD_KAFKA_OFFSET_INVALID);
  if (rd_kafka_error_t* error = rd_kafka_incremental_unassign(rk_.get(), list.get())) {
    KF_LOG_WARN("Kafka {}: unassign failed: {}", KafkaPartitionName(tp.first, tp.second),
                RdkafkaErrorText(error));
  }
  std::erase_if(buffered_, [&](const std::unique_ptr<Buffered>& b) { return b->tp == tp; });
}

void KafkaReaderClient::CommitOffsets(
    const std::vector<std::pair<KafkaTopicPartition, int64_t>>& offsets) {
  KafkaPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
  for (const auto& [tp, offset] : offsets) {
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second)->offset = offset;
  }
  if (rd_kafka_resp_err_t err = rd_kafka_commit(rk_.get(), list.get(), /*async=*/1);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    KF_LOG_WARN("committing the Kafka offsets of a completed checkpoint failed: {}",
                KafkaErrorText(err));
  }
}

KafkaReaderClient::Buffered* KafkaReaderClient::Find(std::string_view topic, int32_t partition) {
  for (const std::unique_ptr<Buffered>& b : buffered_) {
    if (b->tp.second == partition && b->tp.first == topic) return b.get();
  }
  return nullptr;
}

rd_kafka_queue_t* KafkaReaderClient::consumer_queue() {
  if (queue_ != nullptr) return queue_.get();
  if (poll_queue_ == nullptr) poll_queue_.reset(rd_kafka_queue_get_consumer(rk_.get()));
  return poll_queue_.get();
}

Result<KafkaMessage> KafkaReaderClient::Take(const KafkaTopicPartition& tp) {
  Buffered* mine = Find(tp.first, tp.second);
  if (mine == nullptr) return KafkaMessage();
  if (mine->messages.empty()) {
    // One batch from the consumer queue, each message to its partition's buffer.
    rd_kafka_message_t* batch[kBatch];
    const ssize_t n = rd_kafka_consume_batch_queue(consumer_queue(), 0, batch, kBatch);
    // Owned at once: an early return must not leak one (the consumer's close waits for them).
    std::vector<KafkaMessage> polled(batch, batch + std::max<ssize_t>(n, 0));
    for (KafkaMessage& m : polled) {
      if (m->rkt == nullptr) {  // a client-wide event: librdkafka retries on its own
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
          char reason[512];
          rd_kafka_fatal_error(rk_.get(), reason, sizeof reason);
          return Unavailable(std::string("the Kafka consumer failed: ") + reason);
        }
        KF_LOG_WARN("Kafka consumer: {}", KafkaErrorText(m->err));
        continue;
      }
      if (Buffered* to = Find(rd_kafka_topic_name(m->rkt), m->partition)) {
        to->messages.push_back(std::move(m));
      }  // else: a late message of a partition no longer assigned, dropped
    }
    if (mine->messages.empty()) return KafkaMessage();
  }
  KafkaMessage m = std::move(mine->messages.front());
  mine->messages.pop_front();
  return m;
}

Result<std::unique_ptr<KafkaSplitReader>> KafkaSplitReader::Open(
    std::shared_ptr<KafkaReaderClient> client, const SourceSplit& split, SplitPosition from,
    JsonRecordParser* parser, const Clock* clock, KafkaSplitReaderOptions options) {
  std::unique_ptr<KafkaSplitReader> r(new KafkaSplitReader());
  r->client_ = std::move(client);
  r->tp_ = {split.topic(), split.partition()};
  r->stop_offset_ = split.stop_offset();
  r->position_ = from;
  r->parser_ = parser;
  r->clock_ = clock;
  r->options_ = std::move(options);
  if (!r->AtStop()) {
    KF_RETURN_IF_ERROR(r->client_->Assign(r->tp_, from.next_kafka_offset()));
    r->assigned_ = true;
  }
  return r;
}

KafkaSplitReader::~KafkaSplitReader() {
  if (assigned_) client_->Unassign(tp_);
}

std::string KafkaSplitReader::Where(int64_t offset) const {
  return KafkaPartitionName(tp_.first, tp_.second) + " offset " + std::to_string(offset);
}

Result<SplitReadResult> KafkaSplitReader::Next(Record* out) {
  retry_at_ = kMaxWatermark;
  while (!AtStop()) {
    KF_ASSIGN_OR_RETURN(KafkaMessage m, client_->Take(tp_));
    if (m == nullptr) {
      retry_at_ = clock_->Now() + (client_->wakes_up() ? kWakeUpSafetyInterval : kIdlePollInterval);
      return SplitReadResult::kThrottled;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // Everything before m->offset was delivered (or is a transaction marker or aborted).
      if (m->offset > position_.next_kafka_offset()) position_.AdvanceKafka(m->offset - 1);
      continue;
    }
    if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
        m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
      return DataLoss("Kafka " + Where(position_.next_kafka_offset()) +
                      " is no longer on the broker (" + KafkaErrorText(m->err) +
                      "): the records from there up to the partition's log start are lost; " +
                      "restore from a later checkpoint or start the job anew");
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Unavailable("reading Kafka " + KafkaPartitionName(tp_.first, tp_.second) + ": " +
                         KafkaErrorText(m->err));
    }
    if (m->offset < position_.next_kafka_offset()) continue;  // already read
    if (stop_offset_ >= 0 && m->offset >= stop_offset_) {
      position_ = SplitPosition::InKafka(stop_offset_);
      break;
    }
    const std::string_view value(static_cast<const char*>(m->payload), m->len);
    Status parsed = parser_->Parse(value, out);
    if (parsed.ok() && options_.kafka_timestamp) parsed = SetKafkaTimestamp(m.get(), out);
    position_.AdvanceKafka(m->offset);
    if (parsed.ok()) return SplitReadResult::kRecord;
    const std::string bad = Where(m->offset) + ": " + parsed.message();
    if (options_.on_bad_record == BadRecordPolicy::kFail) {
      position_ = SplitPosition::InKafka(m->offset);  // before the failing record
      return InvalidArgument(bad + " (--on-bad-record fail)");
    }
    if (options_.bad_record_callback) options_.bad_record_callback(bad);
  }
  return SplitReadResult::kEndOfSplit;
}

}  // namespace keyflow
