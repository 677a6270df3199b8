#include "common/kafka/partition_discovery.h"

#include <algorithm>
#include <memory>

#include "common/clock.h"
#include "common/duration.h"
#include "common/kafka/kafka_client.h"

namespace keyflow {
namespace {

struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* md) const { rd_kafka_metadata_destroy(md); }
};
using Metadata = std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>;

struct TopicDeleter {
  void operator()(rd_kafka_topic_t* t) const { rd_kafka_topic_destroy(t); }
};

// The first authentication failure (SASL or TLS) librdkafka reported for a client, through its
// error callback: without it a refused login looks like brokers that do not answer.
struct AuthFailure {
  std::string reason;
};

void RecordAuthFailure(rd_kafka_t*, int err, const char* reason, void* opaque) {
  auto* failure = static_cast<AuthFailure*>(opaque);
  if ((err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) &&
      failure->reason.empty()) {
    failure->reason = reason;
  }
}

Status NoAnswer(const KafkaSourceSpec& spec, Duration timeout, const std::string& what,
                rd_kafka_resp_err_t err) {
  return KafkaNoAnswer(spec.BootstrapServers(), timeout, what, err);
}

// A metadata request that failed: the brokers refused the client's authentication, or did not
// answer.
Status NoAnswer(const KafkaSourceSpec& spec, Duration timeout, const std::string& what,
                rd_kafka_resp_err_t err, const AuthFailure& auth) {
  if (!auth.reason.empty()) {
    return InvalidArgument("the Kafka brokers " + spec.BootstrapServers() +
                           " refused keyflow's authentication: " + auth.reason +
                           " (check kafka.security.protocol, kafka.sasl.mechanism and the "
                           "credentials)");
  }
  return NoAnswer(spec, timeout, what, err);
}

// rd_kafka_metadata within `timeout`, asked in slices of at most 250 ms with the client's error
// events served in between, so that a refused authentication ends the wait at once.
rd_kafka_resp_err_t MetadataWithin(rd_kafka_t* rk, bool all_topics, rd_kafka_topic_t* topic,
                                   const rd_kafka_metadata_t** out, Duration timeout,
                                   const AuthFailure& auth) {
  const int64_t deadline = MonotonicMillis() + timeout.millis();
  while (true) {
    const int64_t left = std::max<int64_t>(1, deadline - MonotonicMillis());
    const rd_kafka_resp_err_t err = rd_kafka_metadata(
        rk, all_topics ? 1 : 0, topic, out, static_cast<int>(std::min<int64_t>(left, 250)));
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return err;
    rd_kafka_poll(rk, 20);  // serves the error callback (RecordAuthFailure)
    if (!auth.reason.empty() || MonotonicMillis() >= deadline) return err;
  }
}

// The partition ids of `topic`; an empty list (not an error) for a missing topic unless
// `must_exist`.
Result<std::vector<int32_t>> PartitionsOf(rd_kafka_t* rk, const KafkaSourceSpec& spec,
                                          const std::string& topic, bool must_exist,
                                          Duration timeout, const AuthFailure& auth) {
  std::unique_ptr<rd_kafka_topic_t, TopicDeleter> handle(
      rd_kafka_topic_new(rk, topic.c_str(), nullptr));
  const rd_kafka_metadata_t* raw = nullptr;
  const rd_kafka_resp_err_t err = MetadataWithin(rk, false, handle.get(), &raw, timeout, auth);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return NoAnswer(spec, timeout, "a metadata request for topic " + topic, err, auth);
  }
  Metadata md(raw);
  if (md->topic_cnt != 1) {
    return Unavailable("the Kafka brokers " + spec.BootstrapServers() +
                       " sent no metadata for topic " + topic);
  }
  const rd_kafka_metadata_topic_t& t = md->topics[0];
  if (t.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
    if (!must_exist) return std::vector<int32_t>{};
    return NotFound("the Kafka topic '" + topic + "' does not exist on " + spec.BootstrapServers() +
                    ": create it first");
  }
  if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Unavailable("metadata of Kafka topic " + topic + ": " + KafkaErrorText(t.err));
  }
  std::vector<int32_t> out;
  for (int i = 0; i < t.partition_cnt; ++i) out.push_back(t.partitions[i].id);
  std::sort(out.begin(), out.end());
  return out;
}

// The topics of the cluster that `spec`'s pattern matches, sorted.
Result<std::vector<std::string>> MatchingTopics(rd_kafka_t* rk, const KafkaSourceSpec& spec,
                                                Duration timeout, const AuthFailure& auth) {
  const rd_kafka_metadata_t* raw = nullptr;
  const rd_kafka_resp_err_t err =
      MetadataWithin(rk, /*all_topics=*/true, nullptr, &raw, timeout, auth);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return NoAnswer(spec, timeout, "a metadata request for the topics", err, auth);
  }
  Metadata md(raw);
  std::vector<std::string> out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = md->topics[i];
    if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR && spec.ReadsTopic(t.topic)) out.push_back(t.topic);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Sets each partition's start offset to the group's committed one, or its log start.
Status ResolveCommitted(rd_kafka_t* rk, const KafkaSourceSpec& spec,
                        std::vector<DiscoveredPartition>* parts, Duration timeout) {
  KafkaPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(parts->size())));
  for (const DiscoveredPartition& p : *parts) {
    rd_kafka_topic_partition_list_add(list.get(), p.topic.c_str(), p.partition);
  }
  const rd_kafka_resp_err_t err =
      rd_kafka_committed(rk, list.get(), static_cast<int>(timeout.millis()));
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return NoAnswer(spec, timeout, "for the committed offsets of group " + spec.group, err);
  }
  for (size_t i = 0; i < parts->size(); ++i) {
    const int64_t committed = list->elems[i].offset;
    if (committed >= 0) (*parts)[i].start_offset = committed;
  }
  return Status::Ok();
}

// Sets each partition's start offset to the first offset with a timestamp >= `ms`, or its high
// watermark (`high`) when no record is that late.
Status ResolveTimestamp(rd_kafka_t* rk, const KafkaSourceSpec& spec, int64_t ms,
                        const std::vector<int64_t>& high, std::vector<DiscoveredPartition>* parts,
                        Duration timeout) {
  KafkaPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(parts->size())));
  for (const DiscoveredPartition& p : *parts) {
    rd_kafka_topic_partition_list_add(list.get(), p.topic.c_str(), p.partition)->offset = ms;
  }
  const rd_kafka_resp_err_t err =
      rd_kafka_offsets_for_times(rk, list.get(), static_cast<int>(timeout.millis()));
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return NoAnswer(spec, timeout, "for the offsets of timestamp " + std::to_string(ms), err);
  }
  for (size_t i = 0; i < parts->size(); ++i) {
    const int64_t offset = list->elems[i].offset;
    (*parts)[i].start_offset = offset >= 0 ? offset : high[i];
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<DiscoveredPartition>> DiscoverKafkaPartitions(
    const KafkaSourceSpec& spec, const std::set<KafkaTopicPartition>& known, bool initial,
    Duration timeout) {
  AuthFailure auth;  // outlives the client, whose error callback writes it
  KF_ASSIGN_OR_RETURN(KafkaHandle rk,
                      NewKafkaClient(RD_KAFKA_CONSUMER, spec.BootstrapServers(), spec.properties,
                                     {{"enable.auto.commit", "false"}, {"group.id", spec.group}},
                                     [&auth](rd_kafka_conf_t* conf) {
                                       rd_kafka_conf_set_error_cb(conf, RecordAuthFailure);
                                       rd_kafka_conf_set_opaque(conf, &auth);
                                     }));
  std::vector<std::string> topics = spec.topics;
  if (!spec.topic_pattern.empty()) {
    KF_ASSIGN_OR_RETURN(topics, MatchingTopics(rk.get(), spec, timeout, auth));
  }
  // A topic of a pattern may be deleted between the two requests: it is then skipped.
  const bool must_exist = initial && spec.topic_pattern.empty();
  std::vector<DiscoveredPartition> parts;
  for (const std::string& topic : topics) {
    KF_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                        PartitionsOf(rk.get(), spec, topic, must_exist, timeout, auth));
    for (int32_t id : ids) {
      if (known.count({topic, id}) == 0) parts.push_back({topic, id, 0, -1});
    }
  }
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
  std::vector<int64_t> high(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    DiscoveredPartition& p = parts[i];
    int64_t low = 0;
    const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
        rk.get(), p.topic.c_str(), p.partition, &low, &high[i], static_cast<int>(timeout.millis()));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return NoAnswer(spec, timeout,
                      "for the offsets of " + KafkaPartitionName(p.topic, p.partition), err);
    }
    p.start_offset = low;
    if (spec.bounded) p.stop_offset = high[i];
  }
  if (!initial || parts.empty()) return parts;
  switch (spec.start) {
    case KafkaSourceSpec::Start::kEarliest:
      break;
    case KafkaSourceSpec::Start::kLatest:
      for (size_t i = 0; i < parts.size(); ++i) parts[i].start_offset = high[i];
      break;
    case KafkaSourceSpec::Start::kCommitted:
      KF_RETURN_IF_ERROR(ResolveCommitted(rk.get(), spec, &parts, timeout));
      break;
    case KafkaSourceSpec::Start::kTimestamp:
      KF_RETURN_IF_ERROR(
          ResolveTimestamp(rk.get(), spec, spec.start_timestamp_ms, high, &parts, timeout));
      break;
  }
  return parts;
}

}  // namespace keyflow
