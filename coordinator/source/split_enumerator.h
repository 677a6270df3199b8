// SplitEnumerator: the part of a source that runs on the coordinator (FLIP-27's
// SplitEnumerator). It decides which source subtask reads which split: at the start of every
// attempt of a job the job master creates the enumerator of the job's source and starts it; the
// enumerator assigns splits, each with the position to read it from, through its context, and
// tells each reader when no more splits will come (a bounded source).
//
// Restores and rescales: the positions of every split the readers held are in the restored
// checkpoint (split id -> encoded SourceSplitState, the union over all readers); the
// enumerator of the new attempt hands them out again over the new parallelism, so a rescale
// moves splits, not records.
//
// What the job master does with the assignments: those made during Start travel in each
// subtask's DeployTask (DeployTask::source_splits), so a reader starts with its splits; those
// made later (OnTick, while the attempt runs) in an AddSplits message to the reader's worker.
//
// Threading: the coordinator's control thread.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/input/kafka_spec.h"
#include "common/input/source_split.h"
#include "common/kafka/consumer_lag.h"
#include "common/kafka/partition_discovery.h"
#include "common/protocol/job_spec.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

// What an enumerator may do; implemented by the job master.
class SplitEnumeratorContext {
 public:
  virtual ~SplitEnumeratorContext() = default;
  // Number of source subtasks (readers 0..parallelism()-1).
  virtual int32_t parallelism() const = 0;
  // Hands `splits`, each with the position to read it from, to the reader of `subtask`.
  virtual void AssignSplits(SubtaskIndex subtask, std::vector<SourceSplitState> splits) = 0;
  // The reader of `subtask` gets no more splits: it ends once its splits end.
  virtual void SignalNoMoreSplits(SubtaskIndex subtask) = 0;
};

class SplitEnumerator {
 public:
  virtual ~SplitEnumerator() = default;
  // An attempt starts, with every reader: assign what is known. An error fails the attempt's
  // deployment with its message (e.g. the input is gone).
  virtual Status Start(SplitEnumeratorContext& context) = 0;
  // Called on the coordinator's ticks while the attempt runs (after Start): a continuous
  // enumerator discovers new splits here and assigns them through `context` (sent to the
  // readers at once). The default does nothing.
  virtual void OnTick(SplitEnumeratorContext& /*context*/, int64_t /*now_ms*/) {}
  // For status: {"kind": ..., "splits": N, ...} (each enumerator documents its fields).
  virtual nlohmann::json StatusJson() const = 0;
};

// The context of an enumerator's Start at deployment: collects what each reader gets, for its
// DeployTask (encoded SourceSplitStates, in assignment order, and whether more may come).
class DeploymentSplitAssignment final : public SplitEnumeratorContext {
 public:
  explicit DeploymentSplitAssignment(int32_t parallelism);

  int32_t parallelism() const override { return static_cast<int32_t>(readers_.size()); }
  // Precondition (both): 0 <= subtask < parallelism().
  void AssignSplits(SubtaskIndex subtask, std::vector<SourceSplitState> splits) override;
  void SignalNoMoreSplits(SubtaskIndex subtask) override;

  // Precondition: 0 <= subtask < parallelism().
  const std::vector<std::string>& splits(SubtaskIndex subtask) const;
  bool no_more_splits(SubtaskIndex subtask) const;

 private:
  struct Reader {
    std::vector<std::string> splits;
    bool no_more_splits = false;
  };
  const Reader& At(SubtaskIndex subtask) const;
  Reader& At(SubtaskIndex subtask);
  std::vector<Reader> readers_;
};

// The context of an enumerator while its attempt runs: every assignment goes to `send` at once
// (encoded SourceSplitStates), which the job master sends to the reader's worker (AddSplits).
class LiveSplitAssignment final : public SplitEnumeratorContext {
 public:
  using Send = std::function<void(SubtaskIndex, std::vector<std::string> splits)>;
  LiveSplitAssignment(int32_t parallelism, Send send)
      : parallelism_(parallelism), send_(std::move(send)) {}

  int32_t parallelism() const override { return parallelism_; }
  // Precondition: 0 <= subtask < parallelism().
  void AssignSplits(SubtaskIndex subtask, std::vector<SourceSplitState> splits) override;
  // Not carried by the protocol once readers run (no enumerator ends a source late): logged.
  void SignalNoMoreSplits(SubtaskIndex subtask) override;

 private:
  int32_t parallelism_;
  Send send_;
};

// Assigns each split to reader (split id mod parallelism), one AssignSplits per reader that gets
// any, in the splits' order: how every built-in enumerator spreads its splits.
void AssignByIdModulo(SplitEnumeratorContext& context, std::vector<SourceSplitState> splits);

// Lists a directory (InputSpec::ListFiles) and delivers the result through the future: how an
// enumerator lists off the control thread. Injectable, so tests decide when a listing ends.
using DirectoryLister =
    std::function<std::future<Result<std::vector<std::string>>>(const std::string& dir)>;
// std::async on a thread of its own.
DirectoryLister AsyncDirectoryLister();

// Finds the partitions of a Kafka source's topics not in `known` (DiscoverKafkaPartitions) and
// delivers them through the future; `initial`: the job's first discovery (the spec's start
// applies). Injectable, so tests need no broker and decide when a discovery ends.
using KafkaPartitionDiscoverer =
    std::function<std::future<Result<std::vector<DiscoveredPartition>>>(
        const KafkaSourceSpec& spec, std::set<KafkaTopicPartition> known, bool initial)>;
// std::async on a thread of its own, with KafkaSplitEnumerator::kDiscoveryTimeout.
KafkaPartitionDiscoverer AsyncKafkaPartitionDiscoverer();

// Measures the consumer lag of `partitions` (MeasureKafkaLag) and delivers it through the
// future. Injectable like the discoverer; empty: the enumerator measures no lag.
using KafkaLagProbe = std::function<std::future<Result<std::vector<KafkaPartitionLag>>>(
    const KafkaSourceSpec& spec, std::set<KafkaTopicPartition> partitions)>;
// std::async on a thread of its own, with KafkaSplitEnumerator::kDiscoveryTimeout and the system
// clock.
KafkaLagProbe AsyncKafkaLagProbe();

// The restored checkpoint's source state: split id -> encoded SourceSplitState, every reader's.
using RestoredSplits = std::map<std::string, std::string>;

// The enumerator of the job's --input (files, a directory, the generator:
// StaticSplitEnumerator; monitor:DIR: ContinuousFileSplitEnumerator; kafka:...:
// KafkaSplitEnumerator). `restored` is null when the attempt starts from scratch.
Result<std::unique_ptr<SplitEnumerator>> CreateSplitEnumerator(
    const JobSpec& spec, const RestoredSplits* restored,
    DirectoryLister lister = AsyncDirectoryLister(),
    KafkaPartitionDiscoverer kafka = AsyncKafkaPartitionDiscoverer(),
    KafkaLagProbe kafka_lag = AsyncKafkaLagProbe());

}  // namespace keyflow
