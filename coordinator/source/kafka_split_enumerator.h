// KafkaSplitEnumerator: the enumerator of --input kafka:... (Flink's KafkaSourceEnumerator).
// Every partition of the spec's topics is a split, read by reader (split id % P); split ids
// count up in the order partitions are found (sorted by topic and partition within one
// discovery).
//
// Start (every attempt) hands back the restored checkpoint's partitions with their offsets, then
// discovers the partitions not in it, synchronously (a Kafka metadata round trip, bounded by the
// discovery timeout; an error fails the deployment, retried under the restart strategy). Where a
// new partition starts (partition_discovery.h): at the first discovery of a job that has no
// Kafka positions yet, the spec's start; otherwise at the partition's log start, so a partition
// added while the job ran — or assigned after the checkpoint a restore goes back to — is read
// whole. Offsets are concrete from then on; keyflow's checkpoints are the only truth about them.
//
// Unbounded: while the attempt runs, partitions are looked for again every discovery interval,
// off the control thread (KafkaPartitionDiscoverer); a failed discovery is logged, shown in
// status and retried at the next interval. Bounded (stop=latest): each partition ends at the
// high watermark seen when it was found, every reader hears "no more splits" at Start, and the
// job finishes once all partitions are read.
//
// Consumer lag (with a lag probe): every discovery interval, bounded or not, the partitions'
// end offsets and the group's committed offsets (committed when checkpoints complete) are
// measured off the control thread (consumer_lag.h) and shown in StatusJson.
//
// Threading: the coordinator's control thread (the discoverer's work on its own thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/input/input_spec.h"
#include "common/kafka/partition_discovery.h"
#include "coordinator/source/split_enumerator.h"

namespace keyflow {

// One asynchronous request every interval, polled from the control thread: Poll starts it when
// it is due (and `may_start`), and returns its result once ready; the next one is due an
// interval after that.
template <class T>
class PeriodicRequest {
 public:
  std::optional<T> Poll(int64_t now_ms, int64_t interval_ms, bool may_start,
                        const std::function<std::future<T>()>& start) {
    if (next_ms_ < 0) next_ms_ = now_ms + interval_ms;
    if (!running_.valid()) {
      if (now_ms < next_ms_ || !may_start) return std::nullopt;
      running_ = start();
    }
    if (running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return std::nullopt;
    }
    next_ms_ = now_ms + interval_ms;
    return running_.get();  // invalidates running_
  }

 private:
  int64_t next_ms_ = -1;    // set by the first Poll
  std::future<T> running_;  // valid while one runs; destroying it waits for it
};

class KafkaSplitEnumerator final : public SplitEnumerator {
 public:
  // How long a discovery may wait for the brokers.
  static constexpr Duration kDiscoveryTimeout = Duration::Seconds(10);

  // `input` of kind kKafka. `restored`: null when starting from scratch; else every split must
  // be a partition of one of the spec's topics (FailedPrecondition otherwise) and decode
  // (Corruption otherwise).
  static Result<std::unique_ptr<KafkaSplitEnumerator>> Create(
      const InputSpec& input, const RestoredSplits* restored,
      KafkaPartitionDiscoverer discoverer = AsyncKafkaPartitionDiscoverer(),
      KafkaLagProbe lag_probe = {});
  // Destroying it waits for a discovery still running.

  Status Start(SplitEnumeratorContext& context) override;
  void OnTick(SplitEnumeratorContext& context, int64_t now_ms) override;
  // {"kind": "kafka", "topics": [...], "bounded", "splits" (partitions known),
  //  "discovery_interval_ms", "discovery_error" ("" when the last one succeeded),
  //  "lag_records" (the sum over partitions with a committed offset; -1 before the first
  //  measurement or when none has one), "lag": [{"topic", "partition", "committed", "end",
  //  "records"}] (the last measurement), "lag_error" ("" when it succeeded)}. No client
  // properties (they may hold secrets).
  nlohmann::json StatusJson() const override;

  size_t known_splits() const { return known_.size(); }

 private:
  KafkaSplitEnumerator() = default;
  void AssignNew(SplitEnumeratorContext& context, std::vector<DiscoveredPartition> found);
  void MeasureLag(int64_t now_ms);

  KafkaSourceSpec spec_;
  KafkaPartitionDiscoverer discoverer_;
  std::vector<SourceSplitState> initial_;  // the restored splits, assigned by Start
  std::set<KafkaTopicPartition> known_;
  int32_t next_id_ = 0;
  std::string discovery_error_;
  PeriodicRequest<Result<std::vector<DiscoveredPartition>>> discovery_;
  KafkaLagProbe lag_probe_;
  std::vector<KafkaPartitionLag> lag_;
  std::string lag_error_;
  PeriodicRequest<Result<std::vector<KafkaPartitionLag>>> lag_measurement_;
};

}  // namespace keyflow
