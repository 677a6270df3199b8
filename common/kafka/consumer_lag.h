// Consumer lag of the Kafka source, as Kafka's own tools show it: per partition, the end offset
// minus the offset the source's consumer group committed. keyflow commits a partition's offset
// to the group when a checkpoint completes (for monitoring only: its checkpoints hold the truth),
// so the lag counts the records not yet covered by a completed checkpoint — read or not. The
// coordinator's KafkaSplitEnumerator measures it every discovery interval.
//
// The lag in time is the age of the oldest such record: now minus the Kafka timestamp of the
// first record at or after the committed offset (0 when no record is behind). Finding it reads
// one fetch of each partition that is behind, from its committed offset (small fetches: at most
// one record batch per partition).
//
// Threading: any thread; each call makes (and closes) its own client.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/input/kafka_spec.h"
#include "common/kafka/partition_discovery.h"
#include "common/status.h"

namespace keyflow {

struct KafkaPartitionLag {
  std::string topic;
  int32_t partition = 0;
  int64_t committed = -1;  // the group's committed offset; -1: none yet
  int64_t end = -1;        // the end offset (high watermark)
  // now - the Kafka timestamp of the first record at or after `committed`; 0 when no record is
  // behind; -1 when unknown (nothing committed, or that record did not arrive in time).
  int64_t time_lag_ms = -1;
  // Records after the committed offset; -1 when nothing is committed yet.
  int64_t records() const {
    return committed < 0 || end < 0 ? -1 : std::max<int64_t>(0, end - committed);
  }
  friend bool operator==(const KafkaPartitionLag&, const KafkaPartitionLag&) = default;
};

// The lag of each of `partitions` for the spec's group: one OffsetFetch and one ListOffsets
// round trip, then a fetch of the partitions that are behind (all within `timeout`; a time lag
// that took longer stays unknown). `now_ms`: the wall clock in epoch ms. Unavailable (naming
// the brokers) if they do not answer the offset requests within `timeout`.
Result<std::vector<KafkaPartitionLag>> MeasureKafkaLag(
    const KafkaSourceSpec& spec, const std::set<KafkaTopicPartition>& partitions, Duration timeout,
    int64_t now_ms);

}  // namespace keyflow
