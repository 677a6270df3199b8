// KafkaSinkSpec: the Kafka sink's parameters, as written after `kafka:` in --output. The workers'
// Kafka sink writers (worker/connectors/kafka/kafka_sink.h) write the job's results to the topic.
//
//   kafka:bootstrap=HOST:PORT[;HOST:PORT...],topic=T[,guarantee=G][,key=FIELD][,partition=N]
//         [,kafka.<librdkafka property>=V ...]
//
//   bootstrap  the brokers to ask first ("bootstrap.servers"), ';'-separated       required
//   topic      the topic to write (it must exist)                                 required
//   guarantee  exactly-once: a record becomes visible once the checkpoint that     default
//              covers it completed (Kafka transactions; needs checkpointing) |     exactly-once
//              at-least-once: flushed at every checkpoint barrier (after a
//              failure, records since the last checkpoint are written again)
//   key        the top-level field of the output record whose value is the Kafka  default none
//              record key (a string as its text, anything else as its JSON); a
//              record without it has no key
//   partition  every record goes to this partition; otherwise Kafka's default     default by key
//              partitioner (murmur2 of the key, as the Java client; records
//              without a key are spread)
//   markers    exactly-once: the topic where each commit's marker record goes, in  default
//              the same transaction as the records (partition 0; it must exist,    keyflow-sink-
//              one partition with cleanup.policy=compact is enough), so that       commits
//              recovery can tell a committed checkpoint from one still to commit
//   kafka.P=V  any librdkafka producer property (TLS, SASL, compression, ...); a
//              property of keyflow's own (bootstrap.servers, transactional.id,
//              enable.idempotence, transactional or not is guarantee=) is refused
//
// The Kafka record value is the output line (JSON), its timestamp the output record's event
// time (none, or the end of input's final watermark: the broker's time). Secrets are redacted as
// for the source (KafkaSourceSpec).
//
// Value type; no threading concerns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace keyflow {

struct KafkaSinkSpec {
  enum class Guarantee : uint8_t { kExactlyOnce, kAtLeastOnce };
  static constexpr std::string_view kPrefix = "kafka:";
  // keyflow's default transaction.timeout.ms (librdkafka's is 60 s): the brokers' default
  // transaction.max.timeout.ms.
  static constexpr int64_t kDefaultTransactionTimeoutMs = 900'000;
  // What a commit is given on top of the checkpoint interval (CheckTransactionTimeout).
  static constexpr int64_t kCommitAllowanceMs = 60'000;
  static constexpr std::string_view kDefaultMarkerTopic = "keyflow-sink-commits";

  std::vector<std::string> bootstrap;
  std::string topic;
  Guarantee guarantee = Guarantee::kExactlyOnce;
  std::string key_field;             // empty: records have no key
  std::optional<int32_t> partition;  // fixed partition; none: by key
  std::string marker_topic = std::string(kDefaultMarkerTopic);
  std::map<std::string, std::string> properties;  // kafka.P=V, without "kafka."

  // Whether --output `text` names Kafka (starts with "kafka:").
  static bool Names(std::string_view text) { return text.substr(0, kPrefix.size()) == kPrefix; }
  // `text` with or without the prefix. InvalidArgument naming the parameter (as "--output ...:
  // why") for an unknown or repeated parameter, a missing bootstrap or topic, a bad guarantee
  // or partition, a property of keyflow's own.
  static Result<KafkaSinkSpec> Parse(std::string_view text);
  std::string BootstrapServers() const;
  bool exactly_once() const { return guarantee == Guarantee::kExactlyOnce; }
  // kafka.transaction.timeout.ms, or kDefaultTransactionTimeoutMs.
  int64_t TransactionTimeoutMs() const;
  // kafka.message.max.bytes, or librdkafka's default (1000000): the largest key + value the
  // producer accepts.
  static constexpr int64_t kDefaultMessageMaxBytes = 1'000'000;
  int64_t MessageMaxBytes() const;
  // For a job checkpointing every `checkpoint_interval_ms` (0: not at all): exactly-once needs
  // checkpoints, and a transaction timeout of at least the interval plus kCommitAllowanceMs
  // (a shorter one lets the brokers abort what a completed checkpoint still has to commit).
  // InvalidArgument with the sentence to act on.
  Status CheckAgainstCheckpointing(int64_t checkpoint_interval_ms) const;
  // The spec as text with every secret property's value replaced by "***".
  std::string Redacted() const;
};

}  // namespace keyflow
