#include "common/kafka/consumer_lag.h"

#include <algorithm>

#include "common/kafka/kafka_client.h"

namespace keyflow {

Result<std::vector<KafkaPartitionLag>> MeasureKafkaLag(
    const KafkaSourceSpec& spec, const std::set<KafkaTopicPartition>& partitions,
    Duration timeout) {
  std::vector<KafkaPartitionLag> out;
  if (partitions.empty()) return out;
  KF_ASSIGN_OR_RETURN(KafkaHandle consumer,
                      NewKafkaClient(RD_KAFKA_CONSUMER, spec, {{"enable.auto.commit", "false"}}));
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
  return out;
}

}  // namespace keyflow
