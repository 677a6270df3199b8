// Partition discovery of the Kafka source: which partitions the topics have, and where each new
// one is read from and (bounded) up to. The coordinator's KafkaSplitEnumerator calls it when an
// attempt starts and then periodically.
//
// Start offsets are resolved here, to concrete offsets, so a split's position is always an
// offset: `initial` discovery (the job's first) applies the spec's start (earliest: the log
// start offset; latest: the high watermark; committed: the group's committed offset, or the
// log start when it has none; timestamp:MS: the first offset with a timestamp >= MS, or the high
// watermark when there is none); a partition found later (a topic grew, or a restored job) is
// read from its log start, as Flink does, so nothing written to it is skipped. A bounded spec
// gets each partition's high watermark as the stop offset.
//
// With a topic pattern the topics are the cluster's topics that match it when called (one
// metadata request for all topics); a pattern that matches nothing yet is not an error.
//
// Errors: Unavailable when the brokers do not answer within `timeout` (the bootstrap servers
// are named); NotFound for a topic= topic the cluster does not have (at an initial discovery;
// later, a topic that is gone is skipped); InvalidArgument for a bad client property.
//
// Threading: any thread; each call makes (and closes) its own client.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/input/kafka_spec.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

using KafkaTopicPartition = std::pair<std::string, int32_t>;

struct DiscoveredPartition {
  std::string topic;
  int32_t partition = 0;
  int64_t start_offset = 0;
  int64_t stop_offset = -1;  // -1: not bounded

  friend bool operator==(const DiscoveredPartition&, const DiscoveredPartition&) = default;
};

// The partitions of the spec's topics (or of the topics matching its pattern) not in `known`,
// sorted by topic and partition.
Result<std::vector<DiscoveredPartition>> DiscoverKafkaPartitions(
    const KafkaSourceSpec& spec, const std::set<KafkaTopicPartition>& known, bool initial,
    Duration timeout);

}  // namespace keyflow
