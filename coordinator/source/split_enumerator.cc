#include "coordinator/source/split_enumerator.h"

#include <chrono>

#include <utility>

#include "common/binary_io.h"
#include "common/check.h"
#include "common/input/input_spec.h"
#include "common/logging/logging.h"
#include "coordinator/source/continuous_file_split_enumerator.h"
#include "coordinator/source/kafka_split_enumerator.h"
#include "coordinator/source/static_split_enumerator.h"

namespace keyflow {

namespace {

std::vector<std::string> Encode(const std::vector<SourceSplitState>& splits) {
  std::vector<std::string> out;
  out.reserve(splits.size());
  for (const SourceSplitState& split : splits) {
    std::string bytes;
    BinaryWriter w(&bytes);
    split.EncodeTo(&w);
    out.push_back(std::move(bytes));
  }
  return out;
}

}  // namespace

DeploymentSplitAssignment::DeploymentSplitAssignment(int32_t parallelism)
    : readers_(static_cast<size_t>(parallelism)) {}

const DeploymentSplitAssignment::Reader& DeploymentSplitAssignment::At(SubtaskIndex subtask) const {
  KF_CHECK(subtask.value() >= 0 && subtask.value() < parallelism())
      << "split assignment to subtask " << subtask.value() << " of " << parallelism();
  return readers_[static_cast<size_t>(subtask.value())];
}

DeploymentSplitAssignment::Reader& DeploymentSplitAssignment::At(SubtaskIndex subtask) {
  return const_cast<Reader&>(std::as_const(*this).At(subtask));
}

void DeploymentSplitAssignment::AssignSplits(SubtaskIndex subtask,
                                             std::vector<SourceSplitState> splits) {
  Reader& reader = At(subtask);
  for (std::string& bytes : Encode(splits)) reader.splits.push_back(std::move(bytes));
}

void DeploymentSplitAssignment::SignalNoMoreSplits(SubtaskIndex subtask) {
  At(subtask).no_more_splits = true;
}

const std::vector<std::string>& DeploymentSplitAssignment::splits(SubtaskIndex subtask) const {
  return At(subtask).splits;
}

bool DeploymentSplitAssignment::no_more_splits(SubtaskIndex subtask) const {
  return At(subtask).no_more_splits;
}

void LiveSplitAssignment::AssignSplits(SubtaskIndex subtask, std::vector<SourceSplitState> splits) {
  KF_CHECK(subtask.value() >= 0 && subtask.value() < parallelism_)
      << "split assignment to subtask " << subtask.value() << " of " << parallelism_;
  send_(subtask, Encode(splits));
}

void LiveSplitAssignment::SignalNoMoreSplits(SubtaskIndex subtask) {
  KF_LOG_WARN("split enumerator signalled no more splits to running subtask {}: not supported",
              subtask.value());
}

void AssignByIdModulo(SplitEnumeratorContext& context, std::vector<SourceSplitState> splits) {
  const int32_t p = context.parallelism();
  std::vector<std::vector<SourceSplitState>> to(static_cast<size_t>(p));
  for (SourceSplitState& st : splits) {
    to[static_cast<size_t>(st.split.id().value() % p)].push_back(std::move(st));
  }
  for (int32_t i = 0; i < p; ++i) {
    if (!to[static_cast<size_t>(i)].empty()) {
      context.AssignSplits(SubtaskIndex(i), std::move(to[static_cast<size_t>(i)]));
    }
  }
}

DirectoryLister AsyncDirectoryLister() {
  return [](const std::string& dir) {
    return std::async(std::launch::async, [dir] { return InputSpec::ListFiles(dir); });
  };
}

KafkaPartitionDiscoverer AsyncKafkaPartitionDiscoverer() {
  return [](const KafkaSourceSpec& spec, std::set<KafkaTopicPartition> known, bool initial) {
    return std::async(std::launch::async, [spec, known = std::move(known), initial] {
      return DiscoverKafkaPartitions(spec, known, initial, KafkaSplitEnumerator::kDiscoveryTimeout);
    });
  };
}

KafkaLagProbe AsyncKafkaLagProbe() {
  return [](const KafkaSourceSpec& spec, std::set<KafkaTopicPartition> partitions) {
    return std::async(std::launch::async, [spec, partitions = std::move(partitions)] {
      const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
      return MeasureKafkaLag(spec, partitions, KafkaSplitEnumerator::kDiscoveryTimeout, now_ms);
    });
  };
}

Result<std::unique_ptr<SplitEnumerator>> CreateSplitEnumerator(const JobSpec& spec,
                                                               const RestoredSplits* restored,
                                                               DirectoryLister lister,
                                                               KafkaPartitionDiscoverer kafka,
                                                               KafkaLagProbe kafka_lag) {
  Result<InputSpec> input = InputSpec::Parse(spec.input);
  if (!input.ok()) {
    // Validated at submit: the input changed since (deleted, emptied, made unreadable).
    return input.status().WithContext("reading --input " + InputSpec::Redacted(spec.input));
  }
  if (input->kind() == InputSpec::Kind::kMonitor) {
    KF_ASSIGN_OR_RETURN(std::unique_ptr<ContinuousFileSplitEnumerator> e,
                        ContinuousFileSplitEnumerator::Create(*input, restored, std::move(lister)));
    return std::unique_ptr<SplitEnumerator>(std::move(e));
  }
  if (input->kind() == InputSpec::Kind::kKafka) {
    KF_ASSIGN_OR_RETURN(
        std::unique_ptr<KafkaSplitEnumerator> e,
        KafkaSplitEnumerator::Create(*input, restored, std::move(kafka), std::move(kafka_lag)));
    return std::unique_ptr<SplitEnumerator>(std::move(e));
  }
  std::optional<RestoredSplits> r;
  if (restored != nullptr) r = *restored;
  if (input->kind() == InputSpec::Kind::kConnector) {
    if (spec.connector_splits.empty()) {
      return InvalidArgument("--input " + spec.input +
                             " came without its splits: submit it with a keyflow run of this "
                             "version, which lists them");
    }
    for (const std::string& split : spec.connector_splits) {
      if (split.empty()) return InvalidArgument("--input " + spec.input + " has an empty split");
    }
    std::vector<SourceSplit> splits = InputSpec::ConnectorSplits(spec.connector_splits);
    return std::unique_ptr<SplitEnumerator>(
        new StaticSplitEnumerator(std::move(input).value(), std::move(splits), std::move(r)));
  }
  return std::unique_ptr<SplitEnumerator>(
      new StaticSplitEnumerator(std::move(input).value(), std::move(r)));
}

}  // namespace keyflow
