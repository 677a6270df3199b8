#include "worker/connectors/kafka/kafka_split_reader.h"

#include <utility>

#include "common/logging.h"

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

}  // namespace

Result<std::shared_ptr<KafkaReaderClient>> KafkaReaderClient::Create(const KafkaSourceSpec& spec) {
  KF_ASSIGN_OR_RETURN(KafkaHandle rk, NewKafkaClient(RD_KAFKA_CONSUMER, spec,
                                                     {{"enable.auto.commit", "false"},
                                                      {"enable.auto.offset.store", "false"},
                                                      {"auto.offset.reset", "error"},
                                                      {"enable.partition.eof", "true"}}));
  return std::shared_ptr<KafkaReaderClient>(new KafkaReaderClient(std::move(rk)));
}

Status KafkaReaderClient::Assign(const KafkaTopicPartition& tp, int64_t offset) {
  KafkaPartitionList list = OnePartition(tp, offset);
  if (rd_kafka_error_t* error = rd_kafka_incremental_assign(rk_.get(), list.get())) {
    return Unavailable("cannot read Kafka " + KafkaPartitionName(tp.first, tp.second) + ": " +
                       RdkafkaErrorText(error));
  }
  buffered_[tp];
  return Status::Ok();
}

void KafkaReaderClient::Unassign(const KafkaTopicPartition& tp) {
  KafkaPartitionList list = OnePartition(tp, RD_KAFKA_OFFSET_INVALID);
  if (rd_kafka_error_t* error = rd_kafka_incremental_unassign(rk_.get(), list.get())) {
    KF_LOG_WARN("Kafka {}: unassign failed: {}", KafkaPartitionName(tp.first, tp.second),
                RdkafkaErrorText(error));
  }
  buffered_.erase(tp);
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

Result<KafkaMessage> KafkaReaderClient::Take(const KafkaTopicPartition& tp) {
  auto mine = buffered_.find(tp);
  if (mine != buffered_.end() && !mine->second.empty()) {
    KafkaMessage m = std::move(mine->second.front());
    mine->second.pop_front();
    return m;
  }
  for (int i = 0; i < kMaxPollsPerTake; ++i) {
    KafkaMessage m(rd_kafka_consumer_poll(rk_.get(), 0));
    if (m == nullptr) return KafkaMessage();
    if (m->rkt == nullptr) {  // a client-wide event: librdkafka retries on its own
      if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
        char reason[512];
        rd_kafka_fatal_error(rk_.get(), reason, sizeof reason);
        return Unavailable(std::string("the Kafka consumer failed: ") + reason);
      }
      KF_LOG_WARN("Kafka consumer: {}", KafkaErrorText(m->err));
      continue;
    }
    KafkaTopicPartition from(rd_kafka_topic_name(m->rkt), m->partition);
    if (from == tp) return m;
    auto other = buffered_.find(from);
    if (other != buffered_.end()) other->second.push_back(std::move(m));
    // else: a late message of a partition no longer assigned, dropped
  }
  return KafkaMessage();
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
      retry_at_ = clock_->Now() + kIdlePollInterval;
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
