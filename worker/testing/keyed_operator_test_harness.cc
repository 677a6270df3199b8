#include "worker/testing/keyed_operator_test_harness.h"

#include "common/file_io.h"

namespace keyflow {

KeyedOperatorTestHarness::KeyedOperatorTestHarness(std::unique_ptr<RecordFunction> function,
                                                   Options options)
    : options_(std::move(options)), processing_time_(Timestamp(options_.processing_time)) {
  OperatorConfig config;
  config.subtask = SubtaskIndex(options_.subtask);
  config.parallelism = options_.parallelism;
  config.max_parallelism = options_.max_parallelism;
  config.key_type = options_.key_type;
  config.key_groups = options_.key_groups.value_or(ComputeKeyGroupRangeForOperatorIndex(
      options_.max_parallelism, options_.parallelism, SubtaskIndex(options_.subtask)));
  config.params = options_.params;
  config.job_name = options_.job_name;
  config.library_name = options_.library_name;
  operator_ = std::make_unique<KeyedProcessOperator>(std::move(config), std::move(function),
                                                     &processing_time_, &output_);
}

Status KeyedOperatorTestHarness::Open() {
  return operator_->Open();
}

Status KeyedOperatorTestHarness::Restore(const std::vector<std::string>& snapshots) {
  KF_CHECK(!started_) << "restore before the first element";
  for (size_t i = 0; i < snapshots.size(); ++i) {
    StringSource source(snapshots[i], "snapshot #" + std::to_string(i));
    KF_ASSIGN_OR_RETURN(KeyedSnapshotReader reader, KeyedSnapshotReader::Open(source));
    KF_RETURN_IF_ERROR(operator_->Restore(reader));
  }
  return Status::Ok();
}

Status KeyedOperatorTestHarness::ProcessElement(std::string_view key, int64_t timestamp) {
  KF_ASSIGN_OR_RETURN(Key k, ParseKey(key, options_.key_type));
  KF_ASSIGN_OR_RETURN(KeyGroupId g,
                      AssignToKeyGroup(k, options_.key_type, options_.max_parallelism));
  Record r;
  r.key = std::move(k);
  r.key_group = g;
  r.timestamp = Timestamp(timestamp);
  return ProcessElement(r);
}

Status KeyedOperatorTestHarness::ProcessElement(const Record& record) {
  if (!started_) {
    operator_->Start();
    started_ = true;
  }
  return operator_->ProcessElement(record);
}

void KeyedOperatorTestHarness::ProcessWatermark(int64_t watermark) {
  if (!started_) {
    operator_->Start();
    started_ = true;
  }
  operator_->ProcessWatermark(Timestamp(watermark));
}

void KeyedOperatorTestHarness::SetProcessingTime(int64_t time) {
  if (!started_) {
    operator_->Start();
    started_ = true;
  }
  processing_time_.SetCurrentTime(Timestamp(time));
}

void KeyedOperatorTestHarness::EndInput() {
  if (!started_) {
    operator_->Start();
    started_ = true;
  }
  operator_->EndInput().IgnoreError();  // kept in failure()
}

Result<std::string> KeyedOperatorTestHarness::Snapshot() const {
  std::string out;
  KF_RETURN_IF_ERROR(operator_->SnapshotTo(&out).status());
  return out;
}

std::vector<std::string> KeyedOperatorTestHarness::ExtractOutput() {
  std::vector<std::string> out;
  out.reserve(output_.records.size());
  for (OutputRecord& r : output_.records) out.push_back(std::move(r.line));
  output_.records.clear();
  return out;
}

std::vector<OutputRecord> KeyedOperatorTestHarness::ExtractOutputRecords() {
  std::vector<OutputRecord> out;
  out.swap(output_.records);
  return out;
}

}  // namespace keyflow
