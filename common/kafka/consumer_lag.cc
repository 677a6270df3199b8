#include "common/kafka/consumer_lag.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/kafka/kafka_client.h"

namespace keyflow {
namespace {

// Sets the time lag of each partition: 0 where no record is behind, else from the timestamp of
// the first record a fetch from the committed offset brings (within `deadline`).
void MeasureTimeLag(rd_kafka_t* consumer, std::vector<KafkaPartitionLag>* lags, int64_t now_ms,
                    std::chrono::steady_clock::time_point deadline) {
  std::map<KafkaTopicPartition, KafkaPartitionLag*> behind;
  KafkaPartitionList from(rd_kafka_topic_partition_list_new(static_cast<int>(lags->size())));
  for (KafkaPartitionLag& lag : *lags) {
    if (lag.records() == 0) lag.time_lag_ms = 0;
    if (lag.records() <= 0) continue;
    behind[{lag.topic, lag.partition}] = &lag;
    rd_kafka_topic_partition_list_add(from.get(), lag.topic.c_str(), lag.partition)->offset =
        lag.committed;
  }
  if (behind.empty() || rd_kafka_assign(consumer, from.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return;
  }
  while (!behind.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, static_cast<int>(left.count()));
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->rkt != nullptr) {
      auto it = behind.find({rd_kafka_topic_name(m->rkt), m->partition});
      const int64_t ts = rd_kafka_message_timestamp(m, nullptr);
      if (it != behind.end() && ts >= 0) {
        it->second->time_lag_ms = std::max<int64_t>(0, now_ms - ts);
        behind.erase(it);
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_assign(consumer, nullptr);
}

}  // namespace

Result<std::vector<KafkaPartitionLag>> MeasureKafkaLag(
    const KafkaSourceSpec& spec, const std::set<KafkaTopicPartition>& partitions, Duration timeout,
    int64_t now_ms) {
  std::vector<KafkaPartitionLag> out;
  if (partitions.empty()) return out;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout.millis());
  // Small fetches: only the first record of each partition that is behind is wanted.
  KF_ASSIGN_OR_RETURN(KafkaHandle consumer, NewKafkaClient(RD_KAFKA_CONSUMER, spec,
                                                           {{"enable.auto.commit", "false"},
                                                            {"max.partition.fetch.bytes", "1024"},
                                                            {"queued.min.messages", "1"}}));
  const int timeout_ms = static_cast<int>(timeout.millis());
  auto no_answer = [&](const std::string& what, rd_kafka_resp_err_t err) {
    return KafkaNoAnswer(spec.BootstrapServers(), timeout, what, err);
  };
  KafkaPartitionList committed(
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  KafkaPartitionList ends(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const auto& [topic, partition] : partitions) {
    rd_kafka_topic_partition_list_add(committed.get(), topic.c_str(), partition);
    // ListOffsets with the timestamp -1 answers the end offset.
    rd_kafka_topic_partition_list_add(ends.get(), topic.c_str(), partition)->offset =
        RD_KAFKA_OFFSET_END;
  }
  if (rd_kafka_resp_err_t err = rd_kafka_committed(consumer.get(), committed.get(), timeout_ms);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return no_answer("the group " + spec.group + "'s committed offsets", err);
  }
  if (rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(consumer.get(), ends.get(), timeout_ms);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return no_answer("the end offsets", err);
  }
  for (int i = 0; i < committed->cnt; ++i) {
    const rd_kafka_topic_partition_t& c = committed->elems[i];
    const rd_kafka_topic_partition_t& e = ends->elems[i];
    KafkaPartitionLag lag;
    lag.topic = c.topic;
    lag.partition = c.partition;
    lag.committed = c.err == RD_KAFKA_RESP_ERR_NO_ERROR && c.offset >= 0 ? c.offset : -1;
    lag.end = e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0 ? e.offset : -1;
    out.push_back(std::move(lag));
  }
  MeasureTimeLag(consumer.get(), &out, now_ms, deadline);
  return out;
}

}  // namespace keyflow
