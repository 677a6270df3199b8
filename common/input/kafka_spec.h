// KafkaSourceSpec: the Kafka source's parameters, as written after `kafka:` in --input (see
// InputSpec). The coordinator's KafkaSplitEnumerator discovers the partitions (each one is a
// split) and the workers' Kafka split readers read them.
//
//   kafka:bootstrap=HOST:PORT[;HOST:PORT...],topic=T[;T...]|pattern=REGEX[,group=G][,start=S]
//         [,stop=latest][,ts=FIELD|kafka][,idle=DURATION][,discovery=DURATION]
//         [,kafka.<librdkafka property>=V ...]
//
//   bootstrap  the brokers to ask first ("bootstrap.servers"), ';'-separated       required
//   topic      the topics to read, ';'-separated; every partition of each           one of
//   pattern    every topic whose whole name matches REGEX (ECMAScript syntax),     topic and
//              except Kafka's internal topics (names starting "__"); topics that   pattern
//              appear later and match are read from their start once discovered
//   group      the consumer group: offsets are committed there when a checkpoint   default
//              completes (for lag monitoring only: keyflow's checkpoints hold the  "keyflow"
//              positions), and start=committed reads them
//   start      where a partition is first read: earliest | latest | committed      default
//              (the group's committed offset; earliest when it has none) |         earliest
//              timestamp:MS (the first record with a timestamp >= MS, epoch ms)
//   stop       latest: a bounded read that ends at the end offsets seen when the   default none
//              partitions were discovered (a backfill); the job then finishes
//   idle       a partition without records for this long no longer holds back      default off
//              event time (per-partition idleness), until its next record; when
//              all of a subtask's partitions are idle, the subtask is idle
//   ts         the event time: FIELD, a top-level field of the value (epoch ms;     default the
//              replaces the job's --ts-field for this source), or kafka: the      job's field
//              record's Kafka timestamp (its CreateTime or LogAppendTime); the
//              value then needs no time field
//   discovery  how often new partitions of the topics (a topic that grew) and new   default 10s
//              topics of the pattern are looked for; not in bounded mode. Every
//              topic= topic must exist at the start
//   kafka.P=V  any librdkafka client property P (TLS, SASL, timeouts, ...), passed to every
//              client keyflow makes; a property of keyflow's own (bootstrap.servers, group.id,
//              enable.auto.commit, auto.offset.reset, enable.partition.eof) is refused
//
// Values cannot contain ','. The record value is one JSON Lines record, parsed by the job's
// record format (key field, time field, declared fields, bad-record policy). A property whose
// name contains "password", "secret" or ends in ".key" (sasl.password, ssl.key.password,
// sasl.oauthbearer.client.secret, ssl.key.pem, ...) is a secret: Redacted() shows it as "***",
// and that is the form to log and to show in status.
//
// Value type; no threading concerns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/status.h"

namespace keyflow {

struct KafkaSourceSpec {
  enum class Start : uint8_t { kEarliest, kLatest, kCommitted, kTimestamp };
  static constexpr std::string_view kPrefix = "kafka:";
  static constexpr Duration kDefaultDiscoveryInterval = Duration::Millis(10'000);

  std::vector<std::string> bootstrap;  // HOST:PORT each
  std::vector<std::string> topics;     // topic=; empty with pattern=
  std::string topic_pattern;           // pattern=; empty with topic=
  std::string group = "keyflow";
  Start start = Start::kEarliest;
  int64_t start_timestamp_ms = 0;  // start == kTimestamp
  bool bounded = false;            // stop=latest
  Duration discovery_interval = kDefaultDiscoveryInterval;
  Duration idle_timeout = Duration::Millis(0);    // idle=; 0: partitions are never idle
  std::string timestamp_field;                    // ts=FIELD; empty: the job's field
  bool kafka_timestamp = false;                   // ts=kafka
  std::map<std::string, std::string> properties;  // kafka.P=V, without "kafka."

  // `text` with or without the "kafka:" prefix. InvalidArgument naming the parameter for: an
  // unknown or repeated parameter, a missing bootstrap, neither or both of topic and pattern, a
  // pattern that is no regular expression, a bootstrap entry without a port, a bad start, stop,
  // ts, idle, discovery or a property of keyflow's own.
  static Result<KafkaSourceSpec> Parse(std::string_view text);

  // InvalidArgument when ts=FIELD names the job's key field (a record's time cannot be its key).
  Status CheckAgainstKeyField(std::string_view key_field) const;

  // Whether the source reads `topic`: one of `topics`, or a match of the whole pattern (Kafka's
  // internal topics, "__...", never match).
  bool ReadsTopic(std::string_view topic) const;
  // "topic T", "topics T1, T2" or "topics matching /REGEX/": for messages.
  std::string TopicsText() const;

  // "HOST:PORT,HOST:PORT": librdkafka's bootstrap.servers.
  std::string BootstrapServers() const;
  // Whether a property of this name holds a secret (see the file comment).
  static bool IsSecretProperty(std::string_view name);
  // The spec as text with every secret property's value replaced by "***".
  std::string Redacted() const;
  // `text` (a kafka: spec as given, valid or not) with the value of every secret kafka.<property>
  // replaced by "***", the rest as it was: what error messages, logs and status show.
  static std::string RedactText(std::string_view text);
};

std::string_view KafkaStartName(KafkaSourceSpec::Start start);  // "earliest", ...

}  // namespace keyflow
