#include "coordinator/source/kafka_split_enumerator.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/binary_io.h"
#include "common/kafka/kafka_client.h"
#include "common/logging/logging.h"

namespace keyflow {

Result<std::unique_ptr<KafkaSplitEnumerator>> KafkaSplitEnumerator::Create(
    const InputSpec& input, const RestoredSplits* restored, KafkaPartitionDiscoverer discoverer,
    KafkaLagProbe lag_probe) {
  std::unique_ptr<KafkaSplitEnumerator> e(new KafkaSplitEnumerator());
  e->spec_ = input.kafka();
  e->discoverer_ = std::move(discoverer);
  e->lag_probe_ = std::move(lag_probe);
  if (restored != nullptr) {
    for (const auto& [id, bytes] : *restored) {
      BinaryReader r(bytes);
      KF_ASSIGN_OR_RETURN(SourceSplitState st, SourceSplitState::DecodeFrom(&r));
      if (st.split.kind() != SplitKind::kKafka || !e->spec_.ReadsTopic(st.split.topic())) {
        return FailedPrecondition("split " + id + " of the checkpoint is " + st.split.ToString() +
                                  ", not a partition of the topics of --input " +
                                  e->spec_.Redacted() + ": restore with the same --input");
      }
      e->initial_.push_back(std::move(st));
    }
  }
  for (const SourceSplitState& st : e->initial_) {
    e->known_.insert({st.split.topic(), st.split.partition()});
    e->next_id_ = std::max(e->next_id_, st.split.id().value() + 1);
  }
  return e;
}

Status KafkaSplitEnumerator::Start(SplitEnumeratorContext& context) {
  const bool initial = initial_.empty();
  AssignByIdModulo(context, std::move(initial_));
  initial_.clear();
  Result<std::vector<DiscoveredPartition>> found = discoverer_(spec_, known_, initial).get();
  discovery_error_ = found.ok() ? "" : found.status().message();
  if (!found.ok()) return found.status().WithContext("discovering the Kafka partitions");
  AssignNew(context, *std::move(found));
  if (spec_.bounded) {
    for (int32_t i = 0; i < context.parallelism(); ++i) context.SignalNoMoreSplits(SubtaskIndex(i));
  }
  return Status::Ok();
}

void KafkaSplitEnumerator::MeasureLag(int64_t now_ms) {
  if (!lag_probe_) return;
  const int64_t interval_ms = spec_.discovery_interval.millis();
  std::optional<Result<std::vector<KafkaPartitionLag>>> measured = lag_measurement_.Poll(
      now_ms, interval_ms, !known_.empty(), [&] { return lag_probe_(spec_, known_); });
  if (!measured) return;
  lag_error_ = measured->ok() ? "" : measured->status().message();
  if (!measured->ok()) {
    KF_LOG_WARN("Kafka consumer lag not measured: {}; trying again in {} ms",
                measured->status().message(), interval_ms);
    return;
  }
  lag_ = *std::move(*measured);
}

void KafkaSplitEnumerator::OnTick(SplitEnumeratorContext& context, int64_t now_ms) {
  MeasureLag(now_ms);
  if (spec_.bounded) return;
  const int64_t interval_ms = spec_.discovery_interval.millis();
  std::optional<Result<std::vector<DiscoveredPartition>>> found =
      discovery_.Poll(now_ms, interval_ms, true, [&] { return discoverer_(spec_, known_, false); });
  if (!found) return;
  discovery_error_ = found->ok() ? "" : found->status().message();
  if (!found->ok()) {
    KF_LOG_WARN("Kafka partition discovery failed: {}; trying again in {} ms",
                found->status().message(), interval_ms);
    return;
  }
  AssignNew(context, *std::move(*found));
}

nlohmann::json KafkaSplitEnumerator::StatusJson() const {
  nlohmann::json lag = nlohmann::json::array();
  int64_t total = -1;
  int64_t max_ms = -1;
  for (const KafkaPartitionLag& p : lag_) {
    lag.push_back({{"topic", p.topic},
                   {"partition", p.partition},
                   {"committed", p.committed},
                   {"end", p.end},
                   {"records", p.records()},
                   {"ms", p.time_lag_ms}});
    if (p.records() >= 0) total = std::max<int64_t>(total, 0) + p.records();
    max_ms = std::max(max_ms, p.time_lag_ms);
  }
  return {{"kind", "kafka"},
          {"topics", spec_.topics},
          {"topic_pattern", spec_.topic_pattern},
          {"bounded", spec_.bounded},
          {"splits", known_.size()},
          {"discovery_interval_ms", spec_.discovery_interval.millis()},
          {"discovery_error", discovery_error_},
          {"lag_records", total},
          {"lag_ms", max_ms},
          {"lag", std::move(lag)},
          {"lag_error", lag_error_}};
}

void KafkaSplitEnumerator::AssignNew(SplitEnumeratorContext& context,
                                     std::vector<DiscoveredPartition> found) {
  std::vector<SourceSplitState> splits;
  for (DiscoveredPartition& p : found) {
    if (!known_.insert({p.topic, p.partition}).second) continue;
    KF_LOG_INFO("Kafka {}: read from offset {}{}", KafkaPartitionName(p.topic, p.partition),
                p.start_offset,
                p.stop_offset >= 0 ? " to " + std::to_string(p.stop_offset) : std::string());
    splits.push_back({SourceSplit::KafkaPartition(SplitId(next_id_++), std::move(p.topic),
                                                  p.partition, p.stop_offset),
                      SplitPosition::InKafka(p.start_offset)});
  }
  AssignByIdModulo(context, std::move(splits));
}

}  // namespace keyflow
